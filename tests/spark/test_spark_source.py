"""The ``aiokafkawire`` Spark format on Apache Kafka: batch and streaming reads and writes.

Records are produced with confluent-kafka (an independent client) and read back through Spark;
every comparison is on whole rows (key, value, topic, partition, offset, timestamp, headers).
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from _spark_helpers import add_partitions, create_topic, unique

from aiokafkawire.admin import Admin
from aiokafkawire.structs import TopicPartition

# Spark jobs on a shared 2-core machine: generous per-test limits (each takes seconds when quiet).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# Record timestamps an hour back: far older ones fall to the broker's retention (7 days) and
# vanish from the log during the test.
BASE_TS = (int(time.time()) - 3600) * 1000
UTC = datetime.timezone.utc


def produce_records(bootstrap: str, topic: str, count: int, partitions: int) -> list[tuple]:
    """``count`` records (keys, null keys and values, headers, timestamps) by confluent-kafka.

    Returns the rows Spark must read: (key, value, topic, partition, offset, timestamp,
    timestampType, headers).
    """
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    delivered: list[Any] = []

    def on_delivery(error: Any, message: Any) -> None:
        assert error is None, error
        delivered.append(message)

    sent: dict[tuple[int, bytes | None, bytes | None], tuple] = {}
    for i in range(count):
        key = None if i % 7 == 3 else f"key-{i}".encode()
        value = None if i % 5 == 0 else f"value-{i}".encode() * (1 + i % 3)
        headers = [("h1", f"x{i}".encode()), ("h2", None)] if i % 4 == 1 else None
        timestamp = BASE_TS + i * 1000
        producer.produce(
            topic,
            value=value,
            key=key,
            partition=i % partitions,
            timestamp=timestamp,
            headers=headers,
            on_delivery=on_delivery,
        )
        sent[(timestamp, key, value)] = (headers or [],)
    producer.flush(30)
    assert len(delivered) == count
    rows = []
    for message in delivered:
        _, timestamp = message.timestamp()
        headers = sent[(timestamp, message.key(), message.value())][0]
        rows.append(
            (
                message.key(),
                message.value(),
                topic,
                message.partition(),
                message.offset(),
                datetime.datetime.fromtimestamp(timestamp / 1000, UTC).replace(tzinfo=None),
                0,
                [(k, v) for k, v in headers] if headers else None,
            )
        )
    return sorted(rows, key=lambda r: (r[3], r[4]))


def as_tuples(rows: list[Any], headers: bool = True) -> list[tuple]:
    """Spark rows as plain tuples, ordered by (partition, offset)."""
    result = []
    for row in rows:
        values = list(row)
        if headers and values[7] is not None:
            values[7] = [(h["key"], h["value"]) for h in values[7]]
        result.append(tuple(values))
    return sorted(result, key=lambda r: (r[3], r[4]))


def reader(spark: Any, bootstrap: str, **options: str) -> Any:
    builder = spark.read.format("aiokafkawire").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        builder = builder.option(key, value)
    return builder


def test_batch_read_equals_what_was_produced(spark: Any, bootstrap: str) -> None:
    topic = create_topic(bootstrap, 3)
    expected = produce_records(bootstrap, topic, 90, 3)
    df = reader(spark, bootstrap, subscribe=topic, includeHeaders="true").load()
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert as_tuples(df.collect()) == expected
    # Without headers, and a range given per partition: exactly those offsets.
    ranged = reader(
        spark,
        bootstrap,
        subscribe=topic,
        startingOffsets=f'{{"{topic}": {{"0": 5, "1": -2, "2": 29}}}}',
        endingOffsets=f'{{"{topic}": {{"0": 12, "1": 3, "2": -1}}}}',
    ).load()
    got = sorted((r.partition, r.offset) for r in ranged.collect())
    assert got == ([(0, o) for o in range(5, 12)] + [(1, o) for o in range(3)] + [(2, 29)])


def test_min_partitions_split_ranges_without_loss_or_repeat(spark: Any, bootstrap: str) -> None:
    from pyspark.sql.functions import spark_partition_id

    topic = create_topic(bootstrap, 2)
    produce_records(bootstrap, topic, 120, 2)
    df = reader(spark, bootstrap, subscribe=topic, minPartitions="6").load()
    assert df.rdd.getNumPartitions() == 6
    rows = df.select("partition", "offset", spark_partition_id().alias("task")).collect()
    offsets = sorted((r.partition, r.offset) for r in rows)
    assert offsets == sorted([(p, o) for p in range(2) for o in range(60)])
    tasks_of_partition_0 = {r.task for r in rows if r.partition == 0}
    assert len(tasks_of_partition_0) == 3


def _stream_to_parquet(
    spark: Any, bootstrap: str, topic: str, out: Path, checkpoint: Path, **options: str
) -> None:
    builder = (
        spark.readStream.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        builder = builder.option(key, value)
    query = (
        builder.load()
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
    except Exception as exc:  # a failed query raises here (StreamingQueryException)
        raise AssertionError(str(exc)) from exc
    assert not query.isActive
    assert query.exception() is None, str(query.exception())


def test_streaming_available_now_restart_reads_each_record_once(
    spark: Any, bootstrap: str, tmp_path: Path
) -> None:
    topic = create_topic(bootstrap, 3)
    first = produce_records(bootstrap, topic, 30, 3)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    _stream_to_parquet(spark, bootstrap, topic, out, checkpoint)
    assert spark.read.parquet(str(out)).count() == 30
    # More data, in a new partition too, then the same query again from its checkpoint.
    from confluent_kafka import Producer

    add_partitions(bootstrap, topic, 4)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(24):
        producer.produce(topic, value=f"more-{i}".encode(), partition=i % 4)
    producer.flush(30)
    _stream_to_parquet(spark, bootstrap, topic, out, checkpoint)
    rows = spark.read.parquet(str(out)).select("partition", "offset", "value").collect()
    keys = sorted((r.partition, r.offset) for r in rows)
    assert len(keys) == len(set(keys)) == 54
    assert keys == sorted(
        [(p, o) for p in range(3) for o in range(16)] + [(3, o) for o in range(6)]
    )
    assert {r.value for r in rows} >= {row[1] for row in first if row[1] is not None}


def test_max_offsets_per_trigger_bounds_each_micro_batch(spark: Any, bootstrap: str) -> None:
    topic = create_topic(bootstrap, 3)
    produce_records(bootstrap, topic, 50, 3)
    sizes: list[int] = []
    seen: list[tuple[int, int]] = []

    def record(batch: Any, batch_id: int) -> None:
        rows = batch.select("partition", "offset").collect()
        sizes.append(len(rows))
        seen.extend((r.partition, r.offset) for r in rows)

    query = (
        spark.readStream.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "12")
        .load()
        .writeStream.foreachBatch(record)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert sum(sizes) == 50
    assert max(sizes) <= 12
    assert len([s for s in sizes if s > 0]) >= 5
    assert sorted(seen) == sorted(set(seen)) and len(seen) == 50


def test_max_records_per_partition_splits_ranges(spark: Any, bootstrap: str) -> None:
    topic = create_topic(bootstrap, 2)
    produce_records(bootstrap, topic, 100, 2)
    df = reader(spark, bootstrap, subscribe=topic, maxRecordsPerPartition="20").load()
    assert df.rdd.getNumPartitions() == 6  # 50 offsets per Kafka partition: 17 + 17 + 16
    offsets = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert offsets == sorted([(p, o) for p in range(2) for o in range(50)])


def test_min_offsets_per_trigger_holds_back_small_batches(spark: Any, bootstrap: str) -> None:
    from confluent_kafka import Producer

    topic = create_topic(bootstrap, 2)
    produce_records(bootstrap, topic, 4, 2)
    sizes: list[int] = []

    def record(batch: Any, batch_id: int) -> None:
        sizes.append(batch.count())

    query = (
        spark.readStream.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("minOffsetsPerTrigger", "10")
        .option("maxTriggerDelay", "1h")
        .load()
        .writeStream.foreachBatch(record)
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    producer = Producer({"bootstrap.servers": bootstrap})
    try:
        deadline = time.monotonic() + 120
        while sum(sizes) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sizes == [4]  # the first trigger runs, as with Spark's connector
        # 9 new records (< 10): several triggers pass and no batch runs.
        for i in range(9):
            producer.produce(topic, value=f"a{i}".encode(), partition=i % 2)
        producer.flush(30)
        time.sleep(3)
        assert sizes == [4]
        # The 10th lets the next trigger run, with all 10.
        producer.produce(topic, value=b"a9", partition=1)
        producer.flush(30)
        while sum(sizes) < 14 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sizes == [4, 10]
    finally:
        query.stop()
    assert query.exception() is None


def test_batch_write_lands_and_reads_back(spark: Any, bootstrap: str) -> None:
    topic = create_topic(bootstrap, 2)
    data = [
        (f"k{i}".encode() if i % 3 else None, f"v{i}".encode(), i % 2, [("h", f"{i}".encode())])
        for i in range(40)
    ]
    schema = (
        "key binary, value binary, partition int, headers array<struct<key: string, value: binary>>"
    )
    df = spark.createDataFrame(data, schema)
    (
        df.write.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    back = reader(spark, bootstrap, subscribe=topic, includeHeaders="true").load().collect()
    got = sorted(
        ((r.key, r.value, r.partition, [(h.key, h.value) for h in r.headers]) for r in back),
        key=repr,
    )
    assert got == sorted(data, key=repr)


def test_streaming_write_lands_and_reads_back(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    source = create_topic(bootstrap, 3)
    sink = create_topic(bootstrap, 2)
    expected = produce_records(bootstrap, source, 45, 3)
    query = (
        spark.readStream.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
        .selectExpr("key", "value", "headers")
        .writeStream.format("aiokafkawire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    back = reader(spark, bootstrap, subscribe=sink, includeHeaders="true").load().collect()
    got = sorted(
        (
            (r.key, r.value, [(h.key, h.value) for h in r.headers] if r.headers else None)
            for r in back
        ),
        key=repr,
    )
    assert got == sorted(((r[0], r[1], r[7]) for r in expected), key=repr)


def transactional_writes(bootstrap: str, topic: str) -> tuple[set[bytes], set[bytes]]:
    """Committed and aborted transactions, plain writes between them, on 2 partitions."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": unique("tx"), "linger.ms": 1}
    )
    producer.init_transactions(30)
    committed: set[bytes] = set()
    aborted: set[bytes] = set()
    for round_number in range(3):
        producer.begin_transaction()
        values = [f"c{round_number}-{i}".encode() for i in range(6)]
        for i, value in enumerate(values):
            producer.produce(topic, value=value, partition=i % 2)
        producer.commit_transaction(30)
        committed.update(values)
        producer.begin_transaction()
        values = [f"a{round_number}-{i}".encode() for i in range(6)]
        for i, value in enumerate(values):
            producer.produce(topic, value=value, partition=i % 2)
        producer.flush(30)
        producer.abort_transaction(30)
        aborted.update(values)
    return committed, aborted


def test_read_committed_skips_aborted_records_and_ends_on_markers(
    spark: Any, bootstrap: str
) -> None:
    topic = create_topic(bootstrap, 2)
    committed, aborted = transactional_writes(bootstrap, topic)
    df = reader(spark, bootstrap, subscribe=topic, **{"kafka.isolation.level": "read_committed"})
    assert {r.value for r in df.load().collect()} == committed
    everything = {r.value for r in reader(spark, bootstrap, subscribe=topic).load().collect()}
    assert everything == committed | aborted
    # Ranges cut at every offset of partition 0 (markers and aborted records included) end.
    df = reader(
        spark,
        bootstrap,
        assign=f'{{"{topic}": [0]}}',
        minPartitions="9",
        **{"kafka.isolation.level": "read_committed"},
    )
    values = [r.value for r in df.load().collect()]
    assert sorted(values) == sorted(v for v in committed if int(v.split(b"-")[1]) % 2 == 0)


def test_deleted_records_follow_fail_on_data_loss(spark: Any, bootstrap: str) -> None:
    topic = create_topic(bootstrap, 1)
    produce_records(bootstrap, topic, 20, 1)

    async def delete() -> None:
        async with Admin(bootstrap_servers=bootstrap) as admin:
            await admin.delete_records({TopicPartition(topic, 0): 8})

    asyncio.run(delete())
    # The plan asks for offsets 0.. explicitly: 0..7 are gone.
    options = {"subscribe": topic, "startingOffsets": f'{{"{topic}": {{"0": 0}}}}'}
    with pytest.raises(Exception, match="failOnDataLoss"):
        reader(spark, bootstrap, **options).load().collect()
    rows = reader(spark, bootstrap, failOnDataLoss="false", **options).load().collect()
    assert sorted(r.offset for r in rows) == list(range(8, 20))
    # A range beyond the end of the log ends at once (no waiting for offsets that cannot come).
    beyond = {
        "subscribe": topic,
        "startingOffsets": f'{{"{topic}": {{"0": 25}}}}',
        "endingOffsets": f'{{"{topic}": {{"0": 30}}}}',
    }
    with pytest.raises(Exception, match="beyond the end of its log"):
        reader(spark, bootstrap, **beyond).load().collect()
    assert reader(spark, bootstrap, failOnDataLoss="false", **beyond).load().count() == 0


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"startingOffsets": "tomorrow"}, "startingOffsets"),
        ({"subscribe": "x", "assign": '{"x": [0]}'}, "subscribe"),
        ({"kafka.no.such.setting": "1"}, "kafka.no.such.setting"),
        ({"startingOffset": "earliest"}, "did you mean 'startingOffsets'"),
        ({"maxOffsetsPerTrigger": "5"}, "'maxOffsetsPerTrigger' is not valid for batch reads"),
    ],
)
def test_bad_options_fail_on_the_driver(
    spark: Any, bootstrap: str, options: dict[str, str], named: str
) -> None:
    builder = spark.read.format("aiokafkawire").option("kafka.bootstrap.servers", bootstrap)
    options = {"subscribe": "x", **options}
    for key, value in options.items():
        builder = builder.option(key, value)
    with pytest.raises(Exception, match=named.replace(".", r"\.")) as info:
        builder.load().collect()
    # Raised while planning, before any task started.
    assert "Task" not in str(info.value).split("\n")[0]


def test_missing_servers_fail_on_the_driver(spark: Any) -> None:
    with pytest.raises(Exception, match=r"kafka\.bootstrap\.servers"):
        spark.read.format("aiokafkawire").option("subscribe", "x").load().collect()


def test_write_without_value_fails_on_the_driver(spark: Any, bootstrap: str) -> None:
    df = spark.createDataFrame([(b"k",)], "key binary")
    with pytest.raises(Exception, match="'value' column"):
        (
            df.write.format("aiokafkawire")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", f"never-{uuid.uuid4().hex[:6]}")
            .mode("append")
            .save()
        )


def test_failed_delivery_fails_the_write_with_the_broker_error(spark: Any, bootstrap: str) -> None:
    topic = create_topic(bootstrap, 1, configs={"max.message.bytes": "2000"})
    df = spark.createDataFrame([(b"x" * 10_000,)], "value binary")
    with pytest.raises(Exception, match=r"MESSAGE_TOO_LARGE|RecordTooLarge"):
        (
            df.write.format("aiokafkawire")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic)
            .mode("append")
            .save()
        )


def test_a_topic_that_does_not_exist_reads_as_empty(spark: Any, bootstrap: str) -> None:
    df = reader(spark, bootstrap, subscribe=unique("never-created")).load()
    assert df.count() == 0


def test_streaming_deleted_records_follow_fail_on_data_loss(
    spark: Any, bootstrap: str, tmp_path: Path
) -> None:
    topic = create_topic(bootstrap, 1)
    produce_records(bootstrap, topic, 10, 1)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    _stream_to_parquet(spark, bootstrap, topic, out, checkpoint)
    # Offsets 10..29 arrive, then 10..19 are deleted before the query runs again.
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce(topic, value=f"later-{i}".encode(), partition=0)
    producer.flush(30)

    async def delete() -> None:
        async with Admin(bootstrap_servers=bootstrap) as admin:
            await admin.delete_records({TopicPartition(topic, 0): 20})

    asyncio.run(delete())
    with pytest.raises(AssertionError, match="failOnDataLoss"):
        _stream_to_parquet(spark, bootstrap, topic, out, checkpoint)
    # The same checkpoint without failOnDataLoss: the planned batch skips what is gone.
    _stream_to_parquet(spark, bootstrap, topic, out, checkpoint, failOnDataLoss="false")
    offsets = sorted(r.offset for r in spark.read.parquet(str(out)).select("offset").collect())
    assert offsets == list(range(10)) + list(range(20, 30))
