"""Cold start (issue 24): a send with an explicit partition does not wait for the topic's
metadata; the records wait in their batches, and the first lookups of many topics share one
Metadata request.  Keyed and unkeyed sends still wait (the partition is part of their answer).

Every Metadata request the client builds is counted.  ``kafka_bootstrap`` tests run on each
selected broker (the mock auto-creates topics with 4 partitions).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from _producer_helpers import create_topic, read_back, unique_topic

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.producer import Producer
from aiokafkawire.testing import MockCluster

PARTITIONS = 4  # what the mock auto-creates
TOPICS = 6
MAX_BLOCK_MS = 1_000  # the bound of an unknown topic's lookup in these tests


def count_metadata_requests(monkeypatch: pytest.MonkeyPatch) -> list[list[str] | None]:
    """The topics of every Metadata request built from now on (None: all topics)."""
    asked: list[list[str] | None] = []
    build = Cluster._metadata_request

    def counted(self: Cluster, version: int, topics: list[str] | None) -> Any:
        asked.append(None if topics is None else list(topics))
        return build(self, version, topics)

    monkeypatch.setattr(Cluster, "_metadata_request", counted)
    return asked


async def test_explicit_partition_sends_to_new_topics_share_one_lookup(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = count_metadata_requests(monkeypatch)
    async with Producer(bootstrap_servers=kafka_bootstrap, linger_ms=0) as producer:
        # Created after the start: the producer has not seen them (Tansu answers a Metadata
        # request for no topic with every topic).
        names = [await create_topic(kafka_bootstrap, f"cold{i}", PARTITIONS) for i in range(TOPICS)]
        before = len(asked)
        handles = []
        for name in names:  # one after another, each awaited: as workload 7 does
            for partition in range(PARTITIONS):
                handles.append(await producer.send(name, b"v", partition=partition))
        assert len(asked) == before, "a send waited for a metadata lookup"
        await producer.flush(timeout=30)
        lookups = asked[before:]
    assert [(h.topic, h.partition) for h in handles] == [
        (n, p) for n in names for p in range(PARTITIONS)
    ]
    assert all(h.done() and h.exception() is None for h in handles)
    # O(1), not one per topic: the first request names them all (a broker still electing a
    # fresh topic's leaders may cost a refresh or two more, never one per topic).
    assert sorted(lookups[0] or []) == sorted(names), lookups
    assert len(lookups) <= 3, lookups


async def test_keyed_sends_one_after_another_ask_for_the_new_topic_only(
    mock_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [unique_topic(f"seq{i}") for i in range(5)]
    for name in names:
        mock_cluster.create_topic(name, partitions=2)
    asked = count_metadata_requests(monkeypatch)
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        before = len(asked)
        for name in names:
            handle = await producer.send(name, b"v", b"key")  # the partition is send's answer
            assert handle.partition in (0, 1)
        lookups = asked[before:]
        await producer.flush()
    # One small request per new topic (was: every tracked topic each time, O(N^2) in all).
    assert lookups == [[name] for name in names]


async def test_keyed_and_explicit_sends_to_new_topics_share_one_lookup(
    mock_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [unique_topic(f"mix{i}") for i in range(TOPICS)]
    for name in names:
        mock_cluster.create_topic(name, partitions=2)
    asked = count_metadata_requests(monkeypatch)
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        before = len(asked)
        sends = [producer.send(name, b"v", partition=1) for name in names[::2]]
        sends += [producer.send(name, b"v", b"k") for name in names[1::2]]
        handles = await asyncio.gather(*sends)
        await producer.flush()
        lookups = asked[before:]
    assert all(h.done() and h.exception() is None for h in handles)
    assert len(lookups) == 1, lookups
    assert sorted(lookups[0] or []) == sorted(names)


async def test_an_explicit_partition_the_topic_lacks_fails_its_handle(
    kafka_bootstrap: str,
) -> None:
    async with Producer(bootstrap_servers=kafka_bootstrap, max_block_ms=MAX_BLOCK_MS) as producer:
        topic = await create_topic(kafka_bootstrap, "beyond", PARTITIONS)
        started = time.monotonic()
        good = await producer.send(topic, b"in", partition=PARTITIONS - 1)
        beyond = await producer.send(topic, b"out", partition=PARTITIONS)
        assert beyond.partition == PARTITIONS
        await producer.flush(timeout=30)
        assert time.monotonic() - started < 10  # bounded; a lookup that never ends would hang
        with pytest.raises(errors.ConfigError, match=rf"{topic}.*{PARTITIONS} is not one"):
            await beyond
        assert (await good).partition == PARTITIONS - 1
        # Once the topic is known, send raises the same error itself.
        with pytest.raises(errors.ConfigError, match=f"{PARTITIONS} is not one"):
            await producer.send(topic, b"out", partition=PARTITIONS)


async def test_an_unknown_topic_fails_the_handle_and_flush_returns(kafka_bootstrap: str) -> None:
    topic = unique_topic("nowhere")
    async with Producer(
        bootstrap_servers=kafka_bootstrap,
        max_block_ms=MAX_BLOCK_MS,
        allow_auto_create_topics=False,
    ) as producer:
        started = time.monotonic()
        handles = [await producer.send(topic, b"v", partition=p) for p in (0, 0, 3)]
        await producer.flush(timeout=30)
        elapsed = time.monotonic() - started
        for handle in handles:
            with pytest.raises(errors.UnknownTopicError, match=rf"{topic}-{handle.partition}"):
                await handle
        # The lookup retried (not failed at the first answer), and ended within its bound.
        assert MAX_BLOCK_MS / 2000 <= elapsed < MAX_BLOCK_MS / 1000 + 5
        assert producer.buffered_bytes == 0  # the failed batches gave their memory back
        # A keyed send still raises from send itself.
        with pytest.raises(errors.UnknownTopicError):
            await producer.send(topic, b"v", b"k")


async def test_order_within_a_partition_holds_while_the_topic_is_looked_up(
    kafka_bootstrap: str,
) -> None:
    count = 50
    async with Producer(bootstrap_servers=kafka_bootstrap, linger_ms=0) as producer:
        topic = await create_topic(kafka_bootstrap, "order", PARTITIONS)
        handles = [await producer.send(topic, b"%d" % i, partition=2) for i in range(count // 2)]
        await asyncio.sleep(0)  # the lookup starts; later sends arrive while it is under way
        handles += [await producer.send(topic, b"%d" % i, partition=2) for i in range(25, count)]
        await producer.flush(timeout=30)
        offsets = [(await handle).offset for handle in handles]
    assert offsets == sorted(offsets) and len(set(offsets)) == count
    read = await read_back(kafka_bootstrap, topic, count)
    assert [r.value for r in sorted(read, key=lambda r: r.offset)] == [
        b"%d" % i for i in range(count)
    ]


async def test_a_transaction_takes_in_partitions_once_their_topic_is_known(
    kafka_bootstrap: str,
) -> None:
    if getattr(kafka_bootstrap, "kind", "") == "mock":
        pytest.skip("read_committed reads need transaction markers the mock does not write")
    async with Producer(
        bootstrap_servers=kafka_bootstrap, transactional_id=unique_topic("cold-txn")
    ) as producer:
        topic = await create_topic(kafka_bootstrap, "txn", PARTITIONS)
        async with producer.transaction():
            handles = [await producer.send(topic, b"t", partition=p) for p in range(PARTITIONS)]
        assert all(h.done() and h.exception() is None for h in handles)
    read = await read_back(kafka_bootstrap, topic, PARTITIONS, isolation_level="read_committed")
    assert sorted(r.partition for r in read) == list(range(PARTITIONS))
