"""Produce v13 names topics by id (KIP-516): the request, the answer, and the fallback to v12.

A scripted broker (``fake_broker``) answers Metadata, InitProducerId and Produce, so the test sees
the exact request the producer writes and controls whether the topic has an id.
"""

from __future__ import annotations

import uuid
from typing import Any

from fake_broker import FakeBroker

from aiokafkawire.producer import Producer
from aiokafkawire.protocol.messages import (
    InitProducerIdResponse,
    MetadataResponse,
    ProduceResponse,
)
from aiokafkawire.protocol.messages import metadata as m_metadata
from aiokafkawire.protocol.messages import produce as m_produce
from aiokafkawire.protocol.records import iter_batches

TOPIC = "ids"
ZERO = uuid.UUID(int=0)


def scripted_broker(topic_id: uuid.UUID, produces: list[tuple[int, Any]]) -> FakeBroker:
    """A one-broker cluster holding ``TOPIC`` (1 partition) with ``topic_id`` (zero: no id)."""
    broker: FakeBroker

    async def handler(header: Any, request: Any) -> Any:
        if header.api_key == 3:
            return MetadataResponse(
                brokers=[
                    m_metadata.MetadataResponseBroker(
                        node_id=1, host="127.0.0.1", port=broker.port
                    )
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
        if header.api_key == 22:
            return InitProducerIdResponse(producer_id=7, producer_epoch=0)
        if header.api_key == 0:
            produces.append((header.api_version, request))
            (topic,) = request.topic_data
            (partition,) = topic.partition_data
            return ProduceResponse(
                responses=[
                    m_produce.TopicProduceResponse(
                        name=topic.name,
                        topic_id=topic.topic_id,
                        partition_responses=[
                            m_produce.PartitionProduceResponse(
                                index=partition.index, base_offset=42
                            )
                        ],
                    )
                ]
            )
        raise AssertionError(f"unexpected request {request!r}")

    broker = FakeBroker(handler)
    return broker


async def produce_one(topic_id: uuid.UUID) -> tuple[list[tuple[int, Any]], int]:
    produces: list[tuple[int, Any]] = []
    async with scripted_broker(topic_id, produces) as broker:
        async with Producer(bootstrap_servers=f"127.0.0.1:{broker.port}") as producer:
            handle = await producer.send(TOPIC, b"value", partition=0)
            metadata = await handle
    return produces, metadata.offset


async def test_a_topic_with_an_id_is_produced_to_by_id() -> None:
    topic_id = uuid.uuid4()
    produces, offset = await produce_one(topic_id)
    (version, request), *_ = produces
    assert version == 13
    (topic,) = request.topic_data
    assert topic.topic_id == topic_id and topic.name == ""
    (batch,) = iter_batches(topic.partition_data[0].records)
    assert [r.value for r in batch] == [b"value"]
    assert offset == 42  # the answer, keyed by the id, resolved the record


async def test_a_topic_without_an_id_falls_back_to_names_and_v12() -> None:
    produces, offset = await produce_one(ZERO)
    (version, request), *_ = produces
    assert version == 12
    (topic,) = request.topic_data
    assert topic.name == TOPIC and topic.topic_id == ZERO
    assert offset == 42
