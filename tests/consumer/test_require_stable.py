"""Committed offsets are read with ``require_stable`` by every consumer (as the Java consumer).

A Kafka 4 group coordinator answers a plain OffsetFetch at its own high watermark, which just
after a takeover can lag what the previous coordinator acknowledged; a read with
``require_stable`` waits for what was written (``BROKERS.md``; the Kafka fault test
``test_offsets_read_after_a_coordinator_takeover_are_never_older_than_acknowledged`` shows it).
A scripted broker records the OffsetFetch requests.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fake_broker import FakeBroker

from aiokafkawire import Admin, Consumer
from aiokafkawire.protocol.messages import (
    FindCoordinatorResponse,
    MetadataResponse,
    OffsetFetchResponse,
)
from aiokafkawire.protocol.messages import find_coordinator as m_find
from aiokafkawire.protocol.messages import metadata as m_metadata
from aiokafkawire.protocol.messages import offset_fetch as m_fetch
from aiokafkawire.structs import TopicPartition

TOPIC = "stable"
TP = TopicPartition(TOPIC, 0)
COMMITTED = 42


def coordinator_broker(fetches: list[Any]) -> FakeBroker:
    """One broker that is the cluster and the coordinator; offset 42 committed for ``TP``."""
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
                        topic_id=uuid.UUID(int=0),
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
        if header.api_key == 9:
            fetches.append(request)
            (group,) = request.groups
            return OffsetFetchResponse(
                groups=[
                    m_fetch.OffsetFetchResponseGroup(
                        group_id=group.group_id,
                        topics=[
                            m_fetch.OffsetFetchResponseTopics(
                                name=TOPIC,
                                partitions=[
                                    m_fetch.OffsetFetchResponsePartitions(
                                        partition_index=0, committed_offset=COMMITTED
                                    )
                                ],
                            )
                        ],
                    )
                ]
            )
        raise AssertionError(f"unexpected request {request!r}")

    broker = FakeBroker(handler)
    return broker


@pytest.mark.parametrize("isolation_level", ["read_uncommitted", "read_committed"])
async def test_a_consumer_reads_committed_offsets_with_require_stable(isolation_level: str) -> None:
    fetches: list[Any] = []
    async with coordinator_broker(fetches) as broker:
        async with Consumer(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            group_id="g",
            isolation_level=isolation_level,
            request_timeout_ms=5_000,
        ) as consumer:
            assert await consumer.committed(TP) == COMMITTED
    assert [f.require_stable for f in fetches] == [True]


async def test_admin_reads_group_offsets_with_require_stable_only_when_asked() -> None:
    fetches: list[Any] = []
    async with coordinator_broker(fetches) as broker:
        async with Admin(bootstrap_servers=f"127.0.0.1:{broker.port}") as admin:
            plain = await admin.list_group_offsets("g", [TP])
            stable = await admin.list_group_offsets("g", [TP], require_stable=True)
    assert plain[TP].offset == stable[TP].offset == COMMITTED
    assert [f.require_stable for f in fetches] == [False, True]
