"""Fixtures of the Spark tests: one local SparkSession for the whole run, Apache Kafka, topics.

The session has Spark's own Kafka connector on its class path (resolved by Maven on first use and
cached) when it can be had, so the same session compares ``format("kafka")`` with
``format("aiokafkawire")``.  Without Java the Spark tests skip with the reason, and fail instead
when ``$AIOKAFKAWIRE_REQUIRE_KAFKA`` is set (as in CI).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing.kafka import KafkaCluster
from aiokafkawire.testing.pytest_plugin import skip_or_fail_unavailable


class SparkFixture:
    """The session and whether Spark's JVM Kafka connector is on its class path."""

    def __init__(self, session: Any, connector_error: BaseException | None) -> None:
        self.session = session
        self.connector_error = connector_error


@pytest.fixture(scope="session")
def spark_fixture() -> Iterator[SparkFixture]:
    """One ``local[2]`` SparkSession for every Spark test, stopped at the end."""
    pytest.importorskip("pyspark", reason="the 'spark' extra (pyspark) is not installed")
    from aiokafkawire.spark import register
    from aiokafkawire.testing.spark import (
        local_spark_session,
        require_java,
        spark_kafka_connector_jars,
    )

    try:
        require_java()
    except BrokerUnavailableError as exc:
        skip_or_fail_unavailable("Spark", exc)
    connector_error: BaseException | None = None
    jars: list[str] | None = None
    try:
        jars = spark_kafka_connector_jars()
    except BrokerUnavailableError as exc:
        connector_error = exc
    session = local_spark_session(app_name="aiokafkawire-tests", jars=jars)
    register(session)
    try:
        yield SparkFixture(session, connector_error)
    finally:
        session.stop()


@pytest.fixture
def spark(spark_fixture: SparkFixture) -> Any:
    """The shared SparkSession with the ``aiokafkawire`` format registered."""
    return spark_fixture.session


@pytest.fixture
def spark_with_connector(spark_fixture: SparkFixture) -> Any:
    """The shared SparkSession, which must also have Spark's own ``kafka`` format."""
    if spark_fixture.connector_error is not None:
        skip_or_fail_unavailable("Spark's Kafka connector", spark_fixture.connector_error)
    return spark_fixture.session


@pytest.fixture
def bootstrap(kafka_cluster: KafkaCluster) -> str:
    """The session's Apache Kafka broker (ListOffsets answers exactly; transactions work)."""
    return kafka_cluster.bootstrap_servers
