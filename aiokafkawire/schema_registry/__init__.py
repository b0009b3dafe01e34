"""Schema Registry: an asyncio client and serializers in the Confluent wire format.

Install with ``pip install 'aiokafkawire[registry]'``.  The names are confluent-kafka's, so
switching is an import change: ``AsyncSchemaRegistryClient({"url": ...})``,
``aiokafkawire.schema_registry.avro.AvroSerializer(client, schema_str)`` /
``AvroDeserializer(client)``.
"""

from __future__ import annotations

from aiokafkawire.schema_registry._client import (
    AsyncSchemaRegistryClient,
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistryError,
)
from aiokafkawire.schema_registry.serde import (
    MessageField,
    SerializationContext,
    SerializationError,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)

__all__ = [
    "AsyncSchemaRegistryClient",
    "MessageField",
    "RegisteredSchema",
    "Schema",
    "SchemaReference",
    "SchemaRegistryError",
    "SerializationContext",
    "SerializationError",
    "record_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]
