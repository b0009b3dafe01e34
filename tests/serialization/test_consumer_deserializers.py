"""The consumer's deserializers (issue 22): context and async ones, and failures raised as
RecordDeserializationError at the record's position (skip by seeking, or dead-letter)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _producer_helpers import unique_topic

from aiokafkawire import Consumer
from aiokafkawire.producer import Producer
from aiokafkawire.serialization import (
    MessageField,
    RecordDeserializationError,
    SerializationContext,
)
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster

VALUES = [b"0", b"1", b"bad", b"3", b"4"]


@pytest.fixture
async def topic(mock_cluster: MockCluster) -> str:
    name = unique_topic("deser")
    mock_cluster.create_topic(name, partitions=1)
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        for value in VALUES:
            await producer.send(name, value, key=b"k", headers=[("h", b"v")], partition=0)
        await producer.flush()
    return name


def consumer(bootstrap: str, **options: Any) -> Consumer:
    return Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **options)


async def values_until(c: Consumer, tp: TopicPartition, count: int) -> list[Any]:
    got: list[Any] = []
    for _ in range(50):
        data = await c.getmany(tp, timeout_ms=200)
        got.extend(r.value for r in data.get(tp, []))
        if len(got) >= count:
            break
    return got


def strict_int(data: bytes | None, ctx: SerializationContext) -> int:
    assert data is not None
    return int(data)


async def test_context_deserializer_sees_topic_field_and_headers(
    mock_cluster: MockCluster, topic: str
) -> None:
    seen: list[tuple[str, MessageField, Any]] = []

    def deserializer(data: bytes | None, ctx: SerializationContext) -> Any:
        seen.append((ctx.topic, ctx.field, ctx.headers))
        return (ctx.field.value, data)

    tp = TopicPartition(topic, 0)
    async with consumer(
        mock_cluster.bootstrap_servers,
        key_deserializer=deserializer,
        value_deserializer=deserializer,
    ) as c:
        c.assign([tp])
        record = await asyncio.wait_for(c.getone(), 10)
    assert (record.key, record.value) == (("key", b"k"), ("value", b"0"))
    assert seen[:2] == [
        (topic, MessageField.KEY, [("h", b"v")]),
        (topic, MessageField.VALUE, [("h", b"v")]),
    ]


async def test_async_deserializer_looks_each_schema_up_once(mock_cluster: MockCluster) -> None:
    name = unique_topic("ids")
    mock_cluster.create_topic(name, partitions=1)
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        for i in range(20):
            await producer.send(name, bytes([i % 2]) + b"payload", partition=0)
        await producer.flush()
    lookups: list[int] = []
    schemas: dict[int, str] = {}

    async def registryish(data: bytes | None, ctx: SerializationContext) -> tuple[str, bytes]:
        assert data is not None
        schema_id = data[0]
        if schema_id not in schemas:
            lookups.append(schema_id)
            await asyncio.sleep(0.01)  # the registry round trip
            schemas[schema_id] = f"schema-{schema_id}"
        return schemas[schema_id], data[1:]

    tp = TopicPartition(name, 0)
    async with consumer(mock_cluster.bootstrap_servers, value_deserializer=registryish) as c:
        c.assign([tp])
        values = await values_until(c, tp, 20)
    assert values[:2] == [("schema-0", b"payload"), ("schema-1", b"payload")]
    assert len(values) == 20
    assert sorted(lookups) == [0, 1]  # one lookup per schema id, not per record


@pytest.mark.parametrize("kind", ["plain", "context", "async"])
async def test_failure_is_raised_at_the_record_and_skipped_by_seeking(
    mock_cluster: MockCluster, topic: str, kind: str
) -> None:
    async def async_int(data: bytes | None, ctx: SerializationContext) -> int:
        return strict_int(data, ctx)

    deserializer: Any = {"plain": int, "context": strict_int, "async": async_int}[kind]
    tp = TopicPartition(topic, 0)
    async with consumer(mock_cluster.bootstrap_servers, value_deserializer=deserializer) as c:
        c.assign([tp])
        assert await values_until(c, tp, 2) == [0, 1]  # the records before it are delivered
        for _ in range(2):  # raised again and again: the position stays at the record
            with pytest.raises(RecordDeserializationError) as caught:
                await values_until(c, tp, 1)
            error = caught.value
            assert (error.topic, error.partition, error.offset) == (topic, 0, 2)
            assert (error.field, error.key, error.value) == (MessageField.VALUE, b"k", b"bad")
            assert isinstance(error.__cause__, ValueError)
            assert await c.position(tp) == 2
        c.seek(error.topic_partition, error.offset + 1)  # skip it
        assert await values_until(c, tp, 2) == [3, 4]


async def test_iterator_raises_at_the_record_and_dead_letters_it(
    mock_cluster: MockCluster, topic: str
) -> None:
    """The documented dead-letter recipe: write the raw record elsewhere, seek past it."""
    dead_letters = unique_topic("dlq")
    mock_cluster.create_topic(dead_letters, partitions=1)
    tp = TopicPartition(topic, 0)
    got: list[int] = []
    async with (
        Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer,
        consumer(mock_cluster.bootstrap_servers, value_deserializer=strict_int) as c,
    ):
        c.assign([tp])
        while len(got) < 4:
            try:
                async for record in c:
                    got.append(record.value)
                    if len(got) == 4:
                        break
            except RecordDeserializationError as error:
                await producer.send_and_wait(
                    dead_letters, error.value, key=error.key, headers=list(error.headers)
                )
                c.seek(error.topic_partition, error.offset + 1)
    assert got == [0, 1, 3, 4]
    dlq = TopicPartition(dead_letters, 0)
    async with consumer(mock_cluster.bootstrap_servers) as reader:
        reader.assign([dlq])
        assert await values_until(reader, dlq, 1) == [b"bad"]
