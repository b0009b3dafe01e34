"""The workloads on confluent-kafka (librdkafka; callback based, driven by poll/flush).

No per-message delivery callback is registered on the throughput runs (the cheapest way to use
librdkafka from Python); the suite checks delivery afterwards from the partitions' end offsets.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

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


def _producer(spec: dict[str, Any]) -> Producer:
    return Producer(_config(spec))


def _config(spec: dict[str, Any]) -> dict[str, Any]:
    """The producer configuration of a workload (also used by the asyncio classes' module)."""
    config: dict[str, Any] = {
        "bootstrap.servers": spec["bootstrap"],
        "acks": str(spec.get("acks", 1)),
        "compression.type": spec.get("compression") or "none",
        "linger.ms": spec.get("linger_ms", 5),
    }
    if spec.get("idempotence"):
        config["enable.idempotence"] = True
    if spec.get("buffer_memory"):
        # librdkafka's bound on queued (undelivered) messages, the buffer_memory equivalent.
        config["queue.buffering.max.kbytes"] = spec["buffer_memory"] // 1024
    return config


def _flush(producer: Producer, spec: dict[str, Any]) -> None:
    remaining = producer.flush(spec["time_limit_s"])
    if remaining:
        raise RuntimeError(f"flush left {remaining} messages undelivered")


def _produce_loop(
    producer: Producer, topic: str, count: int, values: list[bytes], keys: list[bytes]
) -> None:
    produce, poll = producer.produce, producer.poll
    for i in range(count):
        while True:
            try:
                produce(topic, values[i & POOL_MASK], keys[i & POOL_MASK])
                break
            except BufferError:  # queue full: serve delivery reports, then retry
                poll(0.001)
        if not i & 1023:
            poll(0)


def produce(spec: dict[str, Any]) -> dict[str, Any]:
    topic, count = spec["topic"], spec["records"]
    values, keys = payloads(spec["value_size"], spec["key_size"])
    meter = CpuMeter()
    producer = _producer(spec)
    producer.list_topics(topic, timeout=10)  # metadata known before the clock starts
    meter.ready()
    rss_start = rss_kb()
    _produce_loop(producer, topic, warm_up_count(count), values, keys)  # not timed or metered
    _flush(producer, spec)
    meter.start()
    started = now()
    _produce_loop(producer, topic, count, values, keys)
    _flush(producer, spec)
    elapsed = now() - started
    cpu = meter.figures(count)
    result = throughput(count, count * (spec["value_size"] + spec["key_size"]), elapsed)
    result.update(rss_start_kb=rss_start, rss_peak_kb=peak_rss_kb(), **cpu)
    return result


def senders(spec: dict[str, Any]) -> dict[str, Any]:
    """The equivalent of many senders: the same produce calls, from one thread."""
    inner = dict(spec, records=spec["senders"] * spec["per_sender"])
    result = produce(inner)
    result.pop("rss_start_kb", None)
    return result


# librdkafka's defaults throttle a bulk read: once a partition's local queue holds
# queued.min.messages (100,000) it stops fetching for fetch.queue.backoff.ms (1,000 ms).  On this
# suite's 1,000,000-record read that caps it at ~150k records/s; with these two settings it reads
# 1.0-1.6M/s.  The consume workload uses them (the memory bound, queued.max.messages.kbytes =
# 64 MiB, stays), so the comparison is with librdkafka as a throughput-minded user would run it.
BULK_READ = {"queued.min.messages": 1_000_000, "fetch.queue.backoff.ms": 0}


def _consumer(spec: dict[str, Any], group: str | None, **extra: Any) -> Consumer:
    config: dict[str, Any] = {
        "bootstrap.servers": spec["bootstrap"],
        "group.id": group or "bench-unused",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": GROUP_SESSION_TIMEOUT_MS,
    }
    if "fetch_max_wait_ms" in spec:
        config["fetch.wait.max.ms"] = spec["fetch_max_wait_ms"]
    config.update(extra)
    return Consumer(config)


def consume(spec: dict[str, Any]) -> dict[str, Any]:
    topic, count, group = spec["topic"], spec["records"], spec.get("group_id")
    meter = CpuMeter()
    started = now()  # cold: client start-up and offset lookup (or the group join) included
    consumer = _consumer(spec, group, **BULK_READ)
    if group:
        consumer.subscribe([topic])
    else:
        consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(spec["partitions"])]
        )
    received = payload = 0
    first = first_count = None
    limit = started + spec["time_limit_s"]
    warm = count // 10  # the meter starts once this many records are in
    try:
        while received < count and now() < limit:
            messages = consumer.consume(num_messages=10_000, timeout=1.0)
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
        consumer.close()
    result = consumed(received, payload, elapsed, first, first_count)
    result.update(rss_peak_kb=peak_rss_kb(), **cpu)
    return result


def latency(spec: dict[str, Any]) -> dict[str, Any]:
    """Producer paced in the main thread, consumer in a second thread."""
    topic, count = spec["topic"], spec["records"]
    padding, _ = latency_value(spec["value_size"])
    consumer = _consumer(spec, None)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(spec["partitions"])])
    producer = _producer(spec)
    producer.list_topics(topic, timeout=10)
    latencies: list[int] = []
    limit = now() + spec["time_limit_s"]
    failure: list[BaseException] = []

    def read() -> None:
        try:
            # poll(), not consume(num_messages=...): consume() waits until it has that many
            # messages or its timeout passes, which would add its own batching delay.
            while len(latencies) < count and now() < limit:
                message = consumer.poll(0.2)
                if message is None:
                    continue
                arrived = stamp_ns()
                if message.error():
                    raise KafkaException(message.error())
                latencies.append(arrived - int.from_bytes(message.value()[:8], "big"))
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
            producer.produce(topic, stamp_ns().to_bytes(8, "big") + padding)
        pacer.sent += due
        producer.poll(0)
        time.sleep(pacer.wait_s())
    _flush(producer, spec)
    reader.join(timeout=max(1.0, limit - now()))
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
    for topic in topics:
        for partition in range(partitions):
            producer.produce(topic, value, partition=partition)
        producer.poll(0)
    _flush(producer, spec)
    elapsed = now() - started
    count = len(topics) * partitions
    result = throughput(count, count * spec["value_size"], elapsed)
    result.update(rss_peak_kb=peak_rss_kb())
    return result
