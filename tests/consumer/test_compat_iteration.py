"""The aiokafka compat consumer's ``async for`` and ``getone``: records the native iterator
already holds are handed out without a native coroutine per record, and each partition's
position still moves only past records handed out."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from _consumer_helpers import Broker, produce

from aiokafkawire.compat.aiokafka import AIOKafkaConsumer
from aiokafkawire.compat.aiokafka.structs import ConsumerRecord
from aiokafkawire.consumer import Consumer
from aiokafkawire.structs import TopicPartition

PARTITIONS = 2
COUNT = 60


def _native_entries(calls: list[int]) -> Any:
    """A profile hook counting entries into the native ``__anext__``/``getone`` coroutines
    (first calls and resumptions), without replacing them (a wrapper turns the fast path off)."""
    codes = {Consumer.__anext__.__code__, Consumer.getone.__code__}

    def hook(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            calls[0] += 1

    return hook


def _wrap_native_anext(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Wrap ``Consumer.__anext__`` as tracing does; count the records it hands out."""
    calls = [0]
    native_anext = Consumer.__anext__

    async def counting(self: Consumer[Any, Any]) -> Any:
        calls[0] += 1
        return await native_anext(self)

    monkeypatch.setattr(Consumer, "__anext__", counting)
    return calls


async def test_async_for_positions_follow_records_handed_out(broker: Broker) -> None:
    topic = broker.create_topic(PARTITIONS)
    messages = [{"value": b"%d" % i, "partition": i % PARTITIONS} for i in range(COUNT)]
    produce(broker.bootstrap_servers, topic, messages)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    calls = [0]
    async with AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False
    ) as consumer:
        consumer.assign(tps)
        await consumer.seek_to_beginning()
        seen: list[ConsumerRecord[Any, Any]] = []
        try:
            async for record in consumer:
                if not seen:
                    sys.setprofile(_native_entries(calls))  # from the second record on
                seen.append(record)
                tp = TopicPartition(record.topic, record.partition)
                # Only this partition moved, and only past this record.
                assert await consumer.position(tp) == record.offset + 1
                for other in tps:
                    if other != tp:
                        handed = [r.offset for r in seen if r.partition == other.partition]
                        want = max(handed) + 1 if handed else 0
                        assert await consumer.position(other) == want
                if len(seen) == COUNT - 5:
                    break
        finally:
            sys.setprofile(None)
        # N records handed out: the positions add up to N.
        positions = [await consumer.position(tp) for tp in tps]
        assert sum(positions) == COUNT - 5
        assert all(type(r) is ConsumerRecord for r in seen)
        # Records held by the native iterator went out without a native coroutine each.
        assert calls[0] < len(seen) // 2
        # getone takes the same fast path, then getmany picks up exactly after it.
        one = await consumer.getone()
        assert await consumer.position(TopicPartition(topic, one.partition)) == one.offset + 1
        rest: list[ConsumerRecord[Any, Any]] = []
        for _ in range(50):
            if len(rest) >= 4:
                break
            for records in (await consumer.getmany(timeout_ms=200)).values():
                rest.extend(records)
        got = sorted((r.partition, r.offset) for r in [*seen, one, *rest])
        assert got == sorted((i % PARTITIONS, i // PARTITIONS) for i in range(COUNT))


async def test_a_deserializer_error_in_async_for_is_the_deserializers(broker: Broker) -> None:
    topic = broker.create_topic(1)
    values = [b'{"n": 0}', b'{"n": 1}', b"not json", b'{"n": 3}']
    produce(broker.bootstrap_servers, topic, [{"value": v} for v in values])
    tp = TopicPartition(topic, 0)
    async with AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        enable_auto_commit=False,
        value_deserializer=json.loads,
    ) as consumer:
        consumer.assign([tp])
        await consumer.seek_to_beginning()
        got = []
        with pytest.raises(json.JSONDecodeError):
            async for record in consumer:
                got.append(record.value)
        assert got == [{"n": 0}, {"n": 1}]
        assert (await consumer.getone()).value == {"n": 3}


async def test_a_wrapped_native_iterator_still_sees_every_record(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``aiokafkawire.otel.instrument()`` wraps ``Consumer.__anext__``: the compat consumer then
    hands every record out through it (a span per record), not through the fast path."""
    topic = broker.create_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": b"%d" % i} for i in range(10)])
    calls = _wrap_native_anext(monkeypatch)
    async with AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False
    ) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        await consumer.seek_to_beginning()
        got = [(await consumer.getone()).offset]
        async for record in consumer:
            got.append(record.offset)
            if len(got) == 10:
                break
        assert got == list(range(10))
        assert calls[0] == 10
