"""A failed Admin.start() leaves nothing running and can be tried again (issue 20: every client)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from aiokafkawire import Admin
from aiokafkawire.errors import KafkaError


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_failed_start_leaves_no_task_and_can_be_retried() -> None:
    admin = Admin(
        bootstrap_servers=f"127.0.0.1:{_closed_port()}",
        request_timeout_ms=500,
        connect_timeout_ms=500,
        retry_backoff_ms=10,
        reconnect_backoff_ms=10,
        reconnect_backoff_max_ms=20,
    )
    before = {t for t in asyncio.all_tasks() if not t.done()}
    for _ in range(2):  # a second start() after a failed one fails the same way, cleanly
        with pytest.raises(KafkaError):
            await asyncio.wait_for(admin.start(), 30)
        await asyncio.sleep(0.05)
        left = {t for t in asyncio.all_tasks() if not t.done()} - before
        assert left == {asyncio.current_task()} or not left, left
    await admin.close()
