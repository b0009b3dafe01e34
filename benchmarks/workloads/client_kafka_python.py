"""The workloads on kafka-python (thread based; optional peer)."""

from __future__ import annotations

import threading
import time
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

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

ASYNC = False


def _producer(spec: dict[str, Any]) -> KafkaProducer:
    options: dict[str, Any] = {
        "bootstrap_servers": spec["bootstrap"],
        "acks": spec.get("acks", 1),
        "compression_type": spec.get("compression"),
        "linger_ms": spec.get("linger_ms", 5),
    }
    if spec.get("idempotence"):
        options["enable_idempotence"] = True
    else:
        options["enable_idempotence"] = False
    # kafka-python 3 has no buffer_memory option: workload 8 runs with its defaults.
    return KafkaProducer(**options)


def _flush(producer: KafkaProducer, spec: dict[str, Any]) -> None:
    producer.flush(timeout=spec["time_limit_s"])


def produce(spec: dict[str, Any]) -> dict[str, Any]:
    topic, count = spec["topic"], spec["records"]
    values, keys = payloads(spec["value_size"], spec["key_size"])
    meter = CpuMeter()
    producer = _producer(spec)
    try:
        producer.partitions_for(topic)
        meter.ready()
        rss_start = rss_kb()
        send = producer.send
        for i in range(warm_up_count(count)):  # warm-up: not timed, not metered
            send(topic, values[i & POOL_MASK], key=keys[i & POOL_MASK])
        _flush(producer, spec)
        meter.start()
        started = now()
        for i in range(count):
            send(topic, values[i & POOL_MASK], key=keys[i & POOL_MASK])
        _flush(producer, spec)
        elapsed = now() - started
        cpu = meter.figures(count)
    finally:
        producer.close(timeout=10)
    result = throughput(count, count * (spec["value_size"] + spec["key_size"]), elapsed)
    result.update(rss_start_kb=rss_start, rss_peak_kb=peak_rss_kb(), **cpu)
    return result


def senders(spec: dict[str, Any]) -> dict[str, Any]:
    """The equivalent of many senders: the same send calls, from one thread."""
    result = produce(dict(spec, records=spec["senders"] * spec["per_sender"]))
    result.pop("rss_start_kb", None)
    return result


def _consumer(spec: dict[str, Any], group: str | None, *topics: str) -> KafkaConsumer:
    options: dict[str, Any] = {}
    if "fetch_max_wait_ms" in spec:
        options["fetch_max_wait_ms"] = spec["fetch_max_wait_ms"]
    return KafkaConsumer(
        *topics,
        bootstrap_servers=spec["bootstrap"],
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=GROUP_SESSION_TIMEOUT_MS,
        **options,
    )


def consume(spec: dict[str, Any]) -> dict[str, Any]:
    topic, count, group = spec["topic"], spec["records"], spec.get("group_id")
    partitions = [TopicPartition(topic, p) for p in range(spec["partitions"])]
    meter = CpuMeter()
    started = now()  # cold: client start-up and offset lookup (or the group join) included
    if group:
        consumer = _consumer(spec, group, topic)
    else:
        consumer = _consumer(spec, None)
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
    received = payload = 0
    first = first_count = None
    limit = started + spec["time_limit_s"]
    warm = count // 10  # the meter starts once this many records are in
    try:
        while received < count and now() < limit:
            batches = consumer.poll(timeout_ms=1000, max_records=10_000)
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
        consumer.close()
    result = consumed(received, payload, elapsed, first, first_count)
    result.update(rss_peak_kb=peak_rss_kb(), **cpu)
    return result


def latency(spec: dict[str, Any]) -> dict[str, Any]:
    """Producer paced in the main thread, consumer in a second thread."""
    topic, count = spec["topic"], spec["records"]
    padding, _ = latency_value(spec["value_size"])
    partitions = [TopicPartition(topic, p) for p in range(spec["partitions"])]
    consumer = _consumer(spec, None)
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    producer = _producer(spec)
    producer.partitions_for(topic)
    latencies: list[int] = []
    limit = now() + spec["time_limit_s"]
    failure: list[BaseException] = []

    def read() -> None:
        try:
            while len(latencies) < count and now() < limit:
                batches = consumer.poll(timeout_ms=200)
                arrived = stamp_ns()
                for records in batches.values():
                    for record in records:
                        latencies.append(arrived - int.from_bytes(record.value[:8], "big"))
        except BaseException as exc:
            failure.append(exc)

    reader = threading.Thread(target=read, name="bench-consumer", daemon=True)
    reader.start()
    time.sleep(0.2)
    pacer = Pacer(spec["rate"], count)
    pacer.start()
    while not pacer.done and now() < limit:
        due = pacer.due()
        for _ in range(due):
            producer.send(topic, stamp_ns().to_bytes(8, "big") + padding)
        pacer.sent += due
        time.sleep(pacer.wait_s())
    _flush(producer, spec)
    reader.join(timeout=max(1.0, limit - now()))
    producer.close(timeout=10)
    consumer.close()
    if failure:
        raise failure[0]
    result = latency_summary(latencies)
    result.update(records=len(latencies), rss_peak_kb=peak_rss_kb())
    return result


def scale(spec: dict[str, Any]) -> dict[str, Any]:
    """One record to each partition of each topic, from a cold client (creation included)."""
    topics, partitions = spec["topics"], spec["partitions"]
    value = b"v" * spec["value_size"]
    started = now()
    producer = _producer(spec)
    try:
        for topic in topics:
            for partition in range(partitions):
                producer.send(topic, value, partition=partition)
        _flush(producer, spec)
        elapsed = now() - started
    finally:
        producer.close(timeout=10)
    count = len(topics) * partitions
    result = throughput(count, count * spec["value_size"], elapsed)
    result.update(rss_peak_kb=peak_rss_kb())
    return result
