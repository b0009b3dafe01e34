"""The clients on uvloop, end to end: its transports are not asyncio's (nor its scheduling).

The suite runs on the standard loop; ``AIOKAFKAWIRE_TEST_LOOP=uvloop`` runs all of it on uvloop.
This module runs one full round trip on uvloop in every run, against Tansu (which checks the
idempotent producer's sequence numbers).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict

import pytest

from aiokafkawire import Admin, Consumer, NewTopic, Producer
from aiokafkawire.net.connection import BrokerConnection
from aiokafkawire.protocol.messages import MetadataRequest
from aiokafkawire.testing import TansuBroker

uvloop = pytest.importorskip("uvloop")

PARTITIONS = 3
RECORDS = 20_000
SENDERS = 50


async def _round_trip(bootstrap: str) -> None:
    assert type(asyncio.get_running_loop()).__module__.startswith("uvloop")
    topic = f"uvloop-{uuid.uuid4().hex[:10]}"
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics(
            [NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)]
        )
    async with Producer(
        bootstrap_servers=bootstrap, acks="all", compression="lz4", batch_size=16384
    ) as producer:
        assert producer.idempotent
        await producer.partitions_for(topic)

        async def sender(n: int) -> list[tuple[int, int]]:
            """Every SENDERS-th record from n on; returns (partition, offset) of each."""
            handles = [
                await producer.send(topic, b"%d" % i, partition=i % PARTITIONS)
                for i in range(n, RECORDS, SENDERS)
            ]
            return [((m := await h).partition, m.offset) for h in handles]

        delivered = [
            row for rows in await asyncio.gather(*map(sender, range(SENDERS))) for row in rows
        ]
    offsets: dict[int, list[int]] = defaultdict(list)
    for partition, offset in delivered:
        offsets[partition].append(offset)
    for partition, found in offsets.items():
        assert sorted(found) == list(range(len(found))), f"partition {partition}: gaps or repeats"

    async with Consumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"uvloop-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
    ) as consumer:
        values: dict[int, list[int]] = defaultdict(list)
        received = 0
        async with asyncio.timeout(60):
            while received < RECORDS:
                for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                    values[tp.partition].extend(int(r.value) for r in records)
                    received += len(records)
    assert received == RECORDS
    for partition, found in values.items():
        assert all(v % PARTITIONS == partition for v in found)
        for n in range(SENDERS):  # each sender's records keep its send order
            own = [v for v in found if v % SENDERS == n]
            assert own == sorted(own), f"partition {partition}: sender {n} out of order"
    assert sorted(v for found in values.values() for v in found) == list(range(RECORDS))

    # Reading outside the loop's turn is for selector loops only: here it declines.
    connection = await BrokerConnection.open(
        *bootstrap.rsplit(":", 1)[0:1], int(bootstrap.rsplit(":", 1)[1])
    )
    try:
        got: list[object] = []
        version = connection.versions.version_for(MetadataRequest.API_KEY)
        assert connection.try_submit(
            MetadataRequest(topics=[]), version, lambda r, e: got.append(r)
        )
        await asyncio.sleep(0.2)  # the answer is read by uvloop's transport meanwhile
        assert got and not connection.receive_now()
    finally:
        connection.close()


def test_produce_and_consume_on_uvloop(tansu_broker: TansuBroker) -> None:
    uvloop.run(_round_trip(tansu_broker.bootstrap_servers))
