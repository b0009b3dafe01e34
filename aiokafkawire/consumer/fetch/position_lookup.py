"""Where each assigned partition is read from: committed offsets, resets and validation.

Partitions without a position take their committed offset (when the consumer has a group),
else ``auto_offset_reset`` through ListOffsets.  After a leader change, a position with a known
leader epoch is validated with OffsetForLeaderEpoch (KIP-320): when the new leader's log ends
below it (truncation), consumption resumes at that end.  ListOffsets also answers the
consumer's ``offsets_for_times``, ``beginning_offsets`` and ``end_offsets``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiokafkawire import errors
from aiokafkawire._retry import Backoff, Deadline, retry
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.fetch.config import RESET_TIMESTAMPS
from aiokafkawire.consumer.fetch.context import FetchContext
from aiokafkawire.consumer.fetch.routing import current_leader_epoch, refreshes_leader
from aiokafkawire.consumer.value_types import OffsetAndMetadata
from aiokafkawire.protocol.messages import ListOffsetsRequest, OffsetForLeaderEpochRequest
from aiokafkawire.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsTopic
from aiokafkawire.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer")

__all__ = ["CommittedLookup", "OffsetAnswer", "PositionLookup", "supports_validation"]

CommittedLookup = Callable[
    [list[TopicPartition]], Awaitable[dict[TopicPartition, OffsetAndMetadata | None]]
]
#: ListOffsets for one partition: (offset, timestamp, leader epoch), each None when absent.
OffsetAnswer = tuple[int | None, int | None, int | None]

_VALIDATION_VERSION = 2  # OffsetForLeaderEpoch v2 carries the current leader epoch


def supports_validation(cluster: Cluster, tp: TopicPartition) -> bool:
    """Whether ``tp``'s leader can validate positions (OffsetForLeaderEpoch v2+), as far as a
    fetch connection to it already tells."""
    metadata = cluster.metadata
    leader = metadata.leader_for(tp.topic, tp.partition)
    if leader is None or leader not in metadata.brokers:
        return False
    broker = metadata.brokers[leader]
    connection = cluster.pool.cached(broker.host, broker.port, purpose="fetch")
    if connection is None:
        return False
    return connection.versions.supports(OffsetForLeaderEpochRequest.API_KEY, _VALIDATION_VERSION)


class _OffsetsMissing(errors.KafkaError):
    """Some partitions of a ListOffsets round got a retriable error (or no leader)."""

    def __init__(self, missing: list[TopicPartition], last_error: Exception | None) -> None:
        super().__init__(f"offsets of {sorted(missing)} not found in time: {last_error}")


class PositionLookup:
    """Resolves unknown positions and validates positions after leader changes."""

    def __init__(self, context: FetchContext, committed_lookup: CommittedLookup | None) -> None:
        self._cluster = context.cluster
        self._subs = context.subs
        self._config = context.config
        self._buffer = context.buffer
        self.committed_lookup = committed_lookup

    # ----------------------------------------------------------------- unknown positions

    async def resolve(self) -> None:
        """Give every partition without a position one: committed offset, else a reset."""
        subs = self._subs
        missing = [
            tp
            for tp, st in subs.assignment.items()
            if st.position is None and st.reset_strategy is None
        ]
        if missing:
            await self._apply_committed(missing)
        to_reset: dict[TopicPartition, str] = {
            tp: st.reset_strategy
            for tp, st in subs.assignment.items()
            if st.position is None and st.reset_strategy is not None
        }
        if to_reset:
            await self._reset(to_reset)

    async def _apply_committed(self, missing: list[TopicPartition]) -> None:
        subs = self._subs
        versions = {tp: subs.assignment[tp].version for tp in missing}
        committed: dict[TopicPartition, OffsetAndMetadata | None] = {}
        if self.committed_lookup is not None:
            committed = await self.committed_lookup(missing)
        for tp in missing:
            state = subs.assignment.get(tp)
            if state is None or state.version != versions[tp] or state.position is not None:
                continue
            found = committed.get(tp)
            if found is not None and found.offset >= 0:
                state.seek(found.offset, found.leader_epoch)
                if found.leader_epoch is not None and supports_validation(self._cluster, tp):
                    state.awaiting_validation = True
            else:
                state.request_reset(self._config.auto_offset_reset)

    async def _reset(self, to_reset: dict[TopicPartition, str]) -> None:
        subs = self._subs
        lookups: dict[TopicPartition, int] = {}
        for tp, strategy in to_reset.items():
            timestamp = RESET_TIMESTAMPS.get(strategy)
            if timestamp is not None:
                lookups[tp] = timestamp
                continue
            unresettable = subs.assignment[tp]
            if unresettable.pending_error is None:
                unresettable.pending_error = errors.NoOffsetForPartitionError(
                    f"no committed offset for {tp} and auto_offset_reset={strategy!r}"
                )
                self._buffer.report(unresettable.pending_error)
        if not lookups:
            return
        versions = {tp: subs.assignment[tp].version for tp in lookups}
        offsets = await self.list_offsets(lookups)
        for tp, (offset, _timestamp, epoch) in offsets.items():
            state = subs.assignment.get(tp)
            if state is None or state.version != versions[tp] or offset is None:
                continue
            log.debug("reset %s to offset %d (%s)", tp, offset, to_reset[tp])
            state.seek(offset, epoch)
            state.reset_to = (offset, epoch)
        subs.notify()

    # ----------------------------------------------------------------- validation (KIP-320)

    async def validate(self) -> None:
        """After a leader change, check the log was not truncated below our position."""
        subs = self._subs
        pending = [
            tp
            for tp, st in subs.assignment.items()
            if st.awaiting_validation and st.position is not None
        ]
        for st in subs.assignment.values():
            if st.awaiting_validation and st.position is None:
                st.awaiting_validation = False
        if not pending:
            return
        metadata = self._cluster.metadata
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in pending:
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                self._cluster.request_update()
                continue
            by_node.setdefault(leader, []).append(tp)
        for node, tps in by_node.items():
            await self._validate_at(node, tps)
        subs.notify()

    async def _validate_at(self, node: int, tps: list[TopicPartition]) -> None:
        subs = self._subs
        connection = await self._cluster.connection(node, "fetch")
        if not connection.versions.supports(
            OffsetForLeaderEpochRequest.API_KEY, _VALIDATION_VERSION
        ):
            for tp in tps:
                subs.assignment[tp].awaiting_validation = False
            return
        metadata = self._cluster.metadata
        topics: dict[str, list[OffsetForLeaderPartition]] = {}
        versions: dict[TopicPartition, int] = {}
        for tp in tps:
            asked = subs.assignment[tp]
            versions[tp] = asked.version
            topics.setdefault(tp.topic, []).append(
                OffsetForLeaderPartition(
                    partition=tp.partition,
                    current_leader_epoch=current_leader_epoch(metadata, tp),
                    leader_epoch=asked.leader_epoch if asked.leader_epoch is not None else -1,
                )
            )
        request = OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[OffsetForLeaderTopic(topic=t, partitions=p) for t, p in topics.items()],
        )
        response = await connection.send(request)
        for topic in response.topics:
            for result in topic.partitions:
                tp = TopicPartition(topic.topic, result.partition)
                state = subs.assignment.get(tp)
                if state is None or state.version != versions.get(tp):
                    continue
                if result.error_code:
                    if refreshes_leader(result.error_code):
                        self._cluster.request_update()
                        continue
                    log.warning(
                        "validating position of %s failed: %s",
                        tp,
                        errors.error_for_code(result.error_code).name,
                    )
                    state.awaiting_validation = False
                    continue
                state.awaiting_validation = False
                position = state.position
                if position is not None and 0 <= result.end_offset < position:
                    log.warning(
                        "log of %s was truncated to %d below our position %d; resuming there",
                        tp,
                        result.end_offset,
                        position,
                    )
                    state.seek(result.end_offset, result.leader_epoch)
                    self._buffer.discard((tp,))  # stale after the seek

    # ----------------------------------------------------------------- offset lookups

    async def list_offsets(
        self, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAnswer]:
        """ListOffsets at the leaders: ``{tp: (offset, timestamp, leader_epoch)}``.

        ``offset`` is ``None`` when no record matches (a timestamp after the last record).
        Retriable errors are retried (refreshing metadata) until ``request_timeout_ms``.
        """
        result: dict[TopicPartition, OffsetAnswer] = {}
        remaining = dict(timestamps)

        async def one_round() -> None:
            nonlocal remaining
            remaining, last_error = await self._list_offsets_round(remaining, result)
            if remaining:
                raise _OffsetsMissing(list(remaining), last_error)

        def refresh(_exc: BaseException) -> None:
            self._cluster.request_update()

        backoff_ms = self._config.retry_backoff_ms
        try:
            await retry(
                one_round,
                should_retry=lambda exc: isinstance(exc, _OffsetsMissing),
                deadline=Deadline.after_ms(self._config.request_timeout_ms),
                backoff=Backoff(backoff_ms, backoff_ms),
                what="ListOffsets",
                on_retry=refresh,
            )
        except _OffsetsMissing as exc:
            raise errors.KafkaTimeoutError(str(exc)) from exc
        return result

    async def _list_offsets_round(
        self, remaining: dict[TopicPartition, int], result: dict[TopicPartition, OffsetAnswer]
    ) -> tuple[dict[TopicPartition, int], Exception | None]:
        """Ask every leader once and fill ``result``: (what is left to ask, the last error)."""
        failed: dict[TopicPartition, int] = {}
        last_error: Exception | None = None
        metadata = self._cluster.metadata
        for topic in {tp.topic for tp in remaining if tp.topic not in metadata.topics}:
            await self._cluster.wait_for_topic(topic)
        metadata = self._cluster.metadata
        by_node: dict[int, dict[TopicPartition, int]] = {}
        for tp, ts in remaining.items():
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                failed[tp] = ts
                continue
            by_node.setdefault(leader, {})[tp] = ts
        for node, part in by_node.items():
            try:
                answers = await self._list_offsets_at(node, part)
            except errors.KafkaError as exc:
                if not errors.action_of(exc).retriable:
                    raise
                last_error = exc
                failed.update(part)
                continue
            for tp, answer in answers.items():
                if not isinstance(answer, Exception):
                    result[tp] = answer
                elif errors.action_of(answer).retriable:
                    last_error = answer
                    failed[tp] = part[tp]
                else:
                    raise answer
        return failed, last_error

    async def _list_offsets_at(
        self, node: int, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAnswer | Exception]:
        connection = await self._cluster.connection(node, "default")
        version = connection.versions.version_for(ListOffsetsRequest.API_KEY)
        metadata = self._cluster.metadata
        topics: dict[str, list[ListOffsetsPartition]] = {}
        for tp, ts in timestamps.items():
            partition = ListOffsetsPartition(partition_index=tp.partition, timestamp=ts)
            if version == 0:
                partition.max_num_offsets = 1
            if version >= 4:
                partition.current_leader_epoch = current_leader_epoch(metadata, tp)
            topics.setdefault(tp.topic, []).append(partition)
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[ListOffsetsTopic(name=t, partitions=p) for t, p in topics.items()],
            # v10+: how long the broker may wait for tiered storage (KIP-1075); 0 would fail
            # such lookups at once.  Dropped by older versions.
            timeout_ms=self._config.request_timeout_ms,
        )
        if version >= 2:
            request.isolation_level = 1 if self._config.read_committed else 0
        response = await connection.send(request, version)
        answers: dict[TopicPartition, OffsetAnswer | Exception] = {}
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                if p.error_code:
                    answers[tp] = errors.error_for_code(p.error_code)(f"ListOffsets for {tp}")
                elif version == 0:
                    offsets = p.old_style_offsets
                    answers[tp] = (offsets[0] if offsets else None, None, None)
                else:
                    epoch = getattr(p, "leader_epoch", -1)
                    answers[tp] = (
                        p.offset if p.offset >= 0 else None,
                        p.timestamp if p.timestamp >= 0 else None,
                        epoch if epoch >= 0 else None,
                    )
        return answers
