"""The record accumulator: one queue of batches per partition, and the buffer memory budget.

``send`` appends to the last open batch of the record's partition.  A new batch reserves a first
slice of ``buffer_memory`` (``INITIAL_RESERVATION`` bytes, or the record's size if larger) and
grows its reservation by doubling, while memory is available, up to ``batch_size``; whatever it
holds is returned when it is delivered or failed.  Memory stays bounded, ``send`` waits (up to
``max_block_ms``) only when it is used up, and a large ``batch_size`` costs nothing for the many
partitions that only ever see a few records.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from typing import Any

from aiokafkawire import errors
from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.protocol.records import RecordBatchBuilder
from aiokafkawire.structs import TopicPartition

__all__ = ["INITIAL_RESERVATION", "RecordAccumulator"]

# Bytes of buffer memory a new batch starts with (the Java client's whole default batch).
INITIAL_RESERVATION = 16384


class RecordAccumulator:
    """Per-partition batch queues, the memory budget and the set of undecided batches."""

    def __init__(
        self,
        *,
        batch_size: int,
        buffer_memory: int,
        compression_type: int,
        transactional: bool,
    ) -> None:
        self.batch_size = batch_size
        self.buffer_memory = buffer_memory
        self.available = buffer_memory
        self.compression_type = compression_type
        self.transactional = transactional
        self.magic = 2
        self.batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self.incomplete: set[ProducerBatch] = set()
        self._order = 0
        self._memory_freed: asyncio.Event | None = None
        self.wakeup: asyncio.Event | None = None  # set by the owner: wakes the sender
        self.closed = False

    def close(self) -> None:
        """Refuse further reservations and wake every ``send`` waiting for memory."""
        self.closed = True
        if self._memory_freed is not None:
            self._memory_freed.set()

    # ---------------------------------------------------------------- memory

    async def reserve(self, size: int, deadline: float) -> None:
        """Take ``size`` bytes of the budget, waiting until ``deadline`` (monotonic) if needed."""
        while self.available < size:
            if self.closed:
                raise errors.ClientClosedError("the producer was closed while send() waited")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.BufferFullError(
                    f"buffer_memory ({self.buffer_memory} bytes) stayed full: "
                    "the brokers are not keeping up or are unreachable"
                )
            if self._memory_freed is None:
                self._memory_freed = asyncio.Event()
            self._memory_freed.clear()
            if self.wakeup is not None:
                self.wakeup.set()  # make sure full batches are on their way
            timer = asyncio.get_running_loop().call_later(remaining, self._memory_freed.set)
            try:
                await self._memory_freed.wait()
            finally:
                timer.cancel()
        self.available -= size

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

    def grow(self, batch: ProducerBatch, record_size: int) -> bool:
        """Let ``batch`` take more memory so that a ``record_size`` record fits; False if not.

        A batch doubles its reservation (at most up to ``batch_size``), and only from memory
        that is free right now: a batch never waits to grow, a new batch is opened instead.
        """
        reserved = batch.reserved
        limit = self.batch_size
        if reserved >= limit or batch.builder is None:
            return False
        target = min(limit, max(reserved * 2, reserved + record_size))
        extra = target - reserved
        if extra > self.available or self.closed:
            return False
        self.available -= extra
        batch.reserved = target
        batch.builder.batch_size = target
        return True

    # ---------------------------------------------------------------- batches

    def new_batch(self, tp: TopicPartition, reserved: int, created: float) -> ProducerBatch:
        """Open a batch for ``tp`` holding ``reserved`` bytes of the budget (already taken)."""
        builder: Any = RecordBatchBuilder(
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
            queue = self.batches[tp] = deque()
        queue.append(batch)
        self.incomplete.add(batch)
        return batch

    def reenqueue(self, batch: ProducerBatch) -> None:
        """Put a batch back for a retry, before every batch created after it."""
        queue = self.batches.get(batch.tp)
        if queue is None:
            queue = self.batches[batch.tp] = deque()
        orders = [b.order for b in queue]
        queue.insert(bisect.bisect_left(orders, batch.order), batch)

    def fail_all(self, exc: BaseException) -> None:
        """Fail every undecided batch (queued or in flight) with ``exc``."""
        for queue in self.batches.values():
            queue.clear()
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

    def has_unsent(self) -> bool:
        """Whether any batch still waits in a queue."""
        return any(self.batches.values())
