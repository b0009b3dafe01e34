"""JSON Schema serializer and deserializer in the Confluent wire format (validated with
``jsonschema``); confluent-kafka's argument order (``schema_str`` first)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from aiokafkawire.errors import ConfigError
from aiokafkawire.schema_registry._base import RegistrySerializer
from aiokafkawire.schema_registry._client import AsyncSchemaRegistryClient, Schema
from aiokafkawire.schema_registry.serde import (
    SerializationContext,
    SerializationError,
    pack_payload,
    unpack_payload,
)

__all__ = ["JSONDeserializer", "JSONSerializer"]


def _validator(schema_str: str) -> Any:
    try:
        import jsonschema
    except ImportError as exc:  # pragma: no cover - the 'registry' extra brings it
        raise ConfigError(
            "JSON Schema needs jsonschema: pip install 'aiokafkawire[registry]'"
        ) from exc
    try:
        schema = json.loads(schema_str)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except (ValueError, jsonschema.SchemaError) as exc:
        raise SerializationError(f"invalid JSON schema: {exc}") from exc
    return cls(schema)


def _check(validator: Any, value: Any, ctx: SerializationContext) -> None:
    error = next(iter(validator.iter_errors(value)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise SerializationError(
            f"{ctx.topic} {ctx.field.value}: the value does not match the JSON schema at "
            f"{where}: {error.message}"
        )


class JSONSerializer(RegistrySerializer):
    """Validates a value against its JSON schema and writes it as JSON."""

    schema_type = "JSON"

    def __init__(
        self,
        schema_str: str | Schema | None,
        schema_registry_client: AsyncSchemaRegistryClient,
        to_dict: Callable[[Any, SerializationContext], Any] | None = None,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(schema_registry_client, schema_str, conf)
        self._to_dict = to_dict
        self._validators: dict[int, Any] = {}

    def record_name(self) -> str | None:
        """The schema's ``title``, as confluent-kafka names JSON records."""
        if self._schema is None:
            return None
        title = json.loads(self._schema.schema_str).get("title")
        return str(title) if title else None

    async def __call__(self, obj: Any, ctx: SerializationContext) -> bytes | None:
        """``obj`` as validated JSON in the wire format (None stays None)."""
        if obj is None:
            return None
        schema_id, schema = await self.schema_for(ctx)
        validator = self._validators.get(schema_id)
        if validator is None:
            validator = self._validators[schema_id] = _validator(schema.schema_str)
        value = self._to_dict(obj, ctx) if self._to_dict is not None else obj
        _check(validator, value, ctx)
        return pack_payload(schema_id, json.dumps(value, separators=(",", ":")).encode())


class JSONDeserializer:
    """Reads Confluent-framed JSON, validated against ``schema_str`` or the writer's schema."""

    def __init__(
        self,
        schema_str: str | Schema | None,
        from_dict: Callable[[Any, SerializationContext], Any] | None = None,
        schema_registry_client: AsyncSchemaRegistryClient | None = None,
    ) -> None:
        if schema_str is None and schema_registry_client is None:
            raise ConfigError("JSONDeserializer needs schema_str or schema_registry_client")
        text = schema_str.schema_str if isinstance(schema_str, Schema) else schema_str
        self._reader = _validator(text) if text is not None else None
        self._client = schema_registry_client
        self._from_dict = from_dict
        self._writers: dict[int, Any] = {}

    async def __call__(self, data: bytes | None, ctx: SerializationContext) -> Any:
        """The value ``data`` encodes (None stays None)."""
        if data is None:
            return None
        schema_id, payload = unpack_payload(data, ctx)
        try:
            value = json.loads(bytes(payload))
        except ValueError as exc:
            raise SerializationError(f"{ctx.topic} {ctx.field.value}: not JSON: {exc}") from exc
        validator = self._reader
        if validator is None:
            validator = self._writers.get(schema_id)
            if validator is None:
                assert self._client is not None
                schema = await self._client.get_schema(schema_id)
                validator = self._writers[schema_id] = _validator(schema.schema_str)
        _check(validator, value, ctx)
        return self._from_dict(value, ctx) if self._from_dict is not None else value
