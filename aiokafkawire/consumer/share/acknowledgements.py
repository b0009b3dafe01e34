"""Acknowledgement bookkeeping of a share consumer: what is acquired, what is acknowledged.

The broker hands records out in *acquired ranges* (``AcquiredRecords``: first offset, last
offset, delivery count), each locked for ``AcquisitionLockTimeoutMs``.  Every offset of a range
must eventually be acknowledged by this member (or its lock expires): the application's records
with ACCEPT / RELEASE / REJECT, and offsets that held no record for the application (control
records, removed or aborted records) with GAP.

Acknowledgements leave in ``AcknowledgementBatches``: ``FirstOffset``, ``LastOffset`` and
``AcknowledgeTypes``, either one type for the whole contiguous range or one type per offset.
:func:`build_batches` makes the fewest batches for a set of acknowledgements: one per run of
contiguous offsets, with a one-element type list when the run is uniform.

No I/O here: :class:`Acknowledgements` is plain state, driven by the fetcher (acquired ranges in,
pending acknowledgements out) and by the consumer (the application's acknowledgements in).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

from aiokafkawire import errors
from aiokafkawire._compiled import load_accelerator
from aiokafkawire.consumer.share.records import AcknowledgementOutcome, AcknowledgeType
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from aiokafkawire.consumer.share.records import ShareRecord

__all__ = ["AckBatch", "Acknowledgements", "build_batches"]


class AckBatch(NamedTuple):
    """One ``AcknowledgementBatch``: offsets ``first_offset..last_offset`` (inclusive).

    ``types`` has one element (it applies to every offset of the range) or one per offset.
    """

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


def build_batches(acks: Mapping[int, int]) -> list[AckBatch]:
    """Batches for ``{offset: type}``: ascending, non-overlapping, one per contiguous run."""
    if not acks:
        return []
    offsets = sorted(acks)  # linear on the usual, already ascending, offsets
    if offsets[-1] - offsets[0] + 1 == len(offsets):
        # The usual case: one contiguous run, checked for one type at C speed (``count``
        # compares by identity first, and the types are the enum's members).
        types = list(acks.values())
        if types.count(types[0]) == len(types):
            return [AckBatch(offsets[0], offsets[-1], (int(types[0]),))]
    batches: list[AckBatch] = []
    first = previous = offsets[0]
    types = [acks[first]]
    uniform = True
    for offset in offsets[1:]:
        ack_type = acks[offset]
        if offset == previous + 1:
            if uniform and ack_type != types[0]:
                uniform = False
            types.append(ack_type)
        else:
            batches.append(_batch(first, previous, types, uniform))
            first = offset
            types = [ack_type]
            uniform = True
        previous = offset
    batches.append(_batch(first, previous, types, uniform))
    return batches


def _batch(first: int, last: int, types: list[int], uniform: bool) -> AckBatch:
    return AckBatch(first, last, (int(types[0]),) if uniform else tuple(map(int, types)))


def expand_batches(batches: Iterable[AckBatch]) -> dict[int, int]:
    """The inverse of :func:`build_batches` (``{offset: type}``), for checks and tests."""
    out: dict[int, int] = {}
    for first, last, types in batches:
        if len(types) == 1:
            for offset in range(first, last + 1):
                out[offset] = types[0]
        elif len(types) == last - first + 1:
            for offset, ack_type in zip(range(first, last + 1), types, strict=True):
                out[offset] = ack_type
        else:
            raise ValueError(f"batch {first}..{last} has {len(types)} types")
    return out


_ACCEPT = AcknowledgeType.ACCEPT
_GAP = AcknowledgeType.GAP
_RENEW = AcknowledgeType.RENEW
_offset_of = itemgetter(2)  # ShareRecord.offset
_delivery_count_of = itemgetter(9)  # ShareRecord.delivery_count


def pure_ack_held(
    acquired_by_tp: dict[TopicPartition, dict[int, _Acquired]],
    pending_by_tp: dict[TopicPartition, dict[int, AcknowledgeType]],
    record: ShareRecord,
    ack_type: AcknowledgeType,
    clock: Callable[[], float],
) -> bool:
    """The common case of one acknowledgement, settled if it is that case (the contract of
    ``_crecords.share_ack_held``, its compiled twin :data:`ack_held`).

    The record is held with its delivery count and a lock deadline after ``clock()`` (the
    compiled twin reads ``time.monotonic``'s clock without the call), its partition
    holds other offsets too, and a dict of pending acknowledgements exists for it: then its
    offset moves from held to pending with ``ack_type`` and the answer is ``True``.  Anything
    else (a wrong type, a record not held, another delivery, a lock past its deadline, the
    partition's last held offset, its first pending one) changes nothing and answers ``False``:
    :meth:`Acknowledgements.acknowledge` decides, and raises its typed errors.
    """
    if not isinstance(record, tuple) or len(record) < 10:
        return False
    key = record[:2]
    acquired = acquired_by_tp.get(key)  # type: ignore[call-overload]
    pending = None if acquired is None else pending_by_tp.get(key)  # type: ignore[call-overload]
    if pending is None or len(acquired) < 2:
        return False
    offset = record[2]
    entry = acquired.get(offset)
    if entry is None or entry[0] != record[9] or clock() >= entry[1]:
        return False
    pending[offset] = ack_type
    del acquired[offset]
    return True


_crecords = load_accelerator("aiokafkawire.protocol.records._crecords")
#: ``pure_ack_held``, compiled when the extension is built (``AIOKAFKAWIRE_PURE_PYTHON``
#: forces the pure one).  ``ShareConsumer.acknowledge`` calls it first, for every record.
ack_held: Callable[..., bool] = pure_ack_held if _crecords is None else _crecords.share_ack_held


class _Acquired(NamedTuple):
    """One acquisition: shared by every offset of a range (one object per range, not offset)."""

    delivery_count: int
    deadline: float


class Acknowledgements:
    """Acquired offsets and pending acknowledgements per partition.

    ``clock`` returns seconds (monotonic); it is a parameter so tests can move time.
    """

    # Slots: the compiled acknowledge (ShareAckMethod) reads four of them per record.
    __slots__ = (
        "_expired",
        "acquired_offsets",
        "clock",
        "pending_offsets",
        "renewed_held",
        "renewing",
    )

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        # clock, acquired_offsets, pending_offsets and renewed_held are public for one reader:
        # ShareConsumer.acknowledge hands them to the compiled ack_held (a Python frame less per
        # record); everything else changes them through this class's methods.
        self.clock = clock
        self.acquired_offsets: dict[TopicPartition, dict[int, _Acquired]] = {}
        self.pending_offsets: dict[TopicPartition, dict[int, AcknowledgeType]] = {}
        #: Offsets acknowledged client-side after their lock had already expired.
        self._expired: dict[TopicPartition, dict[int, AcknowledgeType]] = {}
        #: Held offsets the application renewed (KIP-1222): they count as acknowledged for
        #: the explicit-mode check of a poll, yet stay held until accepted, released or rejected.
        self.renewed_held: dict[TopicPartition, set[int]] = {}
        #: Whether a RENEW was ever queued (the fetcher looks for RENEWs only then).
        self.renewing = False

    # ------------------------------------------------------------------ acquired ranges

    def acquire(
        self,
        tp: TopicPartition,
        first_offset: int,
        last_offset: int,
        delivery_count: int,
        lock_timeout_ms: int,
    ) -> None:
        """Record an acquired range (from a ShareFetch response received just now).

        The lock deadline is taken from the moment the answer arrived: the broker started the
        lock earlier, so a deadline passed here has certainly passed on the broker.
        """
        entry = _Acquired(delivery_count, self.clock() + lock_timeout_ms / 1000)
        acquired = self.acquired_offsets.setdefault(tp, {})
        # One shared entry for the whole range, stored at C speed.
        acquired.update(dict.fromkeys(range(first_offset, last_offset + 1), entry))
        renewed = self.renewed_held.get(tp)
        if renewed:
            renewed.difference_update([o for o in renewed if first_offset <= o <= last_offset])
        pending = self.pending_offsets.get(tp)
        if pending is not None:
            # Acquired again before the acknowledgement of the older delivery went out: its
            # lock had expired, so that acknowledgement no longer applies.
            size = last_offset - first_offset + 1
            if len(pending) <= size:
                stale_offsets = [o for o in pending if first_offset <= o <= last_offset]
            else:
                stale_offsets = [o for o in range(first_offset, last_offset + 1) if o in pending]
            for offset in stale_offsets:
                stale = pending.pop(offset)
                if stale is not _GAP:
                    self._expired.setdefault(tp, {})[offset] = stale
            if not pending:
                del self.pending_offsets[tp]

    def delivery_count(self, tp: TopicPartition, offset: int) -> int | None:
        """The delivery count of an acquired, unacknowledged offset (``None`` if not held)."""
        entry = self.acquired_offsets.get(tp, {}).get(offset)
        return None if entry is None else entry.delivery_count

    def held(self, tp: TopicPartition | None = None) -> int:
        """How many acquired offsets are not acknowledged yet (of one partition or all)."""
        if tp is not None:
            return len(self.acquired_offsets.get(tp, ()))
        return sum(len(offsets) for offsets in self.acquired_offsets.values())

    def held_offsets(self, tp: TopicPartition) -> list[int]:
        """The acquired, unacknowledged offsets of a partition, ascending."""
        return sorted(self.acquired_offsets.get(tp, ()))

    # ------------------------------------------------------------------ acknowledging

    def acknowledge(
        self,
        tp: TopicPartition,
        offset: int,
        ack_type: AcknowledgeType,
        delivery_count: int | None = None,
    ) -> None:
        """Acknowledge one acquired offset (queued until the next request to its leader).

        ``delivery_count`` names the delivery being acknowledged: acknowledging an older delivery
        of a record acquired again since (its lock expired meanwhile) is reported as an
        :class:`~aiokafkawire.errors.AcquisitionLockTimeoutError` outcome, like any
        acknowledgement made after the lock's deadline.  Raises
        :class:`~aiokafkawire.errors.IllegalStateError` for an offset this consumer does not
        hold (never delivered to it, or already acknowledged).

        ``RENEW`` keeps the offset held: it asks the broker to restart the record's lock
        (:meth:`renewed` moves the client's deadline when the broker agreed).
        """
        if ack_type is _RENEW:
            self._renew(tp, offset, delivery_count)
            return
        acquired = self.acquired_offsets.get(tp)
        entry = None if acquired is None else acquired.pop(offset, None)
        if entry is None:
            raise errors.IllegalStateError(
                f"{tp[0]}-{tp[1]} offset {offset} is not held by this share consumer "
                "(never delivered to it, or already acknowledged)"
            )
        assert acquired is not None
        if delivery_count is not None and delivery_count != entry[0]:
            acquired[offset] = entry  # the newer delivery stays held
            self._expired.setdefault(TopicPartition(*tp), {})[offset] = ack_type
            return
        if not acquired:
            del self.acquired_offsets[tp]
        if self.renewed_held:
            self._settle_renewed(tp, offset)
        # ``tp`` may be a plain (topic, partition) tuple: new keys are always TopicPartitions.
        if ack_type is not _GAP and self.clock() >= entry[1]:  # GAP is never late
            target = self._expired
        else:
            target = self.pending_offsets
        offsets = target.get(tp)
        if offsets is None:
            offsets = target[TopicPartition(*tp)] = {}
        offsets[offset] = ack_type

    def acknowledge_record(self, record: ShareRecord, ack_type: AcknowledgeType) -> None:
        """:meth:`acknowledge` of one delivered record (the application's, explicit mode).

        The general path: ``ShareConsumer.acknowledge`` first tries :data:`ack_held` (the
        common case, compiled when the extension is built) on this object's ``acquired_offsets`` and
        ``pending_offsets`` dicts (their one reader outside this class), and comes here when it
        answers ``False`` (or for a RENEW, or while renewed offsets are tracked).  A ``record``
        that is not a :class:`ShareRecord` raises :class:`~aiokafkawire.errors.KafkaTypeError`.
        """
        if not isinstance(record, tuple) or len(record) != 10:
            raise errors.KafkaTypeError(
                "acknowledge() takes a ShareRecord delivered by this share consumer, not "
                f"{type(record).__name__}"
            )
        # A plain (topic, partition) tuple finds the TopicPartition key: same hash, equal.
        self.acknowledge(record[:2], record[2], ack_type, record[9])  # type: ignore[arg-type]

    def _renew(self, tp: TopicPartition, offset: int, delivery_count: int | None) -> None:
        acquired = self.acquired_offsets.get(tp)
        entry = None if acquired is None else acquired.get(offset)
        if entry is None:
            raise errors.IllegalStateError(
                f"{tp[0]}-{tp[1]} offset {offset} is not held by this share consumer "
                "(never delivered to it, or already acknowledged): there is no lock to renew"
            )
        key = TopicPartition(*tp)
        older_delivery = delivery_count is not None and delivery_count != entry[0]
        if not older_delivery:
            self.renewed_held.setdefault(key, set()).add(offset)
        if older_delivery or self.clock() >= entry[1]:
            # An older delivery, or a lock already past its deadline: nothing left to renew.
            self._expired.setdefault(key, {})[offset] = AcknowledgeType.RENEW
            return
        pending = self.pending_offsets.get(tp)
        if pending is None:
            pending = self.pending_offsets[key] = {}
        # A terminal acknowledgement queued for the offset already settles it: keep that one.
        pending.setdefault(offset, AcknowledgeType.RENEW)
        self.renewing = True

    def _settle_renewed(self, tp: TopicPartition, offset: int) -> None:
        renewed = self.renewed_held.get(tp)
        if renewed is not None:
            renewed.discard(offset)
            if not renewed:
                del self.renewed_held[tp]

    def renewed(self, tp: TopicPartition, offsets: Iterable[int], lock_timeout_ms: int) -> None:
        """The broker restarted the locks of ``offsets`` (a RENEW verdict without error, just
        received): their deadlines move to ``lock_timeout_ms`` from now.  Offsets settled since
        the RENEW left are skipped."""
        acquired = self.acquired_offsets.get(tp)
        if not acquired or lock_timeout_ms <= 0:
            return
        deadline = self.clock() + lock_timeout_ms / 1000
        for offset in offsets:
            entry = acquired.get(offset)
            if entry is not None:
                acquired[offset] = _Acquired(entry[0], deadline)

    def deadline(self, tp: TopicPartition, offset: int) -> float | None:
        """The client's lock deadline (clock seconds) of a held offset (``None`` if not held)."""
        entry = self.acquired_offsets.get(tp, {}).get(offset)
        return None if entry is None else entry.deadline

    def accept_delivered(self, tp: TopicPartition, records: Sequence[ShareRecord]) -> None:
        """ACCEPT every record of one partition still held in the delivery handed out
        (implicit mode: the previous poll's records); records acknowledged already are skipped.

        The bulk form of :meth:`acknowledge`, for the per-poll hot path.
        """
        acquired = self.acquired_offsets.get(tp)
        if not acquired or not records:
            return
        now = self.clock()
        accept = _ACCEPT
        offsets = list(map(_offset_of, records))
        found = set(map(acquired.get, offsets))  # a few: one per acquired range
        held = {entry for entry in found if entry is not None}
        counts = {entry[0] for entry in held}
        if (
            len(held) == len(found)  # every record still held
            and len(counts) == 1
            and now < min(entry[1] for entry in held)
            and list(map(_delivery_count_of, records)).count(counts.pop()) == len(records)
        ):
            # The usual case: every record still held, with the delivery count of its
            # acquisition, within its lock: settled at C speed.
            if len(acquired) == len(offsets):
                del self.acquired_offsets[tp]
            else:
                deque(map(acquired.pop, offsets), maxlen=0)
            self.pending_offsets.setdefault(tp, {}).update(dict.fromkeys(offsets, accept))
            return
        pending = self.pending_offsets.setdefault(tp, {})
        expired: dict[int, AcknowledgeType] | None = None
        get = acquired.get
        for record in records:
            offset = record[2]
            entry = get(offset)
            if entry is None or entry[0] != record[9]:
                continue
            del acquired[offset]
            if now >= entry[1]:
                if expired is None:
                    expired = self._expired.setdefault(tp, {})
                expired[offset] = accept
            else:
                pending[offset] = accept
        if not acquired:
            del self.acquired_offsets[tp]
        if not pending:
            del self.pending_offsets[tp]

    def unacknowledged(self, tp: TopicPartition, records: Sequence[ShareRecord]) -> list[int]:
        """The offsets of ``records`` (one partition) whose delivery is still held."""
        acquired = self.acquired_offsets.get(tp)
        if not acquired or acquired.keys().isdisjoint(map(_offset_of, records)):
            return []  # the usual case (every record acknowledged), checked at C speed
        renewed = self.renewed_held.get(tp, ())
        out = []
        for record in records:
            entry = acquired.get(record[2])
            if entry is not None and entry[0] == record[9] and record[2] not in renewed:
                out.append(record[2])
        return out

    def acknowledge_gaps(self, tp: TopicPartition, offsets: Iterable[int]) -> None:
        """GAP-acknowledge offsets of acquired ranges that held no record for the application."""
        for offset in offsets:
            self.acknowledge(tp, offset, AcknowledgeType.GAP)

    def forget(self, tp: TopicPartition) -> list[int]:
        """Drop a partition's acquired offsets (their locks will expire or were released).

        Returns the forgotten offsets; pending acknowledgements stay queued.
        """
        self.renewed_held.pop(tp, None)
        return sorted(self.acquired_offsets.pop(tp, {}))

    def forget_offset(self, tp: TopicPartition, offset: int) -> None:
        """Drop one acquired offset (its record was never handed to the application)."""
        acquired = self.acquired_offsets.get(tp)
        if acquired is not None:
            acquired.pop(offset, None)
            if not acquired:
                del self.acquired_offsets[tp]
        if self.renewed_held:
            self._settle_renewed(tp, offset)

    def pending_partitions(self) -> list[TopicPartition]:
        """The partitions with acknowledgements waiting to be sent."""
        return list(self.pending_offsets)

    # ------------------------------------------------------------------ sending

    def has_pending(self, partitions: Iterable[TopicPartition] | None = None) -> bool:
        """Whether acknowledgements wait to be sent (for ``partitions``, or any)."""
        if partitions is None:
            return bool(self.pending_offsets)
        return any(tp in self.pending_offsets for tp in partitions)

    def take_pending(
        self, accept: Callable[[TopicPartition], bool] | None = None
    ) -> dict[TopicPartition, dict[int, AcknowledgeType]]:
        """Remove and return the pending acknowledgements (of the partitions ``accept`` picks)."""
        if accept is None:
            taken, self.pending_offsets = self.pending_offsets, {}
            return taken
        taken = {tp: acks for tp, acks in self.pending_offsets.items() if accept(tp)}
        for tp in taken:
            del self.pending_offsets[tp]
        return taken

    def put_back(self, acks: Mapping[TopicPartition, Mapping[int, AcknowledgeType]]) -> None:
        """Queue acknowledgements again (a request that carried them was never sent)."""
        for tp, offsets in acks.items():
            pending = self.pending_offsets.setdefault(tp, {})
            for offset, ack_type in offsets.items():
                pending.setdefault(offset, ack_type)

    def take_expired(self) -> list[AcknowledgementOutcome]:
        """Outcomes for acknowledgements given after their record's lock had expired."""
        expired, self._expired = self._expired, {}
        return [
            AcknowledgementOutcome(
                tp,
                dict(offsets),
                errors.AcquisitionLockTimeoutError(
                    f"{tp.topic}-{tp.partition}: the acquisition lock of offsets "
                    f"{_describe_offsets(offsets)} expired before they were acknowledged; the "
                    "broker hands them out again"
                ),
            )
            for tp, offsets in expired.items()
        ]


def _describe_offsets(offsets: Iterable[int]) -> str:
    """``3..7, 9`` for a log line."""
    parts = [
        f"{b.first_offset}"
        if b.first_offset == b.last_offset
        else f"{b.first_offset}..{b.last_offset}"
        for b in build_batches(dict.fromkeys(offsets, 0))
    ]
    if len(parts) > 6:
        parts = [*parts[:6], f"... ({len(parts)} ranges)"]
    return ", ".join(parts)
