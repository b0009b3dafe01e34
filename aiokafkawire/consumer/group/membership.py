"""The part of group membership both protocols share: state, listener calls, poll tracking.

:class:`Membership` is the base of :class:`~aiokafkawire.consumer.group.classic.ClassicMembership`
(JoinGroup/SyncGroup/Heartbeat) and
:class:`~aiokafkawire.consumer.group.consumer_protocol.ConsumerProtocolMembership` (KIP-848).  It
owns the member's :class:`~aiokafkawire.consumer.group.states.GroupStateMachine` (every state
change goes through :meth:`Membership._move`), the supervised loops of the subclass, and the
revoke/assign/lose steps that call the rebalance listener.  The consumer's partitions live in the
shared :class:`SubscriptionState`; the membership changes them.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire._retry import Backoff
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire._waits import timeout_after, wait_event
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.group.assignors import PartitionAssignor
from aiokafkawire.consumer.group.offsets import GroupOffsets, MemberIdentity
from aiokafkawire.consumer.group.states import GroupEvent, GroupState, GroupStateMachine
from aiokafkawire.consumer.listener_calls import call_listener
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.metrics import RebalanceEvent
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer.group")

__all__ = ["GroupConfig", "Membership"]

# Set inside rebalance callbacks (and the commits around revocation): per task, so a commit from
# the user's own loop running at the same time is not mistaken for one made by a callback.
_IN_CALLBACK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "aiokafkawire_in_rebalance_callback", default=False
)
_LEAVE_ON_CLOSE_S = 5.0
LoopFactory = Callable[[], Coroutine[Any, Any, None]]


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
    retry_backoff_max_ms: int = 1_000
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
        self._machine = GroupStateMachine(config.group_id)
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
        self._loops: dict[str, LoopFactory] = {}  # supervised loops by task name, for restarts
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
    def state(self) -> GroupState:
        """Where the member stands (``state.value`` is what ``Consumer.state`` shows)."""
        return self._machine.state

    def _move(self, event: GroupEvent) -> GroupState:
        """Apply ``event``: the one place the state changes; waiters follow the new state."""
        state = self._machine.apply(event)
        if state is GroupState.FATAL or state is GroupState.CLOSED:
            self._stable.set()  # wake waiters so they see the end
        elif state is not GroupState.STABLE:
            self._stable.clear()
        # Entering STABLE leaves _stable alone: a classic member with a follow-up rebalance
        # pending is stable but not settled; the subclass sets it when it is.
        return state

    def _fail(self, error: BaseException) -> None:
        """The membership cannot go on: the next poll raises ``error`` (the first one kept)."""
        if self.fatal_error is None:
            self.fatal_error = error
        self._move(GroupEvent.FAILED)

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
        if code in errors.MEMBER_FENCED_CODES:
            self.member_id = ""
        self._partitions_lost_pending = True

    _partitions_lost_pending = False

    def _backoff(self) -> Backoff:
        """The client's retry policy: ``retry_backoff_ms`` doubling to ``retry_backoff_max_ms``."""
        return Backoff(self.config.retry_backoff_ms, self.config.retry_backoff_max_ms)

    async def wait_stable(self, timeout: float | None = None) -> bool:
        """Wait until the member is in a stable group; False on timeout."""
        return await wait_event(self._stable, timeout)

    def _start_loop(self, name: str, factory: LoopFactory) -> None:
        """Start ``factory()`` as supervised task ``name``; :meth:`_task_failed` restarts it."""
        self._loops[name] = factory
        self._tasks.start(name, factory())

    def _task_failed(self, name: str, exc: BaseException) -> None:
        """A loop died: a non-retriable error ends the membership, anything else restarts it."""
        if self._closing:
            return
        log.error("group %r: task %s failed", self.group_id, name, exc_info=exc)
        if (
            isinstance(exc, errors.KafkaError)
            and not exc.retriable
            and not isinstance(exc, errors.BackgroundTaskError)  # cancelled by mistake: restart
        ):
            self._fail(exc)
            return
        self._tasks.restart(name, self._loops[name])

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

    async def _poll_timeout(self) -> None:
        """Not polled within max_poll_interval_ms: leave the group; the next poll rejoins."""
        log.warning(
            "group %r: the consumer was not polled for more than max_poll_interval_ms=%d; "
            "leaving the group (it rejoins at the next poll)",
            self.group_id,
            self.config.max_poll_interval_ms,
        )
        self._poll_timed_out = True
        self._move(GroupEvent.POLL_TIMEOUT)
        await self._leave_after_poll_timeout()

    async def _leave_after_poll_timeout(self) -> None:
        """The protocol's way of leaving after a poll timeout (and forgetting the generation)."""
        raise NotImplementedError

    # ----------------------------------------------------------------- listener

    async def _call_listener(self, method: str, partitions: set[TopicPartition]) -> None:
        self._in_callback = True
        token = _IN_CALLBACK.set(True)
        try:
            await call_listener(self._subs.listener, method, partitions, f"group {self.group_id!r}")
        finally:
            _IN_CALLBACK.reset(token)
            self._in_callback = False

    async def _revoke(self, partitions: set[TopicPartition]) -> None:
        """Give partitions up cleanly: commit their positions, tell the listener, drop them.

        From the start the partitions are held (not fetched, nothing of them handed out, so
        their positions stay what the commit and the listener see) and their buffered records
        dropped; they leave the assignment when the listener returns, so nothing commits them
        after that (the Java client's "pending revocation").
        """
        if not partitions:
            return
        self._subs.hold(partitions)
        if self._discard_buffered is not None:
            self._discard_buffered(partitions)
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

    async def _lose_partitions(self) -> None:
        """The membership ended without a clean revocation: no commit, on_partitions_lost."""
        self._partitions_lost_pending = False
        lost = set(self._subs.assignment)
        if not lost:
            return
        log.info("group %r: partitions lost: %s", self.group_id, sorted(lost))
        self._subs.hold(lost)
        if self._discard_buffered is not None:
            self._discard_buffered(lost)
        await self._call_listener("on_partitions_lost", lost)
        self._subs.remove_partitions(lost)
        self._emit_rebalance("lost", lost)

    async def _assign(self, added: set[TopicPartition]) -> None:
        """Add partitions, held (not fetched) until ``on_partitions_assigned`` returns.

        The listener may seek them (or look their positions up); records are fetched and
        handed out only from where it leaves them (the Java client's "pending on assigned
        callback").
        """
        self._subs.add_partitions(added, held=True)
        duration = 0.0
        if self._rebalance_started is not None:
            duration = time.monotonic() - self._rebalance_started
            self._rebalance_started = None
        self.rebalances += 1
        self.rebalance_time_total_s += duration
        self.last_rebalance_s = duration
        self._emit_rebalance("assigned", added, duration)
        try:
            await self._call_listener("on_partitions_assigned", added)
        finally:
            self._subs.release(added)

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Start the membership's loops (the subclass's, through :meth:`_start_loop`)."""
        raise NotImplementedError

    async def close(self, leave: bool = True) -> None:
        """Revoke (commit + listener) when stable, stop the loops, leave the group, end CLOSED."""
        self._closing = True
        try:
            stable = self.state is GroupState.STABLE and self._holds_generation()
            if stable and self._subs.assignment:
                await self._revoke(set(self._subs.assignment))
        finally:
            await self._tasks.stop()
        if leave and self._leaves_on_close():
            await self._try_leave("the consumer is closing", _LEAVE_ON_CLOSE_S)
        self._move(GroupEvent.CLOSE)

    def _holds_generation(self) -> bool:
        """Whether the member is in a generation whose partitions it should revoke on close."""
        return True

    def _leaves_on_close(self) -> bool:
        """Whether :meth:`close` should tell the coordinator (not when it never joined)."""
        raise NotImplementedError

    async def _leave(self, reason: str) -> None:
        """Tell the coordinator this member leaves (LeaveGroup, or a leaving heartbeat)."""
        raise NotImplementedError

    async def _try_leave(self, reason: str, timeout: float) -> None:
        """:meth:`_leave` within ``timeout`` seconds; a failure is only logged (we go anyway)."""
        try:
            async with timeout_after(timeout):
                await self._leave(reason)
        except (errors.KafkaError, TimeoutError, asyncio.TimeoutError) as exc:
            log.info("group %r: leaving (%s) failed: %s", self.group_id, reason, exc)
