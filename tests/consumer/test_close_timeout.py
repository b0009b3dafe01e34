"""``Consumer.close(timeout=...)`` against a coordinator that never answers.

The commit on close (auto-commit, manual assignment) would wait for the request timeout and its
retries; with ``timeout`` the close returns within it, logs the step it cut short, and leaves no
task of the consumer's running.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import pytest
from _group_broker import cluster_answer
from fake_broker import SILENT, FakeBroker

from aiokafkawire import errors
from aiokafkawire.consumer import Consumer
from aiokafkawire.structs import TopicPartition

TOPIC = "close-bound"
TP = TopicPartition(TOPIC, 0)


def _ours() -> set[asyncio.Task[Any]]:
    """The running tasks that are not the fake broker's connection handlers (nor this test)."""
    current = asyncio.current_task()
    return {
        t
        for t in asyncio.all_tasks()
        if t is not current and "_serve" not in t.get_coro().__qualname__  # type: ignore[union-attr]
    }


async def test_close_returns_within_its_timeout_and_stops_every_task(
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic_id = uuid.uuid4()

    async def answer(header: Any, request: Any) -> Any:
        found = cluster_answer(header, broker.port, TOPIC, topic_id)
        return SILENT if found is None else found  # OffsetCommit, Fetch: never answered

    broker = FakeBroker(answer)
    async with broker:
        before = _ours()
        consumer = Consumer(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            group_id="g",
            enable_auto_commit=True,
            request_timeout_ms=30_000,
        )
        await consumer.start()
        consumer.assign([TP])
        consumer.seek(TP, 5)
        await asyncio.sleep(0.05)  # let the fetch loop send its (unanswered) Fetch
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, "aiokafkawire.consumer"):
            await consumer.close(timeout=0.3)
        took = time.monotonic() - started
        assert took < 3, f"close(timeout=0.3) took {took:.1f} s"
        assert "the commit did not finish within the close timeout (0.3 s)" in caplog.text
        await asyncio.sleep(0)  # let cancelled tasks finish their last step
        assert _ours() - before == set()
        await consumer.close(timeout=0.3)  # closing again is a no-op


async def test_close_timeout_is_checked() -> None:
    consumer = Consumer(group_id="g")
    with pytest.raises(errors.KafkaValueError, match=r"Consumer.close\(\): timeout must be >= 0"):
        await consumer.close(timeout=-1)
    with pytest.raises(errors.KafkaTypeError):
        await consumer.close(timeout="1")  # type: ignore[arg-type]
    await consumer.close(timeout=1)
