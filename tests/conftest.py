"""Shared test configuration.

The embedded-broker fixtures (``tansu_broker``, ``mock_cluster``, ``kafka_bootstrap``) come from the
``aiokafkawire.testing.pytest_plugin`` plugin, which is opt-in: this file loads it
(``pytest_plugins``), as a user's conftest does.

``AIOKAFKAWIRE_TEST_LOOP=uvloop`` runs every asyncio test on uvloop instead of the standard loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["aiokafkawire.testing.pytest_plugin"]

REPO_ROOT = Path(__file__).resolve().parent.parent
SPEC_ROOT = REPO_ROOT / "specs" / "kafka-4.4.0"


@pytest.fixture(scope="session")
def spec_root() -> Path:
    """The official Kafka message specs and error table, vendored in the repository."""
    return SPEC_ROOT


@pytest.fixture(scope="session")
def secured_cluster() -> Iterator[Any]:
    """A Kafka 4.x broker with the ACL authorizer and a SASL_PLAINTEXT listener, for the session.

    One JVM for the admin and CLI tests of ACLs and SCRAM users (each test names its own
    principals, users and topics); the PLAINTEXT listener's principal is a super user.
    """
    from aiokafkawire.testing import KafkaCluster
    from aiokafkawire.testing._errors import BrokerUnavailableError
    from aiokafkawire.testing.pytest_plugin import skip_or_fail_unavailable

    cluster = KafkaCluster(authorizer=True, listeners=("SASL_PLAINTEXT",))
    try:
        cluster.start()
    except BrokerUnavailableError as exc:
        skip_or_fail_unavailable("Apache Kafka with an authorizer", exc)
    try:
        yield cluster
    finally:
        cluster.stop()


#: The PLAIN user of ``kafka_tls_cluster``'s SASL_SSL listener.
TLS_CLUSTER_USERS = {"alice": "alice-pw-3x9"}


@pytest.fixture(scope="session")
def kafka_tls_cluster() -> Iterator[Any]:
    """A Kafka 4.x broker on ``localhost`` with TLS listeners, for the session.

    SSL requires a client certificate (``client_cert_path``/``client_key_path``, signed by
    ``ca_path``); SASL_SSL authenticates with SASL PLAIN (``TLS_CLUSTER_USERS``) over TLS
    without one. No authorizer. One JVM for the compat TLS programs and the CLI's SASL-over-TLS
    test.
    """
    from aiokafkawire.testing import KafkaCluster
    from aiokafkawire.testing._errors import BrokerUnavailableError
    from aiokafkawire.testing.pytest_plugin import skip_or_fail_unavailable

    cluster = KafkaCluster(
        host="localhost",
        tls_hostnames=("localhost",),
        listeners=("SSL", "SASL_SSL"),
        sasl_users=TLS_CLUSTER_USERS,
        ssl_client_auth="required",
        config={"listener.name.sasl_ssl.ssl.client.auth": "none"},
    )
    try:
        cluster.start()
    except BrokerUnavailableError as exc:
        skip_or_fail_unavailable("Apache Kafka (TLS)", exc)
    try:
        yield cluster
    finally:
        cluster.stop()


if os.environ.get("AIOKAFKAWIRE_TEST_LOOP", "") == "uvloop":
    import uvloop

    def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item
    ) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
        """Every asyncio test runs on a uvloop loop."""
        return {"uvloop": uvloop.new_event_loop}
