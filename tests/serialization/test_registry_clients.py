"""Registry serializers plugged straight into the clients (issue 22): our AvroSerializer as a
Producer's ``value_serializer``, AvroDeserializer as a Consumer's and a ShareConsumer's
``value_deserializer``, confluent-kafka's own AvroSerializer as our producer's serializer."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from _producer_helpers import MOCK_AUTO_CREATED_PARTITIONS, create_topic
from test_share_kafka import _setup

from aiokafkawire import Consumer
from aiokafkawire.consumer.share import ShareConsumer
from aiokafkawire.producer import Producer
from aiokafkawire.schema_registry import AsyncSchemaRegistryClient
from aiokafkawire.schema_registry.avro import AvroDeserializer, AvroSerializer
from aiokafkawire.serialization import RecordDeserializationError
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing.pytest_plugin import KafkaBootstrap
from aiokafkawire.testing.registry import SchemaRegistryServer

pytest.importorskip("fastavro")
pytestmark = [pytest.mark.integration, pytest.mark.slow]

USER = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "example",
        "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}],
    }
)
USERS = [{"name": f"u{i}", "age": i} for i in range(10)]


async def read_values(bootstrap: str, topic: str, count: int, **options: Any) -> list[Any]:
    tp = TopicPartition(topic, 0)
    async with Consumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", **options
    ) as consumer:
        consumer.assign([tp])
        got: list[Any] = []
        for _ in range(100):
            data = await consumer.getmany(tp, timeout_ms=200)
            got.extend(r.value for r in data.get(tp, []))
            if len(got) >= count:
                break
        return got


async def test_avro_serializers_as_client_options(
    kafka_bootstrap: KafkaBootstrap, schema_registry: SchemaRegistryServer
) -> None:
    topic = await create_topic(kafka_bootstrap, "avro", MOCK_AUTO_CREATED_PARTITIONS)
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as registry:
        async with Producer(
            bootstrap_servers=kafka_bootstrap, value_serializer=AvroSerializer(registry, USER)
        ) as producer:
            for user in USERS:
                await producer.send(topic, user, partition=0)
            await producer.flush()
        values = await read_values(
            kafka_bootstrap, topic, len(USERS), value_deserializer=AvroDeserializer(registry)
        )
        raw = await read_values(kafka_bootstrap, topic, len(USERS))
    assert values == USERS
    assert all(v[0] == 0 for v in raw)  # the Confluent wire format: magic byte 0, schema id


async def test_confluent_serializer_as_our_value_serializer(
    kafka_bootstrap: KafkaBootstrap, schema_registry: SchemaRegistryServer
) -> None:
    ck_registry = pytest.importorskip("confluent_kafka.schema_registry")
    ck_avro = pytest.importorskip("confluent_kafka.schema_registry.avro")
    topic = await create_topic(kafka_bootstrap, "ck-avro", MOCK_AUTO_CREATED_PARTITIONS)
    their_client = ck_registry.SchemaRegistryClient({"url": schema_registry.url, "timeout": 30})
    # Their serializer is sync (its registry client blocks on the first call, then caches).
    async with Producer(
        bootstrap_servers=kafka_bootstrap,
        value_serializer=ck_avro.AvroSerializer(their_client, USER),
    ) as producer:
        for user in USERS[:3]:
            await producer.send(topic, user, partition=0)
        await producer.flush()
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as registry:
        values = await read_values(
            kafka_bootstrap, topic, 3, value_deserializer=AvroDeserializer(registry)
        )
    assert values == USERS[:3]


async def test_avro_deserializer_on_a_share_consumer(
    kafka_cluster: KafkaCluster, schema_registry: SchemaRegistryServer
) -> None:
    """On the session's Apache Kafka 4.x (share groups are on by default there)."""
    bootstrap = kafka_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap)
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as registry:
        async with Producer(bootstrap_servers=bootstrap) as raw_producer:
            await raw_producer.send_and_wait(topic, b"not avro", partition=0)
        async with Producer(
            bootstrap_servers=bootstrap, value_serializer=AvroSerializer(registry, USER)
        ) as producer:
            for user in USERS[:3]:
                await producer.send(topic, user, partition=0)
            await producer.flush()
        values: list[Any] = []
        failures: list[RecordDeserializationError] = []
        async with ShareConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group,
            value_deserializer=AvroDeserializer(registry),
        ) as consumer:  # fmt: skip
            deadline = time.monotonic() + 30
            while (len(values) < 3 or len(failures) < 2) and time.monotonic() < deadline:
                try:
                    for records in (await consumer.getmany(timeout_ms=200)).values():
                        values.extend(r.value for r in records)
                except RecordDeserializationError as error:
                    failures.append(error)
    assert values == USERS[:3]
    # The bad record was released, so it came back (and failed) again.
    assert len(failures) >= 2
    assert {(f.topic, f.offset, f.value) for f in failures} == {(topic, 0, b"not avro")}
