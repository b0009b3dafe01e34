"""The aiokafka compat ``send`` futures: real asyncio futures of aiokafka's RecordMetadata,
resolved by each batch's own completion pass (``DeliveryHandle.as_future``), not by one loop
callback per record."""

from __future__ import annotations

import asyncio
import gc
import uuid
from typing import Any

import pytest
from _producer_helpers import create_topic

from aiokafkawire import errors
from aiokafkawire.compat.aiokafka import AIOKafkaProducer
from aiokafkawire.compat.aiokafka.structs import RecordMetadata
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster


async def test_send_futures_are_asyncio_futures_resolved_per_batch(kafka_bootstrap: Any) -> None:
    topic = await create_topic(kafka_bootstrap, "compat-futures", 4)
    loop = asyncio.get_running_loop()
    scheduled = 0
    call_soon = loop.call_soon

    def counting_call_soon(*args: Any, **kwargs: Any) -> Any:
        nonlocal scheduled
        scheduled += 1
        return call_soon(*args, **kwargs)

    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, linger_ms=50) as producer:
        await producer.partitions_for(topic)
        first = await producer.send(topic, b"first", partition=1)
        assert isinstance(first, asyncio.Future)
        await first
        loop.call_soon = counting_call_soon  # type: ignore[method-assign]
        try:
            futures = [await producer.send(topic, b"v%d" % i, partition=1) for i in range(300)]
            await producer.flush()
        finally:
            del loop.call_soon
        # 300 records in a few batches: a few callbacks per request, none per record.
        assert scheduled < 100, scheduled
        assert all(f.done() for f in futures)
    base = first.result().offset
    assert [f.result().offset for f in futures] == list(range(base + 1, base + 301))
    metadata = futures[0].result()
    assert type(metadata) is RecordMetadata
    assert metadata.topic_partition == TopicPartition(topic, 1)
    assert (metadata.topic, metadata.partition, metadata.timestamp_type) == (topic, 1, 0)
    assert metadata.timestamp is not None and metadata.log_start_offset is None


async def test_a_cancelled_send_future_leaves_the_record_and_its_neighbours(
    kafka_bootstrap: Any,
) -> None:
    topic = await create_topic(kafka_bootstrap, "compat-cancel", 4)
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, linger_ms=50) as producer:
        await producer.partitions_for(topic)
        futures = [await producer.send(topic, b"v%d" % i, partition=2) for i in range(3)]
        futures[1].cancel()
        callbacks: list[int] = []
        futures[2].add_done_callback(lambda f: callbacks.append(f.result().offset))
        first, third = await asyncio.gather(futures[0], futures[2])
    assert futures[1].cancelled()
    assert third.offset == first.offset + 2  # the cancelled record was written all the same
    assert callbacks == [third.offset]


async def test_send_batch_gives_aiokafkas_metadata_of_the_first_record(
    kafka_bootstrap: Any,
) -> None:
    topic = await create_topic(kafka_bootstrap, "compat-batch", 4)
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap) as producer:
        batch = producer.create_batch()
        for i in range(3):
            batch.append(key=None, value=b"b%d" % i, timestamp=None)
        future = await producer.send_batch(batch, topic, partition=3)
        assert isinstance(future, asyncio.Future)
        metadata = await future
    assert type(metadata) is RecordMetadata
    assert metadata.topic_partition == TopicPartition(topic, 3) and metadata.offset >= 0


async def test_futures_of_an_aborted_transaction_fail_and_are_not_reported(
    mock_cluster: MockCluster,
) -> None:
    topic = f"compat-abort-{uuid.uuid4().hex[:8]}"
    mock_cluster.create_topic(topic, partitions=1)
    loop = asyncio.get_running_loop()
    reports: list[str] = []
    loop.set_exception_handler(lambda _loop, context: reports.append(context["message"]))
    try:
        async with AIOKafkaProducer(
            bootstrap_servers=mock_cluster.bootstrap_servers,
            transactional_id=f"compat-abort-{uuid.uuid4().hex[:8]}",
            linger_ms=60_000,  # nothing leaves the accumulator before the abort
        ) as producer:
            await producer.partitions_for(topic)
            await producer.begin_transaction()
            kept = await producer.send(topic, b"aborted", partition=0)
            await producer.send(topic, b"dropped", partition=0)  # never looked at
            await producer.abort_transaction()
            with pytest.raises(errors.TransactionAbortedError):
                await kept
        gc.collect()
    finally:
        loop.set_exception_handler(None)
    assert reports == []  # aiokafka's rule: the application aborted them itself


async def test_send_futures_on_the_full_send_path(kafka_bootstrap: Any) -> None:
    """Headers, a serializer or a non-bytes value take the native send's Python path."""
    topic = await create_topic(kafka_bootstrap, "compat-full", 4)
    async with AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, value_serializer=lambda v: str(v).encode()
    ) as producer:
        await producer.partitions_for(topic)
        serialized = await producer.send(topic, 42, partition=0)
        with_headers = await producer.send(topic, 43, partition=0, headers=[("h", b"1")])
        first, second = await asyncio.gather(serialized, with_headers)
    assert type(first) is RecordMetadata and second.offset == first.offset + 1
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap) as plain:
        await plain.partitions_for(topic)
        future = await plain.send(topic, bytearray(b"not bytes"), partition=0, headers=[])
        assert (await future).offset == second.offset + 1
