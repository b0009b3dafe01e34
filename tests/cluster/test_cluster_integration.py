"""Connections and the cluster manager against real brokers (Tansu, librdkafka's mock cluster)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.cluster.metadata import parse_bootstrap
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.protocol.messages import (
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
)
from aiokafkawire.protocol.messages import fetch as m_fetch
from aiokafkawire.protocol.messages import list_offsets as m_list_offsets
from aiokafkawire.protocol.messages import offset_commit as m_offset_commit
from aiokafkawire.protocol.messages import offset_fetch as m_offset_fetch
from aiokafkawire.protocol.messages import produce as m_produce
from aiokafkawire.protocol.messages.metadata import MetadataRequestTopic
from aiokafkawire.protocol.records import LegacyRecordBatchBuilder, iter_batches


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_bootstrap_parsing() -> None:
    assert parse_bootstrap("a:1, [::1]:2,10.0.0.1,[fe80::1]") == [
        ("a", 1),
        ("::1", 2),
        ("10.0.0.1", 9092),
        ("fe80::1", 9092),
    ]
    assert parse_bootstrap(["PLAINTEXT://h:5"]) == [("h", 5)]
    for bad in ("", "h:notaport", "[::1", "h:0"):
        with pytest.raises(errors.ConfigError):
            parse_bootstrap(bad)


async def test_a_bad_bootstrap_address_does_not_block_start_up(kafka_bootstrap) -> None:
    servers = f"127.0.0.1:1,{kafka_bootstrap}"
    config = ConnectionConfig(connect_timeout_ms=2000)
    async with Cluster(servers, config) as cluster:
        assert cluster.metadata.brokers
        assert cluster.metadata.cluster_id


async def test_no_reachable_broker_is_a_prompt_typed_error() -> None:
    cluster = Cluster("127.0.0.1:1,127.0.0.1:2", ConnectionConfig(connect_timeout_ms=1000))
    started = time.monotonic()
    with pytest.raises(errors.NoBrokersAvailableError):
        await cluster.start()
    assert time.monotonic() - started < 5
    await cluster.close()


async def test_thousand_concurrent_requests_on_one_connection(kafka_bootstrap) -> None:
    async with Cluster(kafka_bootstrap) as cluster:
        connection = await cluster.any_connection()
        names = [f"pipelined-{i}" for i in range(1000)]
        # Not auto-created: each answer names its (unknown) topic, and the session's brokers
        # are not left with a thousand topics that every later full metadata request carries.
        responses = await asyncio.gather(
            *(
                connection.send(
                    MetadataRequest(
                        topics=[MetadataRequestTopic(name=n)], allow_auto_topic_creation=False
                    )
                )
                for n in names
            )
        )
        assert [r.topics[0].name for r in responses] == names
        assert connection.in_flight == 0
        assert not connection.closed


async def test_unknown_topic_fails_after_a_bounded_wait(kafka_bootstrap) -> None:
    async with Cluster(kafka_bootstrap, topic_wait_ms=500) as cluster:
        started = time.monotonic()
        with pytest.raises(errors.UnknownTopicError):
            await cluster.wait_for_topic(unique("never-created"))
        assert time.monotonic() - started < 5


async def test_auto_creation_when_the_broker_allows_it(tansu_broker) -> None:
    topic = unique("auto")
    async with Cluster(tansu_broker.bootstrap_servers, allow_auto_topic_creation=True) as cluster:
        info = await cluster.wait_for_topic(topic)
        assert info.partitions


async def test_broker_down_fails_waiters_promptly_and_the_client_recovers(mock_cluster) -> None:
    topic = unique("down")
    mock_cluster.create_topic(topic, partitions=1, replication_factor=3)
    config = ConnectionConfig(request_timeout_ms=10_000, reconnect_backoff_max_ms=200)
    async with Cluster(mock_cluster.bootstrap_servers, config) as cluster:
        info = await cluster.wait_for_topic(topic)
        leader = info.partitions[0].leader
        connection = await cluster.connection(leader)
        mock_cluster.set_broker_rtt(leader, 3000)  # requests now hang...
        pending = [
            asyncio.ensure_future(connection.send(MetadataRequest(topics=None))) for _ in range(5)
        ]
        await asyncio.sleep(0.2)
        started = time.monotonic()
        mock_cluster.broker_down(leader)  # ...and the broker goes away under them
        results = await asyncio.gather(*pending, return_exceptions=True)
        assert time.monotonic() - started < 2.5
        assert all(isinstance(r, errors.KafkaConnectionError) for r in results), results
        mock_cluster.set_broker_rtt(leader, 0)
        mock_cluster.broker_up(leader)
        deadline = time.monotonic() + 10
        while True:  # bounded: reconnect with backoff until the broker answers again
            try:
                response = await cluster.send(leader, MetadataRequest(topics=None))
                break
            except errors.KafkaConnectionError:
                assert time.monotonic() < deadline, "client did not recover"
                await asyncio.sleep(0.1)
        assert response.brokers


async def test_coordinator_lookup_retries_coordinator_errors(mock_cluster) -> None:
    group = unique("group")
    async with Cluster(mock_cluster.bootstrap_servers) as cluster:
        mock_cluster.push_request_errors(10, [15, 14, 16])
        coordinator = await cluster.coordinator(group)
        assert coordinator.node_id in mock_cluster.broker_ids
        mock_cluster.set_coordinator("group", group, coordinator.node_id % 3 + 1)
        cluster.invalidate_coordinator(group)
        moved = await cluster.coordinator(group)
        assert moved.node_id == coordinator.node_id % 3 + 1


async def test_seed_era_protocol_end_to_end(mock_cluster) -> None:
    """Pinned to Kafka 0.8.2: Metadata v0, Produce v0 (message set v0), Fetch v0, ListOffsets v0,
    OffsetCommit/OffsetFetch v1 — and no ApiVersions, which 0.8.2 brokers do not have."""
    topic = unique("seed")
    group = unique("seed-group")
    mock_cluster.create_topic(topic, partitions=1, replication_factor=1)
    mock_cluster.start_request_tracking()
    config = ConnectionConfig(api_version="0.8.2")
    async with Cluster(mock_cluster.bootstrap_servers, config) as cluster:
        info = await cluster.wait_for_topic(topic)
        leader = info.partitions[0].leader

        builder = LegacyRecordBatchBuilder(magic=0)
        for i in range(5):
            assert builder.append(None, f"k{i}".encode(), f"v{i}".encode(), None)
        produce = ProduceRequest(
            acks=1,
            timeout_ms=5000,
            topic_data=[
                m_produce.TopicProduceData(
                    name=topic,
                    partition_data=[
                        m_produce.PartitionProduceData(index=0, records=builder.build())
                    ],
                )
            ],
        )
        produced = await cluster.send(leader, produce)
        part = produced.responses[0].partition_responses[0]
        assert part.error_code == 0 and part.base_offset == 0

        fetch = FetchRequest(
            replica_id=-1,
            max_wait_ms=100,
            min_bytes=1,
            topics=[
                m_fetch.FetchTopic(
                    topic=topic,
                    partitions=[
                        m_fetch.FetchPartition(
                            partition=0, fetch_offset=0, partition_max_bytes=1 << 20
                        )
                    ],
                )
            ],
        )
        fetched = await cluster.send(leader, fetch)
        data = fetched.responses[0].partitions[0]
        assert data.error_code == 0 and data.high_watermark == 5
        records = [r for batch in iter_batches(data.records) for r in batch]
        assert [(r.offset, r.key, r.value) for r in records] == [
            (i, f"k{i}".encode(), f"v{i}".encode()) for i in range(5)
        ]
        assert {batch.magic for batch in iter_batches(data.records)} == {0}

        listed = await cluster.send(
            leader,
            ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    m_list_offsets.ListOffsetsTopic(
                        name=topic,
                        partitions=[
                            m_list_offsets.ListOffsetsPartition(
                                partition_index=0, timestamp=-1, max_num_offsets=1
                            )
                        ],
                    )
                ],
            ),
        )
        assert list(listed.topics[0].partitions[0].old_style_offsets) == [5]

        coordinator = await cluster.coordinator(group)
        commit = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                m_offset_commit.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        m_offset_commit.OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=3, committed_metadata="seed"
                        )
                    ],
                )
            ],
        )
        committed = await cluster.send(coordinator.node_id, commit)
        assert committed.topics[0].partitions[0].error_code == 0
        fetched_offsets = await cluster.send(
            coordinator.node_id,
            OffsetFetchRequest(
                group_id=group,
                topics=[m_offset_fetch.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
            ),
        )
        assert fetched_offsets.topics[0].partitions[0].committed_offset == 3

        connection = await cluster.connection(leader)
        for api_key in (0, 1, 2, 3, 10):
            assert connection.versions.version_for(api_key) == 0
        for api_key in (8, 9):
            assert connection.versions.version_for(api_key) == 1

    used = {r.api_key for r in mock_cluster.requests()}
    assert 18 not in used  # 0.8.2 has no ApiVersions: the pin must not send it
    assert {0, 1, 2, 3, 8, 9, 10} <= used
