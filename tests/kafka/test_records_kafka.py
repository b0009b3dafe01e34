"""Record batches on Apache Kafka: a topic codec that differs from the producer's makes the broker
recompress; every codec comes back exactly to us and to librdkafka; a record over the topic's
``max.message.bytes`` is refused at once with a typed error."""

from __future__ import annotations

import asyncio
import time

import pytest
from _kafka_helpers import create_topic, read_all, read_with_librdkafka, requires
from _producer_helpers import fetch_raw_batches

from aiokafkawire import Admin, errors
from aiokafkawire.producer import Producer
from aiokafkawire.protocol.records import CompressionType
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster

pytestmark = requires("kafka")

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
BASE_TS = 1_700_000_000_000


def _records(tag: str) -> list[dict[str, object]]:
    """Keys, nulls, headers, spread timestamps and compressible values of several sizes."""
    out = []
    for i in range(60):
        out.append(
            {
                "key": None if i % 7 == 0 else b"key-%d" % i,
                "value": None if i % 11 == 5 else (tag.encode() + b"-%d-" % i) * (1 + i % 40),
                "timestamp": BASE_TS + 37 * i,
                "headers": [("h", b"%d" % i), ("empty", b""), ("null", None)] if i % 3 else [],
            }
        )
    return out


@pytest.mark.parametrize(
    ("producer_codec", "topic_codec"),
    [
        (None, "gzip"),
        ("gzip", "zstd"),
        ("snappy", "lz4"),
        ("lz4", "snappy"),
        ("zstd", "uncompressed"),
    ],
)
async def test_broker_recompression_reads_back_exactly(
    kafka_cluster: KafkaCluster, producer_codec: str | None, topic_codec: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "recompress", 1, {"compression.type": topic_codec})
    sent = _records(f"{producer_codec}-{topic_codec}")
    async with Producer(
        bootstrap_servers=bootstrap, compression_type=producer_codec, linger_ms=20
    ) as producer:
        for record in sent:
            await producer.send(topic, partition=0, **record)  # type: ignore[arg-type]
        await producer.flush()
    # What the broker stored: batches in the topic's codec, whatever the producer used.
    stored = {batch.compression_type for batch in await fetch_raw_batches(bootstrap, topic)}
    expected_codec = (
        CompressionType.NONE
        if topic_codec == "uncompressed"
        else CompressionType[topic_codec.upper()]
    )
    assert stored == {expected_codec}
    ours = await read_all(bootstrap, [TopicPartition(topic, 0)], expected=len(sent))
    assert [(r.key, r.value, r.timestamp, list(r.headers)) for r in ours] == [
        (s["key"], s["value"], s["timestamp"], s["headers"]) for s in sent
    ]
    theirs = await asyncio.to_thread(
        read_with_librdkafka, bootstrap, topic, at_least=len(sent), idle_s=1.0
    )
    assert [(m.key(), m.value(), m.timestamp()[1], m.headers() or []) for m in theirs] == [
        (s["key"], s["value"], s["timestamp"], s["headers"]) for s in sent
    ]


@pytest.mark.parametrize("codec", CODECS)
async def test_every_codec_of_ours_read_by_both_clients(
    kafka_cluster: KafkaCluster, codec: str | None
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "codec", 1)  # compression.type=producer: kept as sent
    sent = _records(str(codec))
    async with Producer(
        bootstrap_servers=bootstrap, compression_type=codec, linger_ms=20
    ) as producer:
        for record in sent:
            await producer.send(topic, partition=0, **record)  # type: ignore[arg-type]
        await producer.flush()
    stored = {batch.compression_type for batch in await fetch_raw_batches(bootstrap, topic)}
    assert stored == {CompressionType[(codec or "none").upper()]}
    ours = await read_all(bootstrap, [TopicPartition(topic, 0)], expected=len(sent))
    theirs = await asyncio.to_thread(
        read_with_librdkafka, bootstrap, topic, at_least=len(sent), idle_s=1.0
    )
    expected = [(s["key"], s["value"], s["timestamp"], s["headers"]) for s in sent]
    assert [(r.key, r.value, r.timestamp, list(r.headers)) for r in ours] == expected
    assert [(m.key(), m.value(), m.timestamp()[1], m.headers() or []) for m in theirs] == expected


async def test_record_over_max_message_bytes_fails_typed_without_retries(
    kafka_cluster: KafkaCluster,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "too-large", 1, {"max.message.bytes": "2000"})
    async with Producer(bootstrap_servers=bootstrap, linger_ms=0) as producer:
        small = await producer.send_and_wait(topic, b"x" * 100, partition=0)
        assert small.offset == 0
        started = time.monotonic()
        handle = await producer.send(topic, b"y" * 5000, partition=0)
        with pytest.raises(errors.RecordTooLargeError) as info:
            await handle
        assert time.monotonic() - started < 10  # refused once, not retried until a timeout
        assert handle._batch.attempts == 1
        assert "MESSAGE_TOO_LARGE" in str(info.value) or isinstance(
            info.value.__cause__, errors.MessageTooLargeError
        )
        after = await producer.send_and_wait(topic, b"z" * 100, partition=0)
        assert after.offset == 1  # the producer goes on


async def test_a_short_librdkafka_read_explains_itself(kafka_cluster: KafkaCluster) -> None:
    # As when retention deleted a test's records before librdkafka read them (a CI run saw []):
    # the helper fails, naming the partition's offsets and showing librdkafka's debug log.
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "short-read", 1)
    tp = TopicPartition(topic, 0)
    async with Producer(bootstrap_servers=bootstrap, linger_ms=0) as producer:
        for i in range(3):
            await producer.send_and_wait(topic, b"v%d" % i, partition=0)
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.delete_records({tp: 3})
    with pytest.raises(AssertionError) as info:
        await asyncio.to_thread(read_with_librdkafka, bootstrap, topic, at_least=3, timeout_s=2)
    text = str(info.value)
    assert f"librdkafka read 0 messages of {topic}, 3 wanted" in text
    assert "p0: log start 3, end 3" in text and "records were deleted" in text
    assert f"Start consuming {topic} [0] at offset BEGINNING" in text  # the debug log
