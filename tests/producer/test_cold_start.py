"""Cold start (issue 24): first sends to many new topics share their metadata lookups.

On librdkafka's mock cluster, with every Metadata request the client builds counted.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _producer_helpers import unique_topic

from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.producer import Producer
from aiokafkawire.testing import MockCluster

TOPICS = 20


async def test_concurrent_first_sends_to_new_topics_share_one_metadata_request(
    mock_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [unique_topic(f"cold{i}") for i in range(TOPICS)]
    for name in names:
        mock_cluster.create_topic(name, partitions=2)
    asked: list[list[str] | None] = []
    build = Cluster._metadata_request

    def counted(self: Cluster, version: int, topics: list[str] | None) -> Any:
        asked.append(None if topics is None else list(topics))
        return build(self, version, topics)

    monkeypatch.setattr(Cluster, "_metadata_request", counted)
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        before = len(asked)
        handles = await asyncio.gather(*(producer.send(name, b"v", partition=1) for name in names))
        lookups = asked[before:]
        await producer.flush()
        assert [(h.topic, h.partition) for h in handles] == [(n, 1) for n in names]
        assert all(h.done() and h.exception() is None for h in handles)
    # O(1), not one per topic: one request names them all.
    assert len(lookups) == 1, lookups
    assert sorted(lookups[0] or []) == sorted(names)


async def test_first_sends_one_after_another_ask_for_the_new_topic_only(
    mock_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [unique_topic(f"seq{i}") for i in range(5)]
    for name in names:
        mock_cluster.create_topic(name, partitions=2)
    asked: list[list[str] | None] = []
    build = Cluster._metadata_request

    def counted(self: Cluster, version: int, topics: list[str] | None) -> Any:
        asked.append(None if topics is None else list(topics))
        return build(self, version, topics)

    monkeypatch.setattr(Cluster, "_metadata_request", counted)
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        before = len(asked)
        for name in names:
            await producer.send(name, b"v", partition=0)
        lookups = asked[before:]
        await producer.flush()
    # One small request per new topic (was: every tracked topic each time, O(N^2) in all).
    assert lookups == [[name] for name in names]
