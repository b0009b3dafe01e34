"""Committing and fetching group offsets (OffsetCommit / OffsetFetch, every version).

:class:`GroupOffsets` talks to the group coordinator.  Membership (generation or member epoch,
member id) comes from a callable so the same code serves classic groups, KIP-848 groups and
consumers that only use a group id for offset storage (manual assignment).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, NamedTuple, TypeVar

from aiokafkawire import errors
from aiokafkawire._retry import Backoff, Deadline, retry
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.value_types import OffsetAndMetadata
from aiokafkawire.protocol.messages import OffsetCommitRequest, OffsetFetchRequest
from aiokafkawire.protocol.messages.offset_commit import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from aiokafkawire.protocol.messages.offset_fetch import (
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from aiokafkawire.structs import TopicPartition

#: OffsetCommit and OffsetFetch name topics by id from this version on (KIP-848).
TOPIC_ID_VERSION = 10

log = logging.getLogger("aiokafkawire.consumer.group")

__all__ = ["GroupOffsets", "MemberIdentity"]

T = TypeVar("T")


def _topic_key(topic: str, ids: dict[str, uuid.UUID] | None) -> dict[str, Any]:
    """How a request names ``topic``: by id from v10 (when ``ids`` are known), else by name."""
    return {"name": topic} if ids is None else {"topic_id": ids[topic]}


class MemberIdentity(NamedTuple):
    """Who commits: generation (classic) or member epoch (KIP-848), member id, instance id."""

    generation: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class RebalanceNeeded(Exception):
    """Internal: the coordinator answered REBALANCE_IN_PROGRESS to a commit."""


class _PartitionsToRetry(Exception):
    """Internal: some partitions' commits met retriable errors (the others are committed)."""


def _worth_retrying(exc: BaseException) -> bool:
    """Whether a commit or offset fetch is tried again after ``exc`` (within the timeout)."""
    if isinstance(exc, (_PartitionsToRetry, errors.KafkaConnectionError, errors.KafkaTimeoutError)):
        return True
    if isinstance(exc, errors.BrokerResponseError):
        return exc.code in errors.COORDINATOR_CODES or exc.retriable
    return False


class GroupOffsets:
    """OffsetCommit and OffsetFetch for one group, retried through coordinator changes."""

    def __init__(
        self,
        cluster: Cluster,
        group_id: str,
        identity: Callable[[], MemberIdentity],
        *,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        require_stable: bool = False,
    ) -> None:
        self._cluster = cluster
        self.group_id = group_id
        self._identity = identity
        self._timeout = request_timeout_ms / 1000
        self._backoff_ms = retry_backoff_ms
        self._require_stable = require_stable
        self.on_membership_error: Callable[[int], None] | None = None
        self._last_codes: set[str] = set()

    async def _connection(self) -> Any:
        return await self._cluster.coordinator_connection(self.group_id, purpose="group")

    def _topic_ids(self, topics: Iterable[str]) -> dict[str, uuid.UUID] | None:
        """The id of every topic in ``topics``, or None if metadata lacks one of them.

        OffsetCommit/OffsetFetch v10 name topics by id only (KIP-848); without every id the
        request stays at v9, which names them.
        """
        ids: dict[str, uuid.UUID] = {}
        known = self._cluster.metadata.topics
        for topic in topics:
            info = known.get(topic)
            if info is None or info.topic_id is None:
                return None
            ids[topic] = info.topic_id
        return ids

    def _version(
        self, connection: Any, api_key: int, topics: Iterable[str]
    ) -> tuple[int, dict[str, uuid.UUID] | None]:
        """The version for an offsets request about ``topics``, and their ids if it uses them."""
        version = connection.versions.version_for(api_key)
        if version < TOPIC_ID_VERSION:
            return version, None
        ids = self._topic_ids(topics)
        if ids is None:
            return connection.versions.version_for(api_key, max_version=TOPIC_ID_VERSION - 1), None
        return version, ids

    def _coordinator_failed(self) -> None:
        self._cluster.invalidate_coordinator(self.group_id)

    async def _retrying(
        self,
        op: Callable[[], Awaitable[T]],
        what: str,
        should_retry: Callable[[BaseException], bool] = _worth_retrying,
    ) -> T:
        """``op`` under the shared retry policy, within the request timeout.

        The pace is ``retry_backoff_ms`` between attempts (not doubled: a commit waits on a
        coordinator move, which a fixed short pace finds soonest).
        """
        return await retry(
            op,
            should_retry=should_retry,
            deadline=Deadline.after(self._timeout),
            backoff=Backoff(self._backoff_ms, self._backoff_ms),
            what=f"{what} for group {self.group_id!r}",
            on_retry=self._before_retry,
        )

    def _before_retry(self, exc: BaseException) -> None:
        # No answer, or a coordinator error for the whole request: look the coordinator up again.
        # (A partition's coordinator error was seen to as its answer was read.)
        if isinstance(exc, (errors.KafkaConnectionError, errors.KafkaTimeoutError)) or (
            isinstance(exc, errors.BrokerResponseError) and exc.code in errors.COORDINATOR_CODES
        ):
            self._coordinator_failed()

    # ----------------------------------------------------------------- commit

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Commit ``offsets``; raises CommitFailedError when the membership is no longer valid.

        Raises :class:`RebalanceNeeded` on REBALANCE_IN_PROGRESS (the caller decides whether to
        rejoin and retry).  Coordinator moves and other retriable errors are retried until the
        request timeout.
        """
        if not offsets:
            return
        pending = dict(offsets)

        async def commit_pending() -> None:
            nonlocal pending
            pending = await self._commit_once(pending)
            if pending:
                raise _PartitionsToRetry(f"retriable commit errors: {self._last_codes}")

        try:
            await self._retrying(commit_pending, "commit")
        except Exception as exc:
            if not _worth_retrying(exc):
                raise
            raise errors.CommitFailedError(
                f"committing offsets of group {self.group_id!r} failed: {exc}"
            ) from exc

    async def _commit_once(
        self, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """One OffsetCommit; returns the offsets to retry (retriable partition errors)."""
        connection = await self._connection()
        version, ids = self._version(
            connection, OffsetCommitRequest.API_KEY, {tp.topic for tp in offsets}
        )
        request = self._commit_request(offsets, version, ids)
        response = await connection.send(request, version)
        names = {} if ids is None else {topic_id: name for name, topic_id in ids.items()}
        retry_next: dict[TopicPartition, OffsetAndMetadata] = {}
        self._last_codes = set()
        for topic in response.topics:
            name = names.get(topic.topic_id, topic.name) if names else topic.name
            for p in topic.partitions:
                if p.error_code:
                    tp = TopicPartition(name, p.partition_index)
                    again = self._partition_commit_failed(tp, offsets[tp], p.error_code)
                    if again is not None:
                        retry_next[tp] = again
        return retry_next

    def _commit_request(
        self,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        version: int,
        ids: dict[str, uuid.UUID] | None,
    ) -> OffsetCommitRequest:
        identity = self._identity()
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for tp, committed in offsets.items():
            partition = OffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=committed.offset,
                committed_metadata=committed.metadata,
            )
            if version >= 6:
                partition.committed_leader_epoch = (
                    committed.leader_epoch if committed.leader_epoch is not None else -1
                )
            if version == 1:
                partition.commit_timestamp = -1
            by_topic.setdefault(tp.topic, []).append(partition)
        request = OffsetCommitRequest(
            group_id=self.group_id,
            topics=[
                OffsetCommitRequestTopic(**_topic_key(t, ids), partitions=p)
                for t, p in by_topic.items()
            ],
        )
        if version >= 1:
            request.generation_id_or_member_epoch = identity.generation
            request.member_id = identity.member_id
        if 2 <= version <= 4:
            request.retention_time_ms = -1
        if version >= 7:
            request.group_instance_id = identity.group_instance_id
        return request

    def _partition_commit_failed(
        self, tp: TopicPartition, committed: OffsetAndMetadata, code: int
    ) -> OffsetAndMetadata | None:
        """A partition's commit error: what to commit again, None if nothing; or raise."""
        self._last_codes.add(errors.error_for_code(code).name)
        if code in errors.COORDINATOR_CODES:
            self._coordinator_failed()
            return committed
        if code == errors.RebalanceInProgressError.code:
            raise RebalanceNeeded()
        if code in errors.LEADER_EPOCH_CODES and committed.leader_epoch is not None:
            # The epoch is advisory; some coordinators check it against the current
            # leader's: commit the offset without it.
            return committed._replace(leader_epoch=None)
        if code in errors.GROUP_MEMBERSHIP_CODES:
            if self.on_membership_error is not None:
                self.on_membership_error(code)
            if code == errors.StaleMemberEpochError.code and self._identity().generation > 0:
                # KIP-848: the commit raced a heartbeat that moved the member epoch on.  The
                # member is still in the group: commit again with the epoch it holds by then.
                return committed
            raise errors.CommitFailedError(
                f"commit of group {self.group_id!r} rejected: "
                f"{errors.error_for_code(code).name} (the group rebalanced; the "
                "partitions may now belong to another member)"
            )
        error = errors.error_for_code(code)(f"committing {tp}")
        if not error.retriable:
            raise error
        return committed

    # ----------------------------------------------------------------- fetch

    async def fetch(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets of ``partitions`` (``None`` where nothing is committed)."""
        try:
            return await self._retrying(
                lambda: self._fetch_once(partitions), "offset fetch", self._fetch_worth_retrying
            )
        except Exception as exc:
            if not _worth_retrying(exc):
                raise
            raise errors.KafkaTimeoutError(
                f"fetching committed offsets of group {self.group_id!r} failed: {exc}"
            ) from exc

    def _fetch_worth_retrying(self, exc: BaseException) -> bool:
        # KIP-848: a fetch naming the member epoch raced a heartbeat that moved it on; while
        # the member is in the group, the next attempt carries the epoch it holds by then.
        if isinstance(exc, errors.StaleMemberEpochError):
            return self._identity().generation > 0
        return _worth_retrying(exc)

    async def _fetch_once(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        connection = await self._connection()
        version, ids = self._version(
            connection, OffsetFetchRequest.API_KEY, {tp.topic for tp in partitions}
        )
        request = self._fetch_request(partitions, version, ids)
        response = await connection.send(request, version)
        if version >= 8:
            group_response = response.groups[0]
            errors.raise_for_code(group_response.error_code, f"OffsetFetch {self.group_id!r}")
            topics = group_response.topics
        else:
            if version >= 2:
                errors.raise_for_code(response.error_code, f"OffsetFetch {self.group_id!r}")
            topics = response.topics
        names = {} if ids is None else {topic_id: name for name, topic_id in ids.items()}
        result: dict[TopicPartition, OffsetAndMetadata | None] = {}
        for topic in topics:
            name = names.get(topic.topic_id, topic.name) if names else topic.name
            for p in topic.partitions:
                tp = TopicPartition(name, p.partition_index)
                if p.error_code:
                    if p.error_code == errors.UnknownTopicOrPartitionError.code:
                        result[tp] = None
                        continue
                    errors.raise_for_code(p.error_code, f"OffsetFetch {tp}")
                if p.committed_offset < 0:
                    result[tp] = None
                    continue
                epoch = getattr(p, "committed_leader_epoch", -1)
                result[tp] = OffsetAndMetadata(
                    p.committed_offset, p.metadata or "", epoch if epoch >= 0 else None
                )
        return result

    def _fetch_request(
        self, partitions: list[TopicPartition], version: int, ids: dict[str, uuid.UUID] | None
    ) -> OffsetFetchRequest:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = OffsetFetchRequest()
        if version >= 8:
            identity = self._identity()
            group = OffsetFetchRequestGroup(
                group_id=self.group_id,
                topics=[
                    OffsetFetchRequestTopics(**_topic_key(t, ids), partition_indexes=p)
                    for t, p in by_topic.items()
                ],
            )
            if version >= 9 and identity.member_id and identity.generation >= 0:
                group.member_id = identity.member_id
                group.member_epoch = identity.generation
            request.groups = [group]
        else:
            request.group_id = self.group_id
            request.topics = [
                OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in by_topic.items()
            ]
        if version >= 7:
            request.require_stable = self._require_stable
        return request
