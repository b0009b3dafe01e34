"""The PySpark data source ``aiokafkawire``: batch and streaming reads, batch and streaming writes.

Planning runs on the driver (in Spark's Python planner workers): options are validated and offsets
resolved there.  Each Spark task then reads one offset range of one partition, or writes its rows,
with its own aiokafkawire client (see :mod:`aiokafkawire.spark._kafka_io`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from aiokafkawire import errors
from aiokafkawire.spark._kafka_io import (
    DataLossError,
    OffsetResolver,
    read_range,
    write_batches,
)
from aiokafkawire.spark._options import KafkaOptions, offsets_to_json, parse_options
from aiokafkawire.structs import TopicPartition

__all__ = [
    "KafkaDataSource",
    "OffsetRange",
    "plan_ranges",
    "rate_limit",
]

FORMAT_NAME = "aiokafkawire"
SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """One Spark input partition: offsets ``[start, end)`` of one Kafka partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """How many offsets the range covers."""
        return self.end - self.start


def plan_ranges(
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    min_partitions: int | None,
) -> list[OffsetRange]:
    """Input partitions for the given bounds, split by ``minPartitions`` as Spark's connector does.

    Every non-empty range of a Kafka partition is one input partition; when that makes fewer than
    ``min_partitions``, each range is cut into pieces in proportion to its share of all offsets.
    """
    ranges = [
        OffsetRange(tp.topic, tp.partition, starts[tp], ends[tp])
        for tp in sorted(ends)
        if tp in starts and ends[tp] > starts[tp]
    ]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    result: list[OffsetRange] = []
    for r in ranges:
        parts = max(round(r.size / total * min_partitions), 1)
        remaining = r.size
        begin = r.start
        for part in range(parts):
            piece = remaining // (parts - part)
            remaining -= piece
            if piece > 0:
                result.append(OffsetRange(r.topic, r.partition, begin, begin + piece))
            begin += piece
    return result


def rate_limit(
    starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], limit: int
) -> dict[TopicPartition, int]:
    """End offsets that admit at most ``limit`` offsets in all, shared in proportion to backlog."""
    backlog = {tp: latest[tp] - starts[tp] for tp in latest if latest[tp] > starts.get(tp, 0)}
    total = sum(backlog.values())
    if total <= limit:
        return dict(latest)
    shares = {tp: limit * size // total for tp, size in backlog.items()}
    leftover = limit - sum(shares.values())
    for tp in sorted(backlog, key=lambda t: (-(backlog[t] - shares[t]), t)):
        if leftover <= 0:
            break
        if shares[tp] < backlog[tp]:
            shares[tp] += 1
            leftover -= 1
    return {tp: (starts[tp] + shares[tp] if tp in shares else end) for tp, end in latest.items()}


def _offsets_from_spark(offsets: Mapping[str, Any] | None) -> dict[TopicPartition, int]:
    result: dict[TopicPartition, int] = {}
    for topic, partitions in (offsets or {}).items():
        for partition, offset in partitions.items():
            result[TopicPartition(topic, int(partition))] = int(offset)
    return result


def _report_data_loss(opts: KafkaOptions, message: str) -> None:
    if opts.fail_on_data_loss:
        raise DataLossError(
            f"{message}. Some data may have been lost; set the option failOnDataLoss to "
            "'false' to go on without it."
        )


class KafkaDataSource(DataSource):
    """``spark.read.format("aiokafkawire")``: Spark's Kafka source and sink on aiokafkawire.

    Options and schema are those of Spark's built-in ``kafka`` format (see the README).
    """

    @classmethod
    def name(cls) -> str:
        """The short format name."""
        return FORMAT_NAME

    def _include_headers(self) -> bool:
        value = str(self.options.get("includeHeaders", "false")).strip().lower()
        if value not in ("true", "false"):
            raise errors.ConfigError(
                f"option 'includeHeaders' must be 'true' or 'false', not {value!r}"
            )
        return value == "true"

    def schema(self) -> str:
        """Kafka's record columns, plus ``headers`` with ``includeHeaders``."""
        return f"{SCHEMA_DDL}, {HEADERS_DDL}" if self._include_headers() else SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader (offsets resolved once, here on the driver)."""
        return KafkaBatchReader(parse_options(self.options, mode="batch"))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The micro-batch reader."""
        return KafkaStreamReader(parse_options(self.options, mode="stream"))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        """The batch writer (``mode("append")`` only: Kafka topics cannot be overwritten)."""
        if overwrite:
            raise errors.ConfigError(
                "save mode 'overwrite' is not possible with Kafka: use mode('append')"
            )
        opts = parse_options(self.options, mode="write")
        _check_write_schema(schema, opts)
        return KafkaBatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        """The streaming writer (each micro-batch's rows, at least once)."""
        opts = parse_options(self.options, mode="write")
        _check_write_schema(schema, opts)
        return KafkaStreamWriter(opts)


_HEADERS_TYPE = ArrayType(
    StructType().add("key", StringType()).add("value", BinaryType()), containsNull=True
)


def _check_write_schema(schema: StructType, opts: KafkaOptions) -> None:
    """The columns a Kafka write understands, with the types Spark's Kafka sink accepts."""
    fields: dict[str, DataType] = {f.name: f.dataType for f in schema.fields}
    if "value" not in fields:
        raise errors.ConfigError("a Kafka write needs a 'value' column (binary or string)")
    for name in ("value", "key"):
        kind = fields.get(name)
        if kind is not None and not isinstance(kind, (BinaryType, StringType)):
            raise errors.ConfigError(
                f"column '{name}' must be binary or string, not {kind.simpleString()}"
            )
    topic_type = fields.get("topic")
    if topic_type is None and opts.topic is None:
        raise errors.ConfigError("a Kafka write needs a 'topic' column or the option 'topic'")
    if topic_type is not None and not isinstance(topic_type, StringType):
        raise errors.ConfigError(f"column 'topic' must be string, not {topic_type.simpleString()}")
    partition_type = fields.get("partition")
    if partition_type is not None and not isinstance(partition_type, IntegerType):
        raise errors.ConfigError(
            f"column 'partition' must be int, not {partition_type.simpleString()}"
        )
    headers_type = fields.get("headers")
    if headers_type is not None:
        element = headers_type.elementType if isinstance(headers_type, ArrayType) else None
        ok = isinstance(element, StructType)
        if isinstance(element, StructType):
            names = {f.name: f.dataType for f in element.fields}
            ok = (
                set(names) == {"key", "value"}
                and isinstance(names["key"], StringType)
                and isinstance(names["value"], BinaryType)
            )
        if not ok:
            raise errors.ConfigError(
                "column 'headers' must be array<struct<key: string, value: binary>>, not "
                f"{headers_type.simpleString()}"
            )


class KafkaBatchReader(DataSourceReader):
    """Reads offset ranges resolved once on the driver."""

    def __init__(self, opts: KafkaOptions) -> None:
        self._opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        """One input partition per non-empty range (split further by ``minPartitions``)."""
        resolver = OffsetResolver(self._opts)
        try:
            partitions = resolver.partitions()
            starts = resolver.resolve(self._opts.starting, partitions, option="startingOffsets")
            ends = resolver.resolve(self._opts.ending, partitions, option="endingOffsets")
        finally:
            resolver.close()
        for tp in sorted(partitions):
            if starts[tp] > ends[tp]:
                raise errors.ConfigError(
                    f"the starting offset ({starts[tp]}) of {tp.topic}-{tp.partition} is after "
                    f"its ending offset ({ends[tp]}): check startingOffsets and endingOffsets"
                )
        return plan_ranges(starts, ends, self._opts.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The records of one range, as Arrow record batches."""
        if not isinstance(partition, OffsetRange):
            return  # no ranges were planned: Spark passes one empty partition
        yield from read_range(
            self._opts, partition.topic, partition.partition, partition.start, partition.end
        )


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches between offsets Spark checkpoints (per-partition JSON).

    Input partitions are planned from the ``start``/``end`` Spark passes in and live lookups
    only, so a restarted query re-plans a batch exactly.  The only state kept between calls is
    the ``availableNow`` target (for one run of a query) and the client.
    """

    def __init__(self, opts: KafkaOptions) -> None:
        self._opts = opts
        self._resolver: OffsetResolver | None = None
        self._target: dict[TopicPartition, int] | None = None
        self._latest: dict[TopicPartition, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Tasks get the options only: the driver's client and loop stay on the driver.
        state = dict(self.__dict__)
        state["_resolver"] = None
        return state

    @property
    def _lookups(self) -> OffsetResolver:
        if self._resolver is None:
            self._resolver = OffsetResolver(self._opts)
        return self._resolver

    def initialOffset(self) -> dict[str, Any]:
        """Where a new query starts (``startingOffsets``, default latest)."""
        partitions = self._lookups.partitions()
        starts = self._lookups.resolve(self._opts.starting, partitions, option="startingOffsets")
        return offsets_to_json(starts)

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxOffsetsPerTrigger`` as a row limit, else everything available."""
        limit = self._opts.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the offsets this ``availableNow`` run ends at: the latest ones now."""
        self._target = self._current_latest()

    def _current_latest(self) -> dict[TopicPartition, int]:
        partitions = self._lookups.partitions()
        return self._lookups.latest(partitions)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The end of the next micro-batch: the latest offsets, cut to the read limit."""
        starts = _offsets_from_spark(start)
        latest = dict(self._target) if self._target is not None else self._current_latest()
        self._latest = latest
        if isinstance(limit, ReadMaxRows):
            new = [tp for tp in latest if tp not in starts]
            origin = dict(starts)
            if new:
                origin.update(self._lookups.earliest(new))
            end = rate_limit(origin, latest, limit.max_rows)
        else:
            end = latest
        # A batch never moves backwards for a partition whose end is below its start (a
        # recreated topic): that loss is reported when the batch is planned.
        return offsets_to_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The latest offsets seen by the last :meth:`latestOffset`."""
        return None if self._latest is None else offsets_to_json(self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """Ranges between ``start`` and ``end``; new partitions start at their earliest offset."""
        starts = _offsets_from_spark(start)
        ends = _offsets_from_spark(end)
        gone = sorted(tp for tp in starts if tp not in ends)
        if gone:
            _report_data_loss(
                self._opts, f"partitions {[f'{t}-{p}' for t, p in gone]} were deleted"
            )
        new = [tp for tp in ends if tp not in starts]
        if new:
            earliest = self._lookups.earliest(new)
            for tp in sorted(new):
                if earliest[tp] != 0:
                    _report_data_loss(
                        self._opts,
                        f"added partition {tp.topic}-{tp.partition} starts at offset "
                        f"{earliest[tp]}, not 0",
                    )
            starts = {**starts, **earliest}
        for tp in sorted(ends):
            if ends[tp] < starts[tp]:
                _report_data_loss(
                    self._opts,
                    f"{tp.topic}-{tp.partition} went back from offset {starts[tp]} to "
                    f"{ends[tp]} (topic recreated or log truncated)",
                )
        return plan_ranges(starts, ends, self._opts.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The records of one range, as Arrow record batches."""
        if not isinstance(partition, OffsetRange):
            return
        yield from read_range(
            self._opts, partition.topic, partition.partition, partition.start, partition.end
        )

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: Spark's checkpoint holds the offsets."""

    def stop(self) -> None:
        """Close the driver-side client."""
        resolver, self._resolver = self._resolver, None
        if resolver is not None:
            resolver.close()


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one write task reports: how many records it delivered."""

    records: int


class KafkaBatchWriter(DataSourceArrowWriter):
    """Each task produces its rows with one idempotent producer and flushes before it returns."""

    def __init__(self, opts: KafkaOptions) -> None:
        self._opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Produce every row; a failed delivery fails the task with the broker's error."""
        return KafkaCommitMessage(write_batches(self._opts, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to do: every task flushed its records."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to undo: Kafka writes are not transactional here (as Spark's sink)."""


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """The streaming sink: each micro-batch's rows, written at least once."""

    def __init__(self, opts: KafkaOptions) -> None:
        self._opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Produce every row of this task's part of the micro-batch."""
        return KafkaCommitMessage(write_batches(self._opts, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to do: every task flushed its records."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo."""
