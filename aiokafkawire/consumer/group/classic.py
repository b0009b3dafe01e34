"""The classic group protocol: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

A :class:`ClassicMembership` owns two supervised loops: the *group loop* (joins, rebalances,
reacts to metadata changes) and the *heartbeat loop* (its own "heartbeat" connection, so a
heartbeat never waits behind a JoinGroup or a commit).  The member elected leader computes the
assignment with the chosen assignor and hands it out in its SyncGroup.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

from aiokafkawire import errors
from aiokafkawire._retry import retry_until_stopped
from aiokafkawire._waits import wait_event
from aiokafkawire.consumer.group.assignors import (
    COOPERATIVE,
    MemberAssignment,
    MemberSubscription,
    PartitionAssignor,
)
from aiokafkawire.consumer.group.member_data import (
    SUBSCRIPTION_VERSION,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from aiokafkawire.consumer.group.membership import Membership
from aiokafkawire.consumer.group.states import GroupEvent, GroupState
from aiokafkawire.protocol.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from aiokafkawire.protocol.messages.join_group import JoinGroupRequestProtocol
from aiokafkawire.protocol.messages.leave_group import MemberIdentity as LeaveMember
from aiokafkawire.protocol.messages.sync_group import SyncGroupRequestAssignment

log = logging.getLogger("aiokafkawire.consumer.group")

__all__ = ["ClassicMembership"]

_WATCH_INTERVAL_S = 1.0
_GROUP_LOOP = "group-loop"
_HEARTBEAT = "heartbeat"


#: Rounds of JoinGroup/SyncGroup in a row without a pause when the coordinator asks for another
#: (:meth:`ClassicMembership._join_while_wanted`); then the retry policy's backoff applies.
_REJOINS_AT_ONCE = 3


class _Rejoin(Exception):
    """Internal: this join attempt failed in a way that is fixed by joining again."""


def _join_retriable(exc: BaseException) -> bool:
    """Whether the group loop joins again after ``exc`` (else the loop dies with it)."""
    return isinstance(exc, _Rejoin) or errors.retriable_in_background(exc)


class ClassicMembership(Membership):
    """A member of a classic consumer group (FindCoordinator, JoinGroup, SyncGroup, Heartbeat)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.config.assignors:
            raise errors.ConfigError("a consumer group needs at least one partition assignor")
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self._assignor: PartitionAssignor | None = None
        self._watched: dict[str, int] = {}
        # Cooperative only when every configured assignor supports it (as in the Java client).
        self.cooperative = all(
            COOPERATIVE in getattr(a, "supported_protocols", (a.rebalance_protocol,))
            for a in self.config.assignors
        )

    def start(self) -> None:
        """Start the group and heartbeat loops."""
        self._start_loop(_GROUP_LOOP, self._group_loop)
        self._start_loop(_HEARTBEAT, self._heartbeat_loop)

    def _holds_generation(self) -> bool:
        return self.generation >= 0

    def _leaves_on_close(self) -> bool:
        # A static member keeps its partitions for the session timeout: it does not leave.
        return bool(self.member_id) and self.config.group_instance_id is None

    # ----------------------------------------------------------------- group loop

    def _subscribed_topics(self) -> set[str]:
        subs = self._subs
        if subs.pattern is not None:
            return subs.matching_topics(self._cluster.metadata.topics)
        return set(subs.topics)

    def _snapshot(self, topics: Iterable[str]) -> dict[str, int]:
        metadata = self._cluster.metadata.topics
        snapshot = {}
        for topic in topics:
            info = metadata.get(topic)
            snapshot[topic] = (
                len(info.partitions) if info is not None and not info.error_code else 0
            )
        return snapshot

    def _join_wanted(self) -> bool:
        """Whether the member should (re)join now."""
        # A fatal member does not rejoin: the error waits for the user's next call.
        if not self._rejoin_needed or self._poll_timed_out or self.state is GroupState.FATAL:
            return False
        return self._subs.pattern is None or bool(self._subscribed_topics())

    async def _group_loop(self) -> None:
        backoff = self._backoff()
        while True:
            if self._join_wanted():
                await retry_until_stopped(
                    self._join_while_wanted,
                    should_retry=_join_retriable,
                    backoff=backoff,
                    what=f"group {self.group_id!r} join",
                    on_retry=self._join_failed,
                )
                continue
            self._wakeup.clear()
            await wait_event(self._wakeup, _WATCH_INTERVAL_S)
            if self.state is not GroupState.STABLE:
                continue
            if self._snapshot(self._watched) != self._watched:
                self.request_rejoin("subscribed topics' metadata changed")
            elif self._subscribed_topics() - set(self._watched):
                self.request_rejoin("the subscription matches new topics")

    async def _join_while_wanted(self) -> None:
        """Rebalance while one is wanted; a :class:`_Rejoin` starts the next round at once.

        As Java's ``joinGroupIfNeeded``: after MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID,
        ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS the member joins again without a pause (the
        coordinator said how to go on), up to :data:`_REJOINS_AT_ONCE` rounds in a row; the next
        one is left to the retry policy's backoff, so a broker repeating itself is not hammered.
        """
        for round_ in range(1, _REJOINS_AT_ONCE + 1):
            if not self._join_wanted():
                return
            try:
                await self._rebalance()
                return
            except _Rejoin as exc:
                if round_ == _REJOINS_AT_ONCE:
                    raise
                log.info("group %r: %s; joining again", self.group_id, exc)

    def _join_failed(self, exc: BaseException) -> None:
        """Before the pause after a failed join: the coordinator is looked up again, unless the
        coordinator itself asked for the rejoin."""
        if isinstance(exc, _Rejoin):
            log.info("group %r: %s; joining again after a pause", self.group_id, exc)
            return
        log.info("group %r: join failed: %s; retrying", self.group_id, exc)
        self._cluster.invalidate_coordinator(self.group_id)

    async def _rebalance(self) -> None:
        if self._rebalance_started is None:
            self._rebalance_started = time.monotonic()
        self._move(GroupEvent.JOIN)
        if self._partitions_lost_pending:
            await self._lose_partitions()
        elif not self.cooperative and self._subs.assignment:
            await self._revoke(set(self._subs.assignment))
        self._rejoin_needed = False
        try:
            assignment = await self._join_and_sync()
        except BaseException:
            self._rejoin_needed = True
            raise
        await self._apply_assignment(assignment)

    async def _apply_assignment(self, assignment: MemberAssignment) -> None:
        new = set(assignment.partitions)
        owned = set(self._subs.assignment)
        revoked = owned - new
        added = new - owned
        if self._assignor is not None:
            self._assignor.on_assignment(assignment, self.generation)
        if revoked:
            # Cooperative: only what moved is revoked; the rest keeps being consumed.
            await self._revoke(revoked)
            self.request_rejoin("partitions were revoked; a follow-up rebalance hands them over")
        self._move(GroupEvent.ASSIGNED)
        log.info(
            "group %r generation %d: assigned %s (added %d, revoked %d)",
            self.group_id,
            self.generation,
            sorted(new),
            len(added),
            len(revoked),
        )
        await self._assign(added)
        if not self._rejoin_needed:
            self._stable.set()

    async def _join_and_sync(self) -> MemberAssignment:
        """One JoinGroup + SyncGroup round; raises :class:`_Rejoin` when it must start over."""
        topics = sorted(self._subscribed_topics())
        connection = await self._cluster.coordinator_connection(self.group_id, purpose="group")
        response = await self._join(connection, topics)
        assignor = next(
            (a for a in self.config.assignors if a.name == response.protocol_name), None
        )
        if assignor is None:
            raise errors.IllegalStateError(
                f"the coordinator chose assignor {response.protocol_name!r} which is not configured"
            )
        self._assignor = assignor
        assignments: list[SyncGroupRequestAssignment] = []
        watched = set(topics)
        if response.leader == response.member_id and not getattr(
            response, "skip_assignment", False
        ):
            assignments, member_topics = await self._lead(assignor, response.members)
            watched |= member_topics
        self._watched = self._snapshot(watched)
        return await self._sync(connection, assignments)

    def _round_timeout_ms(self) -> int:
        """How long a JoinGroup/SyncGroup may wait: the coordinator holds it up to the rebalance."""
        return self.config.effective_rebalance_timeout_ms + self.config.request_timeout_ms

    async def _join(self, connection: Any, topics: list[str]) -> Any:
        """JoinGroup: on success the generation, member id, leader and protocol are ours."""
        config = self.config
        version = connection.versions.version_for(JoinGroupRequest.API_KEY)
        request = JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=config.session_timeout_ms,
            member_id=self.member_id,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequestProtocol(
                    name=a.name,
                    metadata=encode_subscription(
                        a,
                        topics,
                        self._subs.assignment,
                        generation=self.generation,
                        rack_id=config.client_rack,
                    ),
                )
                for a in config.assignors
            ],
        )
        if version >= 1:
            request.rebalance_timeout_ms = config.effective_rebalance_timeout_ms
        if version >= 5:
            request.group_instance_id = config.group_instance_id
        if version >= 8:
            request.reason = "joining"
        response = await connection.send(request, version, timeout_ms=self._round_timeout_ms())
        code = response.error_code
        if code == errors.MemberIdRequiredError.code:
            self.member_id = response.member_id
            raise _Rejoin("the coordinator assigned a member id")
        if code == errors.UnknownMemberIdError.code:
            self.member_id = ""
            raise _Rejoin("unknown member id")
        if code == errors.IllegalGenerationError.code:
            self.generation = -1
            raise _Rejoin("illegal generation")
        if code == errors.RebalanceInProgressError.code:
            raise _Rejoin("rebalance in progress")
        # A coordinator error is raised: the retry policy looks the coordinator up again and
        # pauses before the next round (Java backs off after a retriable error).
        errors.raise_for_code(code, f"JoinGroup {self.group_id!r}")
        self.generation = response.generation_id
        self.member_id = response.member_id
        log.debug(
            "group %r: joined generation %d as %s (leader %s, %d members, protocol %s)",
            self.group_id,
            response.generation_id,
            response.member_id,
            response.leader,
            len(response.members),
            response.protocol_name,
        )
        self.leader_id = response.leader
        self.protocol_name = response.protocol_name
        return response

    async def _sync(
        self, connection: Any, assignments: list[SyncGroupRequestAssignment]
    ) -> MemberAssignment:
        """SyncGroup (with the leader's ``assignments``); returns this member's assignment."""
        version = connection.versions.version_for(SyncGroupRequest.API_KEY)
        sync = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            assignments=assignments,
        )
        if version >= 3:
            sync.group_instance_id = self.config.group_instance_id
        if version >= 5:
            sync.protocol_type = "consumer"
            sync.protocol_name = self.protocol_name
        response = await connection.send(sync, version, timeout_ms=self._round_timeout_ms())
        code = response.error_code
        if code == errors.RebalanceInProgressError.code:
            raise _Rejoin("the group started another rebalance")
        if code in (errors.UnknownMemberIdError.code, errors.IllegalGenerationError.code):
            self._reset_generation(code)
            raise _Rejoin(errors.error_for_code(code).name)
        errors.raise_for_code(code, f"SyncGroup {self.group_id!r}")
        return decode_assignment(response.assignment)

    async def _lead(
        self, assignor: PartitionAssignor, members: list[Any]
    ) -> tuple[list[SyncGroupRequestAssignment], set[str]]:
        """As the leader: every member's assignment, and the topics the group subscribes."""
        subscriptions: dict[str, MemberSubscription] = {}
        version = SUBSCRIPTION_VERSION  # the assignments go out in the oldest member's version
        all_topics: set[str] = set()
        for member in members:
            subscription, member_version = decode_subscription(member)
            subscriptions[member.member_id] = subscription
            version = min(version, member_version)
            all_topics.update(subscription.topics)
        if self._cluster.add_topics(all_topics) or any(
            t not in self._cluster.metadata.topics for t in all_topics
        ):
            await self._cluster.refresh_metadata()
        partitions_per_topic = {}
        for topic in all_topics:
            info = self._cluster.metadata.topics.get(topic)
            if info is not None and not info.error_code and info.partitions:
                partitions_per_topic[topic] = len(info.partitions)
        result = assignor.assign(partitions_per_topic, subscriptions)
        log.debug("group %r: leader computed %s", self.group_id, result)
        out = [
            SyncGroupRequestAssignment(
                member_id=member_id, assignment=encode_assignment(assignment, version)
            )
            for member_id, assignment in result.items()
        ]
        return out, all_topics

    # ----------------------------------------------------------------- heartbeats

    async def _heartbeat_loop(self) -> None:
        config = self.config
        interval = config.heartbeat_interval_ms / 1000
        backoff = self._backoff()
        last_ok = time.monotonic()
        # The heartbeat's clock: the next one is due heartbeat_interval_ms after an answer, or
        # the retry policy's backoff after a failure (Java's Heartbeat.failHeartbeat), never both.
        wait = interval
        while True:
            stable = self.state is GroupState.STABLE
            await asyncio.sleep(wait if stable else min(wait, 0.1))
            wait = interval
            if self.state is not GroupState.STABLE or self.generation < 0:
                last_ok = time.monotonic()
                continue
            if self._poll_expired() and not self._in_callback:
                await self._poll_timeout()
                continue
            try:
                code = await self._heartbeat()
            except errors.KafkaError as exc:
                if not errors.retriable_in_background(exc):
                    raise
                log.debug("group %r: heartbeat failed: %s", self.group_id, exc)
                self._cluster.invalidate_coordinator(self.group_id)
                code = -1
            if code == 0:
                last_ok = time.monotonic()
                backoff.reset()
                continue
            if code == errors.RebalanceInProgressError.code:
                if self.state is GroupState.STABLE:
                    self.request_rejoin("the coordinator is rebalancing the group")
                last_ok = time.monotonic()
                continue
            if code == errors.FencedInstanceIdError.code:
                self._fail(
                    errors.FencedInstanceIdError(
                        f"another consumer uses group_instance_id {config.group_instance_id!r}"
                    )
                )
                return
            if code in errors.GROUP_MEMBERSHIP_CODES:
                self._reset_generation(code)
                self.request_rejoin(f"heartbeat answered {errors.error_for_code(code).name}")
                continue
            if code in errors.COORDINATOR_CODES:
                self._cluster.invalidate_coordinator(self.group_id)
            if time.monotonic() - last_ok > config.session_timeout_ms / 1000:
                log.warning(
                    "group %r: no heartbeat succeeded within the session timeout", self.group_id
                )
                self._cluster.invalidate_coordinator(self.group_id)
                last_ok = time.monotonic()
            wait = backoff.next_delay()

    async def _heartbeat(self) -> int:
        connection = await self._cluster.coordinator_connection(self.group_id, purpose="heartbeat")
        version = connection.versions.version_for(HeartbeatRequest.API_KEY)
        request = HeartbeatRequest(
            group_id=self.group_id, generation_id=self.generation, member_id=self.member_id
        )
        if version >= 3:
            request.group_instance_id = self.config.group_instance_id
        response = await connection.send(request, version)
        return int(response.error_code)

    async def _leave_after_poll_timeout(self) -> None:
        if self.config.group_instance_id is None:
            timeout = min(self.config.request_timeout_ms / 1000, 5.0)
            await self._try_leave("consumer poll timeout has expired", timeout)
            self.member_id = ""
        self.generation = -1

    async def _leave(self, reason: str) -> None:
        """LeaveGroup for this member."""
        connection = await self._cluster.coordinator_connection(self.group_id, purpose="group")
        version = connection.versions.version_for(LeaveGroupRequest.API_KEY)
        request = LeaveGroupRequest(group_id=self.group_id)
        if version >= 3:
            request.members = [
                LeaveMember(
                    member_id=self.member_id,
                    group_instance_id=self.config.group_instance_id,
                    reason=reason if version >= 5 else None,
                )
            ]
        else:
            request.member_id = self.member_id
        response = await connection.send(request, version)
        log.info(
            "group %r: left the group (%s): %s",
            self.group_id,
            reason,
            errors.error_for_code(response.error_code).name if response.error_code else "ok",
        )
        self.generation = -1
        if response.error_code not in (0, errors.UnknownMemberIdError.code):
            errors.raise_for_code(response.error_code, "LeaveGroup")
