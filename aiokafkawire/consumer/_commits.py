"""The consumer's commits: committed offsets, commit, auto-commit, the group metadata."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from aiokafkawire import errors
from aiokafkawire.consumer._state import ConsumerParts
from aiokafkawire.consumer.group.membership import GroupConfig
from aiokafkawire.consumer.group.offsets import MemberIdentity, RebalanceNeeded
from aiokafkawire.consumer.group.states import GroupState
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.consumer.value_types import ConsumerGroupMetadata, OffsetAndMetadata
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer")

CommitOffsets = Mapping[TopicPartition, "OffsetAndMetadata | int | tuple[int, str]"]


class Commits:
    """Committed offsets of the consumer's group, and commits (by hand or automatic).

    Owns what was last committed (auto-commit sends only what moved); reads the positions
    from the subscription and the group's parts (offsets, membership) from ``parts``.
    """

    def __init__(
        self,
        subs: SubscriptionState,
        parts: ConsumerParts,
        *,
        group_id: str | None,
        group_config: GroupConfig | None,
        auto_commit_interval: float,
    ) -> None:
        self._subs = subs
        self._parts = parts
        self._group_id = group_id
        self._group_config = group_config
        self._auto_commit_interval = auto_commit_interval
        self._last_committed: dict[TopicPartition, int] = {}

    def identity(self) -> MemberIdentity:
        """The member's id and generation (empty outside a group)."""
        membership = self._parts.membership
        return membership.identity() if membership is not None else MemberIdentity()

    async def committed_lookup(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Where the fetcher starts a partition: its committed offset."""
        return await self._parts.group_offsets().fetch(partitions)

    async def committed(self, partition: TopicPartition) -> int | None:
        """See :meth:`Consumer.committed`."""
        self._parts.require_started()
        found = (await self._parts.group_offsets().fetch([partition])).get(partition)
        return found.offset if found is not None else None

    async def committed_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """See :meth:`Consumer.committed_offsets`."""
        self._parts.require_started()
        return await self._parts.group_offsets().fetch(list(partitions))

    def _positions(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Any]:
        subs = self._subs
        out = {}
        for tp in partitions:
            state = subs.assignment.get(tp)
            if state is not None and state.position is not None:
                out[tp] = OffsetAndMetadata(state.position, "", state.leader_epoch)
        return out

    async def commit_positions(self, partitions: Iterable[TopicPartition]) -> None:
        """Commit the current positions (auto-commit, revocation, close)."""
        offsets = self._positions(partitions)
        if offsets:
            await self._commit(offsets, retry_rebalance=False)

    async def commit(self, offsets: CommitOffsets | None = None) -> None:
        """See :meth:`Consumer.commit`."""
        self._parts.require_started()
        subs = self._subs
        if offsets is None:
            normalized = self._positions(subs.assignment)
        else:
            normalized = {tp: _as_offset(value) for tp, value in offsets.items()}
            if self._parts.membership is not None:
                foreign = sorted(tp for tp in normalized if tp not in subs.assignment)
                if foreign:
                    raise errors.CommitFailedError(
                        f"cannot commit {foreign}: not assigned to this member (revoked, or "
                        "never assigned); the partition's new owner commits it"
                    )
        await self._commit(normalized, retry_rebalance=True)

    async def _commit(
        self, offsets: dict[TopicPartition, OffsetAndMetadata], *, retry_rebalance: bool
    ) -> None:
        group = self._parts.group_offsets()
        membership = self._parts.membership
        for _ in range(5):
            try:
                await group.commit(offsets)
            except RebalanceNeeded:
                if membership is None:
                    raise errors.RebalanceInProgressClientError(
                        "the coordinator reports a rebalance in progress"
                    ) from None
                membership.request_rejoin("a commit found the group rebalancing")
                if not retry_rebalance or membership.in_callback:
                    raise errors.RebalanceInProgressClientError(
                        "the group is rebalancing; commit again after it completes"
                    ) from None
                timeout = (
                    self._group_config.effective_rebalance_timeout_ms
                    if (self._group_config is not None)
                    else 30_000
                )
                if not await membership.wait_stable(timeout / 1000):
                    raise errors.RebalanceInProgressClientError(
                        "the group did not finish rebalancing in time"
                    ) from None
                offsets = {tp: o for tp, o in offsets.items() if tp in self._subs.assignment}
                continue
            for tp, value in offsets.items():
                self._last_committed[tp] = value.offset
            return
        raise errors.RebalanceInProgressClientError("the group kept rebalancing")

    async def auto_commit_loop(self) -> None:
        """Commit the positions that moved, every ``auto_commit_interval_ms``."""
        while True:
            await asyncio.sleep(self._auto_commit_interval)
            subs = self._subs
            if not subs.assignment:
                continue
            membership = self._parts.membership
            if membership is not None and membership.state is not GroupState.STABLE:
                continue
            changed = {
                tp: v
                for tp, v in self._positions(subs.assignment).items()
                if self._last_committed.get(tp) != v.offset
            }
            if not changed:
                continue
            try:
                await self._commit(changed, retry_rebalance=False)
            except errors.KafkaError as exc:
                log.warning("auto-commit failed: %s", exc)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """See :meth:`Consumer.group_metadata`."""
        if self._group_id is None:
            raise errors.IllegalStateError("group_metadata() needs a group_id")
        identity = self.identity()
        return ConsumerGroupMetadata(
            self._group_id,
            identity.generation,
            identity.member_id,
            self._group_config.group_instance_id if self._group_config else None,
        )


def _as_offset(value: Any) -> OffsetAndMetadata:
    if isinstance(value, OffsetAndMetadata):
        return value
    if isinstance(value, int):
        return OffsetAndMetadata(value)
    if isinstance(value, tuple):
        return OffsetAndMetadata(*value)
    offset = getattr(value, "offset", None)
    if isinstance(offset, int):
        return OffsetAndMetadata(offset, getattr(value, "metadata", "") or "")
    raise errors.ConfigError(f"not an offset: {value!r}")
