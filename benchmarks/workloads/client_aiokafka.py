"""The workloads on aiokafka (AIOKafkaProducer / AIOKafkaConsumer)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from workloads.common import (
    GROUP_SESSION_TIMEOUT_MS,
    POOL_MASK,
    CpuMeter,
    Pacer,
    consumed,
    latency_summary,
    latency_value,
    now,
    payloads,
    peak_rss_kb,
    rss_kb,
    stamp_ns,
    throughput,
    warm_up_count,
)

ASYNC = True


def _producer(spec: dict[str, Any], **overrides: Any) -> AIOKafkaProducer:
    # aiokafka has no buffer_memory: it keeps at most one pending batch of max_batch_size
    # (16 KiB default) per partition and makes send() wait for it, so that is its bound.
    options: dict[str, Any] = {
        "bootstrap_servers": spec["bootstrap"],
        "acks": spec.get("acks", 1),
        "compression_type": spec.get("compression"),
        "linger_ms": spec.get("linger_ms", 5),
    }
    if spec.get("idempotence"):
        options["enable_idempotence"] = True
    options.update(overrides)
    return AIOKafkaProducer(**options)


async def produce(spec: dict[str, Any]) -> dict[str, Any]:
    topic, count = spec["topic"], spec["records"]
    values, keys = payloads(spec["value_size"], spec["key_size"])
    meter = CpuMeter()
    producer = _producer(spec)
    await producer.start()
    try:
        await producer.partitions_for(topic)  # metadata known before the clock starts
        meter.ready()
        rss_start = rss_kb()
        send = producer.send
        for i in range(warm_up_count(count)):  # warm-up: not timed, not metered
            await send(topic, values[i & POOL_MASK], key=keys[i & POOL_MASK])
        await producer.flush()
        meter.start()
        started = now()
        for i in range(count):
            await send(topic, values[i & POOL_MASK], key=keys[i & POOL_MASK])
        await producer.flush()
        elapsed = now() - started
        cpu = meter.figures(count)
    finally:
        await producer.stop()
    result = throughput(count, count * (spec["value_size"] + spec["key_size"]), elapsed)
    result.update(rss_start_kb=rss_start, rss_peak_kb=peak_rss_kb(), **cpu)
    return result


async def senders(spec: dict[str, Any]) -> dict[str, Any]:
    """``senders`` coroutines, each sending ``per_sender`` records, then awaiting them."""
    topic, tasks, each = spec["topic"], spec["senders"], spec["per_sender"]
    values, keys = payloads(spec["value_size"], spec["key_size"])
    producer = _producer(spec)
    await producer.start()

    async def sender(n: int) -> None:
        handles = []
        base = n * each
        for i in range(base, base + each):
            handle = await producer.send(topic, values[i & POOL_MASK], key=keys[i & POOL_MASK])
            handles.append(handle)
        for handle in handles:
            await handle

    meter = CpuMeter()
    count = tasks * each
    try:
        await producer.partitions_for(topic)
        meter.ready()
        for i in range(warm_up_count(count)):  # warm-up: not timed, not metered
            await producer.send(topic, values[i & POOL_MASK], key=keys[i & POOL_MASK])
        await producer.flush()
        meter.start()
        started = now()
        await asyncio.gather(*(sender(n) for n in range(tasks)))
        await producer.flush()
        elapsed = now() - started
        cpu = meter.figures(count)
    finally:
        await producer.stop()
    result = throughput(count, count * (spec["value_size"] + spec["key_size"]), elapsed)
    result.update(rss_peak_kb=peak_rss_kb(), **cpu)
    return result


async def consume(spec: dict[str, Any]) -> dict[str, Any]:
    topic, count, group = spec["topic"], spec["records"], spec.get("group_id")
    partitions = [TopicPartition(topic, p) for p in range(spec["partitions"])]
    meter = CpuMeter()
    started = now()  # cold: client start-up and offset lookup (or the group join) included
    if group:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=spec["bootstrap"],
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=GROUP_SESSION_TIMEOUT_MS,
        )
    else:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=spec["bootstrap"],
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
    await consumer.start()
    try:
        if not group:
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
        received = payload = 0
        first = first_count = None
        limit = started + spec["time_limit_s"]
        warm = count // 10  # the meter starts once this many records are in
        while received < count and now() < limit:
            batches = await consumer.getmany(timeout_ms=1000, max_records=10_000)
            for records in batches.values():
                if first is None:
                    first = now() - started
                for record in records:
                    payload += len(record.value) + len(record.key)
                received += len(records)
            if first_count is None and first is not None:
                first_count = received
            if meter.started_s is None and received >= warm:
                meter.start(received)
        elapsed = now() - started
        cpu = meter.figures(received)
    finally:
        await consumer.stop()
    result = consumed(received, payload, elapsed, first, first_count)
    result.update(rss_peak_kb=peak_rss_kb(), **cpu)
    return result


async def latency(spec: dict[str, Any]) -> dict[str, Any]:
    topic, count = spec["topic"], spec["records"]
    partitions = [TopicPartition(topic, p) for p in range(spec["partitions"])]
    padding, _ = latency_value(spec["value_size"])
    consumer = AIOKafkaConsumer(
        bootstrap_servers=spec["bootstrap"],
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=spec["fetch_max_wait_ms"],
    )
    producer = _producer(spec)
    await consumer.start()
    await producer.start()
    latencies: list[int] = []
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        await producer.partitions_for(topic)
        pacer = Pacer(spec["rate"], count)
        limit = now() + spec["time_limit_s"]

        async def read() -> None:
            while len(latencies) < count and now() < limit:
                batches = await consumer.getmany(timeout_ms=200)
                arrived = stamp_ns()
                for records in batches.values():
                    for record in records:
                        latencies.append(arrived - int.from_bytes(record.value[:8], "big"))

        reader = asyncio.ensure_future(read())
        await asyncio.sleep(0.2)  # let the consumer's first fetch go out
        pacer.start()
        while not pacer.done and now() < limit:
            due = pacer.due()
            for _ in range(due):
                await producer.send(topic, stamp_ns().to_bytes(8, "big") + padding)
            pacer.sent += due
            await asyncio.sleep(pacer.wait_s())
        await producer.flush()
        await asyncio.wait_for(reader, timeout=max(1.0, limit - now()))
    finally:
        await producer.stop()
        await consumer.stop()
    result = latency_summary(latencies)
    result.update(records=len(latencies), rss_peak_kb=peak_rss_kb())
    return result


async def scale(spec: dict[str, Any]) -> dict[str, Any]:
    """One record to each partition of each topic, from a cold client (start included)."""
    topics, partitions = spec["topics"], spec["partitions"]
    value = b"v" * spec["value_size"]
    started = now()
    producer = _producer(spec)
    await producer.start()
    try:
        for topic in topics:
            for partition in range(partitions):
                await producer.send(topic, value, partition=partition)
        await producer.flush()
        elapsed = now() - started
    finally:
        await producer.stop()
    count = len(topics) * partitions
    result = throughput(count, count * spec["value_size"], elapsed)
    result.update(rss_peak_kb=peak_rss_kb())
    return result


async def websvc(spec: dict[str, Any]) -> dict[str, Any]:
    """``tasks`` handlers, each awaiting ``send_and_wait`` in turn, ``records`` in all."""
    topic, count, tasks = spec["topic"], spec["records"], spec["tasks"]
    values, _ = payloads(spec["value_size"], 0)
    meter = CpuMeter()
    producer = _producer(spec)
    await producer.start()
    latencies: list[int] = []

    async def handler(n: int, total: int, record: bool) -> None:
        for i in range(n, total, tasks):
            sent = stamp_ns()
            await producer.send_and_wait(topic, values[i & POOL_MASK])
            if record:
                latencies.append(stamp_ns() - sent)

    try:
        await producer.partitions_for(topic)
        meter.ready()
        warm = warm_up_count(count)
        await asyncio.gather(*(handler(n, warm, False) for n in range(tasks)))  # warm-up
        meter.start()
        started = now()
        await asyncio.gather(*(handler(n, count, True) for n in range(tasks)))
        elapsed = now() - started
        cpu = meter.figures(count)
    finally:
        await producer.stop()
    result = throughput(count, count * spec["value_size"], elapsed)
    result.update(latency_summary(latencies))
    result.update(rss_peak_kb=peak_rss_kb(), **cpu)
    return result
