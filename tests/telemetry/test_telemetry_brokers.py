"""KIP-714 telemetry end to end: Apache Kafka 4.4 with a broker-side receiver, and the quick
brokers (which answer GetTelemetrySubscriptions with no requested metrics: nothing is pushed)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from aiokafkawire import Consumer, Producer, ShareConsumer, errors
from aiokafkawire.admin import Admin, NewTopic
from aiokafkawire.admin.configs import ConfigResource, ResourceType
from aiokafkawire.protocol.records.codecs import decompress
from aiokafkawire.testing import BrokerUnavailableError
from aiokafkawire.testing.kafka import KafkaCluster, newest_kafka_version
from aiokafkawire.testing.pytest_plugin import enabled_broker_kinds, skip_or_fail_unavailable
from aiokafkawire.testing.telemetry import TelemetryRecorder
from tests.telemetry.otlp_decode import decode_metrics_data

pytestmark = pytest.mark.integration

TOPIC = "telemetry-t"
INTERVAL_MS = 500


def kafka_uuid(value: uuid.UUID) -> str:
    """A UUID as Kafka's ``Uuid.toString()`` writes it (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


async def _prepare(bootstrap: str) -> None:
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(TOPIC, 1, 1)])
        await admin.alter_configs(
            {
                ConfigResource(ResourceType.CLIENT_METRICS, "everything"): {
                    "metrics": "org.apache.kafka.",
                    "interval.ms": str(INTERVAL_MS),
                }
            }
        )
    # The broker applies the subscription from its metadata log a moment later; a client that
    # asked before would (rightly) wait the broker's default interval, 5 minutes, to ask again.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        async with Producer(bootstrap_servers=bootstrap, client_id="tel-probe") as probe:
            await probe.client_instance_id(5)
            assert probe._telemetry is not None
            if probe._telemetry.subscription.requested_metrics:
                return
        await asyncio.sleep(0.2)
    raise AssertionError("the client-metrics subscription never reached the broker")


@pytest.fixture(scope="module")
def telemetry_kafka() -> Iterator[tuple[KafkaCluster, TelemetryRecorder]]:
    """One Kafka 4.x broker with the TelemetryRecorder installed and a 500 ms subscription."""
    if "kafka" not in enabled_broker_kinds():
        pytest.skip("kafka is not in $AIOKAFKAWIRE_TEST_BROKERS")
    try:
        recorder = TelemetryRecorder(newest_kafka_version("4"))
    except BrokerUnavailableError as exc:
        skip_or_fail_unavailable("the telemetry recorder", exc)
    cluster = KafkaCluster(
        version=recorder.version,
        config=recorder.broker_config(),
        extra_classpath=[recorder.classpath],
    )
    try:
        cluster.start()
    except BrokerUnavailableError as exc:
        recorder.close()
        skip_or_fail_unavailable("Apache Kafka", exc)
    try:
        asyncio.run(_prepare(cluster.bootstrap_servers))
        yield cluster, recorder
    finally:
        cluster.stop()
        recorder.close()


async def pushes_of(
    recorder: TelemetryRecorder, client_id: str, count: int, timeout: float = 15.0
) -> list[dict[str, Any]]:
    """The pushes of ``client_id``, once there are ``count`` of them."""
    deadline = time.monotonic() + timeout
    while True:
        mine = [p for p in recorder.pushes() if p["client_id"] == client_id]
        if len(mine) >= count or time.monotonic() > deadline:
            return mine
        await asyncio.sleep(0.1)


def values(pushes: list[dict[str, Any]], name: str) -> list[float]:
    return [
        point["value"]
        for push in pushes
        for metric in push["metrics"]
        if metric["name"] == name
        for point in metric["points"]
    ]


def check_cadence(pushes: list[dict[str, Any]]) -> None:
    assert "error" not in pushes[0], pushes[0]  # Kafka's own OTLP classes parsed our bytes
    assert pushes[-1]["terminating"] is True
    assert not any(p["terminating"] for p in pushes[:-1])
    regular = [p["received_ms"] for p in pushes[:-1]]
    gaps = [later - earlier for earlier, later in itertools.pairwise(regular)]
    assert gaps and min(gaps) >= INTERVAL_MS * 0.8, gaps  # never faster than the interval
    assert all(p["push_interval_ms"] == INTERVAL_MS for p in pushes)


async def test_producer_pushes_its_metrics_to_kafka(telemetry_kafka) -> None:
    cluster, recorder = telemetry_kafka
    async with Producer(bootstrap_servers=cluster.bootstrap_servers, client_id="tel-p") as producer:
        instance = await producer.client_instance_id(10)
        assert instance is not None
        for i in range(10):
            await producer.send(TOPIC, b"v%d" % i)
        running = await pushes_of(recorder, "tel-p", 3)
        assert len(running) >= 3, running
    pushes = await pushes_of(recorder, "tel-p", len(running) + 1, timeout=5)
    check_cadence(pushes)
    assert {p["client_instance_id"] for p in pushes} == {kafka_uuid(instance)}
    assert pushes[0]["resource"] == {"client_id": "tel-p"}
    names = {m["name"] for p in pushes for m in p["metrics"]}
    assert {
        "org.apache.kafka.producer.connection.creation.rate",
        "org.apache.kafka.producer.connection.creation.total",
        "org.apache.kafka.producer.node.request.latency.avg",
        "org.apache.kafka.producer.node.request.latency.max",
        "org.apache.kafka.producer.produce.throttle.time.avg",
        "org.apache.kafka.producer.produce.throttle.time.max",
        "org.apache.kafka.producer.record.send.total",
    } <= names
    # The broker asks for delta temporality: the sums over every push add up to the total.
    assert sum(values(pushes, "org.apache.kafka.producer.record.send.total")) == 10
    latencies = values(pushes, "org.apache.kafka.producer.node.request.latency.max")
    assert latencies and all(0 <= v < 60_000 for v in latencies) and max(latencies) > 0


async def test_consumer_pushes_its_metrics_to_kafka(telemetry_kafka) -> None:
    cluster, recorder = telemetry_kafka
    async with Producer(
        bootstrap_servers=cluster.bootstrap_servers, enable_metrics_push=False
    ) as p:
        for i in range(5):
            await p.send(TOPIC, b"c%d" % i)
    consumer = Consumer(
        TOPIC,
        bootstrap_servers=cluster.bootstrap_servers,
        client_id="tel-c",
        group_id="tel-group",
        auto_offset_reset="earliest",
    )
    async with consumer:
        read = 0
        deadline = time.monotonic() + 30
        while read < 5 and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            read += sum(len(records) for records in batch.values())
        assert read >= 5
        instance = await consumer.client_instance_id(10)
        assert instance is not None
        running = await pushes_of(recorder, "tel-c", 3)
        assert len(running) >= 3, running
    pushes = await pushes_of(recorder, "tel-c", len(running) + 1, timeout=5)
    check_cadence(pushes)
    assert pushes[0]["resource"] == {"client_id": "tel-c", "group_id": "tel-group"}
    assert {p["client_instance_id"] for p in pushes} == {kafka_uuid(instance)}
    consumed = values(pushes, "org.apache.kafka.consumer.fetch.manager.records.consumed.total")
    assert sum(consumed) == read
    assert 1 in values(pushes, "org.apache.kafka.consumer.coordinator.assigned.partitions")
    assert values(pushes, "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg")


async def test_share_consumer_pushes_to_kafka_and_admin_does_not(telemetry_kafka) -> None:
    cluster, recorder = telemetry_kafka
    bootstrap = cluster.bootstrap_servers
    consumer = ShareConsumer(
        TOPIC, bootstrap_servers=bootstrap, client_id="tel-s", group_id="tel-sg"
    )
    async with consumer:
        instance = await consumer.client_instance_id(10)
        assert instance is not None
        running = await pushes_of(recorder, "tel-s", 3)
        assert len(running) >= 3, running
    pushes = await pushes_of(recorder, "tel-s", len(running) + 1, timeout=5)
    check_cadence(pushes)
    assert pushes[0]["resource"] == {"client_id": "tel-s", "group_id": "tel-sg"}
    assert {p["client_instance_id"] for p in pushes} == {kafka_uuid(instance)}
    names = {m["name"] for p in pushes for m in p["metrics"]}
    assert {
        "org.apache.kafka.consumer.share.connection.creation.total",
        "org.apache.kafka.consumer.share.fetch.manager.fetch.latency.avg",
        "org.apache.kafka.consumer.share.fetch.manager.acknowledgements.send.total",
    } <= names
    async with Admin(bootstrap_servers=bootstrap, client_id="tel-a") as admin:
        admin_instance = await admin.client_instance_id(timeout=10)
        assert admin_instance is not None and admin_instance != instance
        await asyncio.sleep(INTERVAL_MS * 2.5 / 1000)
    assert [p for p in recorder.pushes() if p["client_id"] == "tel-a"] == []


async def test_no_push_when_disabled(telemetry_kafka) -> None:
    cluster, recorder = telemetry_kafka
    producer = Producer(
        bootstrap_servers=cluster.bootstrap_servers, client_id="tel-off", enable_metrics_push=False
    )
    async with producer:
        await producer.send(TOPIC, b"x")
        with pytest.raises(errors.IllegalStateError, match="enable_metrics_push"):
            await producer.client_instance_id()
        await asyncio.sleep(INTERVAL_MS * 2.5 / 1000)
    assert [p for p in recorder.pushes() if p["client_id"] == "tel-off"] == []


async def test_quick_brokers_and_plain_kafka_do_not_break(kafka_bootstrap) -> None:
    """Tansu and librdkafka's mock answer GetTelemetrySubscriptions (an instance id, no
    metrics requested); Kafka without a telemetry plugin does not offer the API at all."""
    async with Producer(bootstrap_servers=kafka_bootstrap) as producer:
        instance = await producer.client_instance_id(2)
        telemetry = producer._telemetry
        assert telemetry is not None
        if kafka_bootstrap.kind in ("tansu", "mock"):
            assert isinstance(instance, uuid.UUID)
            assert telemetry.subscription.requested_metrics == []
        elif kafka_bootstrap.kind in ("kafka", "kafka39"):
            assert instance is None
            assert "does not support GetTelemetrySubscriptions" in telemetry.stopped_reason
        assert telemetry.pushes == 0


async def test_pushes_to_the_mock_cluster(mock_cluster) -> None:
    """librdkafka's mock can be told to ask for metrics: pushes at its interval (zstd, its
    first accepted codec), and one more, terminating, on close."""
    mock_cluster.set_telemetry(["org.apache.kafka.producer."], 100)
    mock_cluster.start_request_tracking()
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        assert isinstance(await producer.client_instance_id(5), uuid.UUID)
        telemetry = producer._telemetry
        assert telemetry is not None
        for _ in range(200):  # 10 s at most
            if telemetry.pushes >= 2:
                break
            await asyncio.sleep(0.05)
        assert telemetry.pushes >= 2
        assert telemetry.subscription.accepted_compression_types[0] == 4
    assert telemetry.stopped_reason is None  # every push was accepted
    keys = [r.api_key for r in mock_cluster.requests() if r.api_key in (71, 72)]
    assert keys[0] == 71
    assert keys.count(72) == telemetry.pushes  # the terminating push included


async def test_share_consumer_pushes_to_the_mock_cluster(mock_cluster) -> None:
    """The share consumer pushes under ``org.apache.kafka.consumer.share.`` (Java's metric
    groups ``consumer-share-*``), and once more, terminating, on close."""
    mock_cluster.create_topic("tel-share", 1, 1)
    mock_cluster.set_telemetry(["org.apache.kafka.consumer.share."], 100)
    mock_cluster.start_request_tracking()
    consumer = ShareConsumer(
        "tel-share", bootstrap_servers=mock_cluster.bootstrap_servers, group_id="tel-share-g"
    )
    async with consumer:
        assert isinstance(await consumer.client_instance_id(5), uuid.UUID)
        telemetry = consumer._telemetry
        assert telemetry is not None
        for _ in range(200):  # 10 s at most
            if telemetry.pushes >= 2:
                break
            await asyncio.sleep(0.05)
        assert telemetry.pushes >= 2
        codec, data = telemetry.payload()
    assert telemetry.stopped_reason is None  # every push was accepted
    keys = [r.api_key for r in mock_cluster.requests() if r.api_key in (71, 72)]
    assert keys[0] == 71
    assert keys.count(72) == telemetry.pushes  # the terminating push included
    names = set(decode_metrics_data(decompress(codec, data) if codec else data)["metrics"])
    assert {
        "org.apache.kafka.consumer.share.connection.creation.total",
        "org.apache.kafka.consumer.share.fetch.manager.fetch.latency.avg",
        "org.apache.kafka.consumer.share.fetch.manager.acknowledgements.send.total",
    } <= names


async def test_admin_client_instance_id(kafka_bootstrap) -> None:
    """As Java's admin client: ``client_instance_id`` sends one GetTelemetrySubscriptions (the
    answer is kept).  Kafka without a telemetry plugin has no such API: None."""
    async with Admin(bootstrap_servers=kafka_bootstrap) as admin:
        first = await admin.client_instance_id(timeout=5)
        assert await admin.client_instance_id(timeout=5) == first
        if kafka_bootstrap.kind in ("tansu", "mock"):
            assert isinstance(first, uuid.UUID)
        elif kafka_bootstrap.kind in ("kafka", "kafka39"):
            assert first is None
        with pytest.raises(errors.ConfigError):
            await admin.client_instance_id(timeout=-1)
    async with Admin(bootstrap_servers=kafka_bootstrap, enable_metrics_push=False) as admin:
        with pytest.raises(errors.IllegalStateError, match="enable_metrics_push"):
            await admin.client_instance_id()
    with pytest.raises(errors.IllegalStateError):
        await Admin(bootstrap_servers=kafka_bootstrap).client_instance_id()


async def test_a_failed_share_consumer_close_still_ends_the_push_loop(mock_cluster) -> None:
    mock_cluster.create_topic("tel-share-f", 1, 1)
    mock_cluster.set_telemetry(["org.apache.kafka.consumer.share."], 100)
    consumer = ShareConsumer(
        "tel-share-f", bootstrap_servers=mock_cluster.bootstrap_servers, group_id="tel-share-f"
    )
    await consumer.start()
    assert isinstance(await consumer.client_instance_id(5), uuid.UUID)
    telemetry = consumer._telemetry
    assert telemetry is not None and telemetry._task is not None

    assert consumer._fetcher is not None
    original_close = consumer._fetcher.close

    async def failing_close(seconds: float) -> None:
        await original_close(seconds)
        raise errors.KafkaConnectionError("the session close failed")

    consumer._fetcher.close = failing_close  # type: ignore[method-assign]
    with pytest.raises(errors.KafkaConnectionError):
        await consumer.close()
    assert telemetry._task.done()
