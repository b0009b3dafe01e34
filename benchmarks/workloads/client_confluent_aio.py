"""The workloads on confluent-kafka's asyncio classes (``confluent_kafka.aio``, 2.13+).

``AIOProducer.produce`` buffers records in Python and hands them to librdkafka in batches of
``batch_size`` (1,000) on a thread pool, or after ``buffer_timeout`` (1 s) without a new record;
the future it returns resolves on the delivery report.  ``AIOConsumer`` runs each call in a
thread pool.  The throughput runs use the defaults.  The web-service pattern (500 handlers each
awaiting its record) never fills a 1,000-record buffer, so every round would wait out the 1 s
timeout: it runs with ``batch_size=1`` (each record handed over at once), the setting an asyncio
user of this API needs for that pattern.
"""

from __future__ import annotations

import asyncio
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition
from confluent_kafka.aio import AIOConsumer, AIOProducer

from workloads.client_confluent import BULK_READ, _config
from workloads.common import (
    GROUP_SESSION_TIMEOUT_MS,
    POOL_MASK,
    CpuMeter,
    consumed,
    latency_summary,
    now,
    payloads,
    peak_rss_kb,
    rss_kb,
    stamp_ns,
    throughput,
    warm_up_count,
)

ASYNC = True


def _producer(spec: dict[str, Any], **options: Any) -> AIOProducer:
    return AIOProducer(_config(spec), **options)


async def _flush(producer: AIOProducer, spec: dict[str, Any]) -> None:
    remaining = await producer.flush(spec["time_limit_s"])
    if remaining:
        raise RuntimeError(f"flush left {remaining} messages undelivered")


async def _send(
    producer: AIOProducer, topic: str, first: int, stop: int, values: list[bytes], keys: list[bytes]
) -> list[asyncio.Future[Any]]:
    produce = producer.produce
    return [
        await produce(topic, values[i & POOL_MASK], keys[i & POOL_MASK]) for i in range(first, stop)
    ]


async def produce(spec: dict[str, Any]) -> dict[str, Any]:
    topic, count = spec["topic"], spec["records"]
    values, keys = payloads(spec["value_size"], spec["key_size"])
    meter = CpuMeter()
    producer = _producer(spec)
    try:
        await producer.list_topics(topic, timeout=10)  # metadata known before the clock starts
        meter.ready()
        rss_start = rss_kb()
        await _send(producer, topic, 0, warm_up_count(count), values, keys)  # warm-up
        await _flush(producer, spec)
        meter.start()
        started = now()
        delivered = await _send(producer, topic, 0, count, values, keys)
        await _flush(producer, spec)
        elapsed = now() - started
        cpu = meter.figures(count)
        await asyncio.gather(*delivered)  # every delivery report came (raises a failure)
    finally:
        await producer.close()
    result = throughput(count, count * (spec["value_size"] + spec["key_size"]), elapsed)
    result.update(rss_start_kb=rss_start, rss_peak_kb=peak_rss_kb(), **cpu)
    return result


async def senders(spec: dict[str, Any]) -> dict[str, Any]:
    """``senders`` coroutines, each producing ``per_sender`` records, then awaiting them."""
    topic, tasks, each = spec["topic"], spec["senders"], spec["per_sender"]
    values, keys = payloads(spec["value_size"], spec["key_size"])
    meter = CpuMeter()
    count = tasks * each
    producer = _producer(spec)

    async def sender(n: int) -> None:
        for future in await _send(producer, topic, n * each, (n + 1) * each, values, keys):
            await future

    try:
        await producer.list_topics(topic, timeout=10)
        meter.ready()
        await _send(producer, topic, 0, warm_up_count(count), values, keys)  # warm-up
        await _flush(producer, spec)
        meter.start()
        started = now()
        await asyncio.gather(*(sender(n) for n in range(tasks)))
        await _flush(producer, spec)
        elapsed = now() - started
        cpu = meter.figures(count)
    finally:
        await producer.close()
    result = throughput(count, count * (spec["value_size"] + spec["key_size"]), elapsed)
    result.update(rss_peak_kb=peak_rss_kb(), **cpu)
    return result


async def consume(spec: dict[str, Any]) -> dict[str, Any]:
    topic, count, group = spec["topic"], spec["records"], spec.get("group_id")
    meter = CpuMeter()
    started = now()  # cold: client start-up and offset lookup (or the group join) included
    consumer = AIOConsumer(
        {
            "bootstrap.servers": spec["bootstrap"],
            "group.id": group or "bench-unused",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": GROUP_SESSION_TIMEOUT_MS,
            **BULK_READ,
        }
    )
    if group:
        await consumer.subscribe([topic])
    else:
        await consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(spec["partitions"])]
        )
    received = payload = 0
    first = first_count = None
    limit = started + spec["time_limit_s"]
    warm = count // 10  # the meter starts once this many records are in
    try:
        while received < count and now() < limit:
            messages = await consumer.consume(num_messages=10_000, timeout=1.0)
            if messages and first is None:
                first = now() - started
            for message in messages:
                if message.error():
                    raise KafkaException(message.error())
                payload += len(message.value()) + len(message.key())
            received += len(messages)
            if first_count is None and first is not None:
                first_count = received
            if meter.started_s is None and received >= warm:
                meter.start(received)
        elapsed = now() - started
        cpu = meter.figures(received)
    finally:
        await consumer.close()
    result = consumed(received, payload, elapsed, first, first_count)
    result.update(rss_peak_kb=peak_rss_kb(), **cpu)
    return result


async def websvc(spec: dict[str, Any]) -> dict[str, Any]:
    """``tasks`` handlers, each awaiting its record's delivery in turn, ``records`` in all."""
    topic, count, tasks = spec["topic"], spec["records"], spec["tasks"]
    values, _ = payloads(spec["value_size"], 0)
    meter = CpuMeter()
    producer = _producer(spec, batch_size=1)
    latencies: list[int] = []

    async def handler(n: int, total: int, record: bool) -> None:
        for i in range(n, total, tasks):
            sent = stamp_ns()
            await (await producer.produce(topic, values[i & POOL_MASK]))
            if record:
                latencies.append(stamp_ns() - sent)

    try:
        await producer.list_topics(topic, timeout=10)
        meter.ready()
        warm = warm_up_count(count)
        await asyncio.gather(*(handler(n, warm, False) for n in range(tasks)))  # warm-up
        meter.start()
        started = now()
        await asyncio.gather(*(handler(n, count, True) for n in range(tasks)))
        elapsed = now() - started
        cpu = meter.figures(count)
    finally:
        await producer.close()
    result = throughput(count, count * spec["value_size"], elapsed)
    result.update(latency_summary(latencies))
    result.update(rss_peak_kb=peak_rss_kb(), **cpu)
    return result


async def scale(spec: dict[str, Any]) -> dict[str, Any]:
    """One record to each partition of each topic, from a cold client (creation included)."""
    topics, partitions = spec["topics"], spec["partitions"]
    value = b"v" * spec["value_size"]
    started = now()
    producer = _producer(spec)
    try:
        for topic in topics:
            for partition in range(partitions):
                await producer.produce(topic, value, partition=partition)
        await _flush(producer, spec)
        elapsed = now() - started
    finally:
        await producer.close()
    count = len(topics) * partitions
    result = throughput(count, count * spec["value_size"], elapsed)
    result.update(rss_peak_kb=peak_rss_kb())
    return result
