"""The shared policies every layer uses: retry/backoff, deadlines, transition tables, the
compiled-or-pure decision."""

from __future__ import annotations

import asyncio
import time

import pytest

from aiokafkawire import _compiled, errors
from aiokafkawire._fsm import TransitionTable
from aiokafkawire._retry import Backoff, Deadline, retry


def test_backoff_doubles_to_its_cap_and_resets() -> None:
    backoff = Backoff(100, 1000, jitter=0)
    assert [backoff.next_delay() for _ in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    backoff.reset()
    assert backoff.next_delay() == 0.1
    jittered = Backoff(100, 100, jitter=0.2)
    assert all(0.08 <= jittered.next_delay() <= 0.12 for _ in range(50))
    assert Backoff(0, 0).next_delay() == 0
    with pytest.raises(ValueError):
        Backoff(-1, 10)


def test_deadline() -> None:
    never = Deadline.after_ms(None)
    assert not never.expired() and never.remaining() == float("inf")
    assert never.remaining_ms() == 2**31 - 1
    soon = Deadline.after_ms(50)
    assert 0 < soon.remaining() <= 0.05 and 0 <= soon.remaining_ms() <= 50
    assert Deadline.after(-1).expired() and Deadline.after(-1).remaining() == 0


async def test_retry_retries_what_it_is_told_to_and_returns() -> None:
    calls: list[int] = []
    noticed: list[BaseException] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise errors.NotCoordinatorError("moved")
        return "ok"

    result = await retry(
        flaky,
        should_retry=lambda exc: isinstance(exc, errors.NotCoordinatorError),
        deadline=Deadline.after(5),
        backoff=Backoff(1, 2),
        what="test",
        on_retry=noticed.append,
    )
    assert result == "ok" and len(calls) == 3 and len(noticed) == 2


async def test_retry_raises_a_refused_error_at_once() -> None:
    calls: list[int] = []

    async def fatal() -> None:
        calls.append(1)
        raise errors.TopicAuthorizationFailedError("no")

    with pytest.raises(errors.TopicAuthorizationFailedError):
        await retry(
            fatal,
            should_retry=lambda exc: errors.action_of(exc).retriable,
            deadline=Deadline.after(5),
            backoff=Backoff(1, 2),
            what="test",
        )
    assert len(calls) == 1


async def test_retry_stops_at_the_deadline_and_at_max_attempts_with_the_last_error() -> None:
    attempts: list[float] = []

    async def always_failing() -> None:
        attempts.append(time.monotonic())
        raise errors.KafkaConnectionError(f"attempt {len(attempts)}")

    started = time.monotonic()
    with pytest.raises(errors.KafkaConnectionError) as caught:
        await retry(
            always_failing,
            should_retry=lambda exc: True,
            deadline=Deadline.after(0.3),
            backoff=Backoff(20, 40, jitter=0),
            what="test",
        )
    assert time.monotonic() - started < 0.3
    assert caught.value.message == f"attempt {len(attempts)}" and len(attempts) >= 4
    attempts.clear()
    with pytest.raises(errors.KafkaConnectionError):
        await retry(
            always_failing,
            should_retry=lambda exc: True,
            deadline=Deadline.after(5),
            backoff=Backoff(1, 1),
            what="test",
            max_attempts=3,
        )
    assert len(attempts) == 3


async def test_retry_never_retries_cancellation() -> None:
    async def cancelled() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await retry(
            cancelled,
            should_retry=lambda exc: True,
            deadline=Deadline.after(5),
            backoff=Backoff(1, 1),
            what="test",
        )


def test_transition_table() -> None:
    table = TransitionTable.from_rows(
        "door", [("closed", "open", "opened"), ("opened", "close", "closed")]
    )
    assert table.next("closed", "open") == "opened"
    assert table.allows("opened", "close") and not table.allows("opened", "open")
    assert table.events_from("closed") == frozenset({"open"})
    assert table.states() == frozenset({"closed", "opened"})
    with pytest.raises(errors.InvalidTransitionError) as caught:
        table.next("closed", "close")
    assert isinstance(caught.value, errors.IllegalStateError)
    assert "door" in str(caught.value) and "closed" in str(caught.value)
    assert (caught.value.state, caught.value.event) == ("closed", "close")
    with pytest.raises(ValueError):
        TransitionTable.from_rows("door", [("a", "b", "c"), ("a", "b", "d")])


def test_one_switch_for_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIOKAFKAWIRE_PURE_PYTHON", "1")
    assert _compiled.pure_python_forced()
    assert _compiled.load_accelerator("aiokafkawire.protocol.records._crecords") is None
    monkeypatch.setenv("AIOKAFKAWIRE_PURE_PYTHON", "0")
    assert not _compiled.pure_python_forced()
    monkeypatch.delenv("AIOKAFKAWIRE_PURE_PYTHON")
    assert _compiled.load_accelerator("aiokafkawire.no_such_extension") is None
