"""Tiered storage offsets (KIP-405, KIP-1005, KIP-1023) in ``list_offsets``, on Apache Kafka 4.4
and 3.9 without tiered storage: what the brokers answer, and the ListOffsets version each spec
needs."""

from __future__ import annotations

import asyncio

import pytest
from _consumer_helpers import produce_values
from _kafka_helpers import create_topic

from aiokafkawire import errors
from aiokafkawire.admin import Admin, ListedOffset, OffsetSpec
from aiokafkawire.protocol.messages import ListOffsetsRequest
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing.pytest_plugin import broker_kind_params

pytestmark = pytest.mark.integration


@pytest.fixture(params=broker_kind_params(("kafka", "kafka39")))
def kafka(request: pytest.FixtureRequest) -> KafkaCluster:
    """Apache Kafka 4.4 and 3.9."""
    fixture = {"kafka": "kafka_cluster", "kafka39": "kafka_cluster_39"}[request.param]
    cluster: KafkaCluster = request.getfixturevalue(fixture)
    return cluster


async def test_tiered_storage_offsets_without_tiered_storage(kafka: KafkaCluster) -> None:
    bootstrap = kafka.bootstrap_servers
    topic = await create_topic(bootstrap, "tiered", 1)
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 5)
    tp = TopicPartition(topic, 0)
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.delete_records({tp: 2})
        sent: list[ListOffsetsRequest] = []
        connection = await admin.cluster.connection(admin.cluster.metadata.leader_for(topic, 0))
        send = connection.send

        async def recording(request: ListOffsetsRequest, version: int | None = None, **kw: int):
            sent.append(request)
            return await send(request, version, **kw)

        connection.send = recording  # type: ignore[method-assign]

        async def lookup(spec: OffsetSpec) -> ListedOffset:
            return (await admin.list_offsets({tp: spec}, raise_on_error=False))[tp]

        assert (await lookup(OffsetSpec.earliest())).offset == 2
        # Without tiered storage the local log is the whole log: it starts at the log start.
        local = await lookup(OffsetSpec.earliest_local())
        assert (local.offset, local.error) == (2, None)
        # Nothing was copied to tiered storage: offset -1, no error.
        tiered = await lookup(OffsetSpec.latest_tiered())
        assert (tiered.offset, tiered.timestamp, tiered.error) == (-1, -1, None)
        assert [r.topics[0].partitions[0].timestamp for r in sent] == [-2, -4, -5]
        pending = await lookup(OffsetSpec.earliest_pending_upload())
        if (kafka.version or "").startswith("4."):  # ListOffsets v11
            assert (pending.offset, pending.error) == (-1, None)
        else:  # Kafka 3.9 speaks ListOffsets up to v9: refused here, nothing sent
            assert isinstance(pending.error, errors.UnsupportedVersionForBrokerError)
            assert "v11" in str(pending.error)
            assert len(sent) == 3
