"""The producer's serializers (issue 22): plain, context (topic/field/headers) and async ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _producer_helpers import unique_topic

from aiokafkawire import Consumer
from aiokafkawire.producer import Producer
from aiokafkawire.serialization import (
    ASYNC,
    CONTEXT,
    PLAIN,
    MessageField,
    SerializationContext,
    kind_of,
)
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster


async def read_all(bootstrap: str, topic: str, count: int, partition: int = 0) -> list[Any]:
    tp = TopicPartition(topic, partition)
    async with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        records: list[Any] = []
        for _ in range(100):
            if len(records) >= count:
                break
            data = await consumer.getmany(tp, timeout_ms=200)
            records.extend(data.get(tp, []))
        return records


@pytest.fixture
def topic(mock_cluster: MockCluster) -> str:
    name = unique_topic("serde")
    mock_cluster.create_topic(name, partitions=1)
    return name


def test_kinds_are_told_apart_once() -> None:
    class Confluentish:
        def __call__(self, obj: Any, ctx: Any = None) -> bytes:
            return b""

    class AsyncOne:
        async def __call__(self, obj: Any, ctx: Any) -> bytes:
            return b""

    def annotated(obj: Any, where: SerializationContext) -> bytes:
        return b""

    async def async_plain(obj: Any) -> bytes:
        return b""

    assert kind_of(str.encode) == PLAIN  # its second parameter is the encoding
    assert kind_of(lambda v: v) == PLAIN
    assert kind_of(bytes) == PLAIN
    assert kind_of(Confluentish()) == CONTEXT
    assert kind_of(annotated) == CONTEXT
    assert kind_of(AsyncOne()) == ASYNC
    assert kind_of(async_plain) == ASYNC


async def test_context_serializer_sees_topic_field_headers_and_adds_one(
    mock_cluster: MockCluster, topic: str
) -> None:
    seen: list[tuple[str, MessageField, list[Any]]] = []

    def serializer(obj: Any, ctx: SerializationContext) -> bytes:
        assert ctx.headers is not None
        seen.append((ctx.topic, ctx.field, list(ctx.headers)))
        if ctx.field is MessageField.VALUE:
            ctx.headers.append(("content-type", b"text/plain"))
        return str(obj).encode()

    given = [("trace", b"1")]
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        key_serializer=serializer,
        value_serializer=serializer,
    ) as producer:
        await producer.send_and_wait(topic, 42, key="k", headers=given)
        await producer.send_and_wait(topic, 43)  # no headers given: the serializer's only
    assert given == [("trace", b"1")]  # the caller's list is not changed
    assert seen[:2] == [
        (topic, MessageField.KEY, [("trace", b"1")]),
        (topic, MessageField.VALUE, [("trace", b"1")]),
    ]
    records = await read_all(mock_cluster.bootstrap_servers, topic, 2)
    assert [(r.key, r.value) for r in records] == [(b"k", b"42"), (b"None", b"43")]
    assert records[0].headers == (("trace", b"1"), ("content-type", b"text/plain"))
    assert records[1].headers == (("content-type", b"text/plain"),)


async def test_async_serializer_keeps_call_order_on_a_partition(
    mock_cluster: MockCluster, topic: str
) -> None:
    """A record still being serialized is not overtaken by a later send to its partition."""

    async def slow_first(obj: Any, ctx: SerializationContext) -> bytes:
        # The earlier the record, the longer its serialization takes.
        await asyncio.sleep(0.05 * (3 - obj))
        return str(obj).encode()

    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, value_serializer=slow_first
    ) as producer:
        sends = [asyncio.ensure_future(producer.send(topic, i, partition=0)) for i in range(3)]
        handles = await asyncio.gather(*sends)
        offsets = [(await h).offset for h in handles]
    assert offsets == sorted(offsets)
    records = await read_all(mock_cluster.bootstrap_servers, topic, 3)
    assert [r.value for r in records] == [b"0", b"1", b"2"]


async def test_async_serializer_does_not_hold_up_other_topics(mock_cluster: MockCluster) -> None:
    blocked, free = unique_topic("blocked"), unique_topic("free")
    for name in (blocked, free):
        mock_cluster.create_topic(name, partitions=1)
    gate = asyncio.Event()

    async def serializer(obj: Any, ctx: SerializationContext) -> bytes:
        if ctx.topic == blocked:
            await gate.wait()
        return obj

    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, value_serializer=serializer
    ) as producer:
        waiting = asyncio.ensure_future(producer.send(blocked, b"later"))
        metadata = await asyncio.wait_for(producer.send_and_wait(free, b"now"), 10)
        assert metadata.topic == free and not waiting.done()
        gate.set()
        await (await waiting)


async def test_serializers_in_send_batch(mock_cluster: MockCluster, topic: str) -> None:
    async def registryish(obj: Any, ctx: SerializationContext) -> bytes:
        return f"{ctx.topic}:{ctx.field.value}:{obj}".encode()

    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, value_serializer=registryish
    ) as producer:
        batch = producer.create_batch()
        assert batch.append(value=1) is not None
        assert batch.append(value=2) is not None
        await (await producer.send_batch(batch, topic, partition=0))
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, value_serializer=str.encode
    ) as producer:
        batch = producer.create_batch()
        batch.append(value="plain")  # serialized once (here), not again by send_batch
        await (await producer.send_batch(batch, topic, partition=0))
    records = await read_all(mock_cluster.bootstrap_servers, topic, 3)
    assert [r.value for r in records] == [
        f"{topic}:value:1".encode(),
        f"{topic}:value:2".encode(),
        b"plain",
    ]


async def test_confluent_serializer_plugs_in(mock_cluster: MockCluster, topic: str) -> None:
    serialization = pytest.importorskip("confluent_kafka.serialization")
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        key_serializer=serialization.StringSerializer("utf_8"),
        value_serializer=serialization.IntegerSerializer(),
    ) as producer:
        await producer.send_and_wait(topic, 7, key="seven")
    records = await read_all(mock_cluster.bootstrap_servers, topic, 1)
    assert (records[0].key, records[0].value) == (b"seven", (7).to_bytes(4, "big"))


async def test_serializer_errors_reach_the_caller(mock_cluster: MockCluster, topic: str) -> None:
    async def broken(obj: Any, ctx: SerializationContext) -> bytes:
        raise ValueError("no schema for that")

    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, value_serializer=broken
    ) as producer:
        with pytest.raises(ValueError, match="no schema"):
            await producer.send(topic, 1)
        assert producer._serializing == {}  # nothing left waiting


async def test_a_cancelled_send_does_not_let_later_ones_overtake(
    mock_cluster: MockCluster, topic: str
) -> None:
    gate = asyncio.Event()

    async def serializer(obj: Any, ctx: SerializationContext) -> bytes:
        if obj == "a":
            await gate.wait()
        return obj.encode()

    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, value_serializer=serializer
    ) as producer:
        first, second, third = (
            asyncio.ensure_future(producer.send(topic, v, partition=0)) for v in "abc"
        )
        await asyncio.sleep(0.05)  # b and c are serialized, waiting for a's append
        second.cancel()
        await asyncio.sleep(0.05)
        assert not third.done()  # c still waits for a, though b (its predecessor) is gone
        gate.set()
        await (await first)
        await (await third)
        assert second.cancelled()
    records = await read_all(mock_cluster.bootstrap_servers, topic, 2)
    assert [r.value for r in records] == [b"a", b"c"]
