"""Filter pushdown of the Spark batch source: filters as offset ranges.

Unit tests of the filter algebra need pyspark's filter classes only; the rest reads from Apache
Kafka and counts the offsets the tasks are given (what they fetch) next to the rows Spark keeps.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

import pyarrow as pa
import pytest
from _spark_helpers import create_topic

from aiokafkawire.spark._pushdown import PushedBounds, push_filters
from aiokafkawire.structs import TopicPartition

pytest.importorskip("pyspark")
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)

UTC = datetime.timezone.utc


def test_exact_filters_leave_spark_and_bound_the_ranges() -> None:
    bounds = PushedBounds()
    filters = [
        EqualTo(("topic",), "a"),
        In(("partition",), (0, 1, 2)),
        GreaterThan(("partition",), 0),
        GreaterThanOrEqual(("offset",), 10),
        LessThan(("offset",), 20),
        LessThanOrEqual(("offset",), 30),
        StringStartsWith(("topic",), "a"),
        IsNotNull(("key",)),
    ]
    remaining = push_filters(bounds, filters)
    assert remaining == filters[6:]
    assert all(any(given is r for given in filters) for r in remaining)
    kept = bounds.filter_partitions(
        [
            TopicPartition("a", 0),
            TopicPartition("a", 1),
            TopicPartition("a", 2),
            TopicPartition("b", 1),
        ]
    )
    assert kept == {TopicPartition("a", 1), TopicPartition("a", 2)}
    assert bounds.cut(0, 100) == (10, 20)
    assert bounds.cut(0, 15) == (10, 15)
    assert bounds.cut(25, 100) == (25, 25)  # nothing of [25, 100) is below 20


def test_timestamp_bounds_are_pushed_exactly() -> None:
    bounds = PushedBounds()
    stamp = datetime.datetime(2026, 1, 2, 3, 4, 5, 678900, tzinfo=UTC)
    lower = GreaterThanOrEqual(("timestamp",), stamp)
    upper = LessThan(("timestamp",), stamp + datetime.timedelta(seconds=3))
    assert push_filters(bounds, [lower, upper]) == []
    base_us = int(stamp.timestamp()) * 1_000_000 + 678_900
    assert bounds.timestamp_low_us == base_us
    assert bounds.timestamp_low_ms == base_us // 1000  # rounded down to Kafka's ms
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    starts, ends = bounds.narrow({a: 0, b: 0}, {a: 100, b: 100}, {a: 95, b: -1})
    assert (starts, ends) == ({a: 95, b: 100}, {a: 100, b: 100})
    # Rows are filtered exactly, timestamps in any order (ms stamps, as Kafka's).
    ms = base_us // 1000
    # ms * 1000 is 900 us before the lower bound; ms + 3000 is 900 us before the upper one.
    stamps = [ms - 5000, ms, ms + 1, ms + 2999, ms + 3000, ms - 1, ms + 3001]
    batch = pa.RecordBatch.from_pydict(
        {"offset": list(range(7)), "timestamp": [s * 1000 for s in stamps]},
        schema=pa.schema([("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC"))]),
    )
    assert bounds.filter_rows(batch).column(0).to_pylist() == [2, 3, 4]


def test_contradictions_read_nothing() -> None:
    bounds = PushedBounds()
    push_filters(bounds, [EqualTo(("topic",), "a"), EqualTo(("topic",), "b")])
    assert bounds.empty
    bounds = PushedBounds()
    push_filters(bounds, [GreaterThan(("offset",), 10), LessThan(("offset",), 5)])
    assert bounds.empty


def test_filters_of_other_types_are_left_alone() -> None:
    bounds = PushedBounds()
    odd = [
        EqualTo(("offset",), "7"),
        EqualTo(("partition",), True),
        In(("offset",), (1, 2)),
        IsNotNull(("offset",)),
        IsNotNull(("timestamp",)),
        IsNotNull(("topic",)),
    ]
    assert push_filters(bounds, odd) == odd
    assert bounds == PushedBounds()


def test_small_ranges_share_tasks_large_ones_keep_their_own() -> None:
    from aiokafkawire.spark._source import OffsetRange, RangeGroup, group_ranges

    ranges = [
        OffsetRange("t", 0, 0, 40),
        OffsetRange("t", 1, 10, 60),
        OffsetRange("t", 2, 0, 150),  # at or above the limit: a task of its own
        OffsetRange("t", 3, 5, 25),
        OffsetRange("u", 0, 0, 100),
    ]
    planned = group_ranges(ranges, limit=100)
    # Large ranges are planned as they come; small ones fill a task until the next would
    # overflow it (90 + 20 > 100).
    assert planned == [ranges[2], RangeGroup((ranges[0], ranges[1])), ranges[4], ranges[3]]
    assert [p.size for p in planned] == [150, 90, 100, 20]
    assert group_ranges([]) == []
    (everything,) = group_ranges(ranges, limit=1000)
    assert isinstance(everything, RangeGroup) and everything.ranges == tuple(ranges)


def test_contradictory_filters_plan_nothing_without_a_lookup() -> None:
    from aiokafkawire.spark._source import KafkaDataSource

    # Nothing listens on port 1: any lookup would fail.
    source = KafkaDataSource({"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t"})
    reader = source.reader(None)  # type: ignore[arg-type]
    reader.pushFilters([GreaterThan(("offset",), 10), LessThan(("offset",), 5)])
    assert reader.partitions() == []


class _Started(Exception):
    pass


def test_range_reads_long_poll_briefly_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """A finished range at the log end leaves a long poll in flight that the next range of the
    task waits behind: range reads use a short fetch.max.wait.ms (the option overrides it)."""
    import aiokafkawire.consumer
    from aiokafkawire.spark._kafka_io import read_ranges
    from aiokafkawire.spark._options import parse_options

    given: list[dict[str, Any]] = []

    class Recording:
        def __init__(self, **kwargs: Any) -> None:
            given.append(kwargs)

        async def start(self) -> None:
            raise _Started

    monkeypatch.setattr(aiokafkawire.consumer, "Consumer", Recording)
    base = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t"}
    for options in (base, {**base, "kafka.fetch.max.wait.ms": "300"}):
        with pytest.raises(_Started):
            list(
                read_ranges(parse_options(options, mode="batch"), [("t", 0, 0, 5), ("t", 1, 0, 5)])
            )
    assert [g["fetch_max_wait_ms"] for g in given] == [10, 300]


# ---------------------------------------------------------------------- on Apache Kafka

BASE_TS = (int(time.time()) - 3600) * 1000
RECORDS = 2000
PARTITIONS = 2


@pytest.fixture(scope="module")
def big_topic(request: Any) -> tuple[str, str]:
    """2,000 records on 2 partitions, one second apart (record i at BASE_TS + i s)."""
    cluster = request.getfixturevalue("kafka_cluster")
    bootstrap = cluster.bootstrap_servers
    topic = create_topic(bootstrap, PARTITIONS, "pushdown")
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(RECORDS):
        producer.produce(
            topic, value=f"v{i}".encode(), partition=i % PARTITIONS, timestamp=BASE_TS + i * 1000
        )
    assert producer.flush(60) == 0
    return bootstrap, topic


def _planned(
    bootstrap: str, topic: str, filters: list[Any], **options: str
) -> tuple[Any, int, int]:
    """(remaining filters, offsets the tasks will fetch, tasks) for a reader given ``filters``."""
    from aiokafkawire.spark._source import KafkaDataSource

    source = KafkaDataSource({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **options})
    reader = source.reader(None)  # type: ignore[arg-type]
    remaining = list(reader.pushFilters(filters))
    tasks = reader.partitions()
    return remaining, sum(r.size for r in tasks), len(tasks)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_last_percent_by_offset_or_timestamp_fetches_about_one_percent(
    big_topic: tuple[str, str],
) -> None:
    bootstrap, topic = big_topic
    per_partition = RECORDS // PARTITIONS
    by_offset = GreaterThanOrEqual(("offset",), per_partition * 99 // 100)
    remaining, fetched, tasks = _planned(bootstrap, topic, [by_offset])
    assert remaining == []
    assert (fetched, tasks) == (RECORDS // 100, 1)  # both partitions' ranges: one task
    cut = datetime.datetime.fromtimestamp((BASE_TS + RECORDS * 990) / 1000, UTC)
    by_time = GreaterThanOrEqual(("timestamp",), cut)
    remaining, fetched, tasks = _planned(bootstrap, topic, [by_time])
    assert remaining == []
    assert (fetched, tasks) == (RECORDS // 100, 1)
    # Without filters, or with minPartitions, one task per range as Spark's connector plans.
    assert _planned(bootstrap, topic, [])[1:] == (RECORDS, PARTITIONS)
    _, fetched, tasks = _planned(bootstrap, topic, [by_offset], minPartitions="2")
    assert (fetched, tasks) == (RECORDS // 100, 2)


def _scan_rows(df: Any) -> int:
    """Rows the data source scan produced in the last run of ``df`` (Spark's SQL metric)."""
    plan = df._jdf.queryExecution().executedPlan()
    if plan.nodeName().startswith("AdaptiveSparkPlan"):
        plan = plan.executedPlan()
    leaves = plan.collectLeaves()
    found = []
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        metric = leaf.metrics().get("numOutputRows")
        found.append(f"{leaf.nodeName()}: {leaf.metrics().keySet()}")
        if metric.isDefined():
            return int(metric.get().value())
    raise AssertionError(f"no scan metric in {found}")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_spark_pushes_filters_and_returns_the_same_rows(
    spark: Any, big_topic: tuple[str, str]
) -> None:
    from pyspark.sql import functions as F

    bootstrap, topic = big_topic
    df = (
        spark.read.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    cut = datetime.datetime.fromtimestamp((BASE_TS + RECORDS * 990) / 1000, UTC)
    cases = [
        (F.col("offset") >= 990, "offset"),
        ((F.col("partition") == 1) & (F.col("offset") < 5), "partition"),
        (F.col("timestamp") >= F.lit(cut), "timestamp"),
    ]
    for condition, column in cases:
        pushed = df.where(condition)
        plan = pushed._jdf.queryExecution().explainString(
            spark._jvm.org.apache.spark.sql.execution.ExplainMode.fromString("formatted")
        )
        assert "PushedFilters" in plan and column in plan.split("PushedFilters")[1], plan
        selected = pushed.select("partition", "offset", "value")
        if column != "partition":  # the last 1% of both partitions: one task reads both
            assert selected.rdd.getNumPartitions() == 1
        got = sorted(tuple(r) for r in selected.collect())
        scanned = _scan_rows(selected)
        # The same query with Spark doing all the filtering (a cached copy of every row).
        everything = df.select("partition", "offset", "value", "timestamp").localCheckpoint()
        expected = sorted(
            tuple(r)
            for r in everything.where(condition).select("partition", "offset", "value").collect()
        )
        assert got == expected and got
        assert scanned == len(got) or (column == "timestamp" and scanned <= 2 * len(got))
