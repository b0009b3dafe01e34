"""metrics(), hooks and the aiokafka-style methods (issue 14), on the embedded Tansu broker."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import uuid
from typing import Any

import pytest

from aiokafkawire import Admin, Consumer, NewTopic, Producer, TopicPartition, errors
from aiokafkawire.metrics import (
    BatchEvent,
    ClientHooks,
    ConnectionEvent,
    RebalanceEvent,
    RequestEvent,
)
from aiokafkawire.testing import TansuBroker

GROUP_OPTIONS = {
    "session_timeout_ms": 2_000,
    "heartbeat_interval_ms": 300,
    "auto_offset_reset": "earliest",
    "fetch_max_wait_ms": 100,
}


class Recorder(ClientHooks):
    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_connect(self, event: ConnectionEvent) -> None:
        self.events.append(event)

    def on_disconnect(self, event: ConnectionEvent) -> None:
        self.events.append(("closed", event))

    def on_request(self, event: RequestEvent) -> None:
        self.events.append(event)

    def on_batch(self, event: BatchEvent) -> None:
        self.events.append(event)

    def on_rebalance(self, event: RebalanceEvent) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


async def _topic(bootstrap: str, partitions: int = 2) -> str:
    name = f"metrics-{uuid.uuid4().hex[:10]}"
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    return name


async def test_producer_metrics_and_hooks(tansu_broker: TansuBroker) -> None:
    bootstrap = tansu_broker.bootstrap_servers
    topic = await _topic(bootstrap)
    hooks = Recorder()

    class Broken(ClientHooks):
        def on_request(self, event: RequestEvent) -> None:
            raise RuntimeError("a hook's bug")

    async with Producer(
        bootstrap_servers=bootstrap, compression="gzip", acks=1, hooks=[hooks, Broken()]
    ) as producer:
        handles = [await producer.send(topic, b"x" * 100, key=b"%d" % i) for i in range(500)]
        await producer.flush(10)
        assert all(h.exception() is None for h in handles)
        snapshot = producer.metrics()
    stats = snapshot["producer"]
    assert stats["records_sent"] == 500 and stats["records_per_sec"] > 0
    assert stats["batches_sent"] >= 2  # two partitions
    assert 0 < stats["compression_ratio"] < 0.5  # repeated bytes compress well
    assert stats["retries"] == 0 and stats["batch_errors"] == 0
    ((_, broker),) = snapshot["brokers"].items()
    assert broker["requests"] >= broker["responses"] > 0
    assert broker["bytes_sent"] > 0 and broker["bytes_received"] > 0
    assert broker["latency"]["Produce"]["count"] >= 1
    assert broker["latency"]["Produce"]["p99_ms"] >= broker["latency"]["Produce"]["p50_ms"] >= 0
    batches = hooks.of(BatchEvent)
    assert sum(b.records for b in batches) == 500
    assert all(b.error is None and b.base_offset >= 0 for b in batches)
    assert {e.api_name for e in hooks.of(RequestEvent)} >= {"ApiVersions", "Metadata", "Produce"}
    assert hooks.of(ConnectionEvent)
    assert any(isinstance(e, tuple) and e[0] == "closed" for e in hooks.events)


async def test_consumer_metrics_lag_rebalance_and_aiokafka_methods(
    tansu_broker: TansuBroker,
) -> None:
    bootstrap = tansu_broker.bootstrap_servers
    topic = await _topic(bootstrap, partitions=1)
    async with Producer(bootstrap_servers=bootstrap) as producer:
        for i in range(10):
            await producer.send(topic, b"%d" % i, partition=0)
        await producer.flush(10)
    hooks = Recorder()
    consumer = Consumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        hooks=hooks,
        max_poll_records=4,
        **GROUP_OPTIONS,
    )
    await consumer.start()  # start()/stop() as in aiokafka, beside `async with`
    try:
        tp = TopicPartition(topic, 0)
        first = await asyncio.wait_for(consumer.getmany(timeout_ms=10_000), 15)
        assert sum(map(len, first.values())) == 4
        assert topic in await consumer.topics()
        assert consumer.partitions_for_topic(topic) == {0}
        assert consumer.partitions_for_topic("no-such-topic") is None
        assert isinstance(consumer.last_poll_timestamp(tp), int)
        snapshot = consumer.metrics()["consumer"]
        assert snapshot["records_consumed"] == 4
        assert snapshot["lag"] == {f"{topic}-0": 6} and snapshot["lag_total"] == 6
        assert snapshot["rebalances"] == 1 and snapshot["last_rebalance_s"] > 0
        fetches = snapshot["fetch_latency"]
        assert fetches["count"] >= 1 and fetches["max_ms"] >= fetches["p50_ms"] >= 0
    finally:
        await consumer.stop()
    assigned = [e for e in hooks.of(RebalanceEvent) if e.kind == "assigned"]
    assert assigned and assigned[0].partitions == frozenset({tp})
    revoked = [e for e in hooks.of(RebalanceEvent) if e.kind == "revoked"]
    assert revoked and revoked[-1].partitions == frozenset({tp})
    assert any(e.api_name == "Fetch" for e in hooks.of(RequestEvent))


async def test_send_batch_and_create_batch(tansu_broker: TansuBroker) -> None:
    bootstrap = tansu_broker.bootstrap_servers
    topic = await _topic(bootstrap)
    producer = Producer(bootstrap_servers=bootstrap, batch_size=2_000)
    await producer.start()
    try:
        batch = producer.create_batch()
        sizes = [batch.append(key=b"k", value=b"v" * 100, headers={"h": b"1"}) for _ in range(50)]
        assert sizes[0] is not None and None in sizes  # filled up at about batch_size
        taken = batch.record_count()
        assert 5 < taken < 50
        future = await producer.send_batch(batch, topic, partition=1)
        metadata = await asyncio.wait_for(future, 10)
        assert metadata.partition == 1 and metadata.offset >= 0
        with pytest.raises(errors.IllegalStateError):
            batch.append(value=b"late")
        with pytest.raises(errors.KafkaTypeError, match="value must be bytes"):
            producer.create_batch().append(value="text")
        with pytest.raises(errors.KafkaTypeError, match="partition must be int"):
            await producer.send_batch(producer.create_batch(), topic, partition="1")  # type: ignore[arg-type]
    finally:
        await producer.stop()


async def test_admin_find_coordinator_metrics_and_stop(tansu_broker: TansuBroker) -> None:
    admin = Admin(bootstrap_servers=tansu_broker.bootstrap_servers)
    await admin.start()
    try:
        coordinator = await admin.find_coordinator(f"g-{uuid.uuid4().hex[:8]}")
        assert coordinator.node_id in admin.cluster.metadata.brokers
        (broker,) = admin.metrics()["brokers"].values()
        assert broker["latency"]["FindCoordinator"]["count"] >= 1
        with pytest.raises(errors.ConfigError):
            await admin.find_coordinator("x", kind="cluster")
    finally:
        await admin.stop()


def test_logging_is_quiet_by_default() -> None:
    """Without logging configured, even a warning of the library prints nothing; once the
    application configures logging, the records (under "aiokafkawire") reach its handlers."""
    script = (
        "import logging, aiokafkawire\n"
        "logging.getLogger('aiokafkawire.producer').warning('hidden')\n"
        "logging.basicConfig(format='%(name)s %(message)s')\n"
        "logging.getLogger('aiokafkawire.producer').warning('shown')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stderr.strip() == "aiokafkawire.producer shown"
    for name, logger in logging.Logger.manager.loggerDict.items():
        if name.startswith("aiokafkawire.") and isinstance(logger, logging.Logger):
            assert not logger.handlers and logger.level == logging.NOTSET, name
