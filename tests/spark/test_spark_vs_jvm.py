"""``format("aiokafkawire")`` against Spark's own ``format("kafka")``: equal DataFrames.

The same topics (3 partitions with keys, null keys and values, headers, timestamps; a
transactional topic with committed and aborted transactions) are read by both formats, in batch
and streaming, with the same options; schema and every row must be equal.
"""

from __future__ import annotations

from typing import Any

import pytest
from _spark_helpers import create_topic, unique
from test_spark_source import BASE_TS, produce_records, transactional_writes

# Spark jobs on a shared 2-core machine: generous per-test limits (each takes seconds when quiet).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def topics(kafka_cluster: Any) -> dict[str, str]:
    """A plain topic and a transactional one, written once for this module."""
    bootstrap = kafka_cluster.bootstrap_servers
    plain = create_topic(bootstrap, 3, "jvm-plain")
    produce_records(bootstrap, plain, 150, 3)
    transactional = create_topic(bootstrap, 2, "jvm-txn")
    transactional_writes(bootstrap, transactional)
    return {"plain": plain, "transactional": transactional}


def _rows(df: Any) -> list[tuple]:
    return sorted((tuple(row) for row in df.collect()), key=lambda r: (r[2], r[3], r[4]))


def _read(spark: Any, fmt: str, bootstrap: str, options: dict[str, str]) -> Any:
    builder = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        builder = builder.option(key, value)
    return builder.load()


CASES = [
    pytest.param("plain", {"includeHeaders": "true"}, id="plain-headers"),
    pytest.param("plain", {}, id="plain"),
    pytest.param(
        "plain",
        {"startingOffsets": "earliest", "endingOffsets": "latest", "minPartitions": "5"},
        id="plain-split",
    ),
    pytest.param(
        "plain",
        {"startingTimestamp": str(BASE_TS + 75_500), "endingTimestamp": str(BASE_TS + 130_000)},
        id="plain-timestamps",
    ),
    pytest.param("transactional", {}, id="txn-read-uncommitted"),
    pytest.param(
        "transactional", {"kafka.isolation.level": "read_committed"}, id="txn-read-committed"
    ),
]


@pytest.mark.parametrize(("which", "options"), CASES)
def test_batch_read_equals_the_jvm_connector(
    spark_with_connector: Any,
    kafka_cluster: Any,
    topics: dict[str, str],
    which: str,
    options: dict[str, str],
) -> None:
    spark = spark_with_connector
    bootstrap = kafka_cluster.bootstrap_servers
    options = {"subscribe": topics[which], **options}
    jvm = _read(spark, "kafka", bootstrap, options)
    ours = _read(spark, "aiokafkawire", bootstrap, options)
    assert ours.schema == jvm.schema
    expected = _rows(jvm)
    assert expected, "the JVM connector read nothing"
    assert _rows(ours) == expected


def _stream_rows(spark: Any, fmt: str, bootstrap: str, options: dict[str, str]) -> Any:
    builder = (
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        builder = builder.option(key, value)
    name = unique(f"cmp_{fmt}").replace("-", "_")
    query = builder.load().writeStream.format("memory").queryName(name)
    running = query.trigger(availableNow=True).start()
    running.awaitTermination(120)
    assert running.exception() is None
    return spark.table(name)


@pytest.mark.parametrize(
    ("which", "options"),
    [
        pytest.param("plain", {"includeHeaders": "true", "maxOffsetsPerTrigger": "40"}, id="plain"),
        pytest.param(
            "transactional", {"kafka.isolation.level": "read_committed"}, id="txn-read-committed"
        ),
    ],
)
def test_streaming_read_equals_the_jvm_connector(
    spark_with_connector: Any,
    kafka_cluster: Any,
    topics: dict[str, str],
    which: str,
    options: dict[str, str],
) -> None:
    spark = spark_with_connector
    bootstrap = kafka_cluster.bootstrap_servers
    options = {"subscribe": topics[which], **options}
    jvm = _stream_rows(spark, "kafka", bootstrap, options)
    ours = _stream_rows(spark, "aiokafkawire", bootstrap, options)
    assert ours.schema == jvm.schema
    expected = _rows(jvm)
    assert expected
    assert _rows(ours) == expected
