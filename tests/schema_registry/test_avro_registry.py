"""Schema Registry client and Avro serializers against a real registry (Apicurio, the Confluent
API), checked both ways against confluent-kafka's own serializers (issue 22)."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from aiokafkawire.schema_registry import (
    AsyncSchemaRegistryClient,
    MessageField,
    Schema,
    SchemaRegistryError,
    SerializationContext,
    SerializationError,
)
from aiokafkawire.schema_registry.avro import AvroDeserializer, AvroSerializer
from aiokafkawire.testing.registry import SchemaRegistryServer

ck_registry = pytest.importorskip("confluent_kafka.schema_registry")
ck_avro = pytest.importorskip("confluent_kafka.schema_registry.avro")
ck_serialization = pytest.importorskip("confluent_kafka.serialization")
pytest.importorskip("fastavro")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

USER_V1 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "example",
        "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}],
    }
)
USER_V2 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "example",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "age", "type": "int"},
            {"name": "email", "type": "string", "default": "none"},
        ],
    }
)


def topic() -> str:
    return f"users-{uuid.uuid4().hex[:8]}"


# confluent-kafka's deserializers look subjects up through the registry's associations API by
# default, which Apicurio does not serve: name the topic strategy, as an Apicurio user would.
THEIR_DESERIALIZER_CONF = {"subject.name.strategy.type": "TOPIC"}


def their_registry(server: SchemaRegistryServer) -> object:
    return ck_registry.SchemaRegistryClient({"url": server.url, "timeout": 30})


def their_context(name: str) -> object:
    return ck_serialization.SerializationContext(name, ck_serialization.MessageField.VALUE)


async def test_registry_calls(schema_registry: SchemaRegistryServer) -> None:
    subject = f"{topic()}-value"
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        schema_id = await client.register_schema(subject, Schema(USER_V1))
        assert await client.register_schema(subject, Schema(USER_V1)) == schema_id  # cached
        assert json.loads((await client.get_schema(schema_id)).schema_str)["name"] == "User"
        found = await client.lookup_schema(subject, Schema(USER_V1))
        assert (found.schema_id, found.version) == (schema_id, 1)
        assert await client.test_compatibility(subject, Schema(USER_V2))
        v2 = await client.register_schema(subject, Schema(USER_V2))
        latest = await client.get_latest_version(subject)
        assert (latest.schema_id, latest.version) == (v2, 2)
        assert await client.get_versions(subject) == [1, 2]
        assert subject in await client.get_subjects()
        assert await client.delete_subject(subject) == [1, 2]
        with pytest.raises(SchemaRegistryError) as failure:
            await client.get_latest_version(subject)
        assert failure.value.http_status_code == 404


async def test_records_we_write_are_read_by_confluent_kafka(
    schema_registry: SchemaRegistryServer,
) -> None:
    name = topic()
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        serializer = AvroSerializer(client, USER_V1)
        data = await serializer({"name": "ada", "age": 36}, SerializationContext(name))
    assert data is not None and data[0] == 0
    theirs = ck_avro.AvroDeserializer(their_registry(schema_registry))
    assert theirs(data, their_context(name)) == {"name": "ada", "age": 36}


async def test_records_confluent_kafka_writes_are_read_by_us(
    schema_registry: SchemaRegistryServer,
) -> None:
    name = topic()
    their_client = their_registry(schema_registry)
    data = ck_avro.AvroSerializer(their_client, USER_V1)(
        {"name": "bo", "age": 7}, their_context(name)
    )
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        ours = AvroDeserializer(client)
        assert await ours(data, SerializationContext(name)) == {"name": "bo", "age": 7}


async def test_schema_evolution_across_the_two_clients(
    schema_registry: SchemaRegistryServer,
) -> None:
    name = topic()
    their_client = their_registry(schema_registry)
    old = ck_avro.AvroSerializer(their_client, USER_V1)(
        {"name": "cy", "age": 1}, their_context(name)
    )
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        # a v2 reader fills the added field's default into confluent-kafka's v1 record
        assert await AvroDeserializer(client, USER_V2)(old, SerializationContext(name)) == {
            "name": "cy",
            "age": 1,
            "email": "none",
        }
        new = await AvroSerializer(client, USER_V2)(
            {"name": "di", "age": 2, "email": "di@example.org"}, SerializationContext(name)
        )
    # confluent-kafka's v1 reader drops the field it does not know
    v1_reader = ck_avro.AvroDeserializer(their_client, USER_V1, conf=THEIR_DESERIALIZER_CONF)
    assert v1_reader(new, their_context(name)) == {"name": "di", "age": 2}


async def test_many_records_of_one_unknown_schema_cost_one_registry_request(
    schema_registry: SchemaRegistryServer,
) -> None:
    name = topic()
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as writer_client:
        data = await AvroSerializer(writer_client, USER_V1)(
            {"name": "ed", "age": 3}, SerializationContext(name)
        )
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        deserializer = AvroDeserializer(client)
        ctx = SerializationContext(name)
        records = await asyncio.gather(*(deserializer(data, ctx) for _ in range(50)))
        assert records == [{"name": "ed", "age": 3}] * 50
        assert client.requests_sent == 1


async def test_bad_input_is_a_typed_error_naming_the_record(
    schema_registry: SchemaRegistryServer,
) -> None:
    name = topic()
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        ctx = SerializationContext(name, MessageField.KEY)
        with pytest.raises(SerializationError, match=f"unknown magic byte 7 \\({name} key\\)"):
            await AvroDeserializer(client)(b"\x07\x00\x00\x00\x01abc", ctx)
        with pytest.raises(SerializationError, match="does not match the Avro schema"):
            await AvroSerializer(client, USER_V1)({"name": "x"}, ctx)
    with pytest.raises(Exception, match="unknown schema registry settings"):
        AsyncSchemaRegistryClient({"url": schema_registry.url, "basic.auth.user": "x"})
    secret = AsyncSchemaRegistryClient(
        {"url": schema_registry.url, "basic.auth.user.info": "me:hunter2"}
    )
    assert "hunter2" not in repr(secret)
