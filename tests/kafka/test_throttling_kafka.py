"""Quotas on Apache Kafka: a produce byte-rate quota for our client id makes the broker throttle
(KIP-219: it answers at once with throttle_time_ms and mutes the connection); the producer's
connection sends nothing until the throttle ends, and reports it.

The quota is set with ``Admin.alter_client_quotas`` (AlterClientQuotas), as
``kafka-configs --alter --entity-type clients`` would.
"""

from __future__ import annotations

import time

from _kafka_helpers import create_topic, requires, unique

from aiokafkawire.admin import Admin, QuotaAlteration, QuotaEntity, QuotaEntityType
from aiokafkawire.producer import Producer
from aiokafkawire.testing import KafkaCluster

pytestmark = requires("kafka")

RATE = 100_000  # bytes per second
PAYLOAD = 300_000  # three seconds' worth (KafkaCluster measures quotas over 1 s windows)


async def _set_produce_quota(bootstrap: str, client_id: str, rate: float | None) -> None:
    entity = QuotaEntity.of({QuotaEntityType.CLIENT_ID: client_id})
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.alter_client_quotas([QuotaAlteration(entity, {"producer_byte_rate": rate})])


async def test_produce_quota_throttles_and_the_client_waits_it_out(
    kafka_cluster: KafkaCluster,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "quota", 1)
    client_id = unique("throttled")
    await _set_produce_quota(bootstrap, client_id, RATE)
    try:
        async with Producer(
            bootstrap_servers=bootstrap, client_id=client_id, linger_ms=5, batch_size=50_000
        ) as producer:
            await producer.partitions_for(topic)
            cluster = producer._cluster
            assert cluster is not None
            (broker,) = cluster.metadata.brokers.values()
            connection = cluster.pool.cached(broker.host, broker.port, "produce")
            assert connection is not None  # partitions_for opened it
            started = time.monotonic()
            writes_while_throttled = []
            original_flush = connection._flush

            def watched_flush() -> None:  # every socket write of this connection
                if connection._write_buffer and connection.throttled:
                    writes_while_throttled.append(time.monotonic())
                original_flush()

            connection._flush = watched_flush  # type: ignore[method-assign]
            chunk = b"q" * 10_000
            for _ in range(PAYLOAD // len(chunk)):
                await producer.send(topic, chunk, partition=0)
            await producer.flush(timeout=60)
            elapsed = time.monotonic() - started
            (broker_metrics,) = producer.metrics()["brokers"].values()
        # The broker throttled, the client reported it and waited instead of writing.
        assert broker_metrics["throttle_time_ms_total"] >= 500
        assert writes_while_throttled == []
        # Roughly the quota's pace (the broker's window lets the first burst through).
        assert elapsed > PAYLOAD / RATE / 3
    finally:
        await _set_produce_quota(bootstrap, client_id, None)
