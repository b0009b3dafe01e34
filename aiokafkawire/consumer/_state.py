"""What every part of :class:`~aiokafkawire.consumer.Consumer` shares: its state and the
checks and helpers that each family of its methods (positions, commits, metrics) uses, and
the buffer of records the ``async for`` iterator holds."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.client_config import CommonConfig
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer._options import ConsumerOptions
from aiokafkawire.consumer.fetch import FetchConfig, Fetcher, PositionUpdate
from aiokafkawire.consumer.group.assignors import PartitionAssignor
from aiokafkawire.consumer.group.membership import GroupConfig, Membership
from aiokafkawire.consumer.group.offsets import GroupOffsets
from aiokafkawire.consumer.no_group import NoGroupAssignment
from aiokafkawire.consumer.records import ConsumerRecord
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.metrics import Rate
from aiokafkawire.structs import TopicPartition


class ConsumerState:
    """The consumer's state (set by ``Consumer.__init__`` and ``start``) and shared helpers."""

    _options: ConsumerOptions
    _common: CommonConfig
    _group_id: str | None
    _group_protocol: str
    _group_config: GroupConfig | None
    _fetch_config: FetchConfig
    _assignors: list[PartitionAssignor]
    _enable_auto_commit: bool
    _auto_commit_interval: float
    _max_poll_records: int
    _pattern_refresh_ms: int
    _cluster: Cluster | None
    _subs: SubscriptionState
    _no_group: NoGroupAssignment | None
    _fetcher: Fetcher | None
    _membership: Membership | None
    _offsets: GroupOffsets | None
    _tasks: TaskSupervisor
    _iter_records: deque[ConsumerRecord]
    _iter_ends: dict[TopicPartition, PositionUpdate]
    _last_committed: dict[TopicPartition, int]
    _started: bool
    _closed: bool
    _records_consumed: int
    _consume_rate: Rate

    @property
    def state(self) -> str:
        """One of "unjoined", "rebalancing", "stable", "fatal", "manual", "closed"."""
        if self._closed:
            return "closed"
        if self._membership is not None:
            return self._membership.state.value
        if self._subs.manual or self._no_group is not None:
            return "manual"
        return "unjoined"

    def _require_started(self) -> tuple[Cluster, SubscriptionState, Fetcher]:
        if self._closed:
            raise errors.ClientClosedError("the consumer is closed")
        if not self._started:
            raise errors.IllegalStateError("the consumer is not started; use `async with`")
        assert self._cluster is not None and self._fetcher is not None
        return self._cluster, self._subs, self._fetcher

    def _group_offsets(self) -> GroupOffsets:
        if self._offsets is None:
            raise errors.IllegalStateError("commits and committed offsets need a group_id")
        return self._offsets

    def _discard(self, partitions: Iterable[TopicPartition]) -> None:
        partitions = set(partitions)
        assert self._fetcher is not None
        self._fetcher.discard(partitions)
        if self._iter_records:
            self._iter_records = deque(
                r for r in self._iter_records if (r.topic, r.partition) not in partitions
            )

    def _advance_iterated(self, record: ConsumerRecord) -> None:
        """Move the partition's position past a record handed out by the iterator."""
        tp = TopicPartition(record.topic, record.partition)
        end = self._iter_ends.get(tp)
        if end is None:
            return
        assert self._fetcher is not None
        if record.offset + 1 >= end.offset or not self._more_pending(tp):
            self._fetcher.apply_position(tp, end)
        else:
            update = PositionUpdate(record.offset + 1, record.leader_epoch, end.version)
            self._fetcher.apply_position(tp, update)

    def _more_pending(self, tp: TopicPartition) -> bool:
        # Cheap check: the next pending record usually belongs to the same partition.
        pending = self._iter_records
        if pending:
            head = pending[0]
            if head.topic == tp.topic and head.partition == tp.partition:
                return True
        return any(r.topic == tp.topic and r.partition == tp.partition for r in pending)

    def _flush_iterator(self) -> None:
        """Records taken by the iterator but not handed out are dropped: rewind to them."""
        if not self._iter_records:
            return
        assert self._fetcher is not None
        first: dict[TopicPartition, ConsumerRecord] = {}
        for record in self._iter_records:
            first.setdefault(TopicPartition(record.topic, record.partition), record)
        self._iter_records.clear()
        for tp, record in first.items():
            state = self._subs.assignment.get(tp)
            end = self._iter_ends.get(tp)
            if state is not None and end is not None and state.version == end.version:
                state.seek(record.offset, record.leader_epoch)
                self._fetcher.discard([tp])
        self._subs.notify()
