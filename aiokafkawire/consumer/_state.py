"""The parts :meth:`Consumer.start` builds (``ConsumerParts``) and the records the ``async for``
iterator holds (``IteratedRecords``): each owns its state; the consumer's collaborators
(positions, commits, metrics) are given the ones they use."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.fetch import Fetcher, PositionUpdate
from aiokafkawire.consumer.group.membership import Membership
from aiokafkawire.consumer.group.offsets import GroupOffsets
from aiokafkawire.consumer.no_group import NoGroupAssignment
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.consumer.value_types import ConsumerRecord
from aiokafkawire.structs import TopicPartition


class ConsumerParts:
    """What a started consumer runs on, and whether it is started or closed.

    ``cluster``, ``fetcher`` and ``offsets`` (with a ``group_id``) exist between a successful
    ``start()`` and the end of ``close()``; ``membership`` (a group) or ``no_group`` (no
    ``group_id``) while subscribed.
    """

    __slots__ = ("closed", "cluster", "fetcher", "membership", "no_group", "offsets", "started")

    def __init__(self) -> None:
        self.cluster: Cluster | None = None
        self.fetcher: Fetcher | None = None
        self.offsets: GroupOffsets | None = None
        self.membership: Membership | None = None
        self.no_group: NoGroupAssignment | None = None
        self.started = False
        self.closed = False

    def require_started(self) -> tuple[Cluster, Fetcher]:
        """The cluster and fetcher; typed errors when not started or closed."""
        if self.closed:
            raise errors.ClientClosedError("the consumer is closed")
        if not self.started:
            raise errors.IllegalStateError("the consumer is not started; use `async with`")
        assert self.cluster is not None and self.fetcher is not None
        return self.cluster, self.fetcher

    def group_offsets(self) -> GroupOffsets:
        """The group's committed offsets; IllegalStateError without a ``group_id``."""
        if self.offsets is None:
            raise errors.IllegalStateError("commits and committed offsets need a group_id")
        return self.offsets

    def state(self, subs: SubscriptionState) -> str:
        """One of "unjoined", "rebalancing", "stable", "fatal", "manual", "closed"."""
        if self.closed:
            return "closed"
        if self.membership is not None:
            return self.membership.state.value
        if subs.manual or self.no_group is not None:
            return "manual"
        return "unjoined"


class IteratedRecords:
    """Records the ``async for`` iterator took from the fetcher but has not handed out yet,
    and the position each partition reaches once they are all handed out."""

    __slots__ = ("ends", "parts", "records", "subs")

    def __init__(self, subs: SubscriptionState, parts: ConsumerParts) -> None:
        self.subs = subs
        self.parts = parts
        self.records: deque[ConsumerRecord] = deque()
        self.ends: dict[TopicPartition, PositionUpdate] = {}

    def drop(self, partitions: set[TopicPartition]) -> None:
        """Forget the held records of ``partitions`` (revoked, seeked, unsubscribed)."""
        if self.records:
            self.records = deque(
                r for r in self.records if (r.topic, r.partition) not in partitions
            )

    def hand_out(self) -> ConsumerRecord:
        """The next held record (there must be one), its partition's position moved past it."""
        pending = self.records
        record = pending.popleft()
        topic, partition = record.topic, record.partition
        # A plain tuple finds the TopicPartition keys (same hash and ==): no TopicPartition
        # (nor PositionUpdate) is built per record on this path.
        tp: TopicPartition = (topic, partition)  # type: ignore[assignment]
        end = self.ends.get(tp)
        if end is None:
            return record
        fetcher = self.parts.fetcher
        assert fetcher is not None
        offset = record.offset + 1
        if offset < end.offset and (
            # Cheap check first: the next pending record usually belongs to the same partition.
            (pending and pending[0].topic == topic and pending[0].partition == partition)
            or any(r.topic == topic and r.partition == partition for r in pending)
        ):
            fetcher.apply_offset(tp, offset, record.leader_epoch, end.version)
        else:
            fetcher.apply_position(tp, end)
        return record

    def flush(self, fetcher: Fetcher) -> None:
        """Records taken by the iterator but not handed out are dropped: rewind to them."""
        if not self.records:
            return
        first: dict[TopicPartition, ConsumerRecord] = {}
        for record in self.records:
            first.setdefault(TopicPartition(record.topic, record.partition), record)
        self.records.clear()
        for tp, record in first.items():
            state = self.subs.assignment.get(tp)
            end = self.ends.get(tp)
            if state is not None and end is not None and state.version == end.version:
                state.seek(record.offset, record.leader_epoch)
                fetcher.discard([tp])
        self.subs.notify()


def discard_buffered(
    parts: ConsumerParts, iterated: IteratedRecords, partitions: Iterable[TopicPartition]
) -> None:
    """Drop what is buffered for ``partitions``: fetched chunks and iterator-held records."""
    partitions = set(partitions)
    assert parts.fetcher is not None
    parts.fetcher.discard(partitions)
    iterated.drop(partitions)
