"""The record accumulator: the one place that appends records to batches."""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable
from typing import Any, NoReturn

from aiokafkawire import errors
from aiokafkawire._compiled import load_accelerator
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.cluster.metadata import TopicInfo
from aiokafkawire.producer._batch import DeliveryHandle, ProducerBatch
from aiokafkawire.producer._partition import PartitionCursor
from aiokafkawire.producer._txn import TransactionManager
from aiokafkawire.producer.partitioner import DefaultPartitioner, Partitioner, partition_for_key
from aiokafkawire.protocol.records import RecordBatchBuilder, reclaim_buffer
from aiokafkawire.structs import TopicPartition

__all__ = ["INITIAL_RESERVATION", "RecordAccumulator"]

_accelerator: Any = load_accelerator("aiokafkawire.producer._cproducer")

Headers = list[tuple[str, bytes | None]] | None

# Bytes of buffer memory a new batch starts with (the Java client's whole default batch).
INITIAL_RESERVATION = 16384

# Spare batch buffers.  A done batch's buffer is freed with it; at the sizes batches grow to
# (up to batch_size, 1 MB by default) glibc maps each such block on its own and unmaps it on
# free, so the next batch has every page faulted in again and zeroed by the kernel: on 10 KB
# records about a fifth of the producer's CPU (perf, workload 3).  Like the Java client's
# BufferPool, the accumulator keeps a few done buffers, and a batch that grows past SPARE_FROM
# moves into one (copying what it has so far: at most half of that).  Unlike BufferPool's free
# list, idle spares are not charged to buffer_memory: a producer waiting for memory is exactly
# the one whose buffers turn over fastest.  They are bounded instead: SPARE_BUFFERS, and an
# eighth of buffer_memory in all.
SPARE_BUFFERS = 4  # kept at most: one per batch that can be growing at once, roughly
SPARE_MIN_CAPACITY = 128 * 1024  # smaller blocks come back from the heap without page faults
SPARE_FROM = 64 * 1024  # the reservation at which a growing batch takes a spare


class RecordAccumulator:
    """Appends records to their partitions' batches, within the memory budget.

    It finds each partition's queue (a :class:`PartitionCursor`, owned and drained by the sink
    of the partition's leader) and appends to its open batch or opens a new one.  It never
    calls the sender: a new partition is listed in ``fresh`` for the sender to route, a new
    batch sets ``wakeup``, and a full batch waiting sets ``full_batch_waiting`` for
    ``Producer.send`` to act on.
    """

    def __init__(
        self,
        *,
        batch_size: int,
        buffer_memory: int,
        compression_type: int,
        transactional: bool,
        partitioner: Partitioner,
        max_block_ms: int,
    ) -> None:
        self.batch_size = batch_size
        self.buffer_memory = buffer_memory
        self.available = buffer_memory
        self.compression_type = compression_type
        self.transactional = transactional
        self.max_block_ms = max_block_ms
        self.magic = 2
        self.builder_type: Any = RecordBatchBuilder  # the records builder a new batch uses
        # Every partition's queue, for appending (its owner is the sink of its leader).
        self.batches: dict[TopicPartition, PartitionCursor] = {}
        self.fresh: list[PartitionCursor] = []  # queues made since the sender last routed
        # Topics whose metadata is not known yet, with the partitions of the records queued for
        # them by an explicit partition (they wait unrouted until the sender's lookup resolves
        # the topic: see Sender._resolve_topic).  ``unlooked``: not being looked up yet.
        self.unresolved: dict[str, set[int]] = {}
        self.unlooked: list[str] = []
        self.incomplete: set[ProducerBatch] = set()
        # Topic -> (all partition ids, available ones), valid for the metadata ``metadata_seen``.
        self.partitions: dict[str, tuple[list[int], list[int]]] = {}
        self.metadata_seen: Any = None
        self.partitioner = partitioner
        self._choose_partition = partitioner.partition
        # The default partitioner's keyed choice is a pure function: called without the
        # partitioner's own frame on the hot path.
        self._keyed_partition = (
            partition_for_key if type(partitioner) is DefaultPartitioner else None
        )
        self._order = 0
        self._memory_freed: asyncio.Event | None = None
        self.waiting_for_memory = 0  # sends waiting for buffer memory (see wait_for_memory)
        # Done batches' buffers kept for growing batches (SPARE_BUFFERS above).
        self._spares: list[bytearray] = []
        self._cluster: Cluster | None = None
        self._txn: TransactionManager | None = None
        # The compiled common case (_cproducer.Appender), if any: this class pushes into it what
        # it may use (see fast_path) and takes it back when that stops being true.
        self._appender: Any = None
        self._sticky: dict[str, int] = {}  # the default partitioner's sticky partitions
        self.wakeup = asyncio.Event()  # set when a batch is opened, made full or flushed
        # A send opened a new batch while a full one of its partition waits to be sent.
        self.full_batch_waiting = False
        self.closed = False

    def start(self, cluster: Cluster, txn: TransactionManager, magic: int) -> None:
        """Begin appending with record format ``magic`` for ``cluster`` (the producer's start)."""
        self._cluster = cluster
        self._txn = txn
        self.magic = magic

    def fast_path(self, clock: Callable[[], float], max_record_size: int, overhead: int) -> Any:
        """The compiled ``append(topic, value, key, partition, timestamp, headers)``, or None.

        None when the extension is not built or pure Python is forced, or the partitioner is not
        the default one.  The callable returns a :class:`DeliveryHandle`, or None when this
        class's :meth:`append` must take the record (it then has changed nothing).
        """
        partitioner = self.partitioner
        if _accelerator is None or not isinstance(partitioner, DefaultPartitioner):
            return None
        if type(partitioner) is not DefaultPartitioner:
            return None  # a subclass may choose differently
        assert self._cluster is not None and self._txn is not None
        appender = self._appender = _accelerator.Appender(
            keyed=partition_for_key,
            clock=clock,
            handle_type=DeliveryHandle,
            max_record_size=max_record_size,
            overhead=overhead,
        )
        self._sticky = partitioner.sticky_partitions
        # What the appender holds stops being true: new metadata (partition counts), a fatal
        # error (every send must raise it), a transaction that ends or is not begun (a
        # transactional producer appends only inside one; new batches, which add their
        # partition to it, always take the Python path).
        self._cluster.metadata_listeners.append(appender.forget)
        self._txn.on_sendable_change = self._follow_txn
        self._follow_txn()
        for topic, (all_partitions, _) in self.partitions.items():
            self._push_topic(topic, all_partitions)
        return appender.append

    def _push_topic(self, topic: str, all_partitions: list[int]) -> None:
        """Give the appender ``topic``'s lane: its partition count, open batches, sticky one."""
        appender = self._appender
        appender.add_topic(topic, len(all_partitions))
        batches = self.batches
        for partition in all_partitions:
            queue = batches.get((topic, partition))  # type: ignore[call-overload]
            if queue:
                appender.set_open(queue[-1])
        appender.set_sticky(topic, self._sticky.get(topic))

    def _follow_txn(self) -> None:
        if self._appender is not None and self._txn is not None:
            self._appender.enabled = not self.closed and self._txn.may_append()

    def close(self) -> None:
        """Refuse further reservations and wake every ``send`` waiting for memory."""
        self.closed = True
        self.drop_spares()
        if self._appender is not None:
            self._appender.enabled = False
        if self._memory_freed is not None:
            self._memory_freed.set()

    @property
    def spare_bytes(self) -> int:
        """Bytes allocated by the idle spare buffers (at most SPARE_BUFFERS of them)."""
        return sum(spare.__alloc__() for spare in self._spares)

    def undelivered_records(self) -> int:
        """Records in batches neither delivered nor failed (queued or in flight)."""
        return sum(batch.count for batch in self.incomplete if not batch.done)

    @property
    def used(self) -> int:
        """Bytes of the budget held by undelivered batches."""
        return self.buffer_memory - self.available

    # ---------------------------------------------------------------- appending

    async def append(
        self,
        topic: str,
        partition: int | None,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        size: int,
    ) -> DeliveryHandle:
        """Append a checked record of about ``size`` bytes; its :class:`DeliveryHandle`.

        Chooses the partition unless ``partition`` is given (waiting for the metadata of a
        topic not seen yet), then appends to the partition's open batch, or opens a new one
        (waiting for buffer memory if needed).  All of its waits together last at most
        ``max_block_ms``, as in the Java client's ``send``: the first wait takes the deadline
        (no clock is read for a record that does not wait) and the later ones get what is left.
        """
        cached = self._cached_partitions(topic)
        deadline: float | None = None  # when this send's max_block_ms runs out (once it waits)
        if cached is None:
            if partition is not None and self._queue_unknown(topic, partition):
                # The handle needs nothing from metadata: the record waits in its batch instead
                # of send() (as librdkafka queues it); the sender looks the topic up.
                return await self._append_to(
                    TopicPartition(topic, partition), timestamp, key, value, headers, size
                )
            deadline = self._block_deadline()
            cached = await self._partitions_of(topic)
        all_partitions, available = cached
        explicit = partition is not None
        if partition is None:
            if key is not None and self._keyed_partition is not None:
                partition = self._keyed_partition(key, len(all_partitions))
            else:
                partition = self._choose_partition(topic, key, all_partitions, available)
                if self._appender is not None:
                    self._appender.set_sticky(topic, partition)  # keyless: the sticky one
        elif type(partition) is not int or not 0 <= partition < len(all_partitions):
            _check_partition(topic, partition, len(all_partitions))
        queue = self.batches.get((topic, partition))  # type: ignore[call-overload]
        if queue:
            batch = queue[-1]
            handle = self._append_to_open(batch, timestamp, key, value, headers, size, True)
            if handle is not None:
                return handle
            if not (batch.full or batch.closed):
                if deadline is None:
                    deadline = self._block_deadline()
                handle = await self._wait_to_grow(
                    batch, timestamp, key, value, headers, size, deadline
                )
                if handle is not None:
                    return handle
            if not explicit:
                # KIP-480: as in the Java client, the partitioner hears of every new batch it
                # caused (a sticky one then moves on; a keyed choice stays where it is).
                self.partitioner.on_new_batch(topic, partition)
                partition = self._choose_partition(topic, key, all_partitions, available)
                if self._appender is not None:
                    self._appender.set_sticky(topic, self._sticky.get(topic))
        return await self._append_new_batch(
            TopicPartition(topic, partition), timestamp, key, value, headers, size, deadline
        )

    async def _append_to(
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        size: int,
    ) -> DeliveryHandle:
        """Append to the open batch of ``tp`` (a partition given by the caller), or a new one."""
        queue = self.batches.get(tp)
        deadline: float | None = None
        if queue:
            batch = queue[-1]
            handle = self._append_to_open(batch, timestamp, key, value, headers, size, True)
            if handle is not None:
                return handle
            if not (batch.full or batch.closed):
                deadline = self._block_deadline()
                handle = await self._wait_to_grow(
                    batch, timestamp, key, value, headers, size, deadline
                )
                if handle is not None:
                    return handle
        return await self._append_new_batch(tp, timestamp, key, value, headers, size, deadline)

    def _block_deadline(self) -> float:
        """When a send that starts waiting now has used up ``max_block_ms`` (monotonic)."""
        return time.monotonic() + self.max_block_ms / 1000

    def _queue_unknown(self, topic: str, partition: Any) -> bool:
        """Whether a record for ``partition`` of ``topic`` is queued before the topic's metadata
        is known (it is not known, and both are well-formed: else the checks of the usual path
        apply); the first such record lists the topic for the sender to look up."""
        if type(partition) is not int or partition < 0 or type(topic) is not str or not topic:
            return False
        if topic in self.unresolved:
            return True
        info = self._cluster.metadata.topics.get(topic)  # type: ignore[union-attr]
        if info is not None and not info.error_code and info.partitions:
            return False
        self.unresolved[topic] = set()
        self.unlooked.append(topic)
        self._cluster.request_topics((topic,))  # type: ignore[union-attr]  # shared, at once
        self.wakeup.set()
        return True

    def flush_batch_of(self, handle: DeliveryHandle) -> None:
        """Send the batch of ``handle`` without lingering (nothing more is coming for it)."""
        if not handle.done():
            handle._batch.full = True
            self.wakeup.set()

    def _cached_partitions(self, topic: str) -> tuple[list[int], list[int]] | None:
        metadata = self._cluster.metadata  # type: ignore[union-attr]
        if metadata is not self.metadata_seen:
            self.partitions.clear()
            self.metadata_seen = metadata
        return self.partitions.get(topic)

    async def partitions_of(self, topic: str) -> tuple[list[int], list[int]]:
        """``topic``'s (all partition ids, available ones), waiting for its metadata if needed."""
        cached = self._cached_partitions(topic)
        return cached if cached is not None else await self._partitions_of(topic)

    async def _partitions_of(self, topic: str) -> tuple[list[int], list[int]]:
        if type(topic) is not str or not topic:
            raise errors.KafkaTypeError(f"topic must be a non-empty str, got {topic!r}")
        cluster = self._cluster
        assert cluster is not None
        info = cluster.metadata.topics.get(topic)
        if info is None or info.error_code or not info.partitions:
            info = await self._wait_for_topic(topic)
        entry = (info.partition_ids, info.available_partitions)
        if cluster.metadata is self.metadata_seen:
            self.partitions[topic] = entry
            if self._appender is not None:
                self._push_topic(topic, entry[0])
        return entry

    async def _wait_for_topic(self, topic: str) -> TopicInfo:
        """``topic``'s metadata within ``max_block_ms`` (``Cluster.wait_for_topic`` also cuts
        short a metadata request slower than that, as Java's ``awaitUpdate`` does); its
        ``UnknownTopicError`` then says ``max_block_ms`` is used up."""
        cluster = self._cluster
        assert cluster is not None
        limit = self.max_block_ms
        try:
            return await cluster.wait_for_topic(topic, timeout_ms=limit)
        except errors.UnknownTopicError as exc:
            raise errors.UnknownTopicError(
                f"{exc.message}: max_block_ms ({limit} ms) used up waiting for its metadata"
            ) from None

    async def _wait_to_grow(
        self,
        batch: ProducerBatch,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        size: int,
        deadline: float,
    ) -> DeliveryHandle | None:
        """Wait (until ``deadline``) for the memory to grow ``batch``, a partition's newest, and
        append to it; None if a new batch is needed after all.

        The caller's append to the open batch failed only for lack of free memory (the batch is
        open and below ``batch_size``): the record waits for memory to grow this batch instead
        of closing it early.  Closed early, every
        batch would end at the size of what the last answer freed: under a full buffer (a
        producer faster than its brokers) batches shrank to ~20 records of 10 KB and each cost
        its own request, its own wake-ups and its own answer (workload 3: 1 MB batches at 256 MB
        of buffer ran 1.3x faster with half the CPU per record).  A new batch would wait for
        memory all the same.  The new batch's wait then gets what is left until ``deadline``.
        """
        queue = self.batches[batch.tp]
        while True:
            await self.wait_for_memory(size, deadline)
            if batch.full or batch.closed or not queue or queue[-1] is not batch:
                return None  # sent, failed or aborted meanwhile: the record opens a new batch
            handle = self._append_to_open(batch, timestamp, key, value, headers, size, True)
            if handle is not None:
                return handle

    def _append_to_open(
        self,
        batch: ProducerBatch,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        size: int,
        may_grow: bool,
    ) -> DeliveryHandle | None:
        """Append to ``batch`` if it is open and the record fits (growing it if allowed)."""
        if batch.closed:
            return None
        index = batch.count
        builder = batch.builder
        appended = builder.append(timestamp, key, value, headers)
        if not appended and may_grow:
            grown = self.grow(batch, size)
            if grown is None:
                return None  # only memory is short: the batch stays open (see _wait_to_grow)
            appended = grown and builder.append(timestamp, key, value, headers)
        if not appended:
            batch.full = True
            return None
        batch.count = index + 1
        return DeliveryHandle(batch, index, timestamp)

    async def _append_new_batch(
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        size: int,
        deadline: float | None,
    ) -> DeliveryHandle:
        """Open a batch for ``tp`` with the record (waiting for its memory until ``deadline``,
        or for ``max_block_ms`` if the send has not waited yet)."""
        reserve = self.initial_reservation(size)
        if self.available < reserve:
            if deadline is None:
                deadline = self._block_deadline()
            await self.reserve(reserve, deadline)
        else:
            self.available -= reserve
        queue = self.batches.get(tp)
        if queue:
            # Another send may have opened a batch for this partition while we waited.
            handle = self._append_to_open(queue[-1], timestamp, key, value, headers, size, False)
            if handle is not None:
                self.available += reserve
                return handle
        txn = self._txn
        assert txn is not None
        waiting = self.unresolved.get(tp.topic)
        if waiting is not None:
            waiting.add(tp.partition)  # joins the transaction once the partition is known
        elif txn.transactional:
            txn.maybe_add_partition(tp)
        batch = self.new_batch(tp, reserve, time.monotonic())
        batch.builder.append(timestamp, key, value, headers)
        batch.count = 1
        self.wakeup.set()
        if len(self.batches[tp]) > 1:
            self.full_batch_waiting = True  # Producer.send ships it before returning
        return DeliveryHandle(batch, 0, timestamp)

    # ---------------------------------------------------------------- memory

    async def reserve(self, size: int, deadline: float) -> None:
        """Take ``size`` bytes of the budget, waiting until ``deadline`` (monotonic) if needed."""
        await self.wait_for_memory(size, deadline)
        self.available -= size

    async def wait_for_memory(self, size: int, deadline: float) -> None:
        """Wait until ``size`` bytes of the budget are free (taking none), until ``deadline``.

        While anything waits, ``waiting_for_memory`` is above 0: every batch is then ready to
        send (the Java client's "exhausted" rule), so that memory is freed without a linger.
        """
        if self.available >= size:
            return
        self.waiting_for_memory += 1
        try:
            await self._wait_until_free(size, deadline)
        finally:
            self.waiting_for_memory -= 1

    async def _wait_until_free(self, size: int, deadline: float) -> None:
        while self.available < size:
            if self.closed:
                raise errors.ClientClosedError("the producer was closed while send() waited")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.BufferFullError(
                    f"max_block_ms ({self.max_block_ms} ms) used up waiting for buffer memory: "
                    f"buffer_memory ({self.buffer_memory} bytes) stayed full, the brokers are "
                    "not keeping up or are unreachable"
                )
            if self._memory_freed is None:
                self._memory_freed = asyncio.Event()
            self._memory_freed.clear()
            self.wakeup.set()  # make sure full batches are on their way
            timer = asyncio.get_running_loop().call_later(remaining, self._memory_freed.set)
            try:
                await self._memory_freed.wait()
            finally:
                timer.cancel()

    def release(self, batch: ProducerBatch) -> None:
        """Return a finished batch's memory and forget it."""
        if batch in self.incomplete:
            self.incomplete.discard(batch)
            self.available += batch.reserved
            batch.reserved = 0
            if self._memory_freed is not None:
                self._memory_freed.set()

    def initial_reservation(self, record_size: int) -> int:
        """What a new batch for a record of ``record_size`` bytes reserves at first."""
        return max(min(self.batch_size, INITIAL_RESERVATION), record_size)

    def grow(self, batch: ProducerBatch, record_size: int) -> bool | None:
        """Let ``batch`` take more memory so that a ``record_size`` record fits.

        True if it grew; False if it cannot (at ``batch_size``, or closing); None if only free
        memory is short right now (the caller may wait for it: ``_wait_to_grow``).  A batch
        doubles its reservation (at most up to ``batch_size``), or takes what is free when that
        is less but still enough for the record.
        """
        reserved = batch.reserved
        limit = self.batch_size
        if reserved >= limit or batch.builder is None or self.closed:
            return False
        target = min(limit, max(reserved * 2, reserved + record_size))
        extra = target - reserved
        if extra > self.available:
            if self.available < min(record_size, extra):
                return None
            extra = self.available
        self.available -= extra
        reserved = batch.reserved = batch.builder.batch_size = reserved + extra
        if reserved >= SPARE_FROM and self._spares and batch.builder.move_to(self._spares[-1]):
            # Until it grows into the spare's capacity, the batch holds more than it reserved.
            self._spares.pop()
        return True

    def keep_spare(self, buffer: object) -> None:
        """Keep a done batch's ``buffer`` for a growing batch (see SPARE_BUFFERS), if it is
        large, within the spares' bounds, and nothing holds a view of it any more."""
        if type(buffer) is not bytearray or len(self._spares) >= SPARE_BUFFERS or self.closed:
            return
        capacity = buffer.__alloc__()
        if capacity < SPARE_MIN_CAPACITY or self.spare_bytes + capacity > self.buffer_memory // 8:
            return
        if reclaim_buffer(buffer):
            self._spares.append(buffer)

    def drop_spares(self) -> None:
        """Free the spare buffers (the producer is closing)."""
        self._spares.clear()

    # ---------------------------------------------------------------- batches

    def new_batch(self, tp: TopicPartition, reserved: int, created: float) -> ProducerBatch:
        """Open a batch for ``tp`` holding ``reserved`` bytes of the budget (already taken)."""
        builder: Any = self.builder_type(
            self.magic,
            compression_type=self.compression_type,
            is_transactional=self.transactional and self.magic == 2,
            batch_size=reserved,  # raised by grow() as the batch takes more memory
        )
        self._order += 1
        future: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
        batch = ProducerBatch(tp, builder, self.magic, future, created, self._order, reserved)
        queue = self.batches.get(tp)
        if queue is None:
            queue = self.batches[tp] = PartitionCursor(tp)
            self.fresh.append(queue)
        queue.append(batch)
        if self._appender is not None:
            self._appender.set_open(batch)
        self.incomplete.add(batch)
        return batch

    def reenqueue(self, batch: ProducerBatch) -> None:
        """Put a batch back for a retry, before every batch created after it."""
        queue = self.batches[batch.tp]
        orders = [b.order for b in queue]
        queue.insert(bisect.bisect_left(orders, batch.order), batch)

    def fail_all(self, exc: BaseException) -> None:
        """Fail every undecided batch (queued or in flight) with ``exc``."""
        for queue in self.batches.values():
            queue.clear()
        self._reset_lanes()
        for batch in list(self.incomplete):
            batch.fail(exc)
            self.release(batch)

    def abort_queued(self, exc: BaseException) -> None:
        """Fail every batch that is not in flight (a transaction is being aborted)."""
        for queue in self.batches.values():
            for batch in queue:
                batch.fail(exc)
                self.release(batch)
            queue.clear()
        self._reset_lanes()

    def _reset_lanes(self) -> None:
        """The queues were emptied: the appender's lanes hold no open batch any more."""
        if self._appender is not None:
            for topic, (all_partitions, _) in self.partitions.items():
                self._push_topic(topic, all_partitions)


def _check_partition(topic: str, partition: Any, count: int) -> NoReturn:
    """Raise the error for an explicit ``partition`` that is not a plain int in ``0..count-1``."""
    if not isinstance(partition, int) or isinstance(partition, bool):
        raise errors.KafkaTypeError(
            f"partition must be an int or None, got {type(partition).__name__}"
        )
    raise errors.ConfigError(f"topic {topic!r} has {count} partitions; {partition} is not one")
