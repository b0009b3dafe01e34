"""Producer batches (one future per batch), delivery handles and record metadata."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, overload

from aiokafkawire._compiled import fast_fields, load_accelerator
from aiokafkawire.errors import TransactionAbortedError
from aiokafkawire.protocol.records import rewrite_producer_state
from aiokafkawire.structs import TopicPartition

__all__ = ["DeliveryHandle", "ProducerBatch", "RecordMetadata"]


@fast_fields
class RecordMetadata(NamedTuple):
    """Where a record was written.

    ``offset`` is -1 when the broker does not say: with ``acks=0``, or for an idempotent batch
    written while its answer was lost, whose retry came too late for the broker to match it.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int

    @property
    def topic_partition(self) -> TopicPartition:
        """The record's partition as a :class:`TopicPartition`."""
        return TopicPartition(self.topic, self.partition)


_new_tuple = tuple.__new__

T = TypeVar("T")

# The futures of DeliveryHandle.as_future, resolved by the batch's own completion pass: a flat
# list of (future, record index, record timestamp, convert or None) quadruples, so that a pending
# record holds no tuple of its own (each one counted toward the next garbage collection).
_FutureEntries = list[Any]


def _delivered(
    topic: str, partition: int, index: int, timestamp: int, base_offset: int, log_append_time: int
) -> RecordMetadata:
    """Record ``index``'s metadata in a batch written at ``base_offset`` (the tuple made
    without NamedTuple's Python-level ``__new__``: this runs once per record)."""
    return _new_tuple(
        RecordMetadata,
        (
            topic,
            partition,
            base_offset + index if base_offset >= 0 else -1,
            log_append_time if log_append_time >= 0 else timestamp,
        ),
    )


def fail_delivery_future(future: asyncio.Future[Any], exc: BaseException) -> None:
    """Fail a record's future with its delivery error.

    A :class:`~aiokafkawire.errors.TransactionAbortedError` is marked retrieved: the application
    aborted the transaction itself, so, as aiokafka does, a future it never awaits is not
    reported at garbage collection.  Any other error is, as asyncio does.
    """
    future.set_exception(exc)
    if isinstance(exc, TransactionAbortedError):
        future.exception()


def _resolve_entries(
    entries: _FutureEntries, topic: str, partition: int, base_offset: int, log_append_time: int
) -> None:
    # One pass over the records' futures, no loop callback per record (franz-go style).
    items = iter(entries)
    for future, index, timestamp, convert in zip(items, items, items, items, strict=True):
        if future.done():  # cancelled by its owner
            continue
        metadata = _delivered(topic, partition, index, timestamp, base_offset, log_append_time)
        if convert is None:
            future.set_result(metadata)
            continue
        try:
            future.set_result(convert(metadata))
        except Exception as exc:  # the converter's error is this record's, not the batch's
            future.set_exception(exc)


def _fail_entries(entries: _FutureEntries, exc: BaseException) -> None:
    for future in entries[::4]:
        if not future.done():
            fail_delivery_future(future, exc)


class _PureBatchCore:
    """The batch fields the accumulator's hot path uses (``_cproducer.BatchCore`` when compiled)."""

    __slots__ = ("builder", "closed", "count", "outcome", "partition", "topic")

    topic: str
    partition: int
    builder: Any  # the open RecordBatchBuilder; None once built
    outcome: tuple[int, int] | None  # (base_offset, log_append_time) once delivered
    count: int  # records appended
    closed: bool  # drained at least once: no more appends


class _PureHandleCore:
    """A delivery handle's fields (``_cproducer.HandleCore`` when compiled)."""

    __slots__ = ("_batch", "_index", "_timestamp")

    _batch: ProducerBatch
    _index: int
    _timestamp: int

    def __init__(self, batch: ProducerBatch, index: int, timestamp: int) -> None:
        self._batch = batch
        self._index = index
        self._timestamp = timestamp


_accelerator: Any = load_accelerator("aiokafkawire.producer._cproducer")
if TYPE_CHECKING:
    _BatchCore = _PureBatchCore
    _HandleCore = _PureHandleCore
elif _accelerator is None:
    _BatchCore, _HandleCore = _PureBatchCore, _PureHandleCore
else:
    _BatchCore, _HandleCore = _accelerator.BatchCore, _accelerator.HandleCore


class ProducerBatch(_BatchCore):
    """Records bound for one partition, sent (and retried) together in one Produce request."""

    __slots__ = (
        "attempts",
        "base_sequence",
        "created",
        "full",
        "future",
        "futures",
        "in_flight",
        "magic",
        "order",
        "payload",
        "producer_epoch",
        "producer_id",
        "raw_size",
        "reserved",
        "retry_at",
        "spent",
        "tp",
        "waiters",
    )

    def __init__(
        self,
        tp: TopicPartition,
        builder: Any,
        magic: int,
        future: asyncio.Future[tuple[int, int]],
        created: float,
        order: int,
        reserved: int,
    ) -> None:
        self.tp = tp
        self.topic = tp[0]
        self.partition = tp[1]
        self.builder = builder
        self.magic = magic
        self.future = future
        # (base_offset, log_append_time) once delivered: what a handle's C __await__ reads.
        self.outcome: tuple[int, int] | None = None
        self.created = created
        self.order = order  # creation order within the producer: keeps retries in send order
        self.reserved = reserved  # bytes of buffer_memory held until the batch is done
        self.count = 0
        self.full = False
        self.closed = False  # drained at least once: no more appends
        self.in_flight = False
        self.attempts = 0
        self.retry_at = 0.0
        # The built batch: a read-only view of the buffer the records were appended to (no copy;
        # Produce frames reference it), or bytes once re-sequenced.
        self.payload: bytes | memoryview | None = None
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.raw_size = 0  # uncompressed bytes, known once built
        # A compressed batch's records buffer, no part of its payload: reused once it is done.
        self.spent: bytearray | None = None
        # One future per task awaiting a pending handle, resolved with the batch.  A waiter is
        # never the batch's own future: cancelling it must not cancel the batch for everyone.
        self.waiters: list[asyncio.Future[None]] | None = None
        # Record futures of DeliveryHandle.as_future, resolved in complete()/fail() in one loop.
        self.futures: _FutureEntries | None = None

    def __repr__(self) -> str:
        return (
            f"<ProducerBatch {self.topic}-{self.partition} records={self.count} "
            f"attempts={self.attempts} seq={self.base_sequence} done={self.future.done()}>"
        )

    @property
    def done(self) -> bool:
        """Whether the batch was delivered or failed."""
        return self.future.done()

    def estimated_size(self) -> int:
        """Bytes this batch adds to a request (exact once built)."""
        payload = self.payload
        return len(payload) if payload is not None else int(self.builder.size_in_bytes)

    def encode(
        self, producer_id: int, producer_epoch: int, base_sequence: int
    ) -> bytes | memoryview:
        """The batch bytes carrying these producer fields (built once, patched on re-sequencing)."""
        payload = self.payload
        if payload is None:
            if self.magic == 2:
                builder = self.builder
                builder.producer_id = producer_id
                builder.producer_epoch = producer_epoch
                builder.base_sequence = base_sequence
            self.raw_size = int(self.builder.size_in_bytes)
            payload = self.payload = self.builder.build_view()
            self.spent = self.builder.take_spent_buffer()
            self.builder = None  # the records now live in the payload only
        elif self.magic == 2 and (
            producer_id != self.producer_id
            or producer_epoch != self.producer_epoch
            or base_sequence != self.base_sequence
        ):
            payload = self.payload = rewrite_producer_state(
                payload,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=base_sequence,
            )
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        return payload

    def complete(self, base_offset: int, log_append_time: int) -> None:
        """Resolve every handle of the batch."""
        if not self.future.done():
            self.outcome = (base_offset, log_append_time)
            self.future.set_result(self.outcome)
            self._wake_waiters()
            futures = self.futures
            if futures is not None:  # the only cost to batches nobody asked a future of
                self.futures = None
                _resolve_entries(futures, self.topic, self.partition, base_offset, log_append_time)
        self._drop_records()

    def add_waiter(self) -> asyncio.Future[None] | None:
        """A new future set when the batch is decided (None if it is): what one task awaits.

        Never the batch's own future: cancelling the awaiting task cancels only its waiter.
        """
        future = self.future
        if future.done():
            return None
        waiter: asyncio.Future[None] = future.get_loop().create_future()
        waiters = self.waiters
        if waiters is None:
            self.waiters = [waiter]
        else:
            waiters.append(waiter)
        return waiter

    def _wake_waiters(self) -> None:
        # At once, not from the batch future's callbacks: a waiting task costs one loop hop.
        waiters = self.waiters
        if waiters is not None:
            self.waiters = None
            for waiter in waiters:
                if not waiter.done():  # a cancelled waiter stays in the list until now
                    waiter.set_result(None)

    def _drop_records(self) -> None:
        # Handles may outlive the delivery by far: they need the offsets, not the bytes.
        self.payload = None
        self.builder = None
        self.spent = None

    def fail(self, exc: BaseException) -> None:
        """Fail every handle of the batch with ``exc``."""
        future = self.future
        if not future.done():
            future.set_exception(exc)
            # Marked as retrieved: callers may drop handles they do not care about, and the
            # error is still raised to everyone who awaits one.
            future.exception()
            self._wake_waiters()
            futures = self.futures
            if futures is not None:
                self.futures = None
                _fail_entries(futures, exc)
        self._drop_records()


class DeliveryHandle(_HandleCore):
    """The delivery of one record: ``await handle`` gives its :class:`RecordMetadata`.

    Raises the delivery error instead when the record could not be written.  A task awaiting a
    pending handle waits on a future of its own (:meth:`ProducerBatch.add_waiter`): cancelling
    it leaves the batch alone.  Compiled, the base type answers ``await`` of a delivered or
    pending record in C and calls :meth:`_await_pending` for a failed one; it stays outside the
    cyclic GC, so this class adds no slots.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        state = "pending" if not self.done() else "done"
        return (
            f"<DeliveryHandle {self._batch.topic}-{self._batch.partition} #{self._index} {state}>"
        )

    @property
    def topic(self) -> str:
        """The record's topic."""
        return self._batch.topic

    @property
    def partition(self) -> int:
        """The partition the record was appended to."""
        return self._batch.partition

    def done(self) -> bool:
        """Whether the delivery is decided (written or failed)."""
        return self._batch.future.done()

    def exception(self) -> BaseException | None:
        """The delivery error once done (``None`` on success); raises if still pending."""
        return self._batch.future.exception()

    def result(self) -> RecordMetadata:
        """The metadata once done; raises the delivery error, or InvalidStateError if pending."""
        # No local holding the batch before this raises: a kept traceback would pin it.
        base_offset, log_append_time = self._batch.future.result()
        batch = self._batch
        return _delivered(
            batch.topic, batch.partition, self._index, self._timestamp, base_offset, log_append_time
        )

    def add_done_callback(self, callback: Callable[[DeliveryHandle], object]) -> None:
        """Call ``callback(handle)`` (from the event loop) once the delivery is decided.

        One loop callback per call: to resolve many records' futures, :meth:`as_future` is
        cheaper.
        """
        self._batch.future.add_done_callback(lambda _future: callback(self))

    @overload
    def as_future(self, convert: None = None) -> asyncio.Future[RecordMetadata]: ...
    @overload
    def as_future(self, convert: Callable[[RecordMetadata], T]) -> asyncio.Future[T]: ...
    def as_future(
        self, convert: Callable[[RecordMetadata], Any] | None = None
    ) -> asyncio.Future[Any]:
        """A new :class:`asyncio.Future` of this delivery: its :class:`RecordMetadata`, or
        ``convert(metadata)`` if given, or the delivery error.

        The batch resolves its records' futures itself, in one pass when its outcome arrives
        (no loop callback per record); a future of a decided delivery is returned resolved.
        Each call makes a future of its own: cancelling it leaves the delivery and every other
        future alone.  An exception raised by ``convert`` fails only this future.  A failed
        delivery's error is left for the future's owner to retrieve (asyncio reports it at
        garbage collection otherwise), except :class:`~aiokafkawire.errors.TransactionAbortedError`:
        the application aborted the transaction itself, so, as in aiokafka, it is marked
        retrieved.  Call from the producer's event loop.
        """
        batch = self._batch
        batch_future = batch.future
        future: asyncio.Future[Any] = batch_future.get_loop().create_future()
        if not batch_future.done():
            # Registered with the batch, whose complete()/fail() resolves it (per record: no
            # call here beyond the future's creation).
            futures = batch.futures
            if futures is None:
                batch.futures = [future, self._index, self._timestamp, convert]
            else:
                futures += (future, self._index, self._timestamp, convert)
            return future
        # Decided: resolved at once, as the batch's pass would have.
        entry = [future, self._index, self._timestamp, convert]
        error = batch_future.exception()
        if error is not None:
            _fail_entries(entry, error)
        else:
            _resolve_entries(entry, batch.topic, batch.partition, *batch_future.result())
        return future

    def _await_pending(self) -> Generator[Any, None, RecordMetadata]:
        waiter = self._batch.add_waiter()
        if waiter is not None:
            yield from waiter.__await__()
        return self.result()  # raises the delivery error of a failed batch

    if _accelerator is None:
        __await__ = _await_pending


if _accelerator is not None:
    _accelerator.set_metadata_type(RecordMetadata)
    # No GC header per handle: allocating one counted toward the next collection (many kept
    # handles triggered full collections: _cproducer.c, handles_outside_gc).
    _accelerator.handles_outside_gc(DeliveryHandle)
