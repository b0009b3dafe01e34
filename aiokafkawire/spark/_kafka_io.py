"""The Kafka side of the Spark data source: offset lookups (driver), range reads and writes (tasks).

Nothing here imports pyspark: the driver-side :class:`OffsetResolver` and the task-side
:func:`read_range` / :func:`write_batches` work with plain values and pyarrow, each on a private
asyncio event loop that is created and closed by the object or call that uses it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pyarrow as pa

from aiokafkawire import errors
from aiokafkawire._compiled import load_accelerator
from aiokafkawire._retry import Backoff, Deadline, retry
from aiokafkawire.spark._options import (
    EARLIEST,
    LATEST,
    KafkaOptions,
    OffsetBound,
    Subscription,
)
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:  # for annotations; the functions below import them when they run
    from aiokafkawire.consumer import Consumer
    from aiokafkawire.producer import Producer

__all__ = [
    "DataLossError",
    "LoopRunner",
    "OffsetResolver",
    "arrow_schema",
    "read_range",
    "read_ranges",
    "write_batches",
]

log = logging.getLogger("aiokafkawire.spark")

T = TypeVar("T")

#: Records taken from the consumer per step: one Arrow record batch each (at most).
_RECORDS_PER_STEP = 20_000
_STEP_WAIT_MS = 500
_PARTITION_FETCH_BYTES = 8 * 1024 * 1024
#: A range read's long poll (``kafka.fetch.max.wait.ms`` overrides): the records of a planned
#: range are there already, so the broker answers at once; waiting matters only at the end.
_FETCH_MAX_WAIT_MS = 10

_HEADER_TYPE = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)
_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", _TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
]
_SCHEMA = pa.schema(_BASE_FIELDS)
_SCHEMA_WITH_HEADERS = pa.schema([*_BASE_FIELDS, pa.field("headers", _HEADER_TYPE)])


class DataLossError(errors.KafkaError):
    """Offsets a query needs are no longer (or not yet) in Kafka, and ``failOnDataLoss`` is on."""


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema of the rows read (equal to pyspark's ``to_arrow_schema`` of the source)."""
    return _SCHEMA_WITH_HEADERS if include_headers else _SCHEMA


def client_options(opts: KafkaOptions) -> dict[str, Any]:
    """Keyword arguments common to every client, with the TLS context built from PEM files."""
    kwargs = dict(opts.common)
    tls = opts.tls
    if tls.get("cafile") or tls.get("cadata") or tls.get("certfile"):
        from aiokafkawire.net.tls import create_ssl_context

        check_hostname = tls.get("endpoint_identification", "https").strip().lower() == "https"
        kwargs["ssl_context"] = create_ssl_context(
            cafile=tls.get("cafile"),
            cadata=tls.get("cadata"),
            certfile=tls.get("certfile"),
            keyfile=tls.get("keyfile"),
            password=tls.get("password"),
            check_hostname=check_hostname,
        )
    return kwargs


class LoopRunner:
    """A private event loop that runs one coroutine at a time for synchronous callers."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to completion on this runner's loop."""
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        """Cancel what is left on the loop and close it (idempotent)."""
        loop = self._loop
        if loop.is_closed():
            return
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


class OffsetResolver:
    """Driver-side lookups: which partitions a subscription covers and where ranges lie.

    Holds one :class:`~aiokafkawire.Admin` on a private loop, started on first use and closed by
    :meth:`close`; not picklable state, so it is created where it is used.
    """

    def __init__(self, opts: KafkaOptions) -> None:
        self._opts = opts
        self._runner: LoopRunner | None = None
        self._admin: Any = None

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._runner is None:
            self._runner = LoopRunner()
        return self._runner.run(coro)

    async def _client(self) -> Any:
        if self._admin is None:
            from aiokafkawire.admin import Admin

            admin = Admin(**client_options(self._opts))
            await admin.start()
            self._admin = admin
        return self._admin

    def close(self) -> None:
        """Close the admin client and the loop."""
        runner, self._runner = self._runner, None
        admin, self._admin = self._admin, None
        if runner is None:
            return
        try:
            if admin is not None:
                runner.run(admin.close())
        finally:
            runner.close()

    # ------------------------------------------------------------------ partitions

    def partitions(self) -> set[TopicPartition]:
        """The partitions the subscription covers now (topics that do not exist: none)."""
        return self._run(self._partitions())

    async def _partitions(self) -> set[TopicPartition]:
        subscription = self._opts.subscription
        assert subscription is not None
        admin = await self._client()
        if subscription.kind == "subscribePattern":
            names = [t for t in await admin.list_topics() if subscription.matches(t)]
        elif subscription.kind == "subscribe":
            names = list(subscription.topics)
        else:
            names = sorted({tp.topic for tp in subscription.partitions})
        found: set[TopicPartition] = set()
        if names:
            # Unknown topics come back with an error code: a subscription may name them early.
            described = await admin.describe_topics(names, raise_on_error=False)
            for name, info in described.items():
                if info.error_code == 0:
                    found.update(TopicPartition(name, p) for p in info.partition_ids)
        if subscription.kind == "assign":
            missing = [tp for tp in subscription.partitions if tp not in found]
            if missing:
                raise errors.ConfigError(
                    f"option 'assign': {', '.join(f'{t}-{p}' for t, p in missing)} "
                    "do not exist in the cluster"
                )
            return set(subscription.partitions)
        return found

    # ------------------------------------------------------------------ offsets

    def earliest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The log start offset of each partition."""
        return self._run(self._list(dict.fromkeys(partitions, EARLIEST)))

    def latest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The end of each partition: the high watermark, or the LSO with ``read_committed``."""
        return self._run(self._list(dict.fromkeys(partitions, LATEST)))

    def offsets_for_time(
        self, partitions: Iterable[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int]:
        """The first offset at or after ``timestamp_ms`` in each partition (-1: none)."""
        specs = dict.fromkeys(partitions, timestamp_ms)
        return self._run(self._list(specs, allow_missing=True))

    async def _list(
        self, specs: Mapping[TopicPartition, int], *, allow_missing: bool = False
    ) -> dict[TopicPartition, int]:
        """ListOffsets for ``specs``, tried ``fetchOffset.numRetries`` more times on failure."""
        if not specs:
            return {}
        retries = self._opts.fetch_offset_retries
        interval_ms = self._opts.fetch_offset_retry_interval_ms

        def warn(exc: BaseException) -> None:
            log.warning(
                "offset lookup failed (%s); retrying (at most %d times, fetchOffset.numRetries) "
                "in %d ms",
                exc,
                retries,
                interval_ms,
            )

        # As Spark's KafkaOffsetReader: any failure is tried again, numRetries times,
        # retryIntervalMs apart (no doubling, no jitter).
        return await retry(
            lambda: self._list_once(specs, allow_missing),
            should_retry=lambda exc: isinstance(exc, errors.KafkaError),
            deadline=Deadline.after(None),
            backoff=Backoff(interval_ms, interval_ms, jitter=0),
            what="offset lookup",
            on_retry=warn,
            max_attempts=retries + 1,
        )

    async def _list_once(
        self, specs: Mapping[TopicPartition, int], allow_missing: bool
    ) -> dict[TopicPartition, int]:
        admin = await self._client()
        listed = await admin.list_offsets(
            dict(specs), isolation_level=self._opts.isolation_level, raise_on_error=False
        )
        result: dict[TopicPartition, int] = {}
        for tp in specs:
            found = listed.get(tp)
            if found is None or found.error is not None:
                reason = found.error if found is not None else "no answer"
                raise errors.KafkaError(
                    f"cannot look up offsets of {tp.topic}-{tp.partition}: {reason}"
                )
            if found.offset < 0 and not allow_missing:
                raise errors.KafkaError(
                    f"the broker has no offset for {tp.topic}-{tp.partition} (spec {specs[tp]})"
                )
            result[tp] = found.offset
        return result

    def resolve(
        self, bound: OffsetBound, partitions: set[TopicPartition], *, option: str
    ) -> dict[TopicPartition, int]:
        """Concrete offsets of ``bound`` for ``partitions`` (``option`` names it in errors)."""
        return self._run(self._resolve(bound, partitions, option))

    def resolve_bounds(
        self,
        partitions: set[TopicPartition],
        by_time: tuple[set[TopicPartition], int] | None = None,
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int], dict[TopicPartition, int]]:
        """``startingOffsets`` and ``endingOffsets`` of ``partitions`` and, with ``by_time``
        (partitions, epoch ms), the first offset at or after that time in each (-1: none).

        The lookups are sent concurrently: one round trip to each leader instead of three in a
        row (the planner's share of a pushed query's fixed costs).
        """
        return self._run(self._resolve_bounds(partitions, by_time))

    async def _resolve_bounds(
        self,
        partitions: set[TopicPartition],
        by_time: tuple[set[TopicPartition], int] | None,
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int], dict[TopicPartition, int]]:
        await self._client()  # started once, before the concurrent lookups share it
        lookups = [
            self._resolve(self._opts.starting, partitions, "startingOffsets"),
            self._resolve(self._opts.ending, partitions, "endingOffsets"),
        ]
        if by_time is not None and by_time[0]:
            specs = dict.fromkeys(by_time[0], by_time[1])
            lookups.append(self._list(specs, allow_missing=True))
        found = await asyncio.gather(*lookups)
        return found[0], found[1], (found[2] if len(found) > 2 else {})

    async def _resolve(
        self, bound: OffsetBound, partitions: set[TopicPartition], option: str
    ) -> dict[TopicPartition, int]:
        if bound.kind == "earliest":
            return await self._list(dict.fromkeys(partitions, EARLIEST))
        if bound.kind == "latest":
            return await self._list(dict.fromkeys(partitions, LATEST))
        if bound.kind == "offsets":
            _check_named_exactly(bound, partitions, option, " (use -2 for earliest, -1 for latest)")
            specs = {tp: o for tp, o in bound.offsets.items() if o < 0}
            looked_up = await self._list(specs)
            return {tp: looked_up.get(tp, o) for tp, o in bound.offsets.items()}
        if bound.kind == "timestamps":
            _check_named_exactly(bound, partitions, option, "")
            stamps = dict(bound.offsets)
        else:
            stamps = dict.fromkeys(partitions, bound.timestamp)
        found = await self._list(stamps, allow_missing=True)
        missing = [tp for tp, offset in found.items() if offset < 0]
        if missing:
            if option.startswith("starting") and self._opts.timestamp_strategy == "error":
                raise errors.ConfigError(
                    f"option '{option}': no offset matched the timestamp in {_names(missing)} "
                    "(set startingOffsetsByTimestampStrategy=latest to start at the end)"
                )
            latest = await self._list(dict.fromkeys(missing, LATEST))
            found.update(latest)
        return found


def _close_on(runner: LoopRunner, client: Consumer | Producer | None) -> None:
    """Close ``client`` (when it started) on ``runner``'s loop, then the loop itself."""
    try:
        if client is not None:
            runner.run(client.close())
    finally:
        runner.close()


def _check_named_exactly(
    bound: OffsetBound, partitions: set[TopicPartition], option: str, hint: str
) -> None:
    """Refuse per-partition offsets or timestamps that do not name exactly ``partitions``."""
    given = set(bound.offsets)
    if given != partitions:
        raise errors.ConfigError(
            f"option '{option}' must name exactly the subscribed partitions{hint}: missing "
            f"{_names(partitions - given)}, unknown {_names(given - partitions)}"
        )


def _names(partitions: Iterable[TopicPartition]) -> str:
    names = sorted(f"{t}-{p}" for t, p in partitions)
    return "[" + ", ".join(names) + "]"


# ---------------------------------------------------------------------- reading (tasks)


# ConsumerRecord fields: topic, partition, offset, timestamp, timestamp_type, key, value,
# headers, leader_epoch.  Columns are filled straight from the record tuples by pyarrow (an
# iterator per column, no intermediate lists).
_OFFSET = itemgetter(2)
_TIMESTAMP = itemgetter(3)
_TIMESTAMP_KIND = itemgetter(4)
_KEY = itemgetter(5)
_VALUE = itemgetter(6)
_HEADERS = itemgetter(7)
_MS_TIMESTAMP_TYPE = pa.timestamp("ms", tz="UTC")


def _compiled_columns() -> Callable[[list[Any]], tuple[Any, ...]] | None:
    """The C helper that fills the Arrow buffers in one pass, when it was built."""
    module = load_accelerator("aiokafkawire.spark._carrow")
    if module is None:
        return None
    return cast("Callable[[list[Any]], tuple[Any, ...]]", module.record_columns)


_record_columns = _compiled_columns()


def _binary(count: int, validity: bytes | None, offsets: bytes, data: bytes, nulls: int) -> Any:
    buffers = [None if validity is None else pa.py_buffer(validity)]
    buffers += [pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.binary(), count, buffers, null_count=nulls)


def _columns_compiled(records: list[Any]) -> list[Any] | None:
    """Offset, timestamp, type, key and value arrays from the C helper (None: not possible)."""
    if _record_columns is None:
        return None
    try:
        (offsets, stamps, kinds, kv, ko, kd, kn, vv, vo, vd, vn) = _record_columns(records)
    except (TypeError, OverflowError):
        return None  # outside the compiled path (e.g. deserialized keys): pyarrow builds them
    count = len(records)
    return [
        _binary(count, kv, ko, kd, kn),
        _binary(count, vv, vo, vd, vn),
        pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(offsets)]),
        pa.Array.from_buffers(_TIMESTAMP_TYPE, count, [None, pa.py_buffer(stamps)]),
        pa.Array.from_buffers(pa.int32(), count, [None, pa.py_buffer(kinds)]),
    ]


def _columns_pyarrow(records: list[Any]) -> list[Any]:
    count = len(records)
    return [
        pa.array(map(_KEY, records), pa.binary(), size=count),
        pa.array(map(_VALUE, records), pa.binary(), size=count),
        pa.array(map(_OFFSET, records), pa.int64(), size=count),
        pa.array(map(_TIMESTAMP, records), pa.int64(), size=count)
        .cast(_MS_TIMESTAMP_TYPE)
        .cast(_TIMESTAMP_TYPE),
        pa.array(map(_TIMESTAMP_KIND, records), pa.int32(), size=count),
    ]


def records_to_batch(
    records: list[Any], topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    """Arrow columns of consumer records of one partition, built column by column.

    The C helper (``_carrow``) writes the key, value, offset and timestamp buffers in one pass
    over the records; without it, pyarrow converts each column from an iterator.
    """
    count = len(records)
    built = _columns_compiled(records) or _columns_pyarrow(records)
    key, value, offset, timestamp, kind = built
    arrays = [
        key,
        value,
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        offset,
        timestamp,
        kind,
    ]
    if include_headers:
        arrays.append(
            pa.array(
                # No headers is null, not an empty list, as in Spark's Kafka connector.
                [
                    [{"key": k, "value": v} for k, v in headers] if headers else None
                    for headers in map(_HEADERS, records)
                ],
                _HEADER_TYPE,
                size=count,
            )
        )
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))


def read_range(
    opts: KafkaOptions,
    topic: str,
    partition: int,
    start: int,
    end: int,
) -> Iterator[pa.RecordBatch]:
    """Every record of ``topic``-``partition`` in ``[start, end)``, as Arrow record batches.

    Reads with manual assignment and stops once its position reaches ``end``: with
    ``read_committed``, aborted records and transaction markers move the position without
    producing rows, so gaps end the range too.  Offsets that are gone (deleted, truncated)
    raise :class:`DataLossError` with ``failOnDataLoss`` (the default) and are skipped without.
    A range whose remaining offsets do not arrive within ``kafkaConsumer.pollTimeoutMs`` fails
    (or, without ``failOnDataLoss``, ends) instead of waiting for ever.
    """
    return read_ranges(opts, [(topic, partition, start, end)])


def read_ranges(
    opts: KafkaOptions, ranges: Sequence[tuple[str, int, int, int]]
) -> Iterator[pa.RecordBatch]:
    """The records of each ``(topic, partition, start, end)`` range in turn, as
    :func:`read_range` reads one, with one consumer for all of them (one start, one metadata
    round): the planner groups small ranges into one task this way."""
    todo = [r for r in ranges if r[2] < r[3]]
    if not todo:
        return
    from aiokafkawire.consumer import Consumer

    runner = LoopRunner()
    # One partition at a time: larger fetches than a subscriber's default 1 MiB keep the
    # broker round trips per record low (kafka.max.partition.fetch.bytes overrides).
    consumer_options = {
        "max_partition_fetch_bytes": _PARTITION_FETCH_BYTES,
        # A range that ends at the log's end leaves a long poll in flight on the broker's fetch
        # connection, which the next range's first fetch waits behind (500 ms by default).
        "fetch_max_wait_ms": _FETCH_MAX_WAIT_MS,
        **client_options(opts),
        **opts.consumer,
    }
    consumer_options.pop("max_poll_records", None)
    consumer = Consumer(
        auto_offset_reset="none",
        enable_auto_commit=False,
        max_poll_records=_RECORDS_PER_STEP,
        **consumer_options,
    )
    started = False
    try:
        runner.run(consumer.start())
        started = True
        for topic, partition, start, end in todo:
            tp = TopicPartition(topic, partition)
            runner.run(_assign(consumer, tp, start))
            yield from _read_assigned(runner, consumer, opts, tp, start, end)
    finally:
        _close_on(runner, consumer if started else None)


async def _assign(consumer: Any, tp: TopicPartition, offset: int) -> None:
    # assign() and seek() schedule work on the running loop.
    consumer.assign([tp])
    consumer.seek(tp, offset)


def _read_assigned(  # long: one loop, each way the range can end (lost, truncated, late)
    runner: LoopRunner,
    consumer: Any,
    opts: KafkaOptions,
    tp: TopicPartition,
    start: int,
    end: int,
) -> Iterator[pa.RecordBatch]:
    position = start
    last_progress = time.monotonic()
    read_committed = opts.read_committed
    while position < end:
        try:
            fetched = runner.run(
                consumer.getmany(tp, timeout_ms=_STEP_WAIT_MS, max_records=_RECORDS_PER_STEP)
            )
        except errors.OffsetOutOfRangeClientError:
            earliest = runner.run(consumer.beginning_offsets([tp]))[tp]
            if position >= earliest:
                # Past the end of the log (truncated after an unclean leader change, or the
                # topic was recreated): the rest of the range will not come.
                latest = runner.run(consumer.end_offsets([tp]))[tp]
                _data_lost(
                    opts,
                    f"offsets {position}..{end - 1} of {tp.topic}-{tp.partition} are beyond "
                    f"the end of its log ({latest})",
                )
                return
            _data_lost(
                opts,
                f"offsets {position}..{min(earliest, end) - 1} of {tp.topic}-{tp.partition} "
                f"are gone (the log now starts at {earliest})",
            )
            if earliest >= end:
                return
            position = earliest
            runner.run(_assign(consumer, tp, position))
            last_progress = time.monotonic()
            continue
        records = fetched.get(tp)
        if records:
            if records[-1][2] >= end:
                records = [r for r in records if r[2] < end]
            if records:
                yield records_to_batch(records, tp.topic, tp.partition, opts.include_headers)
        new_position = runner.run(consumer.position(tp))
        if new_position != position:
            position = new_position
            last_progress = time.monotonic()
            continue
        if (time.monotonic() - last_progress) * 1000 < opts.poll_timeout_ms:
            continue
        available = consumer.last_stable_offset(tp) if read_committed else consumer.highwater(tp)
        if available is not None and position >= available:
            _data_lost(
                opts,
                f"offsets {position}..{end - 1} of {tp.topic}-{tp.partition} were not in Kafka "
                f"within {opts.poll_timeout_ms} ms (its end is at {available}): the log was "
                "truncated or the range lies beyond it",
            )
            return
        raise errors.KafkaTimeoutError(
            f"no record of {tp.topic}-{tp.partition} at offset {position} arrived within "
            f"{opts.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs)"
        )


def _data_lost(opts: KafkaOptions, message: str) -> None:
    if opts.fail_on_data_loss:
        raise DataLossError(
            f"{message}. Some data may have been lost; set the option failOnDataLoss to "
            "'false' to go on without it."
        )
    log.warning("%s; skipped (failOnDataLoss=false)", message)


# ---------------------------------------------------------------------- writing (tasks)


def _as_binary(column: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.binary())
    return column.to_pylist()


def write_batches(opts: KafkaOptions, batches: Iterable[pa.RecordBatch]) -> int:
    """Produce every row of ``batches``; returns how many were written (all delivered).

    One idempotent producer per call; everything is flushed before returning, and the first
    failed delivery is raised with the broker's error.
    """
    from aiokafkawire.producer import Producer

    runner = LoopRunner()
    producer_options: dict[str, Any] = {"acks": "all", **opts.producer}
    producer = Producer(**client_options(opts), **producer_options)
    started = False
    try:
        runner.run(producer.start())
        started = True
        count = 0
        watched: dict[Any, Any] = {}
        for batch in batches:
            runner.run(_send_batch(producer, opts.topic, batch, watched))
            count += batch.num_rows
        runner.run(producer.flush())
        _raise_failed(watched, wait_all=True)
        return count
    finally:
        _close_on(runner, producer if started else None)


async def _send_batch(
    producer: Any, topic_option: str | None, batch: pa.RecordBatch, watched: dict[Any, Any]
) -> None:
    """Send every row of ``batch``; ``watched`` keeps one delivery handle per producer batch.

    Records of one producer batch share its outcome, so one handle each is enough (and keeps
    ``watched`` small however many rows a task writes); rows alternate between partitions, so
    the handles are keyed by their producer batch, not compared with the previous row's.
    """
    names = batch.schema.names
    rows = batch.num_rows
    values = _as_binary(batch.column(names.index("value")))
    keys = _as_binary(batch.column(names.index("key"))) if "key" in names else [None] * rows
    partitions = (
        batch.column(names.index("partition")).to_pylist() if "partition" in names else None
    )
    headers = batch.column(names.index("headers")).to_pylist() if "headers" in names else None
    _raise_failed(watched)
    send = producer.send
    keep = watched.setdefault
    if topic_option is not None and partitions is None and headers is None:
        # The common case (one topic, no partition or headers column): key and value only.
        for key, value in zip(keys, values, strict=True):
            handle = await send(topic_option, value, key)
            keep(handle._batch, handle)
        return
    topics = _topics(batch, topic_option)
    for i in range(rows):
        topic = topics[i]
        if topic is None:
            raise errors.ConfigError(
                f"row {i} of a batch has a null 'topic' and no option 'topic' is set"
            )
        row_headers = headers[i] if headers is not None else None
        handle = await send(
            topic,
            values[i],
            keys[i],
            partition=partitions[i] if partitions is not None else None,
            headers=[(h["key"], h["value"]) for h in row_headers] if row_headers else None,
        )
        keep(handle._batch, handle)


def _topics(batch: pa.RecordBatch, topic_option: str | None) -> list[Any]:
    """Each row's topic: the option ``topic`` (which wins), else the ``topic`` column."""
    if topic_option is not None:
        return [topic_option] * batch.num_rows
    names = batch.schema.names
    if "topic" in names:
        return cast("list[Any]", batch.column(names.index("topic")).to_pylist())
    raise errors.ConfigError("no 'topic' column and no option 'topic'")


def _raise_failed(watched: dict[Any, Any], *, wait_all: bool = False) -> None:
    """Raise the first failed delivery among ``watched``; forget the delivered ones."""
    delivered = []
    for batch, handle in watched.items():
        if not handle.done():
            if wait_all:
                raise errors.KafkaTimeoutError("a record was still undelivered after flush")
            continue
        failure = handle.exception()
        if failure is not None:
            raise failure
        delivered.append(batch)
    for batch in delivered:
        del watched[batch]


def subscription_topics(subscription: Subscription) -> list[str]:
    """The topic names a fixed subscription names (empty for a pattern)."""
    if subscription.kind == "subscribe":
        return list(subscription.topics)
    if subscription.kind == "assign":
        return sorted({tp.topic for tp in subscription.partitions})
    return []
