"""A Spark pipeline on Kafka with the ``aiokafkawire`` format: clicks in, per-user aggregates out.

1. produces a stream of JSON click events (``{"user": ..., "page": ..., "ms": ...}``, keyed by
   user) with aiokafkawire's producer;
2. reads them with Spark (``format("aiokafkawire")``), aggregates per user (clicks, distinct
   pages, first and last click);
3. writes the aggregates as JSON to another topic (``df.write.format("aiokafkawire")``);
4. reads those back with Spark and prints them.

Runs against an embedded broker by default (librdkafka's mock cluster, from confluent-kafka; or
``--broker kafka`` for Apache Kafka, resolved with Maven), or against ``--bootstrap-servers``::

    pip install -e '.[spark,testing]' && python examples/spark_pipeline.py

Needs Java 17+ for Spark.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import uuid
from typing import Any

from aiokafkawire import Admin, NewTopic, Producer

USERS = [f"user-{i:02d}" for i in range(12)]
PAGES = ["/", "/search", "/cart", "/checkout", "/help"] + [f"/item/{i}" for i in range(20)]


async def produce_clicks(bootstrap: str, topic: str, count: int) -> dict[str, int]:
    """Write ``count`` click events; returns how many each user made."""
    rng = random.Random(7)
    per_user: dict[str, int] = {}
    start_ms = int(time.time() * 1000) - count * 10
    async with Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=5) as producer:
        for i in range(count):
            user = rng.choice(USERS)
            event = {"user": user, "page": rng.choice(PAGES), "ms": start_ms + i * 10}
            await producer.send(topic, json.dumps(event).encode(), user.encode())
            per_user[user] = per_user.get(user, 0) + 1
        await producer.flush()
    return per_user


async def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    """Create the pipeline's topics on a real broker (the mock creates them itself)."""
    async with Admin(bootstrap_servers=bootstrap) as admin:
        results = await admin.create_topics(
            [NewTopic(name, partitions, 1) for name, partitions in topics.items()]
        )
        for name, result in results.items():
            if not result.ok:
                raise SystemExit(f"cannot create topic {name}: {result.error}")


def run_pipeline(spark: Any, bootstrap: str, clicks: str, aggregates: str) -> list[Any]:
    """Steps 2-4: read clicks, aggregate per user, write the aggregates, read them back."""
    from pyspark.sql import functions as F

    events = (
        spark.read.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", clicks)
        .option("startingOffsets", "earliest")
        .load()
        .select(
            F.from_json(F.col("value").cast("string"), "user string, page string, ms long").alias(
                "click"
            )
        )
        .select("click.*")
    )
    per_user = events.groupBy("user").agg(
        F.count("*").alias("clicks"),
        F.countDistinct("page").alias("pages"),
        F.min("ms").alias("first_ms"),
        F.max("ms").alias("last_ms"),
    )
    (
        per_user.select(
            F.col("user").cast("binary").alias("key"),
            F.to_json(F.struct("user", "clicks", "pages", "first_ms", "last_ms"))
            .cast("binary")
            .alias("value"),
        )
        .write.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", aggregates)
        .mode("append")
        .save()
    )
    back = (
        spark.read.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", aggregates)
        .load()
        .select(
            F.from_json(
                F.col("value").cast("string"),
                "user string, clicks long, pages long, first_ms long, last_ms long",
            ).alias("a")
        )
        .select("a.*")
        .orderBy("user")
    )
    return back.collect()  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap-servers", help="an existing cluster (default: embedded)")
    parser.add_argument(
        "--broker",
        choices=("mock", "kafka"),
        default="mock",
        help="embedded broker: librdkafka's mock cluster or Apache Kafka (KafkaCluster)",
    )
    parser.add_argument("--clicks", type=int, default=5000, help="click events to produce")
    args = parser.parse_args()

    suffix = uuid.uuid4().hex[:6]
    clicks, aggregates = f"clicks-{suffix}", f"clicks-per-user-{suffix}"
    topics = {clicks: 3, aggregates: 1}
    broker: Any = None
    if args.bootstrap_servers:
        bootstrap = args.bootstrap_servers
        asyncio.run(create_topics(bootstrap, topics))
    elif args.broker == "mock":
        from aiokafkawire.testing import MockCluster

        broker = MockCluster(1)
        for name, partitions in topics.items():
            broker.create_topic(name, partitions)
        bootstrap = broker.bootstrap_servers
    else:
        from aiokafkawire.testing.kafka import KafkaCluster

        broker = KafkaCluster().start()
        bootstrap = broker.bootstrap_servers
        asyncio.run(create_topics(bootstrap, topics))
    print(f"broker: {bootstrap} ({'external' if args.bootstrap_servers else args.broker})")

    from aiokafkawire.spark import register
    from aiokafkawire.testing.spark import local_spark_session

    spark = None
    try:
        expected = asyncio.run(produce_clicks(bootstrap, clicks, args.clicks))
        print(f"produced {args.clicks} click events into {clicks!r}")
        spark = local_spark_session(app_name="spark-pipeline-example")
        register(spark)
        started = time.perf_counter()
        rows = run_pipeline(spark, bootstrap, clicks, aggregates)
        elapsed = time.perf_counter() - started
        print(f"\nper-user aggregates read back from {aggregates!r} ({elapsed:.1f} s):")
        print(f"{'user':10s} {'clicks':>7s} {'pages':>6s} {'span (s)':>9s}")
        for row in rows:
            span = (row.last_ms - row.first_ms) / 1000
            print(f"{row.user:10s} {row.clicks:7d} {row.pages:6d} {span:9.1f}")
        got = {row.user: row.clicks for row in rows}
        if got != expected:
            raise SystemExit(f"aggregates differ from what was produced: {got} != {expected}")
        print(f"\nok: {sum(got.values())} clicks of {len(got)} users, as produced")
    finally:
        if spark is not None:
            spark.stop()
        if broker is not None:
            if args.broker == "mock":
                broker.close()
            else:
                broker.stop()


if __name__ == "__main__":
    main()
