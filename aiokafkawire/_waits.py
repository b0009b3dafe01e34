"""Bounded waits that never swallow a cancellation (used by every layer from net/ up).

``asyncio.wait_for`` on Python < 3.12 can lose a ``cancel()`` that arrives just as the awaited
event fires, leaving a task that refuses to stop; ``asyncio.timeout`` (``async_timeout`` on 3.10)
does not have that race.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Any


def timeout_after(seconds: float | None) -> Any:
    """An async context manager raising TimeoutError after ``seconds`` (None: never)."""
    if hasattr(asyncio, "timeout"):
        return asyncio.timeout(seconds)
    import async_timeout  # pragma: no cover - Python 3.10

    return async_timeout.timeout(seconds)  # pragma: no cover


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds pass; True when it was set."""
    if event.is_set():
        return True
    try:
        async with timeout_after(timeout):
            await event.wait()
    except (TimeoutError, asyncio.TimeoutError):
        return event.is_set()
    return True


class CloseBudget:
    """The seconds a client's ``close(timeout=...)`` may take, shared by its steps.

    Each :meth:`step` runs within what is left of the budget (``None``: unbounded); a step cut
    short is cancelled and logged to ``logger`` (a warning naming it), and the close goes on
    with the next one, so the client still ends closed with every task stopped.  An error of
    the step's own (including a :class:`~aiokafkawire.errors.KafkaTimeoutError` raised before
    the budget ran out) propagates as it is.
    """

    def __init__(self, client: str, seconds: float | None, logger: logging.Logger) -> None:
        self._client = client
        self._seconds = seconds
        self._log = logger
        self._end = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None when the close is unbounded."""
        if self._end is None:
            return None
        return max(0.0, self._end - time.monotonic())

    async def step(self, what: str, step: Awaitable[object]) -> bool:
        """Await ``step`` within the remaining budget; False when it was cut short."""
        try:
            async with timeout_after(self.remaining()):
                await step
        except TimeoutError:
            if self._end is None or time.monotonic() < self._end:
                raise  # the step's own timeout, not the close budget's
            self._log.warning(
                "%s close: %s did not finish within the close timeout (%g s); cut short",
                self._client,
                what,
                self._seconds,
            )
            return False
        return True
