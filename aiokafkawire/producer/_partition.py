"""One partition's queue of batches and send state: a :class:`PartitionCursor`."""

from __future__ import annotations

from collections import deque

from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.structs import TopicPartition

__all__ = ["PartitionCursor"]

SEQUENCE_MASK = 0x7FFFFFFF  # sequence numbers wrap around at 2**31

# (producer id, epoch, sequence): a sequence number means something only for one identity.
Identity = tuple[int, int, int]


class PartitionCursor(deque[ProducerBatch]):
    """One partition: its batches, oldest first, and the send state kept across requests.

    The deque holds the partition's batches not yet sent (a retried one goes back before every
    younger batch); the accumulator appends to the last one.  ``leader`` is the node of the sink
    that owns it (drains it), None while no leader is known.
    """

    __slots__ = (
        "acked_next",
        "confirmed",
        "gated",
        "in_flight",
        "leader",
        "next",
        "resequence",
        "tp",
    )

    def __init__(self, tp: TopicPartition) -> None:
        super().__init__()
        self.tp = tp
        self.leader: int | None = None  # the node whose sink owns (drains) it
        self.in_flight = 0  # batches sent and not decided yet
        # A batch waits for retry: nothing more is drained until nothing is in flight.
        self.gated = False
        # The next sequence number to hand out, with the identity it counts for: another
        # producer id or epoch starts again at 0.
        self.next: Identity | None = None
        # The sequence after the furthest batch the leader acknowledged of an id and epoch (never
        # moves back).  A leader with state for an id and epoch writes their sequences only in
        # order, so every batch of them below it is in the log.
        self.acked_next: Identity | None = None
        # The producer id of which the leader acknowledged a batch, i.e. holds state.  A leader
        # without state for a producer id accepts ANY sequence as its first batch (Kafka's
        # ProducerAppendInfo.checkSequence), so until then only one batch of the partition may
        # be on its way: a later one could overtake it (a cut connection, a retriable error) and
        # be written first.  Once it has state, the leader refuses sequences out of order itself
        # and pipelining is safe.
        self.confirmed: int | None = None
        # The next epoch restarts this partition's sequences (the broker lost our state here, or
        # a sent batch failed for good, leaving a hole): see Sender._restart_sequences.
        self.resequence = False

    def __repr__(self) -> str:
        return (
            f"<PartitionCursor {self.tp[0]}-{self.tp[1]} leader={self.leader} "
            f"queued={len(self)} in_flight={self.in_flight} gated={self.gated} "
            f"acked_next={self.acked_next}>"
        )

    # A queue with state: equal only to itself (a deque compares its items).
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__  # type: ignore[assignment]

    def returned(self) -> None:
        """One of the partition's batches came back (decided, or to be retried)."""
        if self.in_flight > 0:
            self.in_flight -= 1

    def take_sequences(self, producer_id: int, producer_epoch: int, count: int) -> int:
        """Hand out the next ``count`` sequence numbers of this identity; returns the first."""
        known = self.next
        if known is not None and known[0] == producer_id and known[1] == producer_epoch:
            first = known[2]
        else:
            first = 0
        self.next = (producer_id, producer_epoch, (first + count) & SEQUENCE_MASK)
        return first

    def note_acknowledged(self, batch: ProducerBatch, current: bool) -> None:
        """Move ``acked_next`` past ``batch`` (a late or duplicate answer for an earlier batch
        leaves it where it is; an older identity's answer never replaces the current one's)."""
        end = (batch.base_sequence + batch.count) & SEQUENCE_MASK
        known = self.acked_next
        if known is not None and known[:2] == (batch.producer_id, batch.producer_epoch):
            if sequence_at_or_before(end, known[2]):
                return
        elif known is not None and not current:
            return  # an older identity's answer: the current one's progress matters now
        self.acked_next = (batch.producer_id, batch.producer_epoch, end)

    def acknowledged_after(self, batch: ProducerBatch) -> bool:
        """Whether the leader acknowledged sequences after ``batch``'s, of its id and epoch."""
        known = self.acked_next
        if known is None or batch.base_sequence < 0:
            return False
        if known[:2] != (batch.producer_id, batch.producer_epoch):
            return False
        end = (batch.base_sequence + batch.count) & SEQUENCE_MASK
        return sequence_at_or_before(end, known[2])

    def expects(self, batch: ProducerBatch) -> bool:
        """Whether ``batch`` starts where the leader's acknowledged sequences of its id end."""
        known = self.acked_next
        identity = (batch.producer_id, batch.producer_epoch)
        expected = known[2] if known is not None and known[:2] == identity else 0
        return batch.base_sequence == expected


def sequence_at_or_before(sequence: int, other: int) -> bool:
    """Whether ``sequence`` is ``other`` or comes before it (modulo the wrap at 2**31)."""
    return (other - sequence) & SEQUENCE_MASK < 1 << 30
