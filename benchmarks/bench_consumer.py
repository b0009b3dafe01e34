"""Consumer throughput: aiokafkawire vs aiokafka vs confluent-kafka on one Tansu broker.

Fills a 3-partition topic with 100-byte records using confluent-kafka's producer, then reads all
of them with each client, with manual assignment and as a one-member group::

    python benchmarks/bench_consumer.py                 # 200,000 records
    python benchmarks/bench_consumer.py --full          # 1,000,000 records
    python benchmarks/bench_consumer.py --profile       # pyinstrument profile of aiokafkawire
    python benchmarks/bench_consumer.py --bootstrap host:9092   # an existing broker instead
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable

PARTITIONS = 3
VALUE = b"x" * 100
# The same for every client: Tansu holds a new group's first join for a while that grows with
# the session timeout, and the clients' defaults differ (10 s for aiokafka, 45 s for the others).
SESSION_TIMEOUT_MS = 10_000


def fill(bootstrap: str, topic: str, count: int) -> None:
    """Create the topic and write ``count`` 100-byte records with confluent-kafka."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(timeout=30)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "compression.type": "none",
        }
    )
    for i in range(count):
        while True:
            try:
                producer.produce(topic, VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


async def ours(bootstrap: str, topic: str, count: int, group: bool) -> int:
    """aiokafkawire: getmany() until every record was read."""
    from aiokafkawire.consumer import Consumer
    from aiokafkawire.structs import TopicPartition

    options = dict(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    if group:
        consumer = Consumer(
            topic,
            group_id=f"bench-{uuid.uuid4().hex[:6]}",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            **options,
        )
    else:
        consumer = Consumer(**options)
    got = 0
    async with consumer:
        if not group:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        while got < count:
            for records in (await consumer.getmany(timeout_ms=1000, max_records=10_000)).values():
                got += len(records)
    return got


async def theirs_aiokafka(bootstrap: str, topic: str, count: int, group: bool) -> int:
    """aiokafka's AIOKafkaConsumer: getmany() until every record was read."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    if group:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=f"bench-{uuid.uuid4().hex[:6]}",
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_TIMEOUT_MS,
        )
    else:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    got = 0
    await consumer.start()
    try:
        if not group:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        while got < count:
            for records in (await consumer.getmany(timeout_ms=1000, max_records=10_000)).values():
                got += len(records)
    finally:
        await consumer.stop()
    return got


def theirs_confluent(bootstrap: str, topic: str, count: int, group: bool) -> int:
    """confluent-kafka's Consumer: consume() in batches until every record was read."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
        }
    )
    got = 0
    try:
        if group:
            consumer.subscribe([topic])
        else:
            consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        while got < count:
            for message in consumer.consume(10_000, 1.0):
                if not message.error():
                    got += 1
    finally:
        consumer.close()
    return got


async def timed(name: str, run: Callable[[], Awaitable[int]], count: int) -> float:
    start = time.perf_counter()
    got = await run()
    elapsed = time.perf_counter() - start
    assert got >= count, f"{name}: {got} of {count}"
    rate = count / elapsed
    print(f"  {name:<34} {elapsed:7.2f} s  {rate:12,.0f} records/s", flush=True)
    return rate


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--full", action="store_true", help="1,000,000 records")
    parser.add_argument("--profile", action="store_true", help="profile aiokafkawire only")
    parser.add_argument("--bootstrap", help="use this broker instead of starting Tansu")
    args = parser.parse_args()
    count = 1_000_000 if args.full else args.records
    # Import every client up front so no run pays for imports inside its timing.
    import aiokafka  # noqa: F401
    import confluent_kafka  # noqa: F401

    import aiokafkawire.consumer  # noqa: F401

    broker = None
    if args.bootstrap:
        bootstrap = args.bootstrap
    else:
        from aiokafkawire.testing import TansuBroker

        broker = TansuBroker()
        broker.start()
        bootstrap = broker.bootstrap_servers
    try:
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        start = time.perf_counter()
        await asyncio.to_thread(fill, bootstrap, topic, count)
        print(f"filled {topic} with {count:,} records in {time.perf_counter() - start:.1f} s")
        if args.profile:
            from pyinstrument import Profiler

            profiler = Profiler(async_mode="enabled")
            with profiler:
                await timed(
                    "aiokafkawire (assign)", lambda: ours(bootstrap, topic, count, False), count
                )
            print(profiler.output_text(unicode=True, color=False, show_all=False))
            return
        rates: dict[str, float] = {}
        for group in (False, True):
            mode = "group" if group else "assign"
            print(f"{mode}:")
            rates[f"aiokafkawire {mode}"] = await timed(
                f"aiokafkawire ({mode})", lambda g=group: ours(bootstrap, topic, count, g), count
            )
            rates[f"aiokafka {mode}"] = await timed(
                f"aiokafka ({mode})",
                lambda g=group: theirs_aiokafka(bootstrap, topic, count, g),
                count,
            )
            rates[f"confluent {mode}"] = await timed(
                f"confluent-kafka ({mode})",
                lambda g=group: asyncio.to_thread(theirs_confluent, bootstrap, topic, count, g),
                count,
            )
        print("ratios (aiokafkawire / other):")
        for mode in ("assign", "group"):
            mine = rates[f"aiokafkawire {mode}"]
            print(
                f"  {mode:<7} vs aiokafka {mine / rates[f'aiokafka {mode}']:.2f}x, "
                f"vs confluent-kafka {mine / rates[f'confluent {mode}']:.2f}x"
            )
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    asyncio.run(main())
