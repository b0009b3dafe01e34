"""``format("aiokafkawire")`` against Spark's own ``format("kafka")``: equal DataFrames.

The same topics (3 partitions with keys, null keys and values, headers, timestamps; a
transactional topic with committed and aborted transactions) are read by both formats, in batch
and streaming, with the same options; schema and every row must be equal.
"""

from __future__ import annotations

from collections.abc import Callable
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


CASES = [
    pytest.param(_read, "plain", {"includeHeaders": "true"}, id="batch-plain-headers"),
    pytest.param(_read, "plain", {}, id="batch-plain"),
    pytest.param(
        _read,
        "plain",
        {"startingOffsets": "earliest", "endingOffsets": "latest", "minPartitions": "5"},
        id="batch-plain-split",
    ),
    pytest.param(
        _read,
        "plain",
        {"startingTimestamp": str(BASE_TS + 75_500), "endingTimestamp": str(BASE_TS + 130_000)},
        id="batch-plain-timestamps",
    ),
    pytest.param(_read, "transactional", {}, id="batch-txn-read-uncommitted"),
    pytest.param(
        _read,
        "transactional",
        {"kafka.isolation.level": "read_committed"},
        id="batch-txn-read-committed",
    ),
    pytest.param(
        _stream_rows,
        "plain",
        {"includeHeaders": "true", "maxOffsetsPerTrigger": "40"},
        id="streaming-plain",
    ),
    pytest.param(
        _stream_rows,
        "transactional",
        {"kafka.isolation.level": "read_committed"},
        id="streaming-txn-read-committed",
    ),
]


@pytest.mark.parametrize(("read", "which", "options"), CASES)
def test_read_equals_the_jvm_connector(
    spark_with_connector: Any,
    kafka_cluster: Any,
    topics: dict[str, str],
    read: Callable[[Any, str, str, dict[str, str]], Any],
    which: str,
    options: dict[str, str],
) -> None:
    """Batch (``_read``) and streaming (``_stream_rows``) reads of both formats: equal."""
    spark = spark_with_connector
    bootstrap = kafka_cluster.bootstrap_servers
    options = {"subscribe": topics[which], **options}
    jvm = read(spark, "kafka", bootstrap, options)
    ours = read(spark, "aiokafkawire", bootstrap, options)
    assert ours.schema == jvm.schema
    expected = _rows(jvm)
    assert expected, "the JVM connector read nothing"
    assert _rows(ours) == expected
