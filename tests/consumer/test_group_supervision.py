"""What happens when a membership's loop dies: restarted after a retriable error, else the
error ends the membership and reaches the user's next call (group and share group alike).

The loops run against stand-ins: the one request each loop sends is replaced by a script.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.group.consumer_protocol import ConsumerProtocolMembership
from aiokafkawire.consumer.group.membership import GroupConfig
from aiokafkawire.consumer.group.states import GroupEvent, GroupState
from aiokafkawire.consumer.share.membership import ShareMembership
from aiokafkawire.consumer.subscription import SubscriptionState

RETRIABLE = errors.CoordinatorLoadInProgressError("loading")
FATAL = errors.GroupAuthorizationFailedError("denied")


def _cluster() -> Cluster:
    stand_in = SimpleNamespace(
        config=SimpleNamespace(metrics=None),
        invalidate_coordinator=lambda group_id: None,
        set_topics=lambda topics: None,
    )
    return cast(Cluster, stand_in)


class Script:
    """Raises the scripted errors in turn, then blocks (a loop that is alive and waiting)."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls = 0
        self._called = asyncio.Event()

    async def __call__(self, *args: Any) -> Any:
        self.calls += 1
        self._called.set()
        if self.failures:
            raise self.failures.pop(0)
        await asyncio.Event().wait()

    async def called(self, times: int) -> None:
        """Wait (at most 5 s) until the script has been called ``times`` times."""
        while self.calls < times:
            self._called.clear()
            await asyncio.wait_for(self._called.wait(), 5.0)


class Fatal:
    """A share membership's ``on_fatal``: keeps what it is given."""

    def __init__(self) -> None:
        self.errors: list[errors.KafkaError] = []
        self._given = asyncio.Event()

    def __call__(self, error: errors.KafkaError) -> None:
        self.errors.append(error)
        self._given.set()

    async def given(self) -> None:
        await asyncio.wait_for(self._given.wait(), 5.0)


def _kip848_member(script: Script) -> ConsumerProtocolMembership:
    subs = SubscriptionState("latest")
    subs.subscribe(["t"], None)
    member = ConsumerProtocolMembership(_cluster(), subs, GroupConfig(group_id="g"))
    member._send = script  # type: ignore[method-assign]
    return member


async def test_group_loop_restarts_after_a_retriable_death() -> None:
    script = Script(RETRIABLE)
    member = _kip848_member(script)
    member.start()
    try:
        await script.called(2)
        assert member.fatal_error is None and member.state is GroupState.UNJOINED
        await member.on_poll()  # nothing to raise
    finally:
        await member.close(leave=False)
    assert member.state is GroupState.CLOSED


async def test_group_loop_death_by_a_fatal_error_reaches_the_next_poll() -> None:
    member = _kip848_member(Script(FATAL))
    member.start()
    try:
        assert await member.wait_stable(5.0)  # waiters wake to see the end
        assert member.state is GroupState.FATAL
        with pytest.raises(errors.GroupAuthorizationFailedError):
            await member.on_poll()
    finally:
        await member.close(leave=False)


async def test_an_illegal_transition_in_a_loop_ends_the_membership_with_it() -> None:
    member = _kip848_member(Script())

    async def bad_step(*args: Any) -> Any:
        member._move(GroupEvent.POLL_TIMEOUT)  # an unjoined member cannot time out its polls

    member._send = bad_step  # type: ignore[method-assign]
    member.start()
    try:
        assert await member.wait_stable(5.0)
        assert member.state is GroupState.FATAL
        with pytest.raises(errors.InvalidTransitionError, match="POLL_TIMEOUT"):
            await member.on_poll()
    finally:
        await member.close(leave=False)


async def test_share_heartbeat_loop_restarts_after_a_retriable_death() -> None:
    fatal = Fatal()
    member = ShareMembership(_cluster(), "g", on_assignment=lambda p: None, on_fatal=fatal)
    script = Script(RETRIABLE)
    member._heartbeat = script  # type: ignore[method-assign]
    member.start()
    try:
        await script.called(2)
        assert fatal.errors == []
    finally:
        await member.close(leave=False)


async def test_share_heartbeat_loop_death_by_a_fatal_error_reaches_the_consumer() -> None:
    fatal = Fatal()
    member = ShareMembership(_cluster(), "g", on_assignment=lambda p: None, on_fatal=fatal)
    script = Script(FATAL)
    member._heartbeat = script  # type: ignore[method-assign]
    member.start()
    try:
        await fatal.given()
        assert fatal.errors == [FATAL] and script.calls == 1
    finally:
        await member.close(leave=False)


def _classic_member(**options: Any) -> Any:
    from aiokafkawire.consumer.group import classic
    from aiokafkawire.consumer.group.assignors import RangeAssignor

    subs = SubscriptionState("latest")
    subs.subscribe(["t"])
    config = GroupConfig(
        "g", retry_backoff_ms=100, retry_backoff_max_ms=800, assignors=[RangeAssignor()], **options
    )
    return classic.ClassicMembership(_cluster(), subs, config)


def _record_retry_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses of the retry policy (``_retry.retry``), recorded and not waited out."""
    from aiokafkawire import _retry

    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        delays.append(delay)
        await real_sleep(0)

    fake = SimpleNamespace(sleep=sleep, CancelledError=asyncio.CancelledError)
    monkeypatch.setattr(_retry, "asyncio", fake)
    return delays


async def _run_group_loop(member: Any, joins: Script, calls: int) -> None:
    loop = asyncio.create_task(member._group_loop())
    try:
        await joins.called(calls)
    finally:
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop


async def test_classic_join_retries_back_off_as_the_client_policy_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # retry_backoff_ms doubling up to retry_backoff_max_ms (jitter 20%), back to the start
    # after a join that succeeds: _retry.Backoff, not a fixed sleep of the group loop's own.
    member = _classic_member()
    down = errors.KafkaConnectionError("coordinator down")
    joins = Script(down, down, down, down, down)
    monkeypatch.setattr(member, "_rebalance", joins)
    delays = _record_retry_sleeps(monkeypatch)
    await _run_group_loop(member, joins, 6)
    assert len(delays) == 5
    for delay, base in zip(delays, (0.1, 0.2, 0.4, 0.8, 0.8), strict=True):
        assert base * 0.8 <= delay <= base * 1.2, delays


async def test_classic_rejoins_at_once_when_the_coordinator_says_how(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Java's joinGroupIfNeeded: MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION and
    # REBALANCE_IN_PROGRESS start the next round without a pause; three in a row, then the
    # backoff applies.
    from aiokafkawire.consumer.group import classic

    member = _classic_member()
    rejoin = classic._Rejoin("the coordinator assigned a member id")
    joins = Script(rejoin, rejoin)
    monkeypatch.setattr(member, "_rebalance", joins)
    delays = _record_retry_sleeps(monkeypatch)
    await _run_group_loop(member, joins, 3)
    assert delays == []

    joins = Script(*[rejoin] * classic._REJOINS_AT_ONCE)
    monkeypatch.setattr(member, "_rebalance", joins)
    await _run_group_loop(member, joins, classic._REJOINS_AT_ONCE + 1)
    assert len(delays) == 1 and 0.08 <= delays[0] <= 0.12, delays


async def test_classic_join_decides_retries_by_the_error_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Retriable by the table (a coordinator error, a timeout), and a malformed answer (its
    # connection is closed, a new one may fare better): joined again.  Not retriable: the
    # loop dies with the error (the supervisor then ends the membership).
    member = _classic_member()
    joins = Script(
        errors.NotCoordinatorError("moved"),
        errors.KafkaTimeoutError("slow"),
        errors.ProtocolError("garbled"),
    )
    monkeypatch.setattr(member, "_rebalance", joins)
    delays = _record_retry_sleeps(monkeypatch)
    await _run_group_loop(member, joins, 4)
    assert len(delays) == 3
    monkeypatch.setattr(member, "_rebalance", Script(FATAL))
    with pytest.raises(errors.GroupAuthorizationFailedError):
        await asyncio.wait_for(member._group_loop(), 5.0)


async def test_classic_heartbeat_after_a_failure_waits_the_backoff_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Java's Heartbeat.failHeartbeat: the next heartbeat is due after the retry backoff, not
    # after the backoff and then the heartbeat interval.
    from aiokafkawire.consumer.group import classic

    member = _classic_member(heartbeat_interval_ms=3_000)
    member._move(GroupEvent.ASSIGNED)
    member.generation = 1
    down = errors.KafkaConnectionError("coordinator down")
    beats = Script(down, down, down)
    monkeypatch.setattr(member, "_heartbeat", beats)
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        delays.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(classic, "asyncio", SimpleNamespace(sleep=sleep))
    loop = asyncio.create_task(member._heartbeat_loop())
    try:
        await beats.called(4)
    finally:
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop
    assert delays[0] == 3.0 and len(delays) == 4, delays
    for delay, base in zip(delays[1:], (0.1, 0.2, 0.4), strict=True):
        assert base * 0.8 <= delay <= base * 1.2, delays


async def test_kip848_heartbeat_retries_back_off_and_ask_the_error_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Java's heartbeat request state: a failed heartbeat is tried again after the retry
    # policy's backoff, doubling up to retry_backoff_max_ms.  Retriable by the table (a lost
    # connection, a timeout, a coordinator error) and a malformed answer: tried again, the
    # loop lives on.  Not retriable: the loop dies with the error.
    from aiokafkawire.consumer.group import consumer_protocol

    script = Script(
        errors.KafkaConnectionError("coordinator down"),
        errors.KafkaTimeoutError("slow"),
        errors.ProtocolError("garbled"),
        errors.CoordinatorLoadInProgressError("loading"),
    )
    subs = SubscriptionState("latest")
    subs.subscribe(["t"], None)
    config = GroupConfig(group_id="g", retry_backoff_ms=100, retry_backoff_max_ms=400)
    member = ConsumerProtocolMembership(_cluster(), subs, config)
    member._send = script  # type: ignore[method-assign]
    waits: list[float] = []

    async def wait_event(event: asyncio.Event, timeout: float) -> bool:
        waits.append(timeout)
        await asyncio.sleep(0)
        return False

    monkeypatch.setattr(consumer_protocol, "wait_event", wait_event)
    loop = asyncio.create_task(member._heartbeat_loop())
    try:
        await script.called(5)
    finally:
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop
    assert len(waits) == 5, waits
    for delay, base in zip(waits[1:], (0.1, 0.2, 0.4, 0.4), strict=True):
        assert base * 0.8 <= delay <= base * 1.2, waits
    member._send = Script(FATAL)  # type: ignore[method-assign]
    with pytest.raises(errors.GroupAuthorizationFailedError):
        await asyncio.wait_for(member._heartbeat_loop(), 5.0)
