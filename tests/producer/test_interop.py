"""Records produced here are read back exactly by librdkafka (confluent-kafka), on both brokers."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from typing import Any

import pytest
from _producer_helpers import ck, create_topic, fetch_raw_batches, read_back, unique_topic

from aiokafkawire.errors import RecordTooLargeError
from aiokafkawire.producer import Producer, RecordMetadata
from aiokafkawire.testing import MockCluster

BASE_TS = 1_700_000_000_000


def _records(count: int) -> list[dict[str, Any]]:
    """Keys, null keys, null values (tombstones), empty values, headers and explicit timestamps."""
    records: list[dict[str, Any]] = []
    for i in range(count):
        kind = i % 5
        if kind == 0:
            records.append({"key": b"key-%d" % i, "value": b"value-%d" % i * 7})
        elif kind == 1:
            records.append({"key": None, "value": bytes(range(256)) * 3})
        elif kind == 2:
            records.append({"key": b"tomb-%d" % i, "value": None})
        elif kind == 3:
            records.append({"key": b"", "value": b"", "headers": [("empty", b"")]})
        else:
            records.append(
                {
                    "key": b"h-%d" % i,
                    "value": b"with headers",
                    "headers": [("trace", b"id-%d" % i), ("nul", None), ("ünï", b"\x00\xff")],
                }
            )
        records[-1]["timestamp"] = BASE_TS + i * 1000
    return records


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
async def test_every_codec_reads_back_exactly(
    kafka_bootstrap: str, compression: str | None
) -> None:
    topic = unique_topic(f"codec-{compression}")
    records = _records(60)
    async with Producer(
        bootstrap_servers=kafka_bootstrap,
        compression=compression,
        allow_auto_create_topics=True,
        linger_ms=20,
        batch_size=2000,  # several batches per partition
    ) as producer:
        handles = [
            await producer.send(
                topic,
                r["value"],
                r["key"],
                partition=0,
                timestamp=r["timestamp"],
                headers=r.get("headers"),
            )
            for r in records
        ]
        metadata = [await h for h in handles]
    assert all(isinstance(m, RecordMetadata) for m in metadata)
    offsets = [m.offset for m in metadata]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)

    read = await read_back(kafka_bootstrap, topic, len(records))
    assert len(read) == len(records)
    assert [r.offset for r in read] == offsets
    for sent, got in zip(records, read, strict=True):
        assert got.partition == 0
        assert got.key == sent["key"]
        assert got.value == sent["value"]
        assert got.timestamp == sent["timestamp"]
        assert got.headers == list(sent.get("headers") or [])


def _lz4_values(count: int) -> list[bytes]:
    """100 B values, half pseudo-random, half text (as benchmark workload 1's)."""
    rng = random.Random(24)
    return [rng.randbytes(50) + (b"lz4 interop payload %06d " % i * 2)[:50] for i in range(count)]


def _read_with_aiokafka(bootstrap: str, topic: str, expected: int) -> list[tuple[Any, ...]]:
    aiokafka = pytest.importorskip("aiokafka")

    async def read() -> list[tuple[Any, ...]]:
        consumer = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=10_000_000,
        )
        await consumer.start()
        try:
            consumer.assign([aiokafka.TopicPartition(topic, 0)])
            await consumer.seek_to_beginning()
            out: list[tuple[Any, ...]] = []
            deadline = time.monotonic() + 30
            while len(out) < expected and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    out.extend((r.offset, r.key, r.value) for r in records)
            return out
        finally:
            await consumer.stop()

    return asyncio.run(read())


def _read_with_kafka_python(bootstrap: str, topic: str, expected: int) -> list[tuple[Any, ...]]:
    kafka = pytest.importorskip("kafka")
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=10_000_000,
    )
    try:
        consumer.assign([kafka.TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        out: list[tuple[Any, ...]] = []
        deadline = time.monotonic() + 30
        while len(out) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend((r.offset, r.key, r.value) for r in records)
        return out
    finally:
        consumer.close()


async def test_large_lz4_batch_is_read_by_every_peer(kafka_bootstrap: str) -> None:
    """One lz4 batch of several 64 KiB frame blocks (its buffer grown by doubling while it
    filled) is read back exactly by librdkafka, aiokafka and kafka-python."""
    if getattr(kafka_bootstrap, "kind", "") == "mock":
        pytest.skip("aiokafka and kafka-python are checked against real brokers")
    topic = await create_topic(kafka_bootstrap, "lz4-large", 1)
    values = _lz4_values(2_000)
    async with Producer(
        bootstrap_servers=kafka_bootstrap, compression="lz4", linger_ms=10_000
    ) as producer:
        handles = [
            await producer.send(topic, value, b"k%d" % i, partition=0)
            for i, value in enumerate(values)
        ]
        await producer.flush()
        assert [(await h).offset for h in handles] == list(range(len(values)))
    (batch,) = await fetch_raw_batches(kafka_bootstrap, topic, 0)
    assert batch.compression_type == 3 and batch.record_count == len(values)
    expected = [(i, b"k%d" % i, value) for i, value in enumerate(values)]

    read = await read_back(kafka_bootstrap, topic, len(values))
    assert [(r.offset, r.key, r.value) for r in read] == expected
    assert await asyncio.to_thread(_read_with_aiokafka, kafka_bootstrap, topic, len(values)) == (
        expected
    )
    assert (
        await asyncio.to_thread(_read_with_kafka_python, kafka_bootstrap, topic, len(values))
        == expected
    )


async def test_keyed_partition_matches_librdkafka_murmur2_random(kafka_bootstrap: str) -> None:
    topic = await create_topic(kafka_bootstrap, "murmur", 4)
    keys = [b"key-%d" % i for i in range(150)] + [b"", b"\x00\xff", "ключ".encode()]

    def produce_with_librdkafka() -> None:
        producer = ck.Producer(
            {
                "bootstrap.servers": kafka_bootstrap,
                "partitioner": "murmur2_random",
                "linger.ms": 5,
            }
        )
        for key in keys:
            producer.produce(topic, value=b"librdkafka", key=key)
        assert producer.flush(30) == 0

    async with Producer(bootstrap_servers=kafka_bootstrap) as ours:
        assert len(await ours.partitions_for(topic)) == 4
        await asyncio.to_thread(produce_with_librdkafka)
        handles = [await ours.send(topic, b"ours", key) for key in keys]
        ours_by_key = {key: (await h).partition for key, h in zip(keys, handles, strict=True)}

    read = await read_back(kafka_bootstrap, topic, 2 * len(keys))
    theirs_by_key = {r.key: r.partition for r in read if r.value == b"librdkafka"}
    assert len(theirs_by_key) == len(keys)
    assert ours_by_key == theirs_by_key
    assert len(set(ours_by_key.values())) > 1  # the keys really were spread


async def test_keyless_records_are_spread_sticky_and_all_arrive(mock_cluster: MockCluster) -> None:
    topic = unique_topic("sticky")
    mock_cluster.create_topic(topic, partitions=4)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, batch_size=1024, linger_ms=50
    ) as producer:
        handles = [await producer.send(topic, b"x" * 100) for _ in range(300)]
        metadata = [await h for h in handles]
    partitions = [m.partition for m in metadata]
    # KIP-480: consecutive keyless records share a partition until its batch fills up.
    switches = sum(1 for a, b in itertools.pairwise(partitions) if a != b)
    assert 1 <= switches < 100
    read = await read_back(mock_cluster.bootstrap_servers, topic, 300)
    assert sorted((r.partition, r.offset) for r in read) == sorted(
        (m.partition, m.offset) for m in metadata
    )


async def test_idempotent_batches_carry_one_producer_id_and_contiguous_sequences(
    kafka_bootstrap: str,
) -> None:
    topic = unique_topic("seq")
    async with Producer(
        bootstrap_servers=kafka_bootstrap,
        allow_auto_create_topics=True,
        batch_size=1024,
        linger_ms=1,
    ) as producer:
        assert producer.idempotent
        handles = [await producer.send(topic, b"r%04d" % i, partition=0) for i in range(500)]
        await producer.flush()
    assert all(h.exception() is None for h in handles)
    batches = await fetch_raw_batches(kafka_bootstrap, topic, 0)
    assert len(batches) > 5
    assert len({(b.producer_id, b.producer_epoch) for b in batches}) == 1
    assert batches[0].producer_id >= 0
    expected = 0
    for batch in batches:
        assert batch.base_sequence == expected
        expected += batch.record_count
    assert expected == 500


async def test_large_records_up_to_max_request_size_read_back_exactly(
    kafka_bootstrap: str,
) -> None:
    """10 KB records fill batches of about 1 MB, written by reference (no copy on the way to
    the socket); a record just under ``max_request_size`` still goes, one over it is refused
    before anything is sent (typed, not retried)."""
    topic = unique_topic("large")
    values = [bytes([i]) * 10_240 for i in range(200)]
    near_limit = b"n" * (1_048_576 - 256)
    async with Producer(
        bootstrap_servers=kafka_bootstrap, allow_auto_create_topics=True, linger_ms=50
    ) as producer:
        handles = [
            await producer.send(topic, v, b"k%d" % i, partition=0) for i, v in enumerate(values)
        ]
        handles.append(await producer.send(topic, near_limit, partition=0))
        with pytest.raises(RecordTooLargeError, match="max_request_size"):
            await producer.send(topic, b"o" * 1_048_577, partition=0)
        offsets = [(await h).offset for h in handles]
    assert offsets == list(range(len(values) + 1))
    read = await read_back(kafka_bootstrap, topic, len(values) + 1)
    assert [r.value for r in read] == [*values, near_limit]
    assert [r.key for r in read[:-1]] == [b"k%d" % i for i in range(len(values))]
