"""describe_topics through DescribeTopicPartitions (KIP-966: paged, eligible leader replicas) on
Apache Kafka 4.4 and 3.9, and through Metadata where a broker lacks it (the librdkafka mock)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _kafka_helpers import create_topic, unique

from aiokafkawire import errors
from aiokafkawire.admin import Admin, PartitionDescription, TopicDescription
from aiokafkawire.protocol.messages import DescribeTopicPartitionsRequest, MetadataRequest
from aiokafkawire.testing import KafkaCluster, MockCluster
from aiokafkawire.testing.pytest_plugin import broker_kind_params

pytestmark = pytest.mark.integration


@pytest.fixture(params=broker_kind_params(("kafka", "kafka39")))
def kafka(request: pytest.FixtureRequest) -> KafkaCluster:
    """Apache Kafka 4.4 and 3.9."""
    fixture = {"kafka": "kafka_cluster", "kafka39": "kafka_cluster_39"}[request.param]
    cluster: KafkaCluster = request.getfixturevalue(fixture)
    return cluster


def _count_requests(admin: Admin) -> list[Any]:
    """Record the requests the admin sends to any broker."""
    sent: list[Any] = []
    send_any = admin._send_any

    async def recording(request: Any, version: int | None = None) -> Any:
        sent.append(request)
        return await send_any(request, version)

    admin._send_any = recording  # type: ignore[method-assign]
    return sent


async def test_topics_are_described_page_by_page_with_their_elr(kafka: KafkaCluster) -> None:
    bootstrap = kafka.bootstrap_servers
    big = await create_topic(bootstrap, "dtp-big", 7)
    small = await create_topic(bootstrap, "dtp-small", 2)
    missing = unique("dtp-missing")
    async with Admin(bootstrap_servers=bootstrap) as admin:
        # Just created: the broker may not have the new topics' metadata yet.
        for _ in range(100):
            known = await admin.describe_topics([small, big], raise_on_error=False)
            if all(topic.error_code == 0 for topic in known.values()):
                break
            await asyncio.sleep(0.1)
        sent = _count_requests(admin)
        described = await admin.describe_topics(
            [small, big, missing], raise_on_error=False, partition_limit_per_response=3
        )
        # 9 partitions, 3 a page: the cursor went through at least three answers.
        pages = [r for r in sent if isinstance(r, DescribeTopicPartitionsRequest)]
        assert len(pages) >= 3, pages
        assert all(r.response_partition_limit == 3 for r in pages)
        assert pages[0].cursor is None and all(r.cursor is not None for r in pages[1:])
        assert not any(isinstance(r, MetadataRequest) for r in sent)
        assert list(described) == [small, big, missing]
        for name, count in ((big, 7), (small, 2)):
            topic = described[name]
            assert isinstance(topic, TopicDescription) and topic.error_code == 0
            assert topic.topic_id is not None and not topic.is_internal
            assert topic.partition_ids == list(range(count))
            for index, partition in topic.partitions.items():
                assert isinstance(partition, PartitionDescription)
                assert (partition.topic, partition.partition) == (name, index)
                assert partition.leader in kafka.broker_ids
                assert partition.replicas == partition.isr == (partition.leader,)
                assert partition.leader_epoch >= 0
                # The answer carries the ELR lists (DescribeTopicPartitions), empty on one
                # broker; Metadata would leave them unknown (None).
                assert partition.eligible_leader_replicas == ()
                assert partition.last_known_elr == ()
        assert described[missing].error_code == errors.UnknownTopicOrPartitionError.code
        # The same description without paging, in one answer.
        whole = await admin.describe_topics([big], partition_limit_per_response=2000)
        assert whole[big] == described[big]
        with pytest.raises(errors.AdminOperationError, match=missing):
            await admin.describe_topics([missing])
        with pytest.raises(errors.ConfigError, match="partition_limit_per_response"):
            await admin.describe_topics([big], partition_limit_per_response=0)
        everything = await admin.describe_topics()
        assert {big, small} <= set(everything) and missing not in everything


async def test_a_broker_without_describe_topic_partitions_is_described_by_metadata(
    mock_cluster: MockCluster,
) -> None:
    mock_cluster.create_topic("plain", partitions=3)
    async with Admin(bootstrap_servers=mock_cluster.bootstrap_servers) as admin:
        sent = _count_requests(admin)
        described = await admin.describe_topics(["plain"])
        assert not any(isinstance(r, DescribeTopicPartitionsRequest) for r in sent)
    topic = described["plain"]
    assert isinstance(topic, TopicDescription) and topic.partition_ids == [0, 1, 2]
    for partition in topic.partitions.values():
        assert isinstance(partition, PartitionDescription)
        assert partition.leader >= 1
        assert partition.eligible_leader_replicas is None and partition.last_known_elr is None
