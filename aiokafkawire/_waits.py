"""Bounded waits that never swallow a cancellation (used by every layer from net/ up).

``asyncio.wait_for`` on Python < 3.12 can lose a ``cancel()`` that arrives just as the awaited
event fires, leaving a task that refuses to stop; ``asyncio.timeout`` (``async_timeout`` on 3.10)
does not have that race.
"""

from __future__ import annotations

import asyncio
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
