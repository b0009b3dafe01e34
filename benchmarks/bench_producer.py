"""Producer throughput: aiokafkawire vs aiokafka vs confluent-kafka against one Tansu broker.

Run: ``python benchmarks/bench_producer.py [--records N | --million] [--profile FILE.html]``.

Workload: 100-byte values, 8-byte keys, 3 partitions, acks=1, lz4, linger 5 ms, default batch size
(16 KiB).  Each client writes every record to its own new topic and waits until all are
acknowledged; the time is wall-clock from the first send to the last acknowledgement (client
start-up excluded).  Prints records/s for each and the ratios.  ``--profile`` runs our producer
under pyinstrument and writes an HTML report.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from aiokafkawire.producer import Producer
from aiokafkawire.testing import TansuBroker

VALUE_SIZE = 100
PARTITIONS = 3


def make_records(count: int) -> tuple[list[bytes], list[bytes]]:
    """8-byte keys and 100-byte values (half random, half text: compressible, never identical)."""
    seed = os.urandom(VALUE_SIZE // 2)
    half = VALUE_SIZE // 2
    values = [seed[: half - 8] + b"%08d" % i + b"a" * half for i in range(count)]
    keys = [b"%08d" % (i * 7919 % 100_000_000) for i in range(count)]
    return keys, values


def create_topic(bootstrap: str) -> str:
    """A new topic with PARTITIONS partitions (through librdkafka's admin client)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])
    futures[name].result(30)
    return name


async def run_ours(bootstrap: str, topic: str, keys: list[bytes], values: list[bytes]) -> float:
    async with Producer(
        bootstrap_servers=bootstrap, acks=1, compression="lz4", linger_ms=5
    ) as producer:
        await producer.partitions_for(topic)
        started = time.perf_counter()
        send = producer.send
        last = None
        for key, value in zip(keys, values, strict=True):
            last = await send(topic, value, key)
        await producer.flush()
        elapsed = time.perf_counter() - started
        assert last is not None and (await last).offset >= 0
    return elapsed


async def run_aiokafka(bootstrap: str, topic: str, keys: list[bytes], values: list[bytes]) -> float:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks=1, compression_type="lz4", linger_ms=5
    )
    await producer.start()
    try:
        await producer.partitions_for(topic)
        started = time.perf_counter()
        send = producer.send
        last = None
        for key, value in zip(keys, values, strict=True):
            last = await send(topic, value, key=key)
        await producer.flush()
        elapsed = time.perf_counter() - started
        assert last is not None and (await last).offset >= 0
    finally:
        await producer.stop()
    return elapsed


def run_confluent(bootstrap: str, topic: str, keys: list[bytes], values: list[bytes]) -> float:
    from confluent_kafka import Producer as CkProducer

    producer = CkProducer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "compression.type": "lz4",
            "linger.ms": 5,
            "partitioner": "murmur2_random",
        }
    )
    producer.list_topics(topic, timeout=10)
    failures = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal failures
        if err is not None:
            failures += 1

    started = time.perf_counter()
    produce = producer.produce
    for key, value in zip(keys, values, strict=True):
        while True:
            try:
                produce(topic, value, key, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.001)  # queue full: serve delivery reports, then retry
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    assert remaining == 0 and failures == 0
    return elapsed


def _measure(name: str, count: int, runner: Callable[[], float]) -> float:
    elapsed = runner()
    rate = count / elapsed
    print(f"{name:<16} {count:>10,} records in {elapsed:6.2f}s = {rate:>11,.0f} records/s")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--million", action="store_true", help="send 1,000,000 records")
    parser.add_argument("--profile", metavar="HTML", help="profile our producer (pyinstrument)")
    parser.add_argument(
        "--only", choices=["ours", "aiokafka", "confluent"], help="run one client only"
    )
    args = parser.parse_args()
    count = 1_000_000 if args.million else args.records
    keys, values = make_records(count)
    with TansuBroker() as broker:
        bootstrap = broker.bootstrap_servers
        print(
            f"Tansu at {bootstrap}; {count:,} records, {VALUE_SIZE}-byte values, 8-byte keys, "
            f"{PARTITIONS} partitions, acks=1, lz4, linger 5 ms"
        )
        rates: dict[str, float] = {}

        def ours() -> float:
            topic = create_topic(bootstrap)
            if args.profile:
                from pyinstrument import Profiler

                profiler = Profiler(async_mode="enabled")
                with profiler:
                    elapsed = asyncio.run(run_ours(bootstrap, topic, keys, values))
                with open(args.profile, "w") as out:
                    out.write(profiler.output_html())
                print(profiler.output_text(unicode=True, color=False, show_all=False)[:6000])
                return elapsed
            return asyncio.run(run_ours(bootstrap, topic, keys, values))

        if args.only in (None, "ours"):
            rates["aiokafkawire"] = _measure("aiokafkawire", count, ours)
        if args.only in (None, "aiokafka"):
            rates["aiokafka"] = _measure(
                "aiokafka",
                count,
                lambda: asyncio.run(run_aiokafka(bootstrap, create_topic(bootstrap), keys, values)),
            )
        if args.only in (None, "confluent"):
            rates["confluent-kafka"] = _measure(
                "confluent-kafka",
                count,
                lambda: run_confluent(bootstrap, create_topic(bootstrap), keys, values),
            )
    if "aiokafkawire" in rates:
        for other in ("aiokafka", "confluent-kafka"):
            if other in rates:
                print(f"aiokafkawire / {other}: {rates['aiokafkawire'] / rates[other]:.2f}x")


if __name__ == "__main__":
    main()
