"""pytest fixtures that provide Kafka brokers: Tansu, the librdkafka mock cluster, or your own.

Fixtures:

- ``tansu_broker`` (session): a :class:`TansuBroker`, started the first time a test asks for it.
  It is shared by every test of the session: use unique topic and group names.
- ``mock_cluster`` (function): a 3-broker :class:`MockCluster`.  Fixture clusters start with
  ``group_initial_rebalance_delay_ms=0`` so that group tests do not wait 3 s for a first join.
- ``mock_cluster_factory`` (function): ``factory(num_brokers=3) -> MockCluster``.
- ``kafka_bootstrap`` (function, parametrized): a bootstrap string (a :class:`KafkaBootstrap`,
  i.e. a ``str`` with a ``.kind``) for each backend: ``"tansu"`` and ``"mock"`` by default; when
  ``AIOKAFKAWIRE_BOOTSTRAP=host:port`` is set, ``"external"`` only and the others are skipped.

Tests that use any of these get the ``integration`` marker automatically.  Every broker a fixture
starts is stopped in that fixture's teardown.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing.mock_cluster import MockCluster
from aiokafkawire.testing.tansu import TansuBroker

EXTERNAL_BOOTSTRAP_ENV_VAR = "AIOKAFKAWIRE_BOOTSTRAP"
BROKER_FIXTURES = frozenset(
    {"tansu_broker", "mock_cluster", "mock_cluster_factory", "kafka_bootstrap"}
)


class KafkaBootstrap(str):
    """A bootstrap-servers string that also says which backend serves it (``.kind``)."""

    kind: str

    def __new__(cls, servers: str, kind: str) -> KafkaBootstrap:
        """Make ``servers`` a bootstrap string tagged with ``kind``."""
        self = super().__new__(cls, servers)
        self.kind = kind
        return self


def _bootstrap_params() -> list[object]:
    external = os.environ.get(EXTERNAL_BOOTSTRAP_ENV_VAR)
    if not external:
        return ["tansu", "mock"]
    skip = pytest.mark.skip(reason=f"${EXTERNAL_BOOTSTRAP_ENV_VAR} is set: external cluster only")
    return ["external", pytest.param("tansu", marks=skip), pytest.param("mock", marks=skip)]


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``integration`` marker (also declared in pyproject, harmless twice)."""
    config.addinivalue_line(
        "markers",
        "integration: talks to a real Kafka-protocol broker "
        "(Tansu, librdkafka mock cluster, or AIOKAFKAWIRE_BOOTSTRAP)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses a broker fixture as ``integration``."""
    for item in items:
        if BROKER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def tansu_broker() -> Iterator[TansuBroker]:
    """One Tansu broker for the whole session, started on first use, stopped at the end."""
    broker = TansuBroker()
    try:
        broker.start()
    except BrokerUnavailableError as exc:
        pytest.skip(f"Tansu unavailable: {exc}")
    try:
        yield broker
    finally:
        broker.stop()


def _new_mock_cluster(num_brokers: int) -> MockCluster:
    try:
        return MockCluster(num_brokers, group_initial_rebalance_delay_ms=0)
    except BrokerUnavailableError as exc:
        pytest.skip(f"librdkafka mock cluster unavailable: {exc}")


@pytest.fixture
def mock_cluster_factory() -> Iterator[Callable[..., MockCluster]]:
    """A factory ``(num_brokers=3) -> MockCluster``; every cluster is closed at teardown."""
    clusters: list[MockCluster] = []

    def factory(num_brokers: int = 3) -> MockCluster:
        cluster = _new_mock_cluster(num_brokers)
        clusters.append(cluster)
        return cluster

    try:
        yield factory
    finally:
        for cluster in clusters:
            cluster.close()


@pytest.fixture
def mock_cluster() -> Iterator[MockCluster]:
    """A fresh 3-broker librdkafka mock cluster, closed at teardown."""
    cluster = _new_mock_cluster(3)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(params=_bootstrap_params())
def kafka_bootstrap(request: pytest.FixtureRequest) -> Iterator[KafkaBootstrap]:
    """Bootstrap servers of each available backend in turn (see the module docstring)."""
    kind: str = request.param
    if kind == "external":
        yield KafkaBootstrap(os.environ[EXTERNAL_BOOTSTRAP_ENV_VAR], kind)
    elif kind == "tansu":
        broker: TansuBroker = request.getfixturevalue("tansu_broker")
        yield KafkaBootstrap(broker.bootstrap_servers, kind)
    else:
        cluster = _new_mock_cluster(3)
        try:
            yield KafkaBootstrap(cluster.bootstrap_servers, kind)
        finally:
            cluster.close()
