"""A KIP-848 member whose offset commit is refused for its membership, against a scripted
coordinator (ConsumerGroupHeartbeat + OffsetCommit).

In KIP-848 a heartbeat with member epoch -1 means "I leave the group".  A refused commit must
therefore never set the epoch to -1: STALE_MEMBER_EPOCH (the commit raced a heartbeat that moved
the epoch on) is committed again with the member's current epoch, and FENCED_MEMBER_EPOCH /
UNKNOWN_MEMBER_ID are left to the heartbeat, which rejoins with epoch 0 and the same member id.
A classic member keeps its old handling (forget the generation, rejoin).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from _group_broker import cluster_answer, commit_answer
from fake_broker import FakeBroker

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.group.assignors import RangeAssignor
from aiokafkawire.consumer.group.classic import ClassicMembership
from aiokafkawire.consumer.group.consumer_protocol import ConsumerProtocolMembership
from aiokafkawire.consumer.group.membership import GroupConfig
from aiokafkawire.consumer.group.offsets import GroupOffsets, MemberIdentity
from aiokafkawire.consumer.group.states import GroupState
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
)
from aiokafkawire.protocol.messages.consumer_group_heartbeat import Assignment, TopicPartitions
from aiokafkawire.structs import OffsetAndMetadata, TopicPartition

TOPIC = "epochs"
TOPIC_ID = uuid.uuid4()
OWNED = {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)}
STALE = errors.StaleMemberEpochError.code
FENCED = errors.FencedMemberEpochError.code
UNKNOWN_MEMBER = errors.UnknownMemberIdError.code


class Coordinator:
    """Keeps one member's epoch as a KIP-848 coordinator would and checks commits against it."""

    def __init__(self, fenced_commit_error: int = FENCED) -> None:
        self.epoch = 0  # the member's epoch as the coordinator knows it
        self.fenced = False  # the member was fenced: only a rejoin (epoch 0) is accepted
        self.fenced_commit_error = fenced_commit_error
        # What happens to the member just before the next commit is answered: "bump" (its
        # epoch moves on) or "fence".  Tied to the commit so no heartbeat can come in between.
        self.before_next_commit: str | None = None
        self.heartbeats: list[tuple[str, int]] = []  # (member id, epoch) of each heartbeat
        self.commit_epochs: list[int] = []
        self.broker = FakeBroker(self.answer)

    async def answer(self, header: Any, request: Any) -> Any:
        answer = cluster_answer(header, self.broker.port, TOPIC, TOPIC_ID, partitions=2)
        if answer is not None:
            return answer
        if header.api_key == ConsumerGroupHeartbeatRequest.API_KEY:
            return self._heartbeat(request)
        if header.api_key == OffsetCommitRequest.API_KEY:
            return self._commit(request)
        raise AssertionError(f"unexpected request {request!r}")

    def _heartbeat(self, request: Any) -> Any:
        epoch = request.member_epoch
        self.heartbeats.append((request.member_id, epoch))
        if epoch < 0:
            return ConsumerGroupHeartbeatResponse(member_id=request.member_id, member_epoch=epoch)
        if self.fenced and epoch != 0:
            return ConsumerGroupHeartbeatResponse(error_code=FENCED)
        if epoch == 0:
            self.fenced = False
            self.epoch += 1
        assignment = Assignment(
            topic_partitions=[TopicPartitions(topic_id=TOPIC_ID, partitions=[0, 1])]
        )
        return ConsumerGroupHeartbeatResponse(
            member_id=request.member_id,
            member_epoch=self.epoch,
            heartbeat_interval_ms=100,
            assignment=assignment,
        )

    def _commit(self, request: Any) -> Any:
        epoch = request.generation_id_or_member_epoch
        self.commit_epochs.append(epoch)
        if self.before_next_commit == "bump":
            self.epoch += 1  # the heartbeat telling the member is still to come
        elif self.before_next_commit == "fence":
            self.fenced = True
        self.before_next_commit = None
        if self.fenced:
            code = self.fenced_commit_error
        else:
            code = STALE if epoch != self.epoch else 0
        return commit_answer(request, lambda _partition: code)


async def _until(condition: Any, what: str, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        assert loop.time() < end, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def _stable_member(cluster: Cluster) -> ConsumerProtocolMembership:
    subs = SubscriptionState("latest")
    subs.subscribe([TOPIC])
    config = GroupConfig(group_id="g", request_timeout_ms=5000, retry_backoff_ms=20)
    member = ConsumerProtocolMembership(cluster, subs, config)
    member.start()
    await _until(lambda: set(subs.assignment) == OWNED, "the first assignment")
    assert member.state is GroupState.STABLE and member.generation == 1
    return member


def _commit(member: ConsumerProtocolMembership) -> Any:
    return member.offsets.commit({tp: OffsetAndMetadata(3) for tp in OWNED})


async def test_commit_racing_an_epoch_bump_is_committed_with_the_new_epoch() -> None:
    coordinator = Coordinator()
    async with coordinator.broker:
        async with Cluster(f"127.0.0.1:{coordinator.broker.port}", ConnectionConfig()) as cluster:
            await cluster.refresh_metadata([TOPIC])
            member = await _stable_member(cluster)
            try:
                coordinator.before_next_commit = "bump"
                await _commit(member)  # STALE_MEMBER_EPOCH first, then accepted
                assert coordinator.commit_epochs[0] == 1 and coordinator.commit_epochs[-1] == 2
                assert member.generation == 2
                assert set(member._subs.assignment) == OWNED
                assert member.state is GroupState.STABLE
                assert all(epoch >= 0 for _, epoch in coordinator.heartbeats), "it left"
            finally:
                await member.close(leave=False)


@pytest.mark.parametrize("refusal", [FENCED, UNKNOWN_MEMBER], ids=["fenced", "unknown_member"])
async def test_fenced_commit_rejoins_through_the_heartbeat_without_leaving(refusal: int) -> None:
    coordinator = Coordinator(fenced_commit_error=refusal)
    async with coordinator.broker:
        async with Cluster(f"127.0.0.1:{coordinator.broker.port}", ConnectionConfig()) as cluster:
            await cluster.refresh_metadata([TOPIC])
            member = await _stable_member(cluster)
            member_id = member.member_id
            try:
                coordinator.before_next_commit = "fence"
                with pytest.raises(errors.CommitFailedError):
                    await _commit(member)
                await _until(lambda: coordinator.epoch == 2, "the rejoin")
                await _until(lambda: member.generation == 2, "the new epoch")
                assert all(epoch >= 0 for _, epoch in coordinator.heartbeats), "it left"
                assert (member_id, 0) in coordinator.heartbeats[1:]  # same id, epoch 0
                await _until(lambda: set(member._subs.assignment) == OWNED, "the assignment")
                await _commit(member)
                assert coordinator.commit_epochs[-1] == 2
            finally:
                await member.close(leave=False)


async def test_stale_epoch_without_a_membership_fails_the_commit() -> None:
    """Outside a group (epoch -1) there is no newer epoch to wait for."""
    coordinator = Coordinator()
    coordinator.epoch = 5
    async with coordinator.broker:
        async with Cluster(f"127.0.0.1:{coordinator.broker.port}", ConnectionConfig()) as cluster:
            await cluster.refresh_metadata([TOPIC])
            offsets = GroupOffsets(
                cluster, "g", MemberIdentity, request_timeout_ms=2000, retry_backoff_ms=10
            )
            with pytest.raises(errors.CommitFailedError, match="STALE_MEMBER_EPOCH"):
                await offsets.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(3)})
    assert coordinator.commit_epochs == [-1]


@pytest.mark.parametrize(
    "code", [errors.IllegalGenerationError.code, UNKNOWN_MEMBER], ids=["illegal", "unknown"]
)
def test_classic_member_still_forgets_its_generation_on_a_refused_commit(code: int) -> None:
    subs = SubscriptionState("latest")
    subs.subscribe([TOPIC])
    config = GroupConfig("g", assignors=[RangeAssignor()])
    member = ClassicMembership(Cluster("127.0.0.1:1", ConnectionConfig()), subs, config)
    member.generation, member.member_id = 4, "m-1"
    assert member.offsets.on_membership_error is not None
    member.offsets.on_membership_error(code)
    assert member.generation == -1
    assert member.member_id == ("" if code == UNKNOWN_MEMBER else "m-1")
    assert member._rejoin_needed and member._partitions_lost_pending
