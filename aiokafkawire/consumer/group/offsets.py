"""Committing and fetching group offsets (OffsetCommit / OffsetFetch, every version).

:class:`GroupOffsets` talks to the group coordinator.  Membership (generation or member epoch,
member id) comes from a callable so the same code serves classic groups, KIP-848 groups and
consumers that only use a group id for offset storage (manual assignment).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import COORDINATOR_ERRORS, Cluster
from aiokafkawire.consumer.records import OffsetAndMetadata
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

_COORDINATOR_CODES = frozenset(cls.code for cls in COORDINATOR_ERRORS)
_EPOCH_CODES = frozenset((errors.FencedLeaderEpochError.code, errors.UnknownLeaderEpochError.code))
_MEMBERSHIP_CODES = frozenset(
    cls.code
    for cls in (
        errors.IllegalGenerationError,
        errors.UnknownMemberIdError,
        errors.FencedInstanceIdError,
        errors.StaleMemberEpochError,
        errors.FencedMemberEpochError,
    )
)


class MemberIdentity(NamedTuple):
    """Who commits: generation (classic) or member epoch (KIP-848), member id, instance id."""

    generation: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class RebalanceNeeded(Exception):
    """Internal: the coordinator answered REBALANCE_IN_PROGRESS to a commit."""


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
        self._backoff = retry_backoff_ms / 1000
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

    # ----------------------------------------------------------------- commit

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Commit ``offsets``; raises CommitFailedError when the membership is no longer valid.

        Raises :class:`RebalanceNeeded` on REBALANCE_IN_PROGRESS (the caller decides whether to
        rejoin and retry).  Coordinator moves and other retriable errors are retried until the
        request timeout.
        """
        if not offsets:
            return
        deadline = time.monotonic() + self._timeout
        pending = dict(offsets)
        while True:
            try:
                pending = await self._commit_once(pending)
            except (errors.KafkaConnectionError, errors.KafkaTimeoutError) as exc:
                self._coordinator_failed()
                last: Exception = exc
            except errors.BrokerResponseError as exc:
                if exc.code in _COORDINATOR_CODES:
                    self._coordinator_failed()
                elif not exc.retriable:
                    raise
                last = exc
            else:
                if not pending:
                    return
                last = errors.KafkaTimeoutError(f"retriable commit errors: {self._last_codes}")
            if time.monotonic() + self._backoff > deadline:
                raise errors.CommitFailedError(
                    f"committing offsets of group {self.group_id!r} failed: {last}"
                ) from last
            log.debug("commit for group %r: %s; retrying", self.group_id, last)
            await asyncio.sleep(self._backoff)

    async def _commit_once(
        self, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """One OffsetCommit; returns the offsets to retry (retriable partition errors)."""
        connection = await self._connection()
        version, ids = self._version(
            connection, OffsetCommitRequest.API_KEY, {tp.topic for tp in offsets}
        )
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
                OffsetCommitRequestTopic(topic_id=ids[t], partitions=p)
                if ids is not None
                else OffsetCommitRequestTopic(name=t, partitions=p)
                for t, p in by_topic.items()
            ],
        )
        names = {} if ids is None else {topic_id: name for name, topic_id in ids.items()}
        if version >= 1:
            request.generation_id_or_member_epoch = identity.generation
            request.member_id = identity.member_id
        if 2 <= version <= 4:
            request.retention_time_ms = -1
        if version >= 7:
            request.group_instance_id = identity.group_instance_id
        response = await connection.send(request, version)
        retry: dict[TopicPartition, OffsetAndMetadata] = {}
        self._last_codes = set()
        for topic in response.topics:
            name = names.get(topic.topic_id, topic.name) if names else topic.name
            for p in topic.partitions:
                code = p.error_code
                if not code:
                    continue
                tp = TopicPartition(name, p.partition_index)
                self._last_codes.add(errors.error_for_code(code).name)
                if code in _COORDINATOR_CODES:
                    self._coordinator_failed()
                    retry[tp] = offsets[tp]
                elif code == errors.RebalanceInProgressError.code:
                    raise RebalanceNeeded()
                elif code in _EPOCH_CODES and offsets[tp].leader_epoch is not None:
                    # The epoch is advisory; some coordinators check it against the current
                    # leader's: commit the offset without it.
                    retry[tp] = offsets[tp]._replace(leader_epoch=None)
                elif code in _MEMBERSHIP_CODES:
                    if self.on_membership_error is not None:
                        self.on_membership_error(code)
                    raise errors.CommitFailedError(
                        f"commit of group {self.group_id!r} rejected: "
                        f"{errors.error_for_code(code).name} (the group rebalanced; the "
                        "partitions may now belong to another member)"
                    )
                else:
                    error = errors.error_for_code(code)(f"committing {tp}")
                    if not error.retriable:
                        raise error
                    retry[tp] = offsets[tp]
        return retry

    # ----------------------------------------------------------------- fetch

    async def fetch(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets of ``partitions`` (``None`` where nothing is committed)."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                return await self._fetch_once(partitions)
            except (errors.KafkaConnectionError, errors.KafkaTimeoutError) as exc:
                self._coordinator_failed()
                last: Exception = exc
            except errors.BrokerResponseError as exc:
                if exc.code in _COORDINATOR_CODES:
                    self._coordinator_failed()
                elif not exc.retriable:
                    raise
                last = exc
            if time.monotonic() + self._backoff > deadline:
                raise errors.KafkaTimeoutError(
                    f"fetching committed offsets of group {self.group_id!r} failed: {last}"
                ) from last
            await asyncio.sleep(self._backoff)

    async def _fetch_once(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        connection = await self._connection()
        version, ids = self._version(
            connection, OffsetFetchRequest.API_KEY, {tp.topic for tp in partitions}
        )
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        names = {} if ids is None else {topic_id: name for name, topic_id in ids.items()}
        request = OffsetFetchRequest()
        if version >= 8:
            identity = self._identity()
            group = OffsetFetchRequestGroup(
                group_id=self.group_id,
                topics=[
                    OffsetFetchRequestTopics(topic_id=ids[t], partition_indexes=p)
                    if ids is not None
                    else OffsetFetchRequestTopics(name=t, partition_indexes=p)
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
        response = await connection.send(request, version)
        if version >= 8:
            group_response = response.groups[0]
            errors.raise_for_code(group_response.error_code, f"OffsetFetch {self.group_id!r}")
            topics = group_response.topics
        else:
            if version >= 2:
                errors.raise_for_code(response.error_code, f"OffsetFetch {self.group_id!r}")
            topics = response.topics
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
