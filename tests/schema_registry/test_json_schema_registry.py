"""JSON Schema serializers against a real registry, both ways with confluent-kafka's (issue 22)."""

from __future__ import annotations

import json
import uuid

import pytest

from aiokafkawire.schema_registry import (
    AsyncSchemaRegistryClient,
    SerializationContext,
    SerializationError,
)
from aiokafkawire.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from aiokafkawire.testing.registry import SchemaRegistryServer

ck_registry = pytest.importorskip("confluent_kafka.schema_registry")
ck_json = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
ck_serialization = pytest.importorskip("confluent_kafka.serialization")
pytest.importorskip("jsonschema")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ORDER = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
        "required": ["id", "item"],
    }
)


def their_context(topic: str) -> object:
    return ck_serialization.SerializationContext(topic, ck_serialization.MessageField.VALUE)


async def test_json_records_cross_between_the_two_clients(
    schema_registry: SchemaRegistryServer,
) -> None:
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    their_client = ck_registry.SchemaRegistryClient({"url": schema_registry.url, "timeout": 30})
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        ours = await JSONSerializer(ORDER, client)(
            {"id": 1, "item": "tea"}, SerializationContext(topic)
        )
        assert ck_json.JSONDeserializer(ORDER, conf={"subject.name.strategy.type": "TOPIC"})(
            ours, their_context(topic)
        ) == {
            "id": 1,
            "item": "tea",
        }
        theirs = ck_json.JSONSerializer(ORDER, their_client)(
            {"id": 2, "item": "jam"}, their_context(topic)
        )
        read = await JSONDeserializer(None, schema_registry_client=client)(
            theirs, SerializationContext(topic)
        )
        assert read == {"id": 2, "item": "jam"}
        with pytest.raises(SerializationError, match=r"does not match the JSON schema at \(root\)"):
            await JSONSerializer(ORDER, client)({"id": 3}, SerializationContext(topic))


ORDER_V2 = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "item": {"type": "string"},
            "note": {"type": "string", "default": ""},
        },
        "required": ["id", "item"],
    }
)


async def test_schema_evolution_across_the_two_clients(
    schema_registry: SchemaRegistryServer,
) -> None:
    """An optional field added in v2: each client's records stay readable by the other's."""
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    their_client = ck_registry.SchemaRegistryClient({"url": schema_registry.url, "timeout": 30})
    old = ck_json.JSONSerializer(ORDER, their_client)(
        {"id": 1, "item": "tea"}, their_context(topic)
    )
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        # a v2 reader validates confluent-kafka's v1 record (the new field is optional)
        assert await JSONDeserializer(ORDER_V2)(old, SerializationContext(topic)) == {
            "id": 1,
            "item": "tea",
        }
        new = await JSONSerializer(ORDER_V2, client)(
            {"id": 2, "item": "jam", "note": "fragile"}, SerializationContext(topic)
        )
        v1_id = int.from_bytes(old[1:5], "big")
        v2_id = int.from_bytes(new[1:5], "big")
        assert v1_id != v2_id  # v2 was registered as a new version of the subject
        versions = await client.get_versions(f"{topic}-value")
        assert len(versions) == 2
    # confluent-kafka's v1 reader accepts the v2 record (v1 allows other properties)
    v1_reader = ck_json.JSONDeserializer(ORDER, conf={"subject.name.strategy.type": "TOPIC"})
    assert v1_reader(new, their_context(topic)) == {"id": 2, "item": "jam", "note": "fragile"}
