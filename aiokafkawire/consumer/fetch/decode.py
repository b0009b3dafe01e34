"""Fetched bytes to records: the batch scan on receipt and the decoding on first use.

A fetch answer's record data is scanned when it arrives (:func:`scan`): the records package
reads the batch headers, nothing more, which gives the next fetch position and the epoch
KIP-320 wants with it.  Decoding into :class:`ConsumerRecord` tuples happens later, when
``getmany`` first reaches the data (:meth:`RecordDecoder.decode`), reusing the scanned batch
objects: the next fetch of the partition is already on the wire by then.  Decoding skips control
batches, filters aborted transactions under ``read_committed`` and applies the deserializers.

The cyclic garbage collector is left alone: the C decoder leaves records holding only atomic
objects untracked (as CPython does for plain tuples), so collections do not walk them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Any

from aiokafkawire.consumer.fetch.config import FetchConfig
from aiokafkawire.consumer.value_types import ConsumerRecord
from aiokafkawire.errors import CorruptRecordError
from aiokafkawire.protocol.records import ControlRecordType, iter_batches
from aiokafkawire.serialization import RecordDeserializationError, locate_failure, plain_only
from aiokafkawire.structs import TopicPartition

__all__ = ["RecordDecoder", "ScannedRecords", "scan"]

_NO_HEADERS: tuple[tuple[str, bytes | None], ...] = ()
_new = tuple.__new__  # skips the namedtuple's Python-level __new__


class ScannedRecords:
    """One partition's record data from one fetch answer, its batch headers read."""

    __slots__ = ("batches", "epoch", "legacy", "next_offset", "raw")

    def __init__(
        self, raw: bytes, batches: list[Any], next_offset: int, epoch: int | None, legacy: bool
    ) -> None:
        self.raw = raw
        #: Every whole batch, in order (a partial trailing batch is left out).
        self.batches = batches
        #: The offset after the last whole batch at or past the fetch offset.
        self.next_offset = next_offset
        #: That batch's leader epoch (None for legacy message sets).
        self.epoch = epoch
        #: Whether a legacy (magic 0/1) message set is among the batches.
        self.legacy = legacy


def scan(raw: bytes, fetch_offset: int) -> ScannedRecords:
    """Read the batch headers of ``raw`` (no CRC check, no record decoded).

    ``next_offset`` equals ``fetch_offset`` when ``raw`` holds no whole batch reaching it (a
    batch larger than the size asked for).  Structurally broken data raises what the records
    package raises (CorruptRecordError, UnknownMagicError).
    """
    batches = list(iter_batches(raw, check_crcs=False))
    next_offset = fetch_offset
    epoch: int | None = None
    legacy = False
    for batch in batches:
        if batch.magic != 2:
            legacy = True
        if batch.last_offset >= fetch_offset:
            following = batch.next_offset
            if following > next_offset:
                next_offset = following
                batch_epoch = batch.partition_leader_epoch if batch.magic == 2 else -1
                epoch = batch_epoch if batch_epoch >= 0 else None
    return ScannedRecords(raw, batches, next_offset, epoch, legacy)


class _AbortedTransactions:
    """The aborted transactions of one fetch answer (``read_committed``), met in offset order."""

    __slots__ = ("_heap", "_open")

    def __init__(self, aborted: Iterable[Any]) -> None:
        self._heap = [(a.first_offset, a.producer_id) for a in aborted]
        heapq.heapify(self._heap)
        self._open: set[int] = set()  # producers inside an aborted transaction

    def skips(self, batch: Any) -> bool:
        """Whether a v2 batch is a control batch or aborted data (not for the user)."""
        heap = self._heap
        last = batch.last_offset
        while heap and heap[0][0] <= last:
            self._open.add(heapq.heappop(heap)[1])
        if batch.is_control:
            if self._open:
                for record in batch:
                    if record.control_type == ControlRecordType.ABORT:
                        self._open.discard(batch.producer_id)
            return True
        return bool(self._open) and batch.is_transactional and batch.producer_id in self._open


def _crc_checked(batches: list[Any]) -> Iterator[Any]:
    for batch in batches:
        if not batch.validate_crc():
            raise CorruptRecordError(
                f"CRC mismatch in magic {batch.magic} batch at offset {batch.base_offset} "
                f"(stored {batch.crc:#010x})"
            )
        yield batch


class RecordDecoder:
    """Decodes scanned record data into :class:`ConsumerRecord` tuples."""

    __slots__ = ("_check_crcs", "_key_deserializer", "_read_committed", "_value_deserializer")

    def __init__(self, config: FetchConfig) -> None:
        self._check_crcs = config.check_crcs
        self._read_committed = config.read_committed
        # Only plain one-argument deserializers run here (in C); context and async ones run
        # after the drain (serialization.DeserializerPair, applied by the consumer).
        self._key_deserializer = plain_only(config.key_deserializer)
        self._value_deserializer = plain_only(config.value_deserializer)

    def decode(
        self,
        tp: TopicPartition,
        scanned: ScannedRecords,
        fetch_offset: int,
        aborted: list[Any] | None,
    ) -> tuple[list[ConsumerRecord], int, int | None]:
        """Records at or after ``fetch_offset``, the offset after the last batch read, and the
        leader epoch of that batch; a corrupt batch raises (CorruptRecordError).

        When a deserializer fails on a record, the records before it are returned with the
        failing record's offset as the "next offset" (the caller fetches it again from there);
        if it is the first record, RecordDeserializationError is raised.
        """
        topic, partition = tp
        key_deserializer = self._key_deserializer
        value_deserializer = self._value_deserializer
        aborts = _AbortedTransactions(aborted) if self._read_committed and aborted else None
        out: list[ConsumerRecord] = []
        next_offset = fetch_offset
        last_epoch: int | None = None
        for batch in self._batches(scanned):
            if batch.last_offset < fetch_offset:
                continue
            if batch.magic == 2:
                epoch: int | None = batch.partition_leader_epoch
                if epoch is not None and epoch < 0:
                    epoch = None
                if batch.is_control if aborts is None else aborts.skips(batch):
                    next_offset = batch.next_offset
                    last_epoch = epoch
                    continue
                # One call per batch: the records are built as ConsumerRecord tuples directly
                # (in C when the accelerator is built), deserializers applied.
                try:
                    part = batch.consumer_records(
                        ConsumerRecord,
                        topic,
                        partition,
                        fetch_offset,
                        key_deserializer,
                        value_deserializer,
                    )
                except Exception:
                    if key_deserializer is None and value_deserializer is None:
                        raise
                    part, error = self._failed_batch(tp, batch, fetch_offset)
                    if error is not None:
                        return _up_to_failure(out, part, error)
            else:
                epoch = None
                part, error = self._legacy_records(tp, batch, fetch_offset)
                if error is not None:
                    return _up_to_failure(out, part, error)
            if part:
                if out:
                    out.extend(part)
                else:
                    out = part
            next_offset = max(next_offset, batch.next_offset)
            last_epoch = epoch
        return out, next_offset, last_epoch

    def _failed_batch(
        self, tp: TopicPartition, batch: Any, fetch_offset: int
    ) -> tuple[list[ConsumerRecord], RecordDeserializationError | None]:
        """A batch a deserializer failed on: the records before the failing one and its error
        (a batch that cannot be decoded at all raises what the decoder raises)."""
        raw = batch.consumer_records(ConsumerRecord, tp.topic, tp.partition, fetch_offset)
        return locate_failure(raw, self._key_deserializer, self._value_deserializer)

    def _batches(self, scanned: ScannedRecords) -> Iterable[Any]:
        if not self._check_crcs:
            return scanned.batches
        if scanned.legacy:
            # A legacy wrapper checks its inner messages only when built to: read again.
            return iter_batches(scanned.raw, check_crcs=True)
        return _crc_checked(scanned.batches)

    def _legacy_records(
        self, tp: TopicPartition, batch: Any, fetch_offset: int
    ) -> tuple[list[ConsumerRecord], RecordDeserializationError | None]:
        """A legacy (magic 0/1) message set's records, deserialized, and as for v2 batches,
        when a deserializer fails: the records before the failing one and its error."""
        records = batch.records()
        if batch.base_offset < fetch_offset:
            # Only the first batch of a response can start before the fetch offset.
            records = [r for r in records if r.offset >= fetch_offset]
        topic, partition = tp
        raw = [
            _new(
                ConsumerRecord,
                (
                    topic,
                    partition,
                    r.offset,
                    r.timestamp,
                    int(r.timestamp_type),
                    r.key,
                    r.value,
                    tuple(r.headers) if r.headers else _NO_HEADERS,
                    None,
                ),
            )
            for r in records
        ]
        if self._key_deserializer is None and self._value_deserializer is None:
            return raw, None
        return locate_failure(raw, self._key_deserializer, self._value_deserializer)


def _up_to_failure(
    out: list[ConsumerRecord], part: list[ConsumerRecord], error: RecordDeserializationError
) -> tuple[list[ConsumerRecord], int, int | None]:
    """What :meth:`RecordDecoder.decode` returns when a deserializer failed: the records
    before the failing one, whose offset is the next to fetch (raises ``error`` when there
    are none)."""
    out = out + part if out else part
    if not out:
        raise error from error.__cause__
    return out, error.offset, out[-1].leader_epoch
