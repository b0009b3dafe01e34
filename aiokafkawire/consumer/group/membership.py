"""Group membership: the classic protocol (JoinGroup/SyncGroup/Heartbeat) and the shared base.

A membership owns two supervised loops: the *group loop* (joins, rebalances, reacts to
metadata changes) and the *heartbeat loop* (its own "heartbeat" connection, so a heartbeat never
waits behind a JoinGroup or a commit).  The consumer's partitions live in the shared
:class:`SubscriptionState`; the membership changes them and calls the rebalance listener.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.cluster.cluster import COORDINATOR_ERRORS, Cluster
from aiokafkawire.consumer._waits import timeout_after, wait_event
from aiokafkawire.consumer.group.assignors import (
    COOPERATIVE,
    MemberAssignment,
    MemberSubscription,
    PartitionAssignor,
)
from aiokafkawire.consumer.group.offsets import GroupOffsets, MemberIdentity
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.metrics import RebalanceEvent
from aiokafkawire.protocol.messages import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from aiokafkawire.protocol.messages import consumer_protocol_assignment as cpa
from aiokafkawire.protocol.messages import consumer_protocol_subscription as cps
from aiokafkawire.protocol.messages.join_group import JoinGroupRequestProtocol
from aiokafkawire.protocol.messages.leave_group import MemberIdentity as LeaveMember
from aiokafkawire.protocol.messages.sync_group import SyncGroupRequestAssignment
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer.group")

__all__ = ["ClassicMembership", "GroupConfig", "Membership"]

_COORDINATOR_CODES = frozenset(cls.code for cls in COORDINATOR_ERRORS)
# Set inside rebalance callbacks (and the commits around revocation): per task, so a commit from
# the user's own loop running at the same time is not mistaken for one made by a callback.
_IN_CALLBACK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "aiokafkawire_in_rebalance_callback", default=False
)
_SUBSCRIPTION_VERSION = 3
_WATCH_INTERVAL_S = 1.0


@dataclass
class GroupConfig:
    """The group-related consumer options."""

    group_id: str
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    rebalance_timeout_ms: int | None = None
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30_000
    client_rack: str | None = None
    assignors: list[PartitionAssignor] = field(default_factory=list)
    group_remote_assignor: str | None = None

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        """How long the coordinator waits for members to rejoin (defaults to max poll interval)."""
        if self.rebalance_timeout_ms is not None:
            return self.rebalance_timeout_ms
        return self.max_poll_interval_ms


class _Rejoin(Exception):
    """Internal: this join attempt failed in a way that is fixed by joining again."""


class Membership:
    """State and listener plumbing shared by the classic and the KIP-848 membership."""

    def __init__(
        self,
        cluster: Cluster,
        subscription: SubscriptionState,
        config: GroupConfig,
        *,
        offsets: GroupOffsets | None = None,
        commit_positions: Callable[[Iterable[TopicPartition]], Awaitable[None]] | None = None,
        discard_buffered: Callable[[Iterable[TopicPartition]], None] | None = None,
    ) -> None:
        self._cluster = cluster
        self._subs = subscription
        self.config = config
        self.group_id = config.group_id
        self.generation = -1
        self.member_id = ""
        self.state = "unjoined"
        self.fatal_error: BaseException | None = None
        self._rejoin_needed = True
        self._wakeup = asyncio.Event()
        self._stable = asyncio.Event()
        self._in_callback = False
        self._poll_timed_out = False
        self._last_poll = time.monotonic()
        self._closing = False
        self._commit_positions = commit_positions
        self._discard_buffered = discard_buffered
        self._tasks = TaskSupervisor(f"group:{config.group_id}", self._task_failed)
        self.offsets = offsets or GroupOffsets(
            cluster,
            config.group_id,
            self.identity,
            request_timeout_ms=config.request_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
        )
        self.offsets.on_membership_error = self._membership_error_from_commit
        # Counters for Consumer.metrics(); the hooks get a RebalanceEvent per change.
        self.rebalances = 0
        self.rebalance_time_total_s = 0.0
        self.last_rebalance_s = 0.0
        self._rebalance_started: float | None = None
        metrics = cluster.config.metrics
        self._metrics = metrics if metrics is not None and metrics.hooks else None

    def _emit_rebalance(
        self, kind: str, partitions: set[TopicPartition], duration: float = 0.0
    ) -> None:
        if self._metrics is not None:
            self._metrics.emit(
                "on_rebalance",
                RebalanceEvent(
                    self.group_id, kind, frozenset(partitions), self.generation, duration
                ),
            )

    # ----------------------------------------------------------------- identity/state

    def identity(self) -> MemberIdentity:
        """Generation (or member epoch), member id and instance id for commits."""
        return MemberIdentity(self.generation, self.member_id, self.config.group_instance_id)

    @property
    def in_callback(self) -> bool:
        """Whether a rebalance listener callback is running right now."""
        return self._in_callback and _IN_CALLBACK.get()

    def request_rejoin(self, reason: str = "") -> None:
        """Ask the group loop to rejoin the group."""
        if reason:
            log.info("group %r: rejoining (%s)", self.group_id, reason)
        self._rejoin_needed = True
        self._stable.clear()
        self._wakeup.set()

    def _membership_error_from_commit(self, code: int) -> None:
        self._reset_generation(code)
        self.request_rejoin(f"commit answered {errors.error_for_code(code).name}")

    def _reset_generation(self, code: int | None = None) -> None:
        self.generation = -1
        if code in (errors.UnknownMemberIdError.code, errors.FencedMemberEpochError.code):
            self.member_id = ""
        self._partitions_lost_pending = True

    _partitions_lost_pending = False

    async def wait_stable(self, timeout: float | None = None) -> bool:
        """Wait until the member is in a stable group; False on timeout."""
        return await wait_event(self._stable, timeout)

    def _task_failed(self, name: str, exc: BaseException) -> None:
        if self._closing:
            return
        log.error("group %r: task %s failed", self.group_id, name, exc_info=exc)
        if (
            isinstance(exc, errors.KafkaError)
            and not exc.retriable
            and not isinstance(exc, errors.BackgroundTaskError)  # cancelled by mistake: restart
        ):
            self.state = "fatal"
            self.fatal_error = exc
            self._stable.set()  # wake waiters so they see the fatal state
            return
        self._tasks.restart(name, functools.partial(self._loop_for, name))

    def _loop_for(self, name: str) -> Any:
        raise NotImplementedError

    # ----------------------------------------------------------------- poll tracking

    async def on_poll(self) -> None:
        """The user polled: note it; after a poll timeout, give up the partitions and rejoin."""
        self._last_poll = time.monotonic()
        if self.fatal_error is not None:
            raise self.fatal_error
        if self._poll_timed_out:
            self._poll_timed_out = False
            await self._lose_partitions()
            self.request_rejoin("the consumer is polling again after a poll timeout")

    def _poll_expired(self) -> bool:
        return time.monotonic() - self._last_poll > self.config.max_poll_interval_ms / 1000

    # ----------------------------------------------------------------- listener

    async def _call_listener(self, method: str, partitions: set[TopicPartition]) -> None:
        listener = self._subs.listener
        if listener is None:
            return
        callback = getattr(listener, method, None)
        if callback is None and method == "on_partitions_lost":
            callback = getattr(listener, "on_partitions_revoked", None)
        if callback is None:
            return
        self._in_callback = True
        token = _IN_CALLBACK.set(True)
        try:
            result = callback(set(partitions))
            if inspect.isawaitable(result):
                await result
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("group %r: rebalance listener %s failed", self.group_id, method)
        finally:
            _IN_CALLBACK.reset(token)
            self._in_callback = False

    async def _revoke(self, partitions: set[TopicPartition]) -> None:
        """Give partitions up cleanly: commit their positions, tell the listener, drop them."""
        if not partitions:
            return
        if self._commit_positions is not None:
            self._in_callback = True
            token = _IN_CALLBACK.set(True)
            try:
                await self._commit_positions(partitions)
            except errors.KafkaError as exc:
                log.warning("group %r: commit before revocation failed: %s", self.group_id, exc)
            finally:
                _IN_CALLBACK.reset(token)
                self._in_callback = False
        await self._call_listener("on_partitions_revoked", partitions)
        self._subs.remove_partitions(partitions)
        self._emit_rebalance("revoked", partitions)
        if self._discard_buffered is not None:
            self._discard_buffered(partitions)

    async def _lose_partitions(self) -> None:
        """The membership ended without a clean revocation: no commit, on_partitions_lost."""
        self._partitions_lost_pending = False
        lost = set(self._subs.assignment)
        if not lost:
            return
        log.info("group %r: partitions lost: %s", self.group_id, sorted(lost))
        await self._call_listener("on_partitions_lost", lost)
        self._subs.remove_partitions(lost)
        self._emit_rebalance("lost", lost)
        if self._discard_buffered is not None:
            self._discard_buffered(lost)

    async def _assign(self, added: set[TopicPartition]) -> None:
        self._subs.add_partitions(added)
        duration = 0.0
        if self._rebalance_started is not None:
            duration = time.monotonic() - self._rebalance_started
            self._rebalance_started = None
        self.rebalances += 1
        self.rebalance_time_total_s += duration
        self.last_rebalance_s = duration
        self._emit_rebalance("assigned", added, duration)
        await self._call_listener("on_partitions_assigned", added)

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Start the group and heartbeat loops."""
        raise NotImplementedError

    async def close(self, leave: bool = True) -> None:
        """Revoke (commit + listener), leave the group (unless static) and stop the loops."""
        raise NotImplementedError


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

    def _loop_for(self, name: str) -> Any:
        return self._group_loop() if name == "group-loop" else self._heartbeat_loop()

    def start(self) -> None:
        """Start the group and heartbeat loops."""
        self._tasks.start("group-loop", self._group_loop())
        self._tasks.start("heartbeat", self._heartbeat_loop())

    async def close(self, leave: bool = True) -> None:
        """Commit and revoke (when the group is stable), leave unless static, stop the loops."""
        self._closing = True
        try:
            if self.generation >= 0 and self._subs.assignment and self.state == "stable":
                await self._revoke(set(self._subs.assignment))
        finally:
            await self._tasks.stop()
        if leave and self.member_id and self.config.group_instance_id is None:
            try:
                async with timeout_after(5.0):
                    await self._leave_group("the consumer is closing")
            except (errors.KafkaError, TimeoutError, asyncio.TimeoutError) as exc:
                log.info("group %r: LeaveGroup on close failed: %s", self.group_id, exc)
        self.state = "closed"
        self._stable.set()

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

    async def _group_loop(self) -> None:
        backoff = self.config.retry_backoff_ms / 1000
        while True:
            if self._rejoin_needed and not self._poll_timed_out:
                topics = self._subscribed_topics()
                if topics or self._subs.pattern is None:
                    try:
                        await self._rebalance()
                    except _Rejoin as exc:
                        log.info("group %r: %s; joining again", self.group_id, exc)
                        await asyncio.sleep(backoff)
                        continue
                    except (
                        errors.KafkaConnectionError,
                        errors.KafkaTimeoutError,
                        # A malformed answer kills the connection; a new one may fare better.
                        errors.ProtocolError,
                    ) as exc:
                        log.info("group %r: join failed: %s; retrying", self.group_id, exc)
                        self._cluster.invalidate_coordinator(self.group_id)
                        await asyncio.sleep(backoff)
                        continue
                    except errors.BrokerResponseError as exc:
                        if exc.code in _COORDINATOR_CODES or exc.retriable:
                            self._cluster.invalidate_coordinator(self.group_id)
                            await asyncio.sleep(backoff)
                            continue
                        raise
                    continue
            self._wakeup.clear()
            await wait_event(self._wakeup, _WATCH_INTERVAL_S)
            if self.state == "stable" and self._snapshot(self._watched) != self._watched:
                self.request_rejoin("subscribed topics' metadata changed")
            elif self.state == "stable" and self._subscribed_topics() - set(self._watched):
                self.request_rejoin("the subscription matches new topics")

    async def _rebalance(self) -> None:
        if self._rebalance_started is None:
            self._rebalance_started = time.monotonic()
        self.state = "rebalancing"
        self._stable.clear()
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
        self.state = "stable"
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

    def _subscription_metadata(self, assignor: PartitionAssignor, topics: list[str]) -> bytes:
        owned = sorted(self._subs.assignment)
        by_topic: dict[str, list[int]] = {}
        for tp in owned:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        subscription = ConsumerProtocolSubscription(
            topics=topics,
            user_data=assignor.subscription_user_data(topics, owned),
            owned_partitions=[
                cps.TopicPartition(topic=t, partitions=p) for t, p in by_topic.items()
            ],
            generation_id=self.generation,
            rack_id=self.config.client_rack or None,
        )
        return subscription.encode_versioned(_SUBSCRIPTION_VERSION)

    async def _join_and_sync(self) -> MemberAssignment:
        config = self.config
        topics = sorted(self._subscribed_topics())
        connection = await self._cluster.coordinator_connection(self.group_id, purpose="group")
        version = connection.versions.version_for(JoinGroupRequest.API_KEY)
        request = JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=config.session_timeout_ms,
            member_id=self.member_id,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequestProtocol(
                    name=a.name, metadata=self._subscription_metadata(a, topics)
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
        timeout_ms = config.effective_rebalance_timeout_ms + config.request_timeout_ms
        response = await connection.send(request, version, timeout_ms=timeout_ms)
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
        if code in _COORDINATOR_CODES:
            self._cluster.invalidate_coordinator(self.group_id)
            raise _Rejoin(errors.error_for_code(code).name)
        if code in (errors.RebalanceInProgressError.code,):
            raise _Rejoin("rebalance in progress")
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
        assignor = next((a for a in config.assignors if a.name == response.protocol_name), None)
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
        sync_version = connection.versions.version_for(SyncGroupRequest.API_KEY)
        sync = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            assignments=assignments,
        )
        if sync_version >= 3:
            sync.group_instance_id = config.group_instance_id
        if sync_version >= 5:
            sync.protocol_type = "consumer"
            sync.protocol_name = self.protocol_name
        sync_response = await connection.send(sync, sync_version, timeout_ms=timeout_ms)
        code = sync_response.error_code
        if code == errors.RebalanceInProgressError.code:
            raise _Rejoin("the group started another rebalance")
        if code in (errors.UnknownMemberIdError.code, errors.IllegalGenerationError.code):
            self._reset_generation(code)
            raise _Rejoin(errors.error_for_code(code).name)
        if code in _COORDINATOR_CODES:
            self._cluster.invalidate_coordinator(self.group_id)
            raise _Rejoin(errors.error_for_code(code).name)
        errors.raise_for_code(code, f"SyncGroup {self.group_id!r}")
        raw = sync_response.assignment
        if not raw:
            return MemberAssignment([], None)
        decoded, _ = ConsumerProtocolAssignment.decode_versioned(raw)
        partitions = [
            TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions
        ]
        return MemberAssignment(partitions, decoded.user_data)

    async def _lead(
        self, assignor: PartitionAssignor, members: list[Any]
    ) -> tuple[list[SyncGroupRequestAssignment], set[str]]:
        subscriptions: dict[str, MemberSubscription] = {}
        version = _SUBSCRIPTION_VERSION
        all_topics: set[str] = set()
        for member in members:
            decoded, member_version = ConsumerProtocolSubscription.decode_versioned(member.metadata)
            version = min(version, member_version)
            owned = [
                TopicPartition(t.topic, p)
                for t in (getattr(decoded, "owned_partitions", None) or [])
                for p in t.partitions
            ]
            subscriptions[member.member_id] = MemberSubscription(
                member_id=member.member_id,
                topics=list(decoded.topics),
                user_data=decoded.user_data,
                owned_partitions=owned,
                generation_id=getattr(decoded, "generation_id", -1),
                rack_id=getattr(decoded, "rack_id", None),
                group_instance_id=getattr(member, "group_instance_id", None),
            )
            all_topics.update(decoded.topics)
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
        out = []
        for member_id, assignment in result.items():
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(assignment.partitions):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            encoded = ConsumerProtocolAssignment(
                assigned_partitions=[
                    cpa.TopicPartition(topic=t, partitions=p) for t, p in by_topic.items()
                ],
                user_data=assignment.user_data,
            ).encode_versioned(version)
            out.append(SyncGroupRequestAssignment(member_id=member_id, assignment=encoded))
        return out, all_topics

    # ----------------------------------------------------------------- heartbeats

    async def _heartbeat_loop(self) -> None:
        config = self.config
        interval = config.heartbeat_interval_ms / 1000
        backoff = config.retry_backoff_ms / 1000
        last_ok = time.monotonic()
        while True:
            await asyncio.sleep(interval if self.state == "stable" else min(interval, 0.1))
            if self.state != "stable" or self.generation < 0:
                last_ok = time.monotonic()
                continue
            if self._poll_expired() and not self._in_callback:
                await self._poll_timeout()
                continue
            try:
                code = await self._heartbeat()
            except (errors.KafkaConnectionError, errors.KafkaTimeoutError) as exc:
                log.debug("group %r: heartbeat failed: %s", self.group_id, exc)
                self._cluster.invalidate_coordinator(self.group_id)
                code = -1
            if code == 0:
                last_ok = time.monotonic()
                continue
            if code == errors.RebalanceInProgressError.code:
                if self.state == "stable":
                    self.request_rejoin("the coordinator is rebalancing the group")
                last_ok = time.monotonic()
                continue
            if code in (
                errors.IllegalGenerationError.code,
                errors.UnknownMemberIdError.code,
            ):
                self._reset_generation(code)
                self.request_rejoin(f"heartbeat answered {errors.error_for_code(code).name}")
                continue
            if code == errors.FencedInstanceIdError.code:
                self.state = "fatal"
                self.fatal_error = errors.FencedInstanceIdError(
                    f"another consumer uses group_instance_id {config.group_instance_id!r}"
                )
                self._stable.set()
                return
            if code in _COORDINATOR_CODES:
                self._cluster.invalidate_coordinator(self.group_id)
            if time.monotonic() - last_ok > config.session_timeout_ms / 1000:
                log.warning(
                    "group %r: no heartbeat succeeded within the session timeout", self.group_id
                )
                self._cluster.invalidate_coordinator(self.group_id)
                last_ok = time.monotonic()
            await asyncio.sleep(backoff)

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

    async def _poll_timeout(self) -> None:
        log.warning(
            "group %r: the consumer was not polled for more than max_poll_interval_ms=%d; "
            "leaving the group (it rejoins at the next poll)",
            self.group_id,
            self.config.max_poll_interval_ms,
        )
        self._poll_timed_out = True
        self.state = "unjoined"
        self._stable.clear()
        if self.config.group_instance_id is None:
            try:
                async with timeout_after(min(self.config.request_timeout_ms / 1000, 5.0)):
                    await self._leave_group("consumer poll timeout has expired")
            except (errors.KafkaError, TimeoutError, asyncio.TimeoutError) as exc:
                log.info("group %r: LeaveGroup failed: %s", self.group_id, exc)
            self.member_id = ""
        self.generation = -1

    async def _leave_group(self, reason: str) -> None:
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
