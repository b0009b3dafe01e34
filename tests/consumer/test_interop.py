"""Records written by confluent-kafka are read back exactly: every codec, headers, timestamps."""

from __future__ import annotations

import pytest
from _consumer_helpers import Broker, by_partition, consume_n, produce

from aiokafkawire.consumer import Consumer
from aiokafkawire.structs import TopicPartition

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = 3
PER_CODEC = 120
BASE_TS = 1_700_000_000_000


def _messages(codec: str) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = []
    for i in range(PER_CODEC):
        message: dict[str, object] = {
            "partition": i % PARTITIONS,
            "key": None if i % 7 == 0 else f"{codec}-k{i}".encode(),
            "value": None if i % 11 == 5 else (f"{codec}-v{i}-".encode() * (1 + i % 5)),
            "timestamp": BASE_TS + i * 13,
        }
        if i % 3:
            message["headers"] = [("h1", f"x{i}".encode()), ("empty", b""), ("n", None)]
        messages.append(message)
    return messages


@pytest.mark.parametrize("codec", CODECS)
async def test_codecs_headers_timestamps_read_exactly(broker: Broker, codec: str) -> None:
    topic = broker.create_topic(PARTITIONS)
    messages = _messages(codec)
    produce(broker.bootstrap_servers, topic, messages, **{"compression.type": codec})
    expected: dict[int, list[dict[str, object]]] = {}
    for message in messages:
        expected.setdefault(int(message["partition"]), []).append(message)  # type: ignore[call-overload]

    async with Consumer(bootstrap_servers=broker.bootstrap_servers) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        await consumer.seek_to_beginning()
        records = await consume_n(consumer, len(messages))
        assert len(records) == len(messages)
        for tp, got in by_partition(records).items():
            want = expected[tp.partition]
            assert [r.offset for r in got] == list(range(len(want)))
            for record, message in zip(got, want, strict=True):
                assert record.key == message["key"]
                assert record.value == message["value"]
                assert record.timestamp == message["timestamp"]
                assert record.timestamp_type == 0
                headers = message.get("headers") or []
                assert record.headers == tuple((k, v) for k, v in headers)  # type: ignore[attr-defined]
            assert await consumer.position(tp) == len(want)
            assert consumer.highwater(tp) == len(want)


async def test_deserializers_and_iteration(broker: Broker) -> None:
    topic = broker.create_topic(1)
    produce(
        broker.bootstrap_servers,
        topic,
        [{"key": str(i).encode(), "value": f"value {i}".encode()} for i in range(50)],
    )
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        auto_offset_reset="earliest",
        key_deserializer=lambda b: int(b) if b is not None else None,
        value_deserializer=lambda b: b.decode() if b is not None else None,
        max_poll_records=7,
    ) as consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        seen = []
        async for record in consumer:
            seen.append(record)
            # The position follows each record handed out by the iterator.
            assert await consumer.position(tp) == record.offset + 1
            if len(seen) == 50:
                break
        assert [r.key for r in seen] == list(range(50))
        assert seen[3].value == "value 3"
        # getmany after partial iteration picks up exactly where the iterator stopped.
        consumer.seek(tp, 45)
        first = await consumer.getone()
        assert first.offset == 45
        rest = await consume_n(consumer, 4)
        assert [r.offset for r in rest] == [46, 47, 48, 49]


async def test_switching_from_iteration_to_getmany_loses_nothing(broker: Broker) -> None:
    topic = broker.create_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": str(i).encode()} for i in range(30)])
    tp = TopicPartition(topic, 0)
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        auto_offset_reset="earliest",
        max_poll_records=10,
    ) as consumer:
        consumer.assign([tp])
        first = [await consumer.getone() for _ in range(3)]
        assert [r.offset for r in first] == [0, 1, 2]
        # The iterator took 10 records from the buffer but handed out 3: the rest comes next.
        assert await consumer.position(tp) == 3
        rest = await consume_n(consumer, 27)
        assert [r.offset for r in rest] == list(range(3, 30))
