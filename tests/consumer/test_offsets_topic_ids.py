"""Group offsets by topic id (OffsetCommit/OffsetFetch v10, KIP-848) and the fallback to names.

A scripted broker (``fake_broker``) is the whole cluster and the group coordinator; it records
the requests and answers in kind (by id to a request by id, by name to one by name).
"""

from __future__ import annotations

import uuid
from typing import Any

from fake_broker import FakeBroker

from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.group.offsets import GroupOffsets, MemberIdentity
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.protocol.messages import (
    FindCoordinatorResponse,
    MetadataResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
)
from aiokafkawire.protocol.messages import find_coordinator as m_find
from aiokafkawire.protocol.messages import metadata as m_metadata
from aiokafkawire.protocol.messages import offset_commit as m_commit
from aiokafkawire.protocol.messages import offset_fetch as m_fetch
from aiokafkawire.structs import OffsetAndMetadata, TopicPartition

TOPIC = "offsets"
TP = TopicPartition(TOPIC, 0)


async def commit_and_fetch(topic_id: uuid.UUID) -> list[tuple[int, Any]]:
    """Commit offset 5 of ``TP`` and read it back; returns the group requests the broker saw."""
    seen: list[tuple[int, Any]] = []
    stored: dict[int, int] = {}
    broker: FakeBroker

    async def handler(header: Any, request: Any) -> Any:
        if header.api_key == 3:
            return MetadataResponse(
                brokers=[
                    m_metadata.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=broker.port)
                ],
                cluster_id="fake",
                controller_id=1,
                topics=[
                    m_metadata.MetadataResponseTopic(
                        name=TOPIC,
                        topic_id=topic_id,
                        partitions=[
                            m_metadata.MetadataResponsePartition(
                                partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1]
                            )
                        ],
                    )
                ],
            )
        if header.api_key == 10:
            return FindCoordinatorResponse(
                coordinators=[
                    m_find.Coordinator(key="g", node_id=1, host="127.0.0.1", port=broker.port)
                ]
            )
        seen.append((header.api_version, request))
        if header.api_key == 8:
            (topic,) = request.topics
            for p in topic.partitions:
                stored[p.partition_index] = p.committed_offset
            return OffsetCommitResponse(
                topics=[
                    m_commit.OffsetCommitResponseTopic(
                        name=topic.name,
                        topic_id=topic.topic_id,
                        partitions=[
                            m_commit.OffsetCommitResponsePartition(
                                partition_index=p.partition_index
                            )
                            for p in topic.partitions
                        ],
                    )
                ]
            )
        if header.api_key == 9:
            (group,) = request.groups
            (topic,) = group.topics
            return OffsetFetchResponse(
                groups=[
                    m_fetch.OffsetFetchResponseGroup(
                        group_id=group.group_id,
                        topics=[
                            m_fetch.OffsetFetchResponseTopics(
                                name=topic.name,
                                topic_id=topic.topic_id,
                                partitions=[
                                    m_fetch.OffsetFetchResponsePartitions(
                                        partition_index=i, committed_offset=stored.get(i, -1)
                                    )
                                    for i in topic.partition_indexes
                                ],
                            )
                        ],
                    )
                ]
            )
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
