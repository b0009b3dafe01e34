"""The share fetcher's buffer: fetched records waiting to be handed to the application.

Each ShareFetch answer adds one :class:`ShareChunk` per partition; a leader's loop sends its next
ShareFetch only once all chunks of its previous answer are handed out, so the buffer counts the
undelivered chunks of each leader and calls ``on_node_drained`` when that count reaches zero.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from aiokafkawire._waits import wait_event
from aiokafkawire.consumer.share.records import ShareRecord
from aiokafkawire.structs import TopicPartition

__all__ = ["ShareChunk", "ShareRecordBuffer"]


class ShareChunk:
    """The records of one partition from one ShareFetch answer, handed out progressively."""

    __slots__ = ("index", "node_id", "records", "tp")

    def __init__(self, node_id: int, tp: TopicPartition, records: list[ShareRecord]) -> None:
        self.node_id = node_id
        self.tp = tp
        self.records = records
        self.index = 0


class ShareRecordBuffer:
    """Chunks of fetched records, oldest answer first, and how many each leader still has."""

    def __init__(self, on_node_drained: Callable[[int], None]) -> None:
        self._chunks: deque[ShareChunk] = deque()
        self._waiting: dict[int, int] = {}
        self._data_event = asyncio.Event()
        self._on_node_drained = on_node_drained

    def has_data(self) -> bool:
        """Whether fetched records wait to be handed out."""
        return bool(self._chunks)

    async def wait_for_data(self, timeout: float | None) -> bool:
        """Wait (bounded) until records are buffered."""
        return await wait_event(self._data_event, timeout)

    def waiting(self, node_id: int) -> int:
        """How many chunks of ``node_id``'s last answer are not handed out yet."""
        return self._waiting.get(node_id, 0)

    def add(self, node_id: int, chunks: list[ShareChunk]) -> None:
        """Buffer the chunks of one answer from ``node_id``."""
        if chunks:
            self._chunks.extend(chunks)
            self._waiting[node_id] = self._waiting.get(node_id, 0) + len(chunks)
            self._data_event.set()

    def drain(self, max_records: int) -> list[tuple[TopicPartition, list[ShareRecord]]]:
        """Hand out up to ``max_records`` buffered records (oldest answers first), as runs of
        one partition each: ``[(partition, records), ...]``."""
        out: list[tuple[TopicPartition, list[ShareRecord]]] = []
        taken = 0
        chunks = self._chunks
        while chunks and taken < max_records:
            chunk = chunks[0]
            want = max_records - taken
            if chunk.index == 0 and len(chunk.records) <= want:
                part = chunk.records
            else:
                part = chunk.records[chunk.index : chunk.index + want]
            chunk.index += len(part)
            taken += len(part)
            out.append((chunk.tp, part))
            if chunk.index >= len(chunk.records):
                chunks.popleft()
                self._chunk_done(chunk.node_id)
        if not chunks:
            self._data_event.clear()
        return out

    def _chunk_done(self, node_id: int) -> None:
        left = self._waiting.get(node_id, 0) - 1
        self._waiting[node_id] = max(left, 0)
        if left <= 0:
            self._on_node_drained(node_id)

    def drop_node(self, node_id: int, forget_offset: Callable[[TopicPartition, int], None]) -> None:
        """Drop the undelivered records fetched from ``node_id``, telling ``forget_offset``
        about each one (the broker released them with the session)."""
        kept: deque[ShareChunk] = deque()
        for chunk in self._chunks:
            if chunk.node_id != node_id:
                kept.append(chunk)
                continue
            for record in chunk.records[chunk.index :]:
                forget_offset(chunk.tp, record.offset)
        self._chunks = kept
        self._waiting[node_id] = 0
        if not kept:
            self._data_event.clear()
