"""The Kafka 4.x protocol versions against a real Apache Kafka 4.4 broker.

What each API negotiates; raw requests at the new versions (Metadata v13, Produce v12, Fetch v18 by
topic id, ListOffsets v11, OffsetCommit/OffsetFetch v10 by topic id and v9 by name); and the
producer (Produce v13), classic and KIP-848 consumers and transactions end to end, with the versions
they put on the wire recorded.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from _consumer_helpers import consume_n

from aiokafkawire.admin import Admin, NewTopic
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer import Consumer
from aiokafkawire.net.versions import client_api_versions
from aiokafkawire.producer import Producer
from aiokafkawire.protocol import SUPPORTED_VERSIONS, ApiKey
from aiokafkawire.protocol.framing import KafkaFraming
from aiokafkawire.protocol.messages import (
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
    UpdateFeaturesRequest,
)
from aiokafkawire.protocol.messages import fetch as m_fetch
from aiokafkawire.protocol.messages import list_offsets as m_list_offsets
from aiokafkawire.protocol.messages import offset_commit as m_offset_commit
from aiokafkawire.protocol.messages import offset_fetch as m_offset_fetch
from aiokafkawire.protocol.messages import produce as m_produce
from aiokafkawire.protocol.messages import update_features as m_update_features
from aiokafkawire.protocol.messages.metadata import MetadataRequestTopic
from aiokafkawire.protocol.records import RecordBatchBuilder, iter_batches
from aiokafkawire.structs import TopicPartition

pytestmark = pytest.mark.integration

COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def wire_versions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """Every (api key, version) the client frames while the test runs."""
    seen: list[tuple[int, int]] = []
    # Produce frames go out as parts (send_request_parts); every other request as one frame.
    for name in ("send_request", "send_request_parts"):
        original = getattr(KafkaFraming, name)

        def recording(
            self: KafkaFraming, request: Any, version: int, _original: Any = original
        ) -> Any:
            seen.append((request.API_KEY, version))
            return _original(self, request, version)

        monkeypatch.setattr(KafkaFraming, name, recording)
    yield seen


def versions_of(seen: list[tuple[int, int]], api_key: int) -> set[int]:
    return {version for key, version in seen if key == api_key}


async def test_every_api_negotiates_the_newest_version_both_sides_allow(kafka_cluster) -> None:
    async with Cluster(kafka_cluster.bootstrap_servers) as cluster:
        connection = await cluster.any_connection()
        policy = connection.versions
        broker = policy.broker_versions
        ours = client_api_versions(SUPPORTED_VERSIONS)
        # Every API the broker offers a client has codecs here, up to the broker's newest version.
        assert set(broker) <= set(SUPPORTED_VERSIONS)
        for key, (_low, high) in broker.items():
            assert SUPPORTED_VERSIONS[key][1] >= high, ApiKey(key).name
            assert policy.version_for(key) == min(high, ours[key][1]), ApiKey(key).name
        # The codecs reach the broker's newest version of every API (Kafka 4.4 = the specs).
        assert {key: SUPPORTED_VERSIONS[key][1] for key in broker} == {
            key: high for key, (_low, high) in broker.items()
        }
        chosen = {ApiKey(key).name: policy.version_for(key) for key in broker}
        assert chosen["API_VERSIONS"] == 5
        assert chosen["METADATA"] == 13
        assert chosen["FETCH"] == 18
        assert chosen["LIST_OFFSETS"] == 11
        assert chosen["PRODUCE"] == 13
        assert chosen["OFFSET_COMMIT"] == chosen["OFFSET_FETCH"] == 10
        assert chosen["INIT_PRODUCER_ID"] == 5
        assert chosen["CONSUMER_GROUP_HEARTBEAT"] == 1
        assert chosen["SHARE_GROUP_HEARTBEAT"] == 1 and chosen["SHARE_FETCH"] == 2
        assert chosen["CREATE_ACLS"] == 3 and chosen["DESCRIBE_CLIENT_QUOTAS"] == 1


async def test_raw_requests_at_the_newest_versions(kafka_cluster) -> None:
    topic = unique("v4-raw")
    group = unique("v4-group")
    async with Admin(bootstrap_servers=kafka_cluster.bootstrap_servers) as admin:
        assert (await admin.create_topics([NewTopic(topic, 1, 1)]))[topic].ok
    async with Cluster(kafka_cluster.bootstrap_servers) as cluster:
        info = await cluster.wait_for_topic(topic)
        leader = cluster.metadata.leader_for(topic, 0)
        assert leader is not None and info.topic_id is not None
        connection = await cluster.connection(leader)

        metadata = await connection.send(
            MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), 13
        )
        assert metadata.error_code == 0  # the top-level error code (v13)
        assert metadata.topics[0].topic_id == info.topic_id

        builder = RecordBatchBuilder(magic=2)
        for i in range(5):
            assert builder.append(1_700_000_000_000 + i, f"k{i}".encode(), f"v{i}".encode())
        produced = await connection.send(
            ProduceRequest(
                acks=-1,
                timeout_ms=10_000,
                topic_data=[
                    m_produce.TopicProduceData(
                        name=topic,
                        partition_data=[
                            m_produce.PartitionProduceData(index=0, records=builder.build())
                        ],
                    )
                ],
            ),
            12,
        )
        (answer,) = produced.responses[0].partition_responses
        assert answer.error_code == 0 and answer.base_offset == 0

        fetched = await connection.send(
            FetchRequest(
                max_wait_ms=100,
                min_bytes=1,
                max_bytes=1 << 20,
                topics=[
                    m_fetch.FetchTopic(
                        topic_id=info.topic_id,
                        partitions=[
                            m_fetch.FetchPartition(
                                partition=0, fetch_offset=0, partition_max_bytes=1 << 20
                            )
                        ],
                    )
                ],
            ),
            18,
        )
        data = fetched.responses[0].partitions[0]
        assert fetched.responses[0].topic_id == info.topic_id
        assert data.error_code == 0 and data.high_watermark == 5
        records = [r for batch in iter_batches(data.records) for r in batch]
        assert [(r.offset, r.value) for r in records] == [(i, f"v{i}".encode()) for i in range(5)]

        async def list_offset(timestamp: int) -> tuple[int, int]:
            response = await connection.send(
                ListOffsetsRequest(
                    replica_id=-1,
                    timeout_ms=10_000,
                    topics=[
                        m_list_offsets.ListOffsetsTopic(
                            name=topic,
                            partitions=[
                                m_list_offsets.ListOffsetsPartition(
                                    partition_index=0, timestamp=timestamp
                                )
                            ],
                        )
                    ],
                ),
                11,
            )
            partition = response.topics[0].partitions[0]
            assert partition.error_code == 0
            return partition.offset, partition.timestamp

        assert (await list_offset(-2))[0] == 0  # earliest
        assert (await list_offset(-1))[0] == 5  # latest
        assert await list_offset(-3) == (4, 1_700_000_000_004)  # max timestamp (KIP-734)
        assert (await list_offset(1_700_000_000_002))[0] == 2

        async def commit(version: int, offset: int) -> None:
            topic_entry = (
                m_offset_commit.OffsetCommitRequestTopic(topic_id=info.topic_id)
                if version >= 10
                else m_offset_commit.OffsetCommitRequestTopic(name=topic)
            )
            topic_entry.partitions = [
                m_offset_commit.OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=offset, committed_metadata=f"m{version}"
                )
            ]
            request = OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[topic_entry]
            )
            for _ in range(50):  # the offsets topic is created and loaded on the first group call
                answer = await cluster.send_to_coordinator(group, request, version)
                code = answer.topics[0].partitions[0].error_code
                if code not in (
                    COORDINATOR_LOAD_IN_PROGRESS,
                    COORDINATOR_NOT_AVAILABLE,
                    NOT_COORDINATOR,
                ):
                    break
                cluster.invalidate_coordinator(group)
                await asyncio.sleep(0.2)
            assert code == 0
            if version >= 10:
                assert answer.topics[0].topic_id == info.topic_id

        async def fetch_committed(version: int) -> tuple[int, str | None]:
            topic_entry = (
                m_offset_fetch.OffsetFetchRequestTopics(topic_id=info.topic_id)
                if version >= 10
                else m_offset_fetch.OffsetFetchRequestTopics(name=topic)
            )
            topic_entry.partition_indexes = [0]
            answer = await cluster.send_to_coordinator(
                group,
                OffsetFetchRequest(
                    groups=[
                        m_offset_fetch.OffsetFetchRequestGroup(group_id=group, topics=[topic_entry])
                    ]
                ),
                version,
            )
            answered_topic = answer.groups[0].topics[0]
            if version >= 10:
                assert answered_topic.topic_id == info.topic_id
            else:
                assert answered_topic.name == topic
            partition = answered_topic.partitions[0]
            return partition.committed_offset, partition.metadata

        assert connection.versions.version_for(OffsetCommitRequest.API_KEY) == 10
        await commit(10, 3)  # by topic id (KIP-848)
        assert await fetch_committed(10) == (3, "m10")
        assert await fetch_committed(9) == (3, "m10")
        await commit(9, 4)  # by name
        assert await fetch_committed(10) == (4, "m9")


async def test_producer_and_group_consumer_use_the_newest_versions(
    kafka_cluster, wire_versions: list[tuple[int, int]]
) -> None:
    topic = unique("v4-e2e")
    servers = kafka_cluster.bootstrap_servers
    async with Admin(bootstrap_servers=servers) as admin:
        assert (await admin.create_topics([NewTopic(topic, 2, 1)]))[topic].ok
    async with Producer(bootstrap_servers=servers) as producer:  # idempotent by default
        handles = [await producer.send(topic, b"r%d" % i, partition=i % 2) for i in range(20)]
        await producer.flush()
        assert all(h.exception() is None for h in handles)
    assert versions_of(wire_versions, ApiKey.PRODUCE) == {13}  # topic ids (KIP-516)
    assert versions_of(wire_versions, ApiKey.INIT_PRODUCER_ID) == {5}
    for protocol in ("classic", "consumer"):
        group = unique(f"v4-{protocol}")
        wire_versions.clear()
        async with Consumer(
            topic,
            bootstrap_servers=servers,
            group_id=group,
            group_protocol=protocol,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        ) as consumer:
            records = await consume_n(consumer, 20)
            assert sorted(r.value for r in records) == sorted(b"r%d" % i for i in range(20))
            await consumer.commit()
            committed = await consumer.committed_offsets(
                [TopicPartition(topic, 0), TopicPartition(topic, 1)]
            )
            assert {tp.partition: o.offset for tp, o in committed.items() if o} == {0: 10, 1: 10}
        assert versions_of(wire_versions, ApiKey.FETCH) == {18}
        assert versions_of(wire_versions, ApiKey.METADATA) == {13}
        assert versions_of(wire_versions, ApiKey.OFFSET_COMMIT) == {10}  # topic ids
        assert versions_of(wire_versions, ApiKey.OFFSET_FETCH) == {10}
        if protocol == "consumer":
            assert versions_of(wire_versions, ApiKey.CONSUMER_GROUP_HEARTBEAT) == {1}
        else:
            assert versions_of(wire_versions, ApiKey.JOIN_GROUP) == {9}


async def run_transactions(servers: str) -> tuple[list[int], str, str]:
    """Abort one transaction, commit two (one with consumer offsets); returns the epochs seen
    after each, the topic and the group whose offsets were committed."""
    topic = unique("txn")
    group = unique("txn-group")
    async with Admin(bootstrap_servers=servers) as admin:
        assert (await admin.create_topics([NewTopic(topic, 1, 1)]))[topic].ok
    epochs = []
    async with Producer(bootstrap_servers=servers, transactional_id=unique("tid")) as producer:
        txn = producer._txn
        assert txn is not None
        epochs.append(txn.producer_epoch)
        await producer.begin_transaction()
        for i in range(3):
            await producer.send(topic, b"aborted-%d" % i, partition=0)
        await producer.flush()
        await producer.abort_transaction()
        epochs.append(txn.producer_epoch)
        async with producer.transaction():
            for i in range(3):
                await producer.send(topic, b"committed-%d" % i, partition=0)
        epochs.append(txn.producer_epoch)
        async with producer.transaction():
            await producer.send(topic, b"with-offsets", partition=0)
            await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 42}, group)
        epochs.append(txn.producer_epoch)
    async with Consumer(
        bootstrap_servers=servers, isolation_level="read_committed", auto_offset_reset="earliest"
    ) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        records = await consume_n(consumer, 4)
        assert [r.value for r in records] == [b"committed-%d" % i for i in range(3)] + [
            b"with-offsets"
        ]
    async with Admin(bootstrap_servers=servers) as admin:
        offsets = await admin.list_group_offsets(group)
        assert offsets[TopicPartition(topic, 0)].offset == 42
    return epochs, topic, group


async def test_transactions_v2_when_the_broker_finalized_it(
    kafka_cluster, wire_versions: list[tuple[int, int]]
) -> None:
    async with Cluster(kafka_cluster.bootstrap_servers) as cluster:
        connection = await cluster.any_connection()
        assert connection.versions.finalized_features["transaction.version"] >= 2
    epochs, _, _ = await run_transactions(kafka_cluster.bootstrap_servers)
    # KIP-890 part 2: every EndTxn bumps the epoch, and its answer hands the new one over.
    assert epochs == [epochs[0], epochs[0] + 1, epochs[0] + 2, epochs[0] + 3]
    assert versions_of(wire_versions, ApiKey.PRODUCE) == {13}  # v12+ adds the partition
    assert versions_of(wire_versions, ApiKey.END_TXN) == {5}
    assert versions_of(wire_versions, ApiKey.TXN_OFFSET_COMMIT) == {6}  # by topic id
    assert versions_of(wire_versions, ApiKey.ADD_PARTITIONS_TO_TXN) == set()
    assert versions_of(wire_versions, ApiKey.ADD_OFFSETS_TO_TXN) == set()


async def test_transactions_v1_when_the_broker_finalized_version_1(
    kafka_cluster_factory, wire_versions: list[tuple[int, int]]
) -> None:
    cluster = kafka_cluster_factory()
    async with Cluster(cluster.bootstrap_servers) as client:
        connection = await client.any_connection()
        downgrade = UpdateFeaturesRequest(
            timeout_ms=30_000,
            feature_updates=[
                m_update_features.FeatureUpdateKey(
                    feature="transaction.version", max_version_level=1, upgrade_type=2
                )
            ],
        )
        answer = await connection.send(downgrade)
        assert answer.error_code == 0, answer.error_message  # v2: no per-feature results
    for _ in range(50):  # new connections see the finalized level once the broker has it
        async with Cluster(cluster.bootstrap_servers) as client:
            connection = await client.any_connection()
            if connection.versions.finalized_features.get("transaction.version") == 1:
                break
        await asyncio.sleep(0.1)
    assert connection.versions.finalized_features["transaction.version"] == 1
    wire_versions.clear()
    epochs, _, _ = await run_transactions(cluster.bootstrap_servers)
    # Transactions v1: the epoch only changes when the client asks (InitProducerId).
    assert epochs == [epochs[0]] * 4
    assert versions_of(wire_versions, ApiKey.PRODUCE) == {11}
    assert versions_of(wire_versions, ApiKey.ADD_PARTITIONS_TO_TXN) == {3}
    assert versions_of(wire_versions, ApiKey.ADD_OFFSETS_TO_TXN) == {4}
    assert versions_of(wire_versions, ApiKey.TXN_OFFSET_COMMIT) == {4}
    assert versions_of(wire_versions, ApiKey.END_TXN) == {4}


async def test_share_group_codecs_on_kafka_4(kafka_cluster) -> None:
    """A share-group member joins (KIP-932) and the group is described back (codecs smoke test)."""
    topic = unique("share")
    group = unique("share-group")
    member_id = uuid.uuid4().hex
    async with Admin(bootstrap_servers=kafka_cluster.bootstrap_servers) as admin:
        assert (await admin.create_topics([NewTopic(topic, 2, 1)]))[topic].ok
    async with Cluster(kafka_cluster.bootstrap_servers) as cluster:
        info = await cluster.wait_for_topic(topic)
        join = ShareGroupHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=0, subscribed_topic_names=[topic]
        )
        assigned: set[int] = set()
        epoch = 0
        for _ in range(50):  # the share coordinator loads on first use; then the assignment comes
            version = (await cluster.coordinator_connection(group)).versions.version_for(
                ShareGroupHeartbeatRequest.API_KEY
            )
            assert version == 1
            answer = await cluster.send_to_coordinator(group, join, version)
            if answer.error_code in (
                COORDINATOR_LOAD_IN_PROGRESS,
                COORDINATOR_NOT_AVAILABLE,
                NOT_COORDINATOR,
            ):
                cluster.invalidate_coordinator(group)
                await asyncio.sleep(0.2)
                continue
            assert answer.error_code == 0, answer.error_message
            epoch = answer.member_epoch
            if answer.assignment is not None:
                assigned = {
                    p
                    for tps in answer.assignment.topic_partitions
                    if tps.topic_id == info.topic_id
                    for p in tps.partitions
                }
            if assigned == {0, 1}:
                break
            join = ShareGroupHeartbeatRequest(
                group_id=group, member_id=member_id, member_epoch=epoch
            )
            await asyncio.sleep(0.1)
        assert epoch >= 1 and assigned == {0, 1}

        described = await cluster.send_to_coordinator(
            group, ShareGroupDescribeRequest(group_ids=[group])
        )
        (state,) = described.groups
        assert state.error_code == 0 and state.group_id == group
        assert [m.member_id for m in state.members] == [member_id]

        leave = ShareGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=-1)
        left = await cluster.send_to_coordinator(group, leave)
        assert left.error_code == 0 and left.member_epoch == -1


async def test_list_offsets_gives_the_broker_the_request_timeout(
    kafka_cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ListOffsets v10+ carries TimeoutMs (KIP-1075): the client's request timeout, not 0."""
    sent: list[tuple[int, Any]] = []
    original = KafkaFraming.send_request

    def recording(self: KafkaFraming, request: Any, version: int) -> Any:
        if request.API_KEY == ApiKey.LIST_OFFSETS:
            sent.append((version, request))
        return original(self, request, version)

    monkeypatch.setattr(KafkaFraming, "send_request", recording)
    topic = unique("v4-timeout")
    tp = TopicPartition(topic, 0)
    servers = kafka_cluster.bootstrap_servers
    async with Admin(bootstrap_servers=servers, request_timeout_ms=12_345) as admin:
        assert (await admin.create_topics([NewTopic(topic, 1, 1)]))[topic].ok
        assert (await admin.list_offsets({tp: -1}))[tp].offset == 0
    # (A lookup right after creating the topic may be retried.)
    assert {(version, request.timeout_ms) for version, request in sent} == {(11, 12_345)}
    sent.clear()
    async with Consumer(bootstrap_servers=servers, request_timeout_ms=23_456) as consumer:
        assert await consumer.end_offsets([tp]) == {tp: 0}
    assert {(version, request.timeout_ms) for version, request in sent} == {(11, 23_456)}
