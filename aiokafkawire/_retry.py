"""The one retry policy: deadlines, exponential backoff with jitter, and a retry loop.

Every operation that tries again (metadata and coordinator lookups, offset fetches and
commits, admin calls, resets) uses these instead of a loop of its own, so "how long, how
often, and what is worth another try" has one answer:

- :class:`Deadline`: a point on the monotonic clock; an operation's whole budget.
- :class:`Backoff`: the wait before the next attempt, doubling from ``first_ms`` up to ``max_ms``
  with +-``jitter`` (as the Java client's ``retry.backoff.ms``/``retry.backoff.max.ms``).
- :func:`retry`: ``await op()`` until it succeeds, the error is not worth retrying, or the next
  attempt could not begin before the deadline (the last error is raised then, never swallowed).
- :func:`retry_until_stopped`: the same for a background loop, which has no deadline: it tries
  again until ``op`` succeeds, the error is not worth retrying, or its owner cancels it.

No other module sleeps by hand between attempts (``tests/errors/test_no_retry_sleeps.py``).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["Backoff", "Deadline", "retry", "retry_until_stopped"]

log = logging.getLogger("aiokafkawire")

T = TypeVar("T")


class Deadline:
    """A moment on the monotonic clock by which an operation must be done."""

    __slots__ = ("at",)

    def __init__(self, at: float) -> None:
        self.at = at

    @classmethod
    def after_ms(cls, ms: float | None) -> Deadline:
        """The deadline ``ms`` milliseconds from now (None: never)."""
        if ms is None:
            return cls(float("inf"))
        return cls(time.monotonic() + ms / 1000)

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        """The deadline ``seconds`` from now (None: never)."""
        if seconds is None:
            return cls(float("inf"))
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left, never below 0 (``inf`` for a deadline that never comes)."""
        return max(0.0, self.at - time.monotonic())

    def remaining_ms(self) -> int:
        """Whole milliseconds left, never below 0 (capped at 2**31 - 1 for the wire)."""
        left = self.remaining()
        return 2**31 - 1 if left == float("inf") else min(int(left * 1000), 2**31 - 1)

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return time.monotonic() >= self.at

    def __repr__(self) -> str:
        return f"Deadline(remaining={self.remaining():.3f}s)"


class Backoff:
    """Exponential backoff with jitter: ``first_ms``, doubled per attempt, capped at ``max_ms``."""

    __slots__ = ("_attempts", "cap", "first", "jitter")

    def __init__(self, first_ms: float = 100, max_ms: float = 1000, *, jitter: float = 0.2) -> None:
        if first_ms < 0 or max_ms < 0 or not 0 <= jitter < 1:
            raise ValueError(
                f"Backoff needs first_ms >= 0, max_ms >= 0, 0 <= jitter < 1, "
                f"not {first_ms}, {max_ms}, {jitter}"
            )
        self.first = first_ms / 1000
        self.cap = max(max_ms, first_ms) / 1000
        self.jitter = jitter
        self._attempts = 0

    def next_delay(self) -> float:
        """Seconds to wait before the next attempt; each call doubles the following one."""
        base = min(self.first * 2 ** min(self._attempts, 32), self.cap)
        self._attempts += 1
        if self.jitter:
            base *= random.uniform(1 - self.jitter, 1 + self.jitter)
        return min(base, self.cap * (1 + self.jitter))

    def reset(self) -> None:
        """Back to ``first_ms`` (after a success)."""
        self._attempts = 0

    @property
    def attempts(self) -> int:
        """Delays handed out since the last reset."""
        return self._attempts


async def retry(
    op: Callable[[], Awaitable[T]],
    *,
    should_retry: Callable[[BaseException], bool],
    deadline: Deadline,
    backoff: Backoff,
    what: str,
    on_retry: Callable[[BaseException], Awaitable[None] | None] | None = None,
    max_attempts: int | None = None,
) -> T:
    """``await op()`` until it returns, retrying the errors ``should_retry`` accepts.

    Raises ``op``'s error as it is when ``should_retry`` refuses it, when ``max_attempts``
    attempts have been made, or when the next attempt could not start before ``deadline``
    (the wait is not cut short to squeeze one in).  ``on_retry(exc)`` runs before each wait
    (say, to refresh metadata or forget a coordinator); an error it raises ends the retry.
    ``what`` names the operation in the DEBUG log.  Cancellation is never retried.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return await op()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not should_retry(exc):
                raise
            if max_attempts is not None and attempt >= max_attempts:
                raise
            delay = backoff.next_delay()
            if delay >= deadline.remaining():
                raise
            log.debug("%s failed (attempt %d): %s; retrying in %.3fs", what, attempt, exc, delay)
            if on_retry is not None:
                outcome = on_retry(exc)
                if outcome is not None:
                    await outcome
            await asyncio.sleep(delay)


async def retry_until_stopped(
    op: Callable[[], Awaitable[T]],
    *,
    should_retry: Callable[[BaseException], bool],
    backoff: Backoff,
    what: str,
    on_retry: Callable[[BaseException], Awaitable[None] | None] | None = None,
) -> T:
    """:func:`retry` without a deadline, for a loop that runs in the background.

    Such a loop (a group's joins, the producer's InitProducerId or AddPartitionsToTxn) has no
    caller waiting with a budget: it tries again, ``backoff`` apart, until ``op`` returns or
    raises an error ``should_retry`` refuses, and it ends when its owner cancels it.  ``op``
    decides each time whether there is still something to do (and returns if not), so the
    owner's state is read afresh after every pause.  ``backoff`` is reset on success.
    """
    result = await retry(
        op,
        should_retry=should_retry,
        deadline=Deadline.after(None),
        backoff=backoff,
        what=what,
        on_retry=on_retry,
    )
    backoff.reset()
    return result
