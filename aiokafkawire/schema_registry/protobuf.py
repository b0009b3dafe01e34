"""Protobuf serializer and deserializer in the Confluent wire format (the ``protobuf`` package).

``ProtobufSerializer(msg_type, client, conf)`` and ``ProtobufDeserializer(msg_type, conf)``
take confluent-kafka's arguments; each is an async callable ``await serializer(obj, ctx)``.

The wire format is the magic byte, the 4-byte schema id, then the *message indexes* (where the
message sits in its .proto file: a zig-zag varint count and that many zig-zag varint indexes,
the first message of the file, ``[0]``, written as the single byte 0), then the message.

Schemas are registered as confluent-kafka registers them: the base64 of the file's serialized
``FileDescriptorProto`` (no .proto text printer is needed, and Confluent Schema Registry and
Apicurio both accept it), with a reference per imported file, registered under the file's name
as subject.  Imports of well-known files (``google/protobuf/``, ``google/type/``,
``confluent/``) are not registered (``skip.known.types``, default true): every registry knows
them.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Mapping
from typing import Any

from aiokafkawire.errors import ConfigError
from aiokafkawire.schema_registry._base import RegistrySerializer
from aiokafkawire.schema_registry._client import (
    AsyncSchemaRegistryClient,
    Schema,
    SchemaReference,
)
from aiokafkawire.schema_registry.serde import (
    SerializationContext,
    SerializationError,
    pack_payload,
    unpack_payload,
)

__all__ = [
    "ProtobufDeserializer",
    "ProtobufSerializer",
    "decode_message_indexes",
    "encode_message_indexes",
    "message_indexes",
    "reference_subject_name_strategy",
]

_BUILTIN_PREFIXES = ("google/protobuf/", "google/type/", "confluent/")

#: ``strategy(ctx, file_name) -> subject`` of a referenced (imported) .proto file.
ReferenceSubjectNameStrategy = Callable[[SerializationContext, str], str]


def reference_subject_name_strategy(ctx: SerializationContext, file_name: str) -> str:
    """The imported file's name (``example/address.proto``), confluent-kafka's default."""
    return file_name


def _is_builtin(file_name: str) -> bool:
    return file_name.startswith(_BUILTIN_PREFIXES)


def _message_base() -> Any:
    try:
        from google.protobuf.message import Message
    except ImportError as exc:  # pragma: no cover - the 'registry' extra brings it
        raise ConfigError("Protobuf needs protobuf: pip install 'aiokafkawire[registry]'") from exc
    return Message


def _check_message_type(msg_type: Any, who: str) -> None:
    if not (isinstance(msg_type, type) and issubclass(msg_type, _message_base())):
        raise ConfigError(f"{who} needs a generated Protobuf message class, got {msg_type!r}")


def message_indexes(descriptor: Any) -> list[int]:
    """Where the message ``descriptor`` sits in its file: the index of its top-level message
    among the file's messages, then of each nested message inside its parent."""
    path: list[int] = []
    current = descriptor
    while current.containing_type is not None:
        parent = current.containing_type
        path.append(list(parent.nested_types).index(current))
        current = parent
    top = list(current.file.message_types_by_name.values())
    path.append(top.index(current))
    return path[::-1]


def _zigzag_varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_message_indexes(indexes: list[int]) -> bytes:
    """The message indexes as the wire format writes them (``[0]`` is the single byte 0)."""
    if indexes == [0]:
        return b"\x00"
    return _zigzag_varint(len(indexes)) + b"".join(_zigzag_varint(i) for i in indexes)


def _read_zigzag_varint(data: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise SerializationError("truncated or overlong message index varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), at


def decode_message_indexes(payload: memoryview) -> tuple[list[int], memoryview]:
    """``(indexes, message bytes)`` of a framed payload (after the schema id)."""
    count, at = _read_zigzag_varint(payload, 0)
    if count == 0:
        return [0], payload[at:]
    if count < 0 or count > len(payload):
        raise SerializationError(f"invalid message index count {count}")
    indexes = []
    for _ in range(count):
        index, at = _read_zigzag_varint(payload, at)
        indexes.append(index)
    return indexes, payload[at:]


def _schema_str(file_descriptor: Any) -> str:
    return base64.standard_b64encode(file_descriptor.serialized_pb).decode("ascii")


class ProtobufSerializer(RegistrySerializer):
    """Serializes instances of the generated message class ``msg_type``.

    ``conf``: ``auto.register.schemas`` (default True), ``use.latest.version``,
    ``normalize.schemas``, ``subject.name.strategy`` (the record strategies use the message's
    full name), ``skip.known.types`` (default True: imports of well-known files are not
    registered as references), ``reference.subject.name.strategy`` (the subject an imported
    file is registered under; default its file name) and ``use.deprecated.format`` (only
    False: the old index format is not written, as in confluent-kafka).
    """

    schema_type = "PROTOBUF"

    def __init__(
        self,
        msg_type: type[Any],
        schema_registry_client: AsyncSchemaRegistryClient,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        _check_message_type(msg_type, "ProtobufSerializer")
        settings = dict(conf or {})
        self._skip_known_types = bool(settings.pop("skip.known.types", True))
        self._reference_strategy: ReferenceSubjectNameStrategy = settings.pop(
            "reference.subject.name.strategy", reference_subject_name_strategy
        )
        if settings.pop("use.deprecated.format", False):
            raise ConfigError("use.deprecated.format is not supported (nor by confluent-kafka)")
        descriptor = msg_type.DESCRIPTOR
        super().__init__(
            schema_registry_client, Schema(_schema_str(descriptor.file), "PROTOBUF"), settings
        )
        self._msg_type = msg_type
        self._indexes = encode_message_indexes(message_indexes(descriptor))
        self._references_done = False
        self._references_lock = asyncio.Lock()

    def record_name(self) -> str | None:
        """The message's full name (``package.Message``)."""
        return str(self._msg_type.DESCRIPTOR.full_name)

    async def _references(self, ctx: SerializationContext, file_descriptor: Any) -> list[Any]:
        """Register (or look up) every imported file, depth first; their references."""
        references = []
        for dependency in file_descriptor.dependencies:
            if self._skip_known_types and _is_builtin(dependency.name):
                continue
            nested = await self._references(ctx, dependency)
            subject = self._reference_strategy(ctx, dependency.name)
            schema = Schema(_schema_str(dependency), "PROTOBUF", tuple(nested))
            if self._auto_register:
                await self._client.register_schema(subject, schema, self._normalize)
            found = await self._client.lookup_schema(subject, schema, self._normalize)
            references.append(SchemaReference(dependency.name, subject, found.version))
        return references

    async def schema_for(self, ctx: SerializationContext) -> tuple[int, Schema]:
        """The schema id to write with; the imported files are registered first, once."""
        if not self._references_done and not self._use_latest:
            async with self._references_lock:
                if not self._references_done:
                    file_descriptor = self._msg_type.DESCRIPTOR.file
                    references = await self._references(ctx, file_descriptor)
                    assert self._schema is not None
                    self._schema = Schema(self._schema.schema_str, "PROTOBUF", tuple(references))
                    self._references_done = True
        return await super().schema_for(ctx)

    async def __call__(self, obj: Any, ctx: SerializationContext) -> bytes | None:
        """``obj`` in the wire format (None stays None: a tombstone)."""
        if obj is None:
            return None
        if not isinstance(obj, self._msg_type):
            raise SerializationError(
                f"{ctx.topic} {ctx.field.value}: expected a {self._msg_type.__name__} message, "
                f"got {type(obj).__name__}"
            )
        schema_id, _ = await self.schema_for(ctx)
        return pack_payload(schema_id, self._indexes + obj.SerializeToString())


class ProtobufDeserializer:
    """Reads Confluent-framed Protobuf into instances of ``msg_type``.

    As confluent-kafka's, it needs no registry: the message class is the reader's schema
    (fields the writer added are kept as unknown fields, fields it lacks read as defaults).
    ``conf``: ``use.deprecated.format`` (only False).
    """

    def __init__(self, msg_type: type[Any], conf: Mapping[str, Any] | None = None) -> None:
        _check_message_type(msg_type, "ProtobufDeserializer")
        settings = dict(conf or {})
        if settings.pop("use.deprecated.format", False):
            raise ConfigError("use.deprecated.format is not supported (nor by confluent-kafka)")
        if settings:
            raise ConfigError(
                f"unknown ProtobufDeserializer settings {sorted(settings)} "
                "(known: ['use.deprecated.format'])"
            )
        self._msg_type = msg_type

    async def __call__(self, data: bytes | None, ctx: SerializationContext) -> Any:
        """The message ``data`` encodes (None stays None)."""
        if data is None:
            return None
        return self.decode(data, ctx)

    def decode(self, data: bytes, ctx: SerializationContext) -> Any:
        """The message of framed ``data``, synchronously (no registry call is needed)."""
        schema_id, payload = unpack_payload(data, ctx)
        try:
            _, body = decode_message_indexes(payload)
        except SerializationError as exc:
            raise SerializationError(f"{ctx.topic} {ctx.field.value}: {exc}") from exc
        message = self._msg_type()
        try:
            message.ParseFromString(bytes(body))
        except Exception as exc:  # google.protobuf.message.DecodeError and kin
            raise SerializationError(
                f"{ctx.topic} {ctx.field.value}: schema id {schema_id}: not a "
                f"{self._msg_type.DESCRIPTOR.full_name}: {exc}"
            ) from exc
        return message
