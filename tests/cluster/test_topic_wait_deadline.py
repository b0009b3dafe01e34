"""``Cluster.wait_for_topic`` ends at its timeout even while a metadata refresh is slower.

The refresh itself is shared: a waiter that gives up does not cancel it, and a waiter with a
longer timeout gets its answer (one request, not two).  Against a scripted broker whose Metadata
answers take as long as the test says.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fake_broker import FakeBroker

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.net.config import ConnectionConfig
from aiokafkawire.protocol.messages import MetadataRequest, MetadataResponse
from aiokafkawire.protocol.messages.metadata import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

# Far longer than any wait here: the old overshoot would show as a wait of the slow answer.
CONFIG = ConnectionConfig(connect_timeout_ms=5000, request_timeout_ms=5000)


class SlowMetadata:
    """Answers Metadata with one partition per topic asked about, after ``delay_s``; topics in
    ``unknown`` are answered UNKNOWN_TOPIC_OR_PARTITION."""

    def __init__(self) -> None:
        self.port = 0
        self.asked: list[list[str]] = []  # the topics of each Metadata request
        self.delay_s = 0.0
        self.unknown: set[str] = set()
        self.arrived = asyncio.Event()  # set at each Metadata request, before its delay

    async def __call__(self, header: Any, request: Any) -> Any:
        assert isinstance(request, MetadataRequest)
        names = [t.name for t in request.topics or []]
        self.asked.append(names)
        self.arrived.set()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        partition = MetadataResponsePartition(
            partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1]
        )
        return MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=self.port)],
            cluster_id="fake",
            controller_id=1,
            topics=[
                MetadataResponseTopic(name=n, error_code=errors.UnknownTopicOrPartitionError.code)
                if n in self.unknown
                else MetadataResponseTopic(name=n, partitions=[partition])
                for n in names
            ],
        )


@contextlib.asynccontextmanager
async def _cluster(retry_backoff_ms: int = 100) -> AsyncIterator[tuple[SlowMetadata, Cluster]]:
    script = SlowMetadata()
    async with FakeBroker(script) as broker:
        script.port = broker.port
        servers = f"127.0.0.1:{broker.port}"
        async with Cluster(servers, CONFIG, retry_backoff_ms=retry_backoff_ms) as cluster:
            yield script, cluster


async def _timed(wait: Any) -> tuple[Any, float]:
    """The outcome of ``wait`` (its result or its error) and how long it took."""
    started = time.monotonic()
    try:
        outcome = await wait
    except errors.KafkaError as exc:
        outcome = exc
    return outcome, time.monotonic() - started


async def test_a_wait_ends_at_its_timeout_while_the_refresh_goes_on_for_a_longer_one() -> None:
    async with _cluster() as (script, cluster):
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
    async with _cluster(retry_backoff_ms=50) as (script, cluster):
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
    async with _cluster() as (_, cluster):

        async def timed_out(topics: Any = None) -> Any:
            raise errors.KafkaTimeoutError("metadata request timed out")

        monkeypatch.setattr(cluster, "refresh_metadata", timed_out)
        with pytest.raises(errors.KafkaTimeoutError, match="metadata request timed out"):
            await cluster.wait_for_topic("t", timeout_ms=1000)
