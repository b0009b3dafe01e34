"""Hand-derived bytes for Kafka 4.x versions, read off the specs in ``specs/kafka-4.4.0``.

``test_golden_kafka_python.py`` compares every API and version with kafka-python; these few cases
spell the bytes out independently of both codecs, for new versions whose layout changed.
"""

from __future__ import annotations

import uuid

import pytest

from aiokafkawire.protocol.messages import (
    ApiVersionsRequest,
    EndTxnResponse,
    Message,
    OffsetCommitRequest,
    ProduceRequest,
    ShareGroupHeartbeatRequest,
)
from aiokafkawire.protocol.messages import offset_commit as m_offset_commit
from aiokafkawire.protocol.messages import produce as m_produce

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")
CASES = [
    pytest.param(
        # v5 (KIP-1242) appends ClusterId (compact nullable string) and NodeId (int32) as regular
        # fields after the v3 client software name and version.
        ApiVersionsRequest(
            client_software_name="c", client_software_version="1", cluster_id="abc", node_id=3
        ),
        5,
        "02 63 | 02 31 | 04 616263 | 00000003 | 00",
        id="ApiVersionsRequest-v5",
    ),
    pytest.param(
        ApiVersionsRequest(client_software_name="c", client_software_version="1"),
        5,
        "02 63 | 02 31 | 00 | ffffffff | 00",  # unknown cluster: null and -1
        id="ApiVersionsRequest-v5-defaults",
    ),
    pytest.param(
        # v13 (KIP-516) names the topic by its 16-byte id instead of a compact string.
        ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout_ms=1000,
            topic_data=[
                m_produce.TopicProduceData(
                    topic_id=TOPIC_ID,
                    partition_data=[m_produce.PartitionProduceData(index=0, records=b"xyz")],
                )
            ],
        ),
        13,
        "00 | ffff | 000003e8 | 02 | 0123456789abcdef0123456789abcdef | 02 | 00000000 | 04 78797a"
        " | 00 | 00 | 00",
        id="ProduceRequest-v13",
    ),
    pytest.param(
        # v5 (KIP-890 part 2) answers with the producer id and the bumped epoch.
        EndTxnResponse(throttle_time_ms=0, error_code=0, producer_id=7, producer_epoch=2),
        5,
        "00000000 | 0000 | 0000000000000007 | 0002 | 00",
        id="EndTxnResponse-v5",
    ),
    pytest.param(
        # v10 (KIP-848) names the topic by id; the partition layout is v8's.
        OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=4,
            member_id="m",
            group_instance_id=None,
            topics=[
                m_offset_commit.OffsetCommitRequestTopic(
                    topic_id=TOPIC_ID,
                    partitions=[
                        m_offset_commit.OffsetCommitRequestPartition(
                            partition_index=1,
                            committed_offset=42,
                            committed_leader_epoch=-1,
                            committed_metadata=None,
                        )
                    ],
                )
            ],
        ),
        10,
        "02 67 | 00000004 | 02 6d | 00 | 02 | 0123456789abcdef0123456789abcdef | 02 | 00000001"
        " | 000000000000002a | ffffffff | 00 | 00 | 00 | 00",
        id="OffsetCommitRequest-v10",
    ),
    pytest.param(
        # Share groups (KIP-932) start at v1 in Kafka 4.x.
        ShareGroupHeartbeatRequest(
            group_id="g", member_id="m", member_epoch=0, rack_id=None, subscribed_topic_names=["t"]
        ),
        1,
        "02 67 | 02 6d | 00000000 | 00 | 02 02 74 | 00",
        id="ShareGroupHeartbeatRequest-v1",
    ),
]


@pytest.mark.parametrize(("message", "version", "expected"), CASES)
def test_bytes_as_the_spec_lays_them_out(message: Message, version: int, expected: str) -> None:
    wire = bytes.fromhex(expected.replace("|", " "))
    assert message.encode(version).hex(" ") == wire.hex(" ")
    assert type(message).decode(wire, version) == message
