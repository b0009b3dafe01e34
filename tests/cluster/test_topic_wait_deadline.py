"""``Cluster.wait_for_topic`` ends at its timeout even while a metadata refresh is slower.

The refresh itself is shared: a waiter that gives up does not cancel it, and a waiter with a
longer timeout gets its answer (one request, not two).  Against a scripted broker whose Metadata
answers take as long as the test says.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from _metadata_script import scripted_cluster

from aiokafkawire import errors


async def _timed(wait: Any) -> tuple[Any, float]:
    """The outcome of ``wait`` (its result or its error) and how long it took."""
    started = time.monotonic()
    try:
        outcome = await wait
    except errors.KafkaError as exc:
        outcome = exc
    return outcome, time.monotonic() - started


async def test_a_wait_ends_at_its_timeout_while_the_refresh_goes_on_for_a_longer_one() -> None:
    async with scripted_cluster(100) as (script, cluster):
        script.delay_s = 1.0  # the answer for "t" comes after 1 s
        (short, short_s), (long, long_s) = await asyncio.gather(
            _timed(cluster.wait_for_topic("t", timeout_ms=200)),
            _timed(cluster.wait_for_topic("t", timeout_ms=3000)),
        )
        assert isinstance(short, errors.UnknownTopicError), short
        assert "'t' is not available after 0.2s" in str(short)
        assert 0.15 <= short_s < 0.7, short_s  # not the 1 s of the answer
        assert not isinstance(long, Exception), long
        assert long.partition_ids == [0]
        assert 0.9 <= long_s < 2.5, long_s
        assert script.asked[1:] == [["t"]]  # one request, shared by both waits


async def test_a_wait_cut_short_says_what_the_broker_last_answered() -> None:
    async with scripted_cluster(50) as (script, cluster):
        script.unknown = {"t"}
        script.arrived.clear()
        task = asyncio.ensure_future(_timed(cluster.wait_for_topic("t", timeout_ms=400)))
        await asyncio.wait_for(script.arrived.wait(), 2)  # the first answer (fast): no such topic
        script.delay_s = 2.0  # the retry's answer is slower than what is left of the wait
        error, elapsed = await task
        assert isinstance(error, errors.UnknownTopicError), error
        assert "(broker said UNKNOWN_TOPIC_OR_PARTITION)" in str(error)
        assert 0.35 <= elapsed < 0.9, elapsed
        assert len(script.asked) == 3  # the retry was sent, and not waited out


async def test_a_request_timeout_inside_the_wait_is_not_taken_for_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refresh that fails with KafkaTimeoutError (also a TimeoutError) before the wait's own
    timeout is that refresh's error, not UnknownTopicError."""
    async with scripted_cluster(100) as (_, cluster):

        async def timed_out(topics: Any = None) -> Any:
            raise errors.KafkaTimeoutError("metadata request timed out")

        monkeypatch.setattr(cluster, "refresh_metadata", timed_out)
        with pytest.raises(errors.KafkaTimeoutError, match="metadata request timed out"):
            await cluster.wait_for_topic("t", timeout_ms=1000)
