"""Group offsets by topic id (OffsetCommit/OffsetFetch v10, KIP-848) and the fallback to names.

A scripted broker (``fake_broker``) is the whole cluster and the group coordinator; it records
the requests and answers in kind (by id to a request by id, by name to one by name).
"""

from __future__ import annotations

import uuid
from typing import Any

from _group_broker import cluster_answer, commit_answer, fetch_answer
from fake_broker import FakeBroker

from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.group.offsets import GroupOffsets, MemberIdentity
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.protocol.messages import (
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from aiokafkawire.structs import OffsetAndMetadata, TopicPartition

TOPIC = "offsets"
TP = TopicPartition(TOPIC, 0)


async def commit_and_fetch(topic_id: uuid.UUID) -> list[tuple[int, Any]]:
    """Commit offset 5 of ``TP`` and read it back; returns the group requests the broker saw."""
    seen: list[tuple[int, Any]] = []
    stored: dict[int, int] = {}
    broker: FakeBroker

    async def handler(header: Any, request: Any) -> Any:
        answer = cluster_answer(header, broker.port, TOPIC, topic_id)
        if answer is not None:
            return answer
        seen.append((header.api_version, request))
        if header.api_key == OffsetCommitRequest.API_KEY:
            for p in request.topics[0].partitions:
                stored[p.partition_index] = p.committed_offset
            return commit_answer(request, lambda _partition: 0)
        if header.api_key == OffsetFetchRequest.API_KEY:
            return fetch_answer(request, lambda partition: stored.get(partition, -1))
        raise AssertionError(f"unexpected request {request!r}")

    broker = FakeBroker(handler)
    async with broker:
        config = ConnectionConfig(connect_timeout_ms=2000)
        async with Cluster(f"127.0.0.1:{broker.port}", config) as cluster:
            await cluster.refresh_metadata([TOPIC])
            offsets = GroupOffsets(
                cluster, "g", MemberIdentity, request_timeout_ms=5000, retry_backoff_ms=10
            )
            await offsets.commit({TP: OffsetAndMetadata(5)})
            assert await offsets.fetch([TP]) == {TP: OffsetAndMetadata(5, "", None)}
    return seen


async def test_offsets_go_by_topic_id_when_metadata_knows_it() -> None:
    topic_id = uuid.uuid4()
    (commit_version, commit), (fetch_version, fetch) = await commit_and_fetch(topic_id)
    assert (commit_version, fetch_version) == (10, 10)
    assert commit.topics[0].topic_id == topic_id and commit.topics[0].name == ""
    assert fetch.groups[0].topics[0].topic_id == topic_id and fetch.groups[0].topics[0].name == ""


async def test_offsets_go_by_name_at_v9_without_a_topic_id() -> None:
    # A zero id is "no id" (a broker before topic ids).
    (commit_version, commit), (fetch_version, fetch) = await commit_and_fetch(uuid.UUID(int=0))
    assert (commit_version, fetch_version) == (9, 9)
    assert commit.topics[0].name == TOPIC and fetch.groups[0].topics[0].name == TOPIC
