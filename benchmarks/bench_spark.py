"""Spark on Kafka: the ``aiokafkawire`` format against Spark's JVM connector (``kafka``).

Reads N records (default 1,000,000) from 6 partitions in a Spark ``local[2]`` session (or, with
``--cluster``, on a standalone cluster of a master and two workers), once into a ``count()`` and
once into an aggregate (records and value bytes per key bucket), with each format; then one
aiokafkawire consumer process reads the same records into the same aggregate.  Reads the last 1%
of the topic by timestamp (``where timestamp >= t``) and by offset (``where offset >= o``), the
same query on both formats: pushed down to offset ranges by aiokafkawire, a full scan for the
JVM connector.  Writes N records with each format, with aiokafkawire's
``exactlyOnce`` too, and with one aiokafkawire producer process.  Prints rows/s and the ratios,
and writes ``results/spark.json``::

    python benchmarks/bench_spark.py                      # starts Apache Kafka (KafkaCluster)
    python benchmarks/bench_spark.py --records 200000 --repetitions 1
    python benchmarks/bench_spark.py --cluster            # Spark standalone cluster, 2 workers
    python benchmarks/bench_spark.py --bootstrap-servers host:9092

Needs the ``spark`` extra, Java 17 and Maven (for the broker and for Spark's connector jars).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from aiokafkawire import Admin, Consumer, NewTopic, Producer, TopicPartition  # noqa: E402

PARTITIONS = 6
VALUE_SIZE = 100


async def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    async with Admin(bootstrap_servers=bootstrap) as admin:
        result = await admin.create_topics([NewTopic(name, partitions, 1)])
        assert result[name].ok, result[name]


async def _produce(bootstrap: str, topic: str, count: int) -> float:
    """Write ``count`` records (key ``k<i>``, 100-byte value); returns records/s."""
    value = b"v" * VALUE_SIZE
    async with Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=5) as producer:
        started = time.perf_counter()
        handle = None
        for i in range(count):
            handle = await producer.send(topic, value, f"k{i}".encode())
        await producer.flush()
        assert handle is not None
        await handle
        return count / (time.perf_counter() - started)


async def _consume_aggregate(bootstrap: str, topic: str, count: int) -> tuple[float, Any]:
    """One consumer process: every record into (records, value bytes) per key bucket."""
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    async with Consumer(bootstrap_servers=bootstrap, max_poll_records=20_000) as consumer:
        consumer.assign(partitions)
        for tp in partitions:
            consumer.seek(tp, 0)
        started = time.perf_counter()
        seen = 0
        buckets: dict[int, list[int]] = {}
        while seen < count:
            fetched = await consumer.getmany(timeout_ms=1000)
            for records in fetched.values():
                seen += len(records)
                for record in records:
                    bucket = buckets.setdefault(len(record.key) % 7, [0, 0])
                    bucket[0] += 1
                    bucket[1] += len(record.value)
        elapsed = time.perf_counter() - started
    return count / elapsed, sorted((k, v[0], v[1]) for k, v in buckets.items())


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _spark_reads(spark: Any, fmt: str, bootstrap: str, topic: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    def frame() -> Any:
        return (
            spark.read.format(fmt)
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .load()
        )

    count_s, count = _timed(lambda: frame().count())
    aggregate_s, rows = _timed(
        lambda: (
            frame()
            .groupBy((F.length("key") % 7).alias("bucket"))
            .agg(F.count("*").alias("records"), F.sum(F.length("value")).alias("bytes"))
            .orderBy("bucket")
            .collect()
        )
    )
    return {
        "count_s": count_s,
        "count": count,
        "aggregate_s": aggregate_s,
        "aggregate": [tuple(r) for r in rows],
    }


def _spark_write(
    spark: Any, fmt: str, bootstrap: str, topic: str, count: int, *, exactly_once: bool = False
) -> float:
    df = spark.range(count).selectExpr(
        "cast(concat('k', cast(id as string)) as binary) as key",
        f"cast(repeat('v', {VALUE_SIZE}) as binary) as value",
    )
    writer = (
        df.write.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
    )
    if exactly_once:
        writer = writer.option("exactlyOnce", "true").option("transactionalIdPrefix", topic)
    seconds, _ = _timed(writer.save)
    return seconds


async def _end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    async with Consumer(bootstrap_servers=bootstrap) as consumer:
        ends = await consumer.end_offsets(partitions)
    return {tp.partition: end for tp, end in ends.items()}


def _last_percent(
    spark: Any, fmt: str, bootstrap: str, topic: str, condition: Any
) -> tuple[float, int]:
    """Seconds and rows of ``count()`` over the records matching ``condition``."""
    frame = (
        spark.read.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
        .where(condition)
    )
    return _timed(frame.count)


def _rate(records: int, seconds: float) -> float:
    return records / seconds if seconds > 0 else float("nan")


def _fmt(rate: float) -> str:
    return f"{rate / 1e6:.2f}M" if rate >= 1e6 else f"{rate / 1e3:.1f}k"


def run(  # long: one benchmark session, each measurement in turn
    bootstrap: str, records: int, repetitions: int, cluster: Any = None
) -> dict[str, Any]:
    import datetime

    from aiokafkawire.spark import register
    from aiokafkawire.testing.spark import local_spark_session, spark_kafka_connector_jars

    topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
    asyncio.run(_create_topic(bootstrap, topic, PARTITIONS))
    # The last 1% is written a second after the rest: its records' timestamps follow ``cut``.
    tail = records // 100
    produce_rate = asyncio.run(_produce(bootstrap, topic, records - tail))
    time.sleep(1.1)
    cut = datetime.datetime.now(datetime.timezone.utc)
    asyncio.run(_produce(bootstrap, topic, tail))
    print(f"wrote {records:,} records into {PARTITIONS} partitions ({_fmt(produce_rate)}/s)")

    jars = spark_kafka_connector_jars()
    if cluster is not None:
        spark = cluster.session(app_name="bench-spark", jars=jars)
    else:
        spark = local_spark_session(app_name="bench-spark", jars=jars, driver_memory="2g")
    register(spark)
    results: dict[str, Any] = {"reads": {}, "writes": {}}
    try:
        # Warm-up: the first job of a session pays for JIT and Python workers.
        for fmt in ("kafka", "aiokafkawire"):
            _spark_reads(spark, fmt, bootstrap, topic)
        for fmt in ("kafka", "aiokafkawire"):
            results["reads"][fmt] = []
        for _ in range(repetitions):
            for fmt in ("kafka", "aiokafkawire"):  # interleaved: load drifts hit both
                outcome = _spark_reads(spark, fmt, bootstrap, topic)
                assert outcome["count"] == records, outcome
                results["reads"][fmt].append(outcome)
        aggregates = {fmt: runs[-1]["aggregate"] for fmt, runs in results["reads"].items()}
        assert aggregates["kafka"] == aggregates["aiokafkawire"], aggregates
        single = [
            asyncio.run(_consume_aggregate(bootstrap, topic, records)) for _ in range(repetitions)
        ]
        assert [list(row) for row in single[-1][1]] == [list(row) for row in aggregates["kafka"]], (
            single[-1][1],
            aggregates["kafka"],
        )
        results["reads"]["one consumer process"] = [{"rate": rate} for rate, _ in single]
        from pyspark.sql import functions as F

        # The last 1% by offset: one offset bound, 99% of the mean partition's end (the
        # partitions' sizes differ a little: keys spread the records).
        ends = asyncio.run(_end_offsets(bootstrap, topic))
        first = sum(ends.values()) * 99 // (100 * PARTITIONS)
        queries = {
            "last 1%": (F.col("timestamp") >= F.lit(cut), tail),
            "last 1% by offset": (
                F.col("offset") >= first,
                sum(max(0, end - first) for end in ends.values()),
            ),
        }
        # Warm-up: a session's first filtered query of a Python data source starts Spark's
        # pushdown planner worker, which the unfiltered warm-up does not (without this, the
        # first timed pushed query took 29 s against 3.8 s for the next, under load 20).
        for condition, _ in queries.values():
            for fmt in ("kafka", "aiokafkawire"):
                _last_percent(spark, fmt, bootstrap, topic, condition)
        for name, (condition, expected) in queries.items():
            results[name] = {"kafka": [], "aiokafkawire": []}
            for _ in range(repetitions):
                for fmt in ("kafka", "aiokafkawire"):
                    seconds, rows = _last_percent(spark, fmt, bootstrap, topic, condition)
                    assert rows == expected, (name, fmt, rows, expected)
                    results[name][fmt].append({"seconds": seconds, "rows": rows})
        writes = ("kafka", "aiokafkawire", "aiokafkawire exactlyOnce")
        for fmt in writes:
            results["writes"][fmt] = []
        # Warm-up: a session's first write of a format likely pays for its writer's planner and
        # task workers (two runs of 200,000 records on a loaded machine: the first aiokafkawire
        # write came out at about half the exactly-once write after it).
        for name in writes:
            target = f"{topic}-warm-{uuid.uuid4().hex[:4]}"
            asyncio.run(_create_topic(bootstrap, target, PARTITIONS))
            fmt = name.split()[0]
            _spark_write(
                spark, fmt, bootstrap, target, max(1, records // 10), exactly_once=name != fmt
            )
        for _ in range(repetitions):
            for name in writes:
                target = f"{topic}-w-{uuid.uuid4().hex[:4]}"
                asyncio.run(_create_topic(bootstrap, target, PARTITIONS))
                fmt = name.split()[0]
                seconds = _spark_write(
                    spark, fmt, bootstrap, target, records, exactly_once=name != fmt
                )
                results["writes"][name].append({"seconds": seconds})
        results["writes"]["one producer process"] = [
            {"rate": asyncio.run(_produce(bootstrap, topic, records))} for _ in range(repetitions)
        ]
    finally:
        spark.stop()
    return results


def summarize(results: dict[str, Any], records: int) -> dict[str, Any]:
    """Median rows/s per (operation, client) and the ratios against the JVM connector."""
    summary: dict[str, Any] = {}
    reads = results["reads"]
    for fmt in ("kafka", "aiokafkawire"):
        summary[f"read count, {fmt}"] = statistics.median(
            _rate(records, r["count_s"]) for r in reads[fmt]
        )
        summary[f"read aggregate, {fmt}"] = statistics.median(
            _rate(records, r["aggregate_s"]) for r in reads[fmt]
        )
        summary[f"write, {fmt}"] = statistics.median(
            _rate(records, r["seconds"]) for r in results["writes"][fmt]
        )
    for fmt in ("kafka", "aiokafkawire"):
        summary[f"read last 1% by timestamp, {fmt}"] = statistics.median(
            _rate(records, r["seconds"]) for r in results["last 1%"][fmt]
        )
        summary[f"read last 1% by offset, {fmt}"] = statistics.median(
            _rate(records, r["seconds"]) for r in results["last 1% by offset"][fmt]
        )
    summary["write, aiokafkawire exactlyOnce"] = statistics.median(
        _rate(records, r["seconds"]) for r in results["writes"]["aiokafkawire exactlyOnce"]
    )
    summary["read aggregate, one aiokafkawire consumer process"] = statistics.median(
        r["rate"] for r in reads["one consumer process"]
    )
    summary["write, one aiokafkawire producer process"] = statistics.median(
        r["rate"] for r in results["writes"]["one producer process"]
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--bootstrap-servers", default=None)
    parser.add_argument(
        "--cluster", action="store_true", help="run Spark on a standalone cluster (2 workers)"
    )
    parser.add_argument("--output", default=str(HERE / "results" / "spark.json"))
    args = parser.parse_args()

    cluster = None
    bootstrap = args.bootstrap_servers
    if bootstrap is None:
        from aiokafkawire.testing.kafka import KafkaCluster

        cluster = KafkaCluster().start()
        bootstrap = cluster.bootstrap_servers
    spark_cluster = None
    try:
        if args.cluster:
            from aiokafkawire.testing.spark import StandaloneCluster

            spark_cluster = StandaloneCluster(workers=2, cores=1).start()
        results = run(bootstrap, args.records, args.repetitions, spark_cluster)
    finally:
        if spark_cluster is not None:
            spark_cluster.stop()
        if cluster is not None:
            cluster.stop()
    summary = summarize(results, args.records)
    ratios = {
        "read count": summary["read count, aiokafkawire"] / summary["read count, kafka"],
        "read aggregate": summary["read aggregate, aiokafkawire"]
        / summary["read aggregate, kafka"],
        "write": summary["write, aiokafkawire"] / summary["write, kafka"],
        "read last 1% by timestamp (pushdown)": summary["read last 1% by timestamp, aiokafkawire"]
        / summary["read last 1% by timestamp, kafka"],
        "read last 1% by offset (pushdown)": summary["read last 1% by offset, aiokafkawire"]
        / summary["read last 1% by offset, kafka"],
        "write exactlyOnce": summary["write, aiokafkawire exactlyOnce"] / summary["write, kafka"],
        "write exactlyOnce / at-least-once, both aiokafkawire": summary[
            "write, aiokafkawire exactlyOnce"
        ]
        / summary["write, aiokafkawire"],
    }
    print(
        f"\n{args.records:,} records, {PARTITIONS} partitions, Spark "
        f"{'standalone cluster (2 workers x 1 core)' if args.cluster else 'local[2]'}, median of "
        f"{args.repetitions}"
    )
    for name, rate in summary.items():
        print(f"  {name:55s} {_fmt(rate):>8s} rows/s")
    for name, ratio in ratios.items():
        print(f"  ratio {name:60s} {ratio:.2f}")
    import pyspark

    document = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "records": args.records,
        "partitions": PARTITIONS,
        "value_size": VALUE_SIZE,
        "repetitions": args.repetitions,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "broker": "external" if args.bootstrap_servers else "KafkaCluster (Apache Kafka)",
        "spark": "standalone cluster, 2 workers x 1 core" if args.cluster else "local[2]",
        "load_average": os.getloadavg(),
        "runs": results,
        "median_rows_per_s": summary,
        "ratios_vs_jvm_connector": ratios,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(document, indent=2, default=str) + "\n")
    print(f"\nwrote {args.output}")


if __name__ == "__main__":
    main()
