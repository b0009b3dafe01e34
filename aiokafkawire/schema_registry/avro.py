"""Avro serializer and deserializer in the Confluent wire format (fastavro underneath).

``AvroSerializer(client, schema_str)`` and ``AvroDeserializer(client)`` take confluent-kafka's
arguments; each is an async callable ``await serializer(obj, ctx)``.
"""

from __future__ import annotations

import io
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

__all__ = ["AvroDeserializer", "AvroSerializer"]


def _fastavro() -> Any:
    try:
        import fastavro
    except ImportError as exc:  # pragma: no cover - the 'registry' extra brings it
        raise ConfigError("Avro needs fastavro: pip install 'aiokafkawire[registry]'") from exc
    return fastavro


def _parsed(schema_str: str) -> Any:
    try:
        return _fastavro().parse_schema(json.loads(schema_str))
    except (ValueError, TypeError, KeyError) as exc:
        raise SerializationError(f"invalid Avro schema: {exc}") from exc


def _full_name(parsed: Any) -> str | None:
    return parsed.get("name") if isinstance(parsed, dict) else None


class AvroSerializer(RegistrySerializer):
    """Serializes Python objects (dicts, or anything ``to_dict`` turns into one) with Avro.

    ``conf``: ``auto.register.schemas`` (default True), ``use.latest.version`` (serialize with
    the subject's latest schema instead), ``normalize.schemas``, ``subject.name.strategy``.
    """

    schema_type = "AVRO"

    def __init__(
        self,
        schema_registry_client: AsyncSchemaRegistryClient,
        schema_str: str | Schema | None = None,
        to_dict: Callable[[Any, SerializationContext], Mapping[str, Any]] | None = None,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(schema_registry_client, schema_str, conf)
        self._to_dict = to_dict
        self._parsed = _parsed(self._schema.schema_str) if self._schema is not None else None
        self._writers: dict[int, Any] = {}

    def record_name(self) -> str | None:
        """The record schema's full name."""
        return _full_name(self._parsed)

    async def __call__(self, obj: Any, ctx: SerializationContext) -> bytes | None:
        """``obj`` in the wire format (None stays None: a tombstone)."""
        if obj is None:
            return None
        schema_id, schema = await self.schema_for(ctx)
        parsed = self._writers.get(schema_id)
        if parsed is None:
            parsed = self._writers[schema_id] = _parsed(schema.schema_str)
        record = self._to_dict(obj, ctx) if self._to_dict is not None else obj
        out = io.BytesIO()
        try:
            _fastavro().schemaless_writer(out, parsed, record)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SerializationError(
                f"{ctx.topic} {ctx.field.value}: the value does not match the Avro schema: {exc}"
            ) from exc
        return pack_payload(schema_id, out.getvalue())


class AvroDeserializer:
    """Reads Confluent-framed Avro: the writer's schema comes from the registry by id.

    ``schema_str`` is the reader's schema (schema evolution: fields added with defaults are
    filled in); without it records are read with the writer's schema.  ``from_dict`` turns the
    decoded dict into your type (a dataclass, a generated class).
    """

    def __init__(
        self,
        schema_registry_client: AsyncSchemaRegistryClient,
        schema_str: str | Schema | None = None,
        from_dict: Callable[[dict[str, Any], SerializationContext], Any] | None = None,
        return_record_name: bool = False,
    ) -> None:
        self._client = schema_registry_client
        text = schema_str.schema_str if isinstance(schema_str, Schema) else schema_str
        self._reader = _parsed(text) if text is not None else None
        self._from_dict = from_dict
        self._return_record_name = return_record_name
        self._writers: dict[int, Any] = {}

    async def __call__(self, data: bytes | None, ctx: SerializationContext) -> Any:
        """The object ``data`` encodes (None stays None)."""
        if data is None:
            return None
        schema_id, payload = unpack_payload(data, ctx)
        writer = self._writers.get(schema_id)
        if writer is None:
            schema = await self._client.get_schema(schema_id)
            writer = self._writers[schema_id] = _parsed(schema.schema_str)
        try:
            record = _fastavro().schemaless_reader(
                io.BytesIO(payload),
                writer,
                self._reader if self._reader is not None else writer,
                return_record_name=self._return_record_name,
            )
        except (ValueError, TypeError, KeyError, EOFError, StopIteration) as exc:
            raise SerializationError(
                f"{ctx.topic} {ctx.field.value}: schema id {schema_id} cannot read it: {exc!r}"
            ) from exc
        return self._from_dict(record, ctx) if self._from_dict is not None else record
