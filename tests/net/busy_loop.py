"""Helpers for tests of reads outside the event loop's turn (``BrokerConnection.receive_now``)."""

from __future__ import annotations

import asyncio
import time

import pytest


def require_direct_reads() -> None:
    """Skip unless the running loop is a selector loop, where receive_now reads the socket."""
    if not isinstance(asyncio.get_running_loop(), asyncio.selector_events.BaseSelectorEventLoop):
        pytest.skip("receive_now reads sockets directly on selector loops only")


def block_loop(seconds: float) -> None:
    """Keep the event loop from running, as a coroutine busy appending records does."""
    time.sleep(seconds)
