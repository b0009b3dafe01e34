"""pytest fixtures that provide Kafka brokers: Tansu, the librdkafka mock cluster, or your own.

Opt in from a ``conftest.py`` (``pytest_plugins = ["aiokafkawire.testing.pytest_plugin"]``) or
with ``-p aiokafkawire.testing.pytest_plugin``: installing the package registers nothing with
pytest.

Fixtures:

- ``tansu_broker`` (session): a :class:`TansuBroker`, started the first time a test asks for it.
  It is shared by every test of the session: use unique topic and group names.
- ``mock_cluster`` (function): a 3-broker :class:`MockCluster`.  Fixture clusters start with
  ``group_initial_rebalance_delay_ms=0`` so that group tests do not wait 3 s for a first join.
- ``mock_cluster_factory`` (function): ``factory(num_brokers=3) -> MockCluster``.
- ``kafka_cluster`` (session): a 1-broker Apache Kafka :class:`KafkaCluster`, newest 4.x that
  Maven resolves; ``kafka_cluster_39`` (session): the same on Kafka 3.9, the last line that still
  serves the oldest protocol versions.
- ``kafka_cluster_factory`` (function): ``factory(**KafkaCluster kwargs) -> started KafkaCluster``
  (3 brokers, listeners, authorizer ...); every cluster is stopped at teardown.
- ``kafka_bootstrap`` (function, parametrized): a bootstrap string (a :class:`KafkaBootstrap`,
  i.e. a ``str`` with a ``.kind``) for each backend: ``"tansu"``, ``"mock"``, ``"kafka"`` (Apache
  Kafka 4.x) and ``"kafka39"``; when ``AIOKAFKAWIRE_BOOTSTRAP_SERVERS=host:port`` is set (the
  variable the command line reads too; the older ``AIOKAFKAWIRE_BOOTSTRAP`` still works, with a
  ``DeprecationWarning``), ``"external"`` only and the others are skipped.

Which brokers the integration suite runs on: ``AIOKAFKAWIRE_TEST_BROKERS`` (comma list of
``tansu``, ``mock``, ``kafka``, ``kafka39``; default all of them). A broker that cannot start here
(no Java or Maven for Apache Kafka) makes its tests skip with the reason, unless
``AIOKAFKAWIRE_REQUIRE_KAFKA=1`` (CI sets it): then they fail.

Tests that use any of these get the ``integration`` marker automatically.  Every broker a fixture
starts is stopped in that fixture's teardown.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeVar

import pytest

from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing.kafka import KafkaCluster
from aiokafkawire.testing.mock_cluster import MockCluster
from aiokafkawire.testing.registry import SchemaRegistryServer
from aiokafkawire.testing.tansu import TansuBroker

EXTERNAL_BOOTSTRAP_ENV_VAR = "AIOKAFKAWIRE_BOOTSTRAP_SERVERS"
DEPRECATED_BOOTSTRAP_ENV_VAR = "AIOKAFKAWIRE_BOOTSTRAP"
TEST_BROKERS_ENV_VAR = "AIOKAFKAWIRE_TEST_BROKERS"
REQUIRE_KAFKA_ENV_VAR = "AIOKAFKAWIRE_REQUIRE_KAFKA"
ALL_BROKER_KINDS = ("tansu", "mock", "kafka", "kafka39")
# What runs when $AIOKAFKAWIRE_TEST_BROKERS is unset: every kind.
DEFAULT_BROKER_KINDS = ALL_BROKER_KINDS
BROKER_FIXTURES = frozenset(
    {
        "tansu_broker",
        "mock_cluster",
        "mock_cluster_factory",
        "kafka_bootstrap",
        "kafka_cluster",
        "kafka_cluster_39",
        "kafka_cluster_factory",
    }
)


def enabled_broker_kinds() -> tuple[str, ...]:
    """The broker kinds the integration suite runs on (``$AIOKAFKAWIRE_TEST_BROKERS``)."""
    raw = os.environ.get(TEST_BROKERS_ENV_VAR, "").strip()
    if not raw:
        return DEFAULT_BROKER_KINDS
    kinds = tuple(kind.strip() for kind in raw.split(",") if kind.strip())
    unknown = [kind for kind in kinds if kind not in ALL_BROKER_KINDS]
    if unknown:
        raise pytest.UsageError(
            f"${TEST_BROKERS_ENV_VAR}: unknown broker kind(s) {unknown}; use {ALL_BROKER_KINDS}"
        )
    return kinds


def kafka_required() -> bool:
    """Whether a missing Apache Kafka must fail the run instead of skipping (CI)."""
    return os.environ.get(REQUIRE_KAFKA_ENV_VAR, "").strip() not in ("", "0")


def skip_or_fail_unavailable(what: str, exc: BaseException) -> NoReturn:
    """Skip the test because ``what`` cannot run here, or fail when Kafka is required."""
    message = f"{what} unavailable: {exc}"
    if kafka_required():
        pytest.fail(f"{message} (${REQUIRE_KAFKA_ENV_VAR} is set)", pytrace=False)
    pytest.skip(message)


def broker_kind_params(kinds: tuple[str, ...] = ALL_BROKER_KINDS) -> list[object]:
    """pytest params for ``kinds``, those not enabled by ``$AIOKAFKAWIRE_TEST_BROKERS`` skipped."""
    enabled = enabled_broker_kinds()
    skip = pytest.mark.skip(reason=f"not in ${TEST_BROKERS_ENV_VAR}")
    return [kind if kind in enabled else pytest.param(kind, marks=skip) for kind in kinds]


class KafkaBootstrap(str):
    """A bootstrap-servers string that also says which backend serves it (``.kind``)."""

    kind: str

    def __new__(cls, servers: str, kind: str) -> KafkaBootstrap:
        """Make ``servers`` a bootstrap string tagged with ``kind``."""
        self = super().__new__(cls, servers)
        self.kind = kind
        return self


def external_bootstrap() -> str | None:
    """The external cluster's bootstrap servers from the environment, if any (the deprecated
    variable with a ``DeprecationWarning``)."""
    servers = os.environ.get(EXTERNAL_BOOTSTRAP_ENV_VAR)
    if servers:
        return servers
    servers = os.environ.get(DEPRECATED_BOOTSTRAP_ENV_VAR)
    if servers:
        warnings.warn(
            f"${DEPRECATED_BOOTSTRAP_ENV_VAR} is deprecated; set ${EXTERNAL_BOOTSTRAP_ENV_VAR}",
            DeprecationWarning,
            stacklevel=2,
        )
    return servers or None


def _bootstrap_params() -> list[object]:
    external = external_bootstrap()
    if not external:
        return broker_kind_params()
    skip = pytest.mark.skip(reason=f"${EXTERNAL_BOOTSTRAP_ENV_VAR} is set: external cluster only")
    return ["external", *(pytest.param(kind, marks=skip) for kind in ALL_BROKER_KINDS)]


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``integration`` marker (also declared in pyproject, harmless twice)."""
    config.addinivalue_line(
        "markers",
        "integration: talks to a real Kafka-protocol broker "
        "(Tansu, librdkafka mock cluster, or AIOKAFKAWIRE_BOOTSTRAP_SERVERS)",
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


_Made = TypeVar("_Made")


def _tracking_factory(
    make: Callable[..., _Made], dispose: Callable[[_Made], object]
) -> Iterator[Callable[..., _Made]]:
    """A fixture body: yields ``make`` wrapped so that everything it made is disposed of at
    teardown, in order, even when the test failed."""
    made: list[_Made] = []

    def factory(*args: Any, **kwargs: Any) -> _Made:
        thing = make(*args, **kwargs)
        made.append(thing)
        return thing

    try:
        yield factory
    finally:
        for thing in made:
            dispose(thing)


def _start_kafka(what: str, **kwargs: Any) -> KafkaCluster:
    cluster = KafkaCluster(**kwargs)
    try:
        return cluster.start()
    except BrokerUnavailableError as exc:
        skip_or_fail_unavailable(what, exc)


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[KafkaCluster]:
    """One Apache Kafka 4.x broker (newest that resolves) for the session, stopped at the end."""
    cluster = _start_kafka("Apache Kafka 4.x")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kafka_cluster_39() -> Iterator[KafkaCluster]:
    """One Apache Kafka 3.9 broker for the session (the oldest protocol versions still served)."""
    cluster = _start_kafka("Apache Kafka 3.9", version="3")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def kafka_cluster_factory() -> Iterator[Callable[..., KafkaCluster]]:
    """A factory ``(**KafkaCluster kwargs) -> started KafkaCluster``, each stopped at teardown."""
    yield from _tracking_factory(
        lambda **kwargs: _start_kafka("Apache Kafka", **kwargs), KafkaCluster.stop
    )


def _new_mock_cluster(num_brokers: int) -> MockCluster:
    try:
        return MockCluster(num_brokers, group_initial_rebalance_delay_ms=0)
    except BrokerUnavailableError as exc:
        pytest.skip(f"librdkafka mock cluster unavailable: {exc}")


@pytest.fixture
def mock_cluster_factory() -> Iterator[Callable[..., MockCluster]]:
    """A factory ``(num_brokers=3) -> MockCluster``; every cluster is closed at teardown."""
    yield from _tracking_factory(
        lambda num_brokers=3: _new_mock_cluster(num_brokers), MockCluster.close
    )


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
        yield KafkaBootstrap(external_bootstrap() or "", kind)
    elif kind in ("kafka", "kafka39"):
        fixture = "kafka_cluster" if kind == "kafka" else "kafka_cluster_39"
        kafka: KafkaCluster = request.getfixturevalue(fixture)
        yield KafkaBootstrap(kafka.bootstrap_servers, kind)
    elif kind == "tansu":
        broker: TansuBroker = request.getfixturevalue("tansu_broker")
        yield KafkaBootstrap(broker.bootstrap_servers, kind)
    else:
        cluster = _new_mock_cluster(3)
        try:
            yield KafkaBootstrap(cluster.bootstrap_servers, kind)
        finally:
            cluster.close()


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[SchemaRegistryServer]:
    """Apicurio Registry (the Confluent API at ``.url``), in memory, for the session."""
    server = SchemaRegistryServer()
    try:
        server.start()
    except BrokerUnavailableError as exc:
        skip_or_fail_unavailable("a schema registry (Apicurio, Java 21+)", exc)
    try:
        yield server
    finally:
        server.stop()
