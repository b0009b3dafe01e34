"""What every registry serializer shares: the serialization context, subject name strategies
and the Confluent wire format (magic byte 0, a 4-byte big-endian schema id, the payload)."""

from __future__ import annotations

import struct
from collections.abc import Callable

# The interfaces live in aiokafkawire.serialization (every client uses them); re-exported here
# under confluent-kafka's module layout.
from aiokafkawire.serialization import MessageField, SerializationContext, SerializationError

__all__ = [
    "MAGIC_BYTE",
    "MessageField",
    "SerializationContext",
    "SerializationError",
    "SubjectNameStrategy",
    "pack_payload",
    "record_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
    "unpack_payload",
]

MAGIC_BYTE = 0
_HEADER = struct.Struct(">bI")


#: ``strategy(ctx, record_name) -> subject`` (record_name: the schema's full name, if any).
SubjectNameStrategy = Callable[[SerializationContext, "str | None"], "str | None"]


def topic_subject_name_strategy(ctx: SerializationContext, record_name: str | None) -> str:
    """``<topic>-key`` / ``<topic>-value`` (the default)."""
    return f"{ctx.topic}-{ctx.field.value}"


def record_subject_name_strategy(ctx: SerializationContext, record_name: str | None) -> str:
    """The record's fully qualified name."""
    if not record_name:
        raise SerializationError("record_subject_name_strategy needs a named record schema")
    return record_name


def topic_record_subject_name_strategy(ctx: SerializationContext, record_name: str | None) -> str:
    """``<topic>-<record full name>``."""
    if not record_name:
        raise SerializationError("topic_record_subject_name_strategy needs a named record schema")
    return f"{ctx.topic}-{record_name}"


def pack_payload(schema_id: int, payload: bytes) -> bytes:
    """The Confluent wire format: magic 0, the schema id, then ``payload``."""
    return _HEADER.pack(MAGIC_BYTE, schema_id) + payload


def unpack_payload(data: bytes, ctx: SerializationContext | None = None) -> tuple[int, memoryview]:
    """``(schema_id, payload)`` of Confluent-framed ``data``; SerializationError if not framed."""
    where = f" ({ctx.topic} {ctx.field.value})" if ctx is not None else ""
    if len(data) < _HEADER.size:
        raise SerializationError(f"{len(data)} bytes are too short for the wire format{where}")
    magic, schema_id = _HEADER.unpack_from(data)
    if magic != MAGIC_BYTE:
        raise SerializationError(
            f"unknown magic byte {magic}{where}: not written by a schema-registry serializer"
        )
    return schema_id, memoryview(data)[_HEADER.size :]
