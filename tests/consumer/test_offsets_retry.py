"""GroupOffsets' retries (commit and offset fetch) against a scripted coordinator.

Each test scripts the error codes the coordinator answers, attempt by attempt, and checks what
the client does: retry the partitions that need it, look the coordinator up again after a
coordinator error, give up with the documented error at the request timeout, and raise at once
what no retry can fix.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from _group_broker import cluster_answer, commit_answer, fetch_answer
from fake_broker import FakeBroker

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.group.offsets import GroupOffsets, MemberIdentity, RebalanceNeeded
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.protocol.messages import (
    FindCoordinatorRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from aiokafkawire.structs import OffsetAndMetadata, TopicPartition

TOPIC = "retried"
TP0 = TopicPartition(TOPIC, 0)
TP1 = TopicPartition(TOPIC, 1)
OK = 0
NOT_COORDINATOR = errors.NotCoordinatorError.code
COORDINATOR_LOADING = errors.CoordinatorLoadInProgressError.code
# A partition-level error that is retriable but not about the coordinator.
RETRIABLE = errors.UnknownTopicOrPartitionError.code

#: A script: attempt number (0, 1, ...) and partition -> the error code to answer.
Script = Callable[[int, int], int]


class Coordinator:
    """Counts what it is asked and answers commits and fetches by a script."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.commits: list[list[int]] = []  # the partitions of each OffsetCommit
        self.fetches = 0
        self.lookups = 0
        self.broker = FakeBroker(self.answer)

    async def answer(self, header: Any, request: Any) -> Any:
        if header.api_key == FindCoordinatorRequest.API_KEY:
            self.lookups += 1
        answer = cluster_answer(header, self.broker.port, TOPIC, uuid.uuid4(), partitions=2)
        if answer is not None:
            return answer
        if header.api_key == OffsetCommitRequest.API_KEY:
            return self._commit_answer(request)
        if header.api_key == OffsetFetchRequest.API_KEY:
            return self._fetch_answer(request)
        raise AssertionError(f"unexpected request {request!r}")

    def _commit_answer(self, request: Any) -> Any:
        attempt = len(self.commits)
        self.commits.append([p.partition_index for p in request.topics[0].partitions])
        return commit_answer(request, lambda partition: self.script(attempt, partition))

    def _fetch_answer(self, request: Any) -> Any:
        attempt = self.fetches
        self.fetches += 1
        return fetch_answer(request, lambda _partition: 7, self.script(attempt, -1))


async def _run(
    script: Script,
    action: Callable[[GroupOffsets], Any],
    identity: Callable[[], MemberIdentity] = MemberIdentity,
) -> Coordinator:
    """Run ``action(offsets)`` against a coordinator answering by ``script``."""
    coordinator = Coordinator(script)
    async with coordinator.broker:
        config = ConnectionConfig(connect_timeout_ms=2000)
        async with Cluster(f"127.0.0.1:{coordinator.broker.port}", config) as cluster:
            await cluster.refresh_metadata([TOPIC])
            offsets = GroupOffsets(
                cluster, "g", identity, request_timeout_ms=400, retry_backoff_ms=10
            )
            await action(offsets)
    return coordinator


def _commit(offsets: GroupOffsets) -> Any:
    return offsets.commit({TP0: OffsetAndMetadata(5), TP1: OffsetAndMetadata(6)})


async def test_commit_after_a_coordinator_error_finds_the_coordinator_again() -> None:
    coordinator = await _run(lambda attempt, _: NOT_COORDINATOR if attempt == 0 else OK, _commit)
    assert coordinator.commits == [[0, 1], [0, 1]]
    assert coordinator.lookups == 2


async def test_commit_retries_only_the_partitions_that_failed() -> None:
    coordinator = await _run(
        lambda attempt, partition: RETRIABLE if attempt == 0 and partition == 1 else OK, _commit
    )
    assert coordinator.commits == [[0, 1], [1]]
    assert coordinator.lookups == 1  # a partition's retriable error is not the coordinator's


async def test_commit_gives_up_at_the_request_timeout() -> None:
    with pytest.raises(errors.CommitFailedError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        await _run(lambda _attempt, _partition: RETRIABLE, _commit)


async def test_commit_raises_a_non_retriable_error_at_once() -> None:
    too_large = errors.OffsetMetadataTooLargeError.code

    async def commit(offsets: GroupOffsets) -> None:
        with pytest.raises(errors.OffsetMetadataTooLargeError):
            await _commit(offsets)

    coordinator = await _run(lambda _attempt, _partition: too_large, commit)
    assert coordinator.commits == [[0, 1]]


async def test_commit_refused_for_the_membership_tells_the_membership() -> None:
    told: list[int] = []
    illegal = errors.IllegalGenerationError.code

    async def commit(offsets: GroupOffsets) -> None:
        offsets.on_membership_error = told.append
        with pytest.raises(errors.CommitFailedError, match="ILLEGAL_GENERATION"):
            await _commit(offsets)

    coordinator = await _run(lambda _attempt, _partition: illegal, commit)
    assert told == [illegal] and len(coordinator.commits) == 1


async def test_commit_during_a_rebalance_is_left_to_the_caller() -> None:
    rebalancing = errors.RebalanceInProgressError.code

    async def commit(offsets: GroupOffsets) -> None:
        with pytest.raises(RebalanceNeeded):
            await _commit(offsets)

    coordinator = await _run(lambda _attempt, _partition: rebalancing, commit)
    assert len(coordinator.commits) == 1


async def test_offset_fetch_waits_out_a_loading_coordinator() -> None:
    async def fetch(offsets: GroupOffsets) -> None:
        assert await offsets.fetch([TP0]) == {TP0: OffsetAndMetadata(7, "", None)}

    coordinator = await _run(lambda attempt, _: COORDINATOR_LOADING if attempt < 2 else OK, fetch)
    assert coordinator.fetches == 3 and coordinator.lookups == 3


async def test_offset_fetch_gives_up_at_the_request_timeout() -> None:
    async def fetch(offsets: GroupOffsets) -> None:
        with pytest.raises(errors.KafkaTimeoutError, match="NOT_COORDINATOR"):
            await offsets.fetch([TP0])

    coordinator = await _run(lambda _attempt, _partition: NOT_COORDINATOR, fetch)
    assert coordinator.fetches > 2  # it did retry before giving up


async def test_offset_fetch_raises_a_non_retriable_error_at_once() -> None:
    denied = errors.GroupAuthorizationFailedError.code

    async def fetch(offsets: GroupOffsets) -> None:
        with pytest.raises(errors.GroupAuthorizationFailedError):
            await offsets.fetch([TP0])

    coordinator = await _run(lambda _attempt, _partition: denied, fetch)
    assert coordinator.fetches == 1


async def test_offset_fetch_of_a_kip848_member_retries_a_stale_epoch() -> None:
    """The fetch raced a heartbeat that moved the member epoch on: ask again with the new one."""
    stale = errors.StaleMemberEpochError.code

    async def fetch(offsets: GroupOffsets) -> None:
        assert await offsets.fetch([TP0]) == {TP0: OffsetAndMetadata(7, "", None)}

    def member() -> MemberIdentity:
        return MemberIdentity(3, "m-1")

    coordinator = await _run(lambda attempt, _: stale if attempt == 0 else OK, fetch, member)
    assert coordinator.fetches == 2


async def test_offset_fetch_outside_a_group_does_not_retry_a_stale_epoch() -> None:
    stale = errors.StaleMemberEpochError.code

    async def fetch(offsets: GroupOffsets) -> None:
        with pytest.raises(errors.StaleMemberEpochError):
            await offsets.fetch([TP0])

    coordinator = await _run(lambda _attempt, _partition: stale, fetch)
    assert coordinator.fetches == 1
