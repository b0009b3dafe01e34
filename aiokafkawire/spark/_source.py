"""The PySpark data source ``aiokafkawire``: batch and streaming reads, batch and streaming writes.

Planning runs on the driver (in Spark's Python planner workers): options are validated and offsets
resolved there.  Each Spark task then reads one offset range of one partition, or writes its rows,
with its own aiokafkawire client (see :mod:`aiokafkawire.spark._kafka_io`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    Filter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
)

from aiokafkawire import errors
from aiokafkawire.spark._exactly_once import (
    TransactionCompleter,
    TransactionRef,
    task_transactional_id,
    write_in_transaction,
)
from aiokafkawire.spark._kafka_io import (
    DataLossError,
    OffsetResolver,
    read_range,
    read_ranges,
    write_batches,
)
from aiokafkawire.spark._options import KafkaOptions, offsets_to_json, parse_options
from aiokafkawire.spark._pushdown import PushedBounds, push_filters
from aiokafkawire.spark._registry_format import (
    decode_batch,
    encode_batches,
    parse_registry_options,
    resolve,
    spark_field,
)
from aiokafkawire.structs import TopicPartition

__all__ = [
    "KafkaDataSource",
    "OffsetRange",
    "RangeGroup",
    "group_ranges",
    "plan_ranges",
    "rate_limit",
]

log = logging.getLogger("aiokafkawire.spark")

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


#: A pushed query's ranges are packed into tasks of at most this many offsets: a task's fixed
#: cost (a Python worker's turn, a consumer's start) outweighs reading that many records.
GROUP_OFFSETS = 100_000


@dataclass(frozen=True)
class RangeGroup(InputPartition):
    """One Spark input partition of several small ranges, read in turn by one consumer."""

    ranges: tuple[OffsetRange, ...]

    @property
    def size(self) -> int:
        """How many offsets the ranges cover."""
        return sum(r.size for r in self.ranges)


def group_ranges(
    ranges: Sequence[OffsetRange], limit: int = GROUP_OFFSETS
) -> list[OffsetRange | RangeGroup]:
    """``ranges`` packed, in order, into tasks of at most ``limit`` offsets.

    A range of ``limit`` offsets or more stays a task of its own; smaller ones share a task
    while their sum stays within ``limit``.  The rows read are the same; only the number of
    tasks (each a Python worker's turn and a consumer's start) goes down.
    """
    planned: list[OffsetRange | RangeGroup] = []
    group: list[OffsetRange] = []
    size = 0

    def close() -> None:
        if group:
            planned.append(group[0] if len(group) == 1 else RangeGroup(tuple(group)))
            group.clear()

    for r in ranges:
        if r.size >= limit:
            planned.append(r)
            continue
        if size + r.size > limit:
            close()
            size = 0
        group.append(r)
        size += r.size
    close()
    return planned


def _split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` cut into ``parts`` contiguous pieces of (almost) equal size."""
    result: list[OffsetRange] = []
    remaining = r.size
    begin = r.start
    for part in range(parts):
        piece = remaining // (parts - part)
        remaining -= piece
        if piece > 0:
            result.append(OffsetRange(r.topic, r.partition, begin, begin + piece))
        begin += piece
    return result


def plan_ranges(
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    min_partitions: int | None,
    max_records: int | None = None,
) -> list[OffsetRange]:
    """Input partitions for the given bounds, split as Spark's connector does.

    Every non-empty range of a Kafka partition is one input partition. ``max_records``
    (``maxRecordsPerPartition``) first cuts each range into pieces of at most that many offsets;
    when that makes fewer than ``min_partitions``, each range is cut into pieces in proportion to
    its share of all offsets.
    """
    ranges = [
        OffsetRange(tp.topic, tp.partition, starts[tp], ends[tp])
        for tp in sorted(ends)
        if tp in starts and ends[tp] > starts[tp]
    ]
    if max_records is not None:
        ranges = [piece for r in ranges for piece in _split(r, -(-r.size // max_records))]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    return [
        piece for r in ranges for piece in _split(r, max(round(r.size / total * min_partitions), 1))
    ]


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

    def schema(self) -> str | StructType:
        """Kafka's record columns, plus ``headers`` with ``includeHeaders``; with
        ``keyFormat``/``valueFormat`` the key/value are typed by their registry schema."""
        ddl = f"{SCHEMA_DDL}, {HEADERS_DDL}" if self._include_headers() else SCHEMA_DDL
        registry = parse_registry_options(self.options)
        if registry is None:
            return ddl
        typed = {c.column: spark_field(c) for c in resolve(registry).columns}
        return StructType([typed.get(f.name, f) for f in _kafka_schema(self._include_headers())])

    def _with_registry(self, opts: KafkaOptions) -> KafkaOptions:
        """``opts`` with the registry formats resolved here, on the driver."""
        registry = parse_registry_options(self.options)
        return opts if registry is None else dataclasses.replace(opts, registry=resolve(registry))

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader (offsets resolved once, here on the driver)."""
        return KafkaBatchReader(self._with_registry(parse_options(self.options, mode="batch")))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The micro-batch reader."""
        return KafkaStreamReader(self._with_registry(parse_options(self.options, mode="stream")))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        """The batch writer (``mode("append")`` only: Kafka topics cannot be overwritten)."""
        if overwrite:
            raise errors.ConfigError(
                "save mode 'overwrite' is not possible with Kafka: use mode('append')"
            )
        opts = self._with_registry(parse_options(self.options, mode="write"))
        _check_write_schema(schema, opts)
        if opts.exactly_once:
            opts = _exactly_once_options(opts, streaming=False)
        return KafkaBatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        """The streaming writer (each micro-batch's rows, at least once)."""
        opts = self._with_registry(parse_options(self.options, mode="write"))
        _check_write_schema(schema, opts)
        if opts.exactly_once:
            opts = _exactly_once_options(opts, streaming=True)
        return KafkaStreamWriter(opts)


_HEADERS_TYPE = ArrayType(
    StructType().add("key", StringType()).add("value", BinaryType()), containsNull=True
)


def _kafka_schema(include_headers: bool) -> StructType:
    """``SCHEMA_DDL`` (and ``HEADERS_DDL``) as a StructType (DDL parsing needs a SparkContext)."""
    schema = (
        StructType()
        .add("key", BinaryType())
        .add("value", BinaryType())
        .add("topic", StringType())
        .add("partition", IntegerType())
        .add("offset", LongType())
        .add("timestamp", TimestampType())
        .add("timestampType", IntegerType())
    )
    return schema.add("headers", _HEADERS_TYPE) if include_headers else schema


def _check_write_schema(schema: StructType, opts: KafkaOptions) -> None:
    """The columns a Kafka write understands, with the types Spark's Kafka sink accepts."""
    fields: dict[str, DataType] = {f.name: f.dataType for f in schema.fields}
    if "value" not in fields:
        raise errors.ConfigError("a Kafka write needs a 'value' column (binary or string)")
    for name in ("value", "key"):
        kind = fields.get(name)
        if opts.registry is not None and opts.registry.column(name) is not None:
            if kind is not None and not isinstance(kind, StructType):
                raise errors.ConfigError(
                    f"column '{name}' must be a struct with {name}Format, not {kind.simpleString()}"
                )
        elif kind is not None and not isinstance(kind, (BinaryType, StringType)):
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


def _check_order(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]) -> None:
    for tp in sorted(ends):
        if starts[tp] > ends[tp]:
            raise errors.ConfigError(
                f"the starting offset ({starts[tp]}) of {tp.topic}-{tp.partition} is after "
                f"its ending offset ({ends[tp]}): check startingOffsets and endingOffsets"
            )


class KafkaBatchReader(DataSourceReader):
    """Reads offset ranges resolved once on the driver, narrowed by the pushed filters."""

    def __init__(self, opts: KafkaOptions) -> None:
        self._opts = opts
        self._pushed = PushedBounds()

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Filters on ``topic``, ``partition``, ``offset`` and ``timestamp`` as offset ranges.

        All of them are applied exactly, so they leave Spark: ranges are cut to the offset
        bounds, a lower ``timestamp`` bound moves each range's start (ListOffsets by time),
        and the tasks drop rows outside the ``timestamp`` bounds (see :mod:`._pushdown`).
        """
        return push_filters(self._pushed, filters)

    def partitions(self) -> Sequence[InputPartition]:
        """One input partition per non-empty range (split further by ``minPartitions``).

        Ranges narrowed by pushed filters that are small are grouped into fewer tasks (see
        :func:`group_ranges`); contradictory filters plan nothing without a lookup.
        """
        pushed = self._pushed
        if pushed.empty:
            return []
        resolver = OffsetResolver(self._opts)
        try:
            partitions = resolver.partitions()
            kept = pushed.filter_partitions(partitions)
            low_ms = pushed.timestamp_low_ms
            starts, ends, by_time = resolver.resolve_bounds(
                partitions, None if low_ms is None else (kept, low_ms)
            )
            _check_order(starts, ends)
        finally:
            resolver.close()
        starts, ends = pushed.narrow(
            {tp: starts[tp] for tp in kept},
            {tp: ends[tp] for tp in kept},
            by_time if low_ms is not None else None,
        )
        ranges = plan_ranges(
            starts, ends, self._opts.min_partitions, self._opts.max_records_per_partition
        )
        if not pushed.described:
            return ranges
        log.info("pushed filters %s: %d partitions kept", pushed.described, len(kept))
        if self._opts.min_partitions is not None or self._opts.max_records_per_partition:
            return ranges
        return group_ranges(ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The records of one range (inside the pushed timestamp bounds), as Arrow batches."""
        if isinstance(partition, OffsetRange):
            ranges: Sequence[OffsetRange] = [partition]
        elif isinstance(partition, RangeGroup):
            ranges = partition.ranges
        else:
            return  # no ranges were planned: Spark passes one empty partition
        bounds = [(r.topic, r.partition, r.start, r.end) for r in ranges]
        for batch in read_ranges(self._opts, bounds):
            kept = self._pushed.filter_rows(batch)
            if kept.num_rows:
                yield _decoded(self._opts, _topic_of(batch), kept)


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
        self._last_trigger: float | None = None

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
        """``maxOffsetsPerTrigger`` as a row limit, ``minOffsetsPerTrigger`` as a minimum.

        With both, Spark's connector returns a composite limit, which a Python source cannot:
        the maximum goes to Spark and the minimum is taken from the options in
        :meth:`latestOffset` (whenever Spark passes a limit other than everything available).
        """
        limit = self._opts.max_offsets_per_trigger
        if limit is not None:
            return ReadMaxRows(limit)
        minimum = self._opts.min_offsets_per_trigger
        return ReadMinRows(minimum) if minimum is not None else ReadAllAvailable()

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
        new = [tp for tp in latest if tp not in starts]
        origin = dict(starts)
        if new and not isinstance(limit, ReadAllAvailable):
            origin.update(self._lookups.earliest(new))
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(origin, latest, limit.max_rows)
        else:
            end = latest
        minimum = self._minimum(limit)
        if minimum is not None and self._delay(minimum, origin, end):
            return start
        # A batch never moves backwards for a partition whose end is below its start (a
        # recreated topic): that loss is reported when the batch is planned.
        return offsets_to_json(end)

    def _minimum(self, limit: ReadLimit) -> int | None:
        """The minimum of offsets a micro-batch waits for under ``limit`` (None: no minimum)."""
        if self._target is not None or isinstance(limit, ReadAllAvailable):
            return None  # availableNow, or Spark asks for everything: never wait
        if isinstance(limit, ReadMinRows):
            return int(limit.min_rows)
        return self._opts.min_offsets_per_trigger

    def _delay(
        self, minimum: int, origin: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
    ) -> bool:
        """Whether to skip this trigger: fewer than ``minimum`` new offsets, and the last batch
        was less than ``maxTriggerDelay`` ago (as Spark's connector, the first trigger runs)."""
        available = sum(max(end[tp] - origin.get(tp, end[tp]), 0) for tp in end)
        now = time.monotonic()
        waited_ms = (now - self._last_trigger) * 1000 if self._last_trigger is not None else None
        if (
            available < minimum
            and waited_ms is not None
            and waited_ms < self._opts.max_trigger_delay_ms
        ):
            return True
        self._last_trigger = now
        return False

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
        return plan_ranges(
            starts, ends, self._opts.min_partitions, self._opts.max_records_per_partition
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The records of one range, as Arrow record batches."""
        if not isinstance(partition, OffsetRange):
            return
        for batch in read_range(
            self._opts, partition.topic, partition.partition, partition.start, partition.end
        ):
            yield _decoded(self._opts, partition.topic, batch)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: Spark's checkpoint holds the offsets."""

    def stop(self) -> None:
        """Close the driver-side client."""
        resolver, self._resolver = self._resolver, None
        if resolver is not None:
            resolver.close()


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one write task reports: how many records it delivered, and with ``exactlyOnce``
    the transaction it left open for the driver to end."""

    records: int
    transaction: TransactionRef | None = None


def _transactions(messages: Sequence[WriterCommitMessage | None]) -> list[TransactionRef]:
    return [
        m.transaction
        for m in messages
        if isinstance(m, KafkaCommitMessage) and m.transaction is not None
    ]


def _exactly_once_options(opts: KafkaOptions, *, streaming: bool) -> KafkaOptions:
    """``opts`` with the transactional id prefix settled; recovers a half-done commit."""
    prefix = opts.transactional_id_prefix
    if prefix is None and streaming and opts.checkpoint_location:
        digest = hashlib.sha256(opts.checkpoint_location.encode()).hexdigest()[:20]
        prefix = f"aiokafkawire-spark-{digest}"
    if prefix is None:
        raise errors.ConfigError(
            "option 'transactionalIdPrefix' is needed with exactlyOnce=true"
            + (
                " (or the option 'checkpointLocation', from which it is derived)"
                if streaming
                else ": it names the write, and a write whose name has committed is not done again"
            )
        )
    settled = dataclasses.replace(opts, transactional_id_prefix=prefix)
    completer = TransactionCompleter(settled)
    try:
        completer.recover()
    finally:
        completer.close()
    return settled


def _decoded(opts: KafkaOptions, topic: str, batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with keyFormat/valueFormat columns decoded (writer schemas fetched here)."""
    return batch if opts.registry is None else decode_batch(opts.registry, topic, batch)


def _topic_of(batch: pa.RecordBatch) -> str:
    """The topic of a (non-empty) batch of one partition's records."""
    return str(batch.column(batch.schema.get_field_index("topic"))[0].as_py())


def _write(opts: KafkaOptions, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
    if opts.registry is not None:
        iterator = encode_batches(opts.registry, opts.topic, iterator)
    if not opts.exactly_once:
        return KafkaCommitMessage(write_batches(opts, iterator))
    assert opts.transactional_id_prefix is not None
    tid = task_transactional_id(opts.transactional_id_prefix)
    count, transaction = write_in_transaction(opts, iterator, tid)
    return KafkaCommitMessage(count, transaction)


def _end(
    opts: KafkaOptions, messages: Sequence[WriterCommitMessage | None], batch: int | None
) -> None:
    """Commit (``batch`` given, None: abort) the transactions of ``messages``."""
    if not opts.exactly_once:
        return
    completer = TransactionCompleter(opts)
    try:
        if batch is None:
            completer.abort(_transactions(messages))
        elif not completer.commit(_transactions(messages), batch):
            log.warning(
                "exactly-once write %r, batch %d: committed before; nothing written again",
                opts.transactional_id_prefix,
                batch,
            )
    finally:
        completer.close()


class KafkaBatchWriter(DataSourceArrowWriter):
    """Each task produces its rows with one producer and flushes before it returns.

    With ``exactlyOnce``, each task writes in its own transaction, which :meth:`commit` ends.
    """

    def __init__(self, opts: KafkaOptions) -> None:
        self._opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Produce every row; a failed delivery fails the task with the broker's error."""
        return _write(self._opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """``exactlyOnce``: commit every task's transaction (once per transactionalIdPrefix)."""
        _end(self._opts, messages, 0)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """``exactlyOnce``: abort the tasks' transactions (else nothing can be undone)."""
        _end(self._opts, messages, None)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """The streaming sink: each micro-batch's rows, at least once, or exactly once."""

    def __init__(self, opts: KafkaOptions) -> None:
        self._opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Produce every row of this task's part of the micro-batch."""
        return _write(self._opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """``exactlyOnce``: commit the batch's transactions (a replayed batch: abort them)."""
        _end(self._opts, messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """``exactlyOnce``: abort the batch's transactions."""
        _end(self._opts, messages, None)
