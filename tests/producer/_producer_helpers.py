"""Helpers for the producer tests: read topics back with independent (or raw) consumers."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from aiokafkawire import Admin, NewTopic, Producer
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.protocol.messages import FetchRequest
from aiokafkawire.protocol.messages.fetch import FetchPartition, FetchTopic
from aiokafkawire.protocol.records import iter_batches

ck = pytest.importorskip("confluent_kafka")

_group_ids = itertools.count()


@dataclass(frozen=True)
class ReadRecord:
    """A record as confluent-kafka (librdkafka) returns it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp: int


def unique_topic(prefix: str = "t") -> str:
    """A topic name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


# Partitions of an auto-created topic on librdkafka's mock (it has no CreateTopics).
MOCK_AUTO_CREATED_PARTITIONS = 4


async def create_topic(bootstrap: str, prefix: str, partitions: int) -> str:
    """A fresh topic of ``partitions`` partitions on any ``kafka_bootstrap`` kind.

    Brokers auto-create topics with different counts (Apache Kafka 1, Tansu and the mock 4), so
    tests create theirs explicitly; the mock has no admin API, so there the topic is
    auto-created and must be wanted with the mock's count.
    """
    topic = unique_topic(prefix)
    if getattr(bootstrap, "kind", "") == "mock":
        assert partitions == MOCK_AUTO_CREATED_PARTITIONS, "the mock auto-creates 4 partitions"
        async with Producer(bootstrap_servers=bootstrap, allow_auto_create_topics=True) as p:
            assert len(await p.partitions_for(topic)) == partitions
        return topic
    async with Admin(bootstrap_servers=bootstrap) as admin:
        created = await admin.create_topics([NewTopic(topic, num_partitions=partitions)])
        assert created[topic].error is None, created[topic].error
    return topic


def _read_with_librdkafka(
    bootstrap: str,
    topic: str,
    expected: int,
    timeout: float,
    isolation_level: str,
    quiet_after: float,
) -> list[ReadRecord]:
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"producer-tests-{next(_group_ids)}",
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 50,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = sorted(metadata.topics[topic].partitions)
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in partitions])
        out: list[ReadRecord] = []
        deadline = time.monotonic() + timeout
        last_record = time.monotonic()
        while time.monotonic() < deadline:
            batch = consumer.consume(num_messages=10_000, timeout=0.1)
            for message in batch:
                error = message.error()
                if error is not None:
                    raise AssertionError(f"librdkafka consumer error: {error}")
                out.append(
                    ReadRecord(
                        message.partition(),
                        message.offset(),
                        message.key(),
                        message.value(),
                        [(k, v) for k, v in (message.headers() or [])],
                        message.timestamp()[1],
                    )
                )
            if batch:
                last_record = time.monotonic()
            if len(out) >= expected and time.monotonic() - last_record >= quiet_after:
                break
        return out
    finally:
        consumer.close()


async def read_back(
    bootstrap: str,
    topic: str,
    expected: int,
    *,
    timeout: float = 30.0,
    isolation_level: str = "read_uncommitted",
    quiet_after: float = 0.3,
) -> list[ReadRecord]:
    """Every record of ``topic`` read by librdkafka (waits for ``expected``, then a quiet spell)."""
    return await asyncio.to_thread(
        _read_with_librdkafka, bootstrap, topic, expected, timeout, isolation_level, quiet_after
    )


async def fetch_raw_batches(bootstrap: str, topic: str, partition: int = 0) -> list[Any]:
    """The record batches of one partition, fetched with our own Fetch (control batches too)."""
    cluster = Cluster(bootstrap)
    await cluster.start()
    try:
        await cluster.wait_for_topic(topic)
        leader = cluster.metadata.leader_for(topic, partition)
        assert leader is not None
        connection = await cluster.connection(leader)
        version = connection.versions.version_for(FetchRequest.API_KEY, max_version=12)
        batches: list[Any] = []
        offset = 0
        for _ in range(100):
            request = FetchRequest(
                replica_id=-1,
                max_wait_ms=10,
                min_bytes=1,
                max_bytes=10_000_000,
                isolation_level=0,
                topics=[
                    FetchTopic(
                        topic=topic,
                        partitions=[
                            FetchPartition(
                                partition=partition,
                                fetch_offset=offset,
                                partition_max_bytes=10_000_000,
                            )
                        ],
                    )
                ],
            )
            response = await connection.send(request, version)
            data = response.responses[0].partitions[0]
            assert data.error_code == 0, data.error_code
            # No CRC check: librdkafka's mock writes its commit/abort markers with CRC 0.
            new = list(iter_batches(data.records or b"", check_crcs=False))
            if not new:
                return batches
            batches.extend(new)
            offset = new[-1].next_offset
        return batches
    finally:
        await cluster.close()
