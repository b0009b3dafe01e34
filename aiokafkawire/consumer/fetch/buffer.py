"""The buffer ``getmany`` drains: fetched data per partition, handed out in order.

Each partition holds at most a few fetched answers (:class:`FetchedChunk`), decoded on first use
by :meth:`FetchBuffer.drain`.  Positions advance only past records handed out; a chunk fetched
for an older position (the partition was seeked since) is dropped unseen.  Errors meant for the
user (offset out of range without a reset policy, a fatal partition error) wait here too and are
raised by the next drain.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable
from typing import Any, NamedTuple

from aiokafkawire.consumer.fetch.decode import RecordDecoder, ScannedRecords
from aiokafkawire.consumer.subscription import PartitionState, SubscriptionState
from aiokafkawire.consumer.value_types import ConsumerRecord
from aiokafkawire.serialization import RecordDeserializationError
from aiokafkawire.structs import TopicPartition

__all__ = ["FetchBuffer", "FetchedChunk", "PositionUpdate"]

#: Fetched answers a partition may have waiting before it is fetched again.
MAX_CHUNKS_PER_PARTITION = 2


class PositionUpdate(NamedTuple):
    """A partition's position after a drained run of records."""

    offset: int
    leader_epoch: int | None
    version: int


class FetchedChunk:
    """Records of one partition from one fetch answer, handed out progressively.

    The scanned bytes are decoded on first use (in :meth:`FetchBuffer.drain`), so the next fetch
    of the partition is already on the wire while this one is decoded.
    """

    __slots__ = (
        "aborted",
        "cut",
        "index",
        "last_epoch",
        "next_offset",
        "records",
        "scanned",
        "start_offset",
        "version",
    )

    def __init__(
        self,
        scanned: ScannedRecords,
        aborted: list[Any] | None,
        start_offset: int,
        version: int,
    ) -> None:
        self.scanned: ScannedRecords | None = scanned
        self.aborted = aborted
        self.records: list[ConsumerRecord] | None = None
        self.index = 0
        self.start_offset = start_offset
        self.next_offset = scanned.next_offset
        self.version = version
        self.last_epoch: int | None = None
        # A deserializer failed at next_offset: the partition is fetched again from there.
        self.cut = False


def _advance(state: PartitionState, offset: int, leader_epoch: int | None) -> None:
    """The one place a position moves forward: past records handed to the user.

    (A seek or a reset moves it anywhere through :meth:`PartitionState.seek`.)
    """
    state.position = offset
    state.leader_epoch = leader_epoch


class FetchBuffer:
    """Fetched chunks per partition (round-robin between partitions) and errors for the user."""

    def __init__(self, subscription: SubscriptionState, decoder: RecordDecoder) -> None:
        self._subs = subscription
        self._decoder = decoder
        self._chunks: dict[TopicPartition, deque[FetchedChunk]] = {}
        self._errors: deque[Exception] = deque()
        self._data_event = asyncio.Event()

    # ----------------------------------------------------------------- fetch side

    def add(self, tp: TopicPartition, chunk: FetchedChunk) -> None:
        """Queue a fetched chunk behind the partition's earlier ones."""
        chunks = self._chunks.get(tp)
        if chunks is None:
            chunks = self._chunks[tp] = deque()
        chunks.append(chunk)

    def waiting(self, tp: TopicPartition) -> int:
        """How many fetched chunks of ``tp`` wait to be handed out."""
        return len(self._chunks.get(tp, ()))

    def report(self, error: Exception) -> None:
        """Keep an error for the next :meth:`drain` to raise."""
        self._errors.append(error)
        self._data_event.set()

    def holds(self, error: Exception) -> bool:
        """Whether ``error`` (reported earlier) still waits for :meth:`drain` to raise it."""
        return any(waiting is error for waiting in self._errors)

    def wake(self) -> None:
        """Tell waiting consumers that records (or an error) may be available."""
        self._data_event.set()

    def close(self) -> None:
        """Drop everything and wake waiters."""
        self._chunks.clear()
        self._data_event.set()

    # ----------------------------------------------------------------- user side

    def data_event(self) -> asyncio.Event:
        """Set whenever records (or an error) may be available."""
        return self._data_event

    def has_data(self, partitions: Iterable[TopicPartition] | None = None) -> bool:
        """Whether :meth:`drain` would return something now (cheap check)."""
        if self._errors:
            return True
        wanted = None if partitions is None else set(partitions)
        assignment = self._subs.assignment
        for tp, chunks in self._chunks.items():
            if wanted is not None and tp not in wanted:
                continue
            state = assignment.get(tp)
            if state is not None and not (state.paused or state.held) and chunks:
                return True
        return False

    def discard(self, partitions: Iterable[TopicPartition]) -> None:
        """Drop buffered data of partitions (revoked, seeked, reset)."""
        for tp in partitions:
            self._chunks.pop(tp, None)

    def apply_position(self, tp: TopicPartition, update: PositionUpdate) -> None:
        """Apply a position returned by :meth:`drain` (ignored if the partition was seeked)."""
        state = self._subs.assignment.get(tp)
        if state is not None and state.version == update.version:
            _advance(state, update.offset, update.leader_epoch)

    def apply_offset(
        self, tp: TopicPartition, offset: int, leader_epoch: int | None, version: int
    ) -> None:
        """:meth:`apply_position` of ``PositionUpdate(offset, leader_epoch, version)`` without
        building it (the ``async for`` iterator's per-record path)."""
        state = self._subs.assignment.get(tp)
        if state is not None and state.version == version:
            _advance(state, offset, leader_epoch)

    def drain(
        self,
        max_records: int,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        advance: bool = True,
    ) -> tuple[dict[TopicPartition, list[ConsumerRecord]], dict[TopicPartition, PositionUpdate]]:
        """Take up to ``max_records`` buffered records out of the buffer.

        Returns the records per partition and, per partition, the position after them (the
        next offset, the leader epoch and the partition state's version).  With ``advance`` the
        positions are applied at once; otherwise the caller applies them as it hands records
        out (see :meth:`apply_position`).  Raises a pending partition error first (e.g. offset
        out of range with no reset policy).
        """
        if self._errors:
            raise self._errors.popleft()
        wanted = None if partitions is None else set(partitions)
        assignment = self._subs.assignment
        result: dict[TopicPartition, list[ConsumerRecord]] = {}
        ends: dict[TopicPartition, PositionUpdate] = {}
        remaining = max_records
        freed = False
        for tp in list(self._chunks):
            if remaining <= 0:
                break
            if wanted is not None and tp not in wanted:
                continue
            chunks = self._chunks[tp]
            state = assignment.get(tp)
            if state is None:
                del self._chunks[tp]
                freed = True
                continue
            if state.paused or state.held:
                continue
            try:
                taken, position, epoch, remaining = self._take(tp, state, chunks, remaining)
            except RecordDeserializationError:
                if result:
                    break  # hand out what was taken: the error comes with the next drain
                raise
            if position is not None and position != state.position:
                if advance:
                    _advance(state, position, epoch)
                ends[tp] = PositionUpdate(position, epoch, state.version)
            if taken:
                result[tp] = taken
            if not chunks:
                del self._chunks[tp]
                freed = True
            elif taken:
                # Round-robin fairness: a partition just served goes to the back of the line.
                self._chunks[tp] = self._chunks.pop(tp)
        if freed:
            self._subs.notify()
        if not self.has_data():
            self._data_event.clear()
        return result, ends

    def _take(
        self,
        tp: TopicPartition,
        state: PartitionState,
        chunks: deque[FetchedChunk],
        remaining: int,
    ) -> tuple[list[ConsumerRecord] | None, int | None, int | None, int]:
        """Up to ``remaining`` records of one partition: (records, position, epoch, remaining)."""
        position = state.position
        epoch = state.leader_epoch
        taken: list[ConsumerRecord] | None = None
        while chunks:
            chunk = chunks[0]
            if chunk.version != state.version or chunk.start_offset != position:
                chunks.clear()  # stale: the position moved since this was fetched
                break
            records = chunk.records
            if records is None:
                records = self._decode(tp, state, chunk)
            index = chunk.index
            left = len(records) - index
            if left > remaining:
                part = records[index : index + remaining]
                chunk.index = index + remaining
                remaining = 0
                last = part[-1]
                position = last.offset + 1
                chunk.start_offset = position
                epoch = last.leader_epoch
            else:
                part = records[index:] if index else records
                remaining -= left
                chunks.popleft()
                position = chunk.next_offset
                if chunk.last_epoch is not None:
                    epoch = chunk.last_epoch
                if chunk.cut:
                    # Fetch the record a deserializer failed on again: it raises then.
                    chunks.clear()
                    state.fetch_position = position
                    state.fetch_epoch = epoch
                    self._subs.notify()
                    if part:
                        taken = part if taken is None else taken + part
                    break
            if part:
                if taken is None:
                    taken = part
                else:
                    taken.extend(part)
            if remaining <= 0:
                break
        return taken, position, epoch, remaining

    def _decode(
        self, tp: TopicPartition, state: PartitionState, chunk: FetchedChunk
    ) -> list[ConsumerRecord]:
        """Decode a chunk (once); a corrupt batch raises here, to the user."""
        scanned = chunk.scanned
        assert scanned is not None
        chunk.scanned = None
        try:
            records, _next, last_epoch = self._decoder.decode(
                tp, scanned, chunk.start_offset, chunk.aborted
            )
        except Exception:
            # Fetch again from the position: the error repeats until the user seeks.
            del self._chunks[tp]
            if state.position is not None:
                state.seek(state.position, state.leader_epoch)
            self._subs.notify()
            raise
        chunk.records = records
        chunk.last_epoch = last_epoch
        if _next < chunk.next_offset:
            chunk.next_offset = _next
            chunk.cut = True
        chunk.aborted = None
        return records
