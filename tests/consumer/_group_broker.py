"""A one-broker scripted cluster that is also the group coordinator, for offsets unit tests.

``cluster_answer`` answers Metadata (one topic, its partitions led by the broker) and
FindCoordinator (the broker itself); a test's handler calls it first and scripts the rest, with
``commit_answer`` and ``fetch_answer`` building the group's answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from aiokafkawire.protocol.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
)
from aiokafkawire.protocol.messages import find_coordinator as m_find
from aiokafkawire.protocol.messages import metadata as m_metadata
from aiokafkawire.protocol.messages import offset_commit as m_commit
from aiokafkawire.protocol.messages import offset_fetch as m_fetch


def cluster_answer(
    header: Any, port: int, topic: str, topic_id: uuid.UUID, partitions: int = 1
) -> Any | None:
    """The answer to a Metadata or FindCoordinator request; None for any other request."""
    if header.api_key == MetadataRequest.API_KEY:
        return MetadataResponse(
            brokers=[m_metadata.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=port)],
            cluster_id="fake",
            controller_id=1,
            topics=[
                m_metadata.MetadataResponseTopic(
                    name=topic,
                    topic_id=topic_id,
                    partitions=[
                        m_metadata.MetadataResponsePartition(
                            partition_index=i, leader_id=1, replica_nodes=[1], isr_nodes=[1]
                        )
                        for i in range(partitions)
                    ],
                )
            ],
        )
    if header.api_key == FindCoordinatorRequest.API_KEY:
        return FindCoordinatorResponse(
            coordinators=[m_find.Coordinator(key="g", node_id=1, host="127.0.0.1", port=port)]
        )
    return None


def commit_answer(request: Any, error_for: Callable[[int], int]) -> OffsetCommitResponse:
    """An OffsetCommit answer for the request's one topic, ``error_for(partition)`` each."""
    (topic,) = request.topics
    return OffsetCommitResponse(
        topics=[
            m_commit.OffsetCommitResponseTopic(
                name=topic.name,
                topic_id=topic.topic_id,
                partitions=[
                    m_commit.OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=error_for(p.partition_index)
                    )
                    for p in topic.partitions
                ],
            )
        ]
    )


def fetch_answer(
    request: Any, committed_for: Callable[[int], int], error_code: int = 0
) -> OffsetFetchResponse:
    """An OffsetFetch (v8+) answer for the request's one group and topic."""
    (group,) = request.groups
    (topic,) = group.topics
    return OffsetFetchResponse(
        groups=[
            m_fetch.OffsetFetchResponseGroup(
                group_id=group.group_id,
                error_code=error_code,
                topics=[
                    m_fetch.OffsetFetchResponseTopics(
                        name=topic.name,
                        topic_id=topic.topic_id,
                        partitions=[
                            m_fetch.OffsetFetchResponsePartitions(
                                partition_index=i, committed_offset=committed_for(i)
                            )
                            for i in topic.partition_indexes
                        ],
                    )
                ],
            )
        ]
    )
