"""The Protobuf registry format of the Spark source and sink (``keyFormat``/``valueFormat`` =
``protobuf``): registered Protobuf schemas as Spark and Arrow types, messages as rows.

A registered schema is the base64 of a serialized ``FileDescriptorProto`` (as confluent-kafka
and :mod:`aiokafkawire.schema_registry.protobuf` register it) with a reference per imported
file.  A registry that answers ``.proto`` text (Confluent Schema Registry does, whatever was
registered) is asked again for the serialized form (``?format=serialized``, as
confluent-kafka's deserializer asks); ``.proto`` text it cannot turn into one is refused with
a :class:`~aiokafkawire.errors.ConfigError` (there is no ``.proto`` parser here).
The column's message is the file's first message (message indexes ``[0]``, what the sink
writes).  Message classes are built at run time from
the descriptors (``google.protobuf`` message factory) and cached per process.

Types: 32-bit ints -> int, 64-bit ints and ``uint32`` -> bigint, ``uint64`` ->
decimal(20,0), float, double, bool, string, bytes -> binary, enums -> string (the value's
name), messages -> struct, repeated -> array, map fields -> map,
``google.protobuf.Timestamp`` -> timestamp; recursive messages are refused.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafkawire.errors import ConfigError
from aiokafkawire.schema_registry import Schema, SchemaRegistryError
from aiokafkawire.schema_registry.serde import SerializationError

__all__ = [
    "build_file",
    "fetch_files",
    "from_row",
    "message_at",
    "message_types",
    "to_row",
]

log = logging.getLogger("aiokafkawire.spark")

_WELL_KNOWN = ("google/protobuf/", "google/type/", "confluent/")
#: The registry's ``format`` for a Protobuf schema's base64 ``FileDescriptorProto``.
SERIALIZED = "serialized"
#: Answers of a registry that does not take the ``format`` parameter (or cannot convert the
#: schema): the schema is then used as first answered.
_FORMAT_REFUSED = frozenset((400, 415, 422, 500, 501))
#: Fetches a schema again in a given form (``None``: as registered).
Refetch = Callable[[str | None], Awaitable[Schema]]
_TIMESTAMP = "google.protobuf.Timestamp"
UTC = datetime.timezone.utc


def _decode_file(schema_str: str, what: str) -> Any:
    from google.protobuf import descriptor_pb2

    proto = descriptor_pb2.FileDescriptorProto()
    try:
        proto.ParseFromString(base64.b64decode(schema_str, validate=True))
    except Exception as exc:  # binascii.Error, DecodeError
        raise ConfigError(
            f"{what} is not a base64 FileDescriptorProto, and the registry did not give one "
            f"when asked for ?format={SERIALIZED} (.proto text cannot be read here: use a "
            "registry that serves the serialized form, such as Confluent Schema Registry, or "
            f"register the schema as confluent-kafka's ProtobufSerializer does): {exc}"
        ) from exc
    if not proto.name:
        raise ConfigError(f"{what} is not a base64 FileDescriptorProto (no file name)")
    return proto


def _is_descriptor(schema_str: str) -> bool:
    """Whether ``schema_str`` is base64 (a descriptor) rather than ``.proto`` text."""
    try:
        base64.b64decode(schema_str, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


async def serialized(schema: Schema, refetch: Refetch | None, what: str) -> Schema:
    """``schema`` as a base64 descriptor: as answered when it is one, else fetched again with
    ``?format=serialized``; a registry refusing the parameter leaves it as answered (the
    descriptor check then says what to do)."""
    if refetch is None or _is_descriptor(schema.schema_str):
        return schema
    try:
        return await refetch(SERIALIZED)
    except SchemaRegistryError as exc:
        if exc.http_status_code not in _FORMAT_REFUSED:
            raise
        log.info("%s: the registry refused ?format=%s: %s", what, SERIALIZED, exc)
        return schema


async def fetch_files(
    client: Any, schema: Schema, what: str, refetch: Refetch | None = None
) -> tuple[str, ...]:
    """The base64 descriptors ``schema`` needs, its imports (depth first) before itself;
    well-known imports (``google/protobuf/…``) are left out: the runtime has them.

    ``refetch`` fetches ``schema`` again in a given form: a registry answering ``.proto``
    text is asked for the serialized descriptor (references likewise, by subject and version).
    """
    files: list[str] = []
    seen: set[tuple[str, int]] = set()

    async def visit(current: Schema, label: str, again: Refetch | None) -> None:
        current = await serialized(current, again, label)
        for ref in current.references:
            if ref.name.startswith(_WELL_KNOWN) or (ref.subject, ref.version) in seen:
                continue
            seen.add((ref.subject, ref.version))
            found = await client.get_version(ref.subject, ref.version)

            async def ref_again(
                fmt: str | None, subject: str = ref.subject, v: int = ref.version
            ) -> Schema:
                return (await client.get_version(subject, v, fmt=fmt)).schema

            await visit(found.schema, f"reference {ref.subject} version {ref.version}", ref_again)
        _decode_file(current.schema_str, label)
        files.append(current.schema_str)

    await visit(schema, what, refetch)
    return tuple(files)


def _well_known(pool: Any, name: str) -> None:
    from google.protobuf import (  # noqa: F401 - loads the well-known files
        any_pb2,
        descriptor_pb2,
        descriptor_pool,
        duration_pb2,
        empty_pb2,
        struct_pb2,
        timestamp_pb2,
        wrappers_pb2,
    )

    try:
        found = descriptor_pool.Default().FindFileByName(name)
    except KeyError as exc:
        raise ConfigError(f"imported file {name!r} is neither registered nor known") from exc
    for dependency in found.dependencies:
        _well_known(pool, dependency.name)
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    pool.Add(proto)


@functools.lru_cache(maxsize=256)
def build_file(files: tuple[str, ...]) -> Any:
    """The ``FileDescriptor`` of the last of ``files`` (base64), in a pool of its own."""
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    protos = [_decode_file(f, "schema") for f in files]
    for proto in protos:
        for dependency in proto.dependency:
            if dependency.startswith(_WELL_KNOWN) and dependency not in added:
                _well_known(pool, dependency)
                added.add(dependency)
    try:
        for proto in protos:
            pool.Add(proto)
        return pool.FindFileByName(protos[-1].name)
    except Exception as exc:  # TypeError, KeyError from the pool
        raise ConfigError(f"Protobuf schema {protos[-1].name!r} cannot be built: {exc}") from exc


def message_at(file: Any, indexes: list[int]) -> Any:
    """The message descriptor at ``indexes`` (message indexes of the wire format)."""
    try:
        current = list(file.message_types_by_name.values())[indexes[0]]
        for index in indexes[1:]:
            current = current.nested_types[index]
    except IndexError:
        raise SerializationError(
            f"message indexes {indexes} name no message of {file.name!r}"
        ) from None
    return current


@functools.lru_cache(maxsize=256)
def message_class(descriptor: Any) -> Any:
    """The message class of ``descriptor``, built once per process."""
    from google.protobuf.message_factory import GetMessageClass

    return GetMessageClass(descriptor)


# ---------------------------------------------------------------------- types

# FieldDescriptor.TYPE_* -> (pyspark.sql.types class, pyarrow factory)
_SCALARS = {
    1: ("DoubleType", "float64"),  # double
    2: ("FloatType", "float32"),  # float
    3: ("LongType", "int64"),  # int64
    5: ("IntegerType", "int32"),  # int32
    6: None,  # fixed64 (uint64)
    7: ("LongType", "int64"),  # fixed32 (uint32)
    8: ("BooleanType", "bool_"),  # bool
    9: ("StringType", "string"),  # string
    12: ("BinaryType", "binary"),  # bytes
    13: ("LongType", "int64"),  # uint32
    14: ("StringType", "string"),  # enum
    15: ("IntegerType", "int32"),  # sfixed32
    16: ("LongType", "int64"),  # sfixed64
    17: ("IntegerType", "int32"),  # sint32
    18: ("LongType", "int64"),  # sint64
}
_UINT64 = (4, 6)
_MESSAGE, _GROUP = 11, 10


def _repeated(field: Any) -> bool:
    """Whether ``field`` is repeated (``label`` is gone from protobuf 7's descriptors)."""
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else bool(field.label == 3)


def _is_map(field: Any) -> bool:
    return bool(field.message_type is not None and field.message_type.GetOptions().map_entry)


def _single_types(field: Any, stack: tuple[str, ...]) -> tuple[Any, Any]:
    import pyarrow as pa
    from pyspark.sql import types as T

    if field.type in _UINT64:
        return T.DecimalType(20, 0), pa.decimal128(20, 0)
    if field.type in (_MESSAGE, _GROUP):
        return message_types(field.message_type, stack)
    names = _SCALARS.get(field.type)
    if names is None:
        raise ConfigError(f"Protobuf field {field.full_name} has no Spark type")
    return getattr(T, names[0])(), getattr(pa, names[1])()


def message_types(descriptor: Any, stack: tuple[str, ...] = ()) -> tuple[Any, Any]:
    """``(Spark type, Arrow type)`` of the message ``descriptor`` (every field nullable)."""
    import pyarrow as pa
    from pyspark.sql import types as T

    if descriptor.full_name == _TIMESTAMP:
        return T.TimestampType(), pa.timestamp("us", tz="UTC")
    if descriptor.full_name in stack:
        raise ConfigError(
            f"Protobuf message {descriptor.full_name} is recursive: it has no Spark type"
        )
    stack = (*stack, descriptor.full_name)
    spark_fields, arrow_fields = [], []
    spark: Any
    for field in descriptor.fields:
        if _is_map(field):
            entry = field.message_type
            key_spark, key_arrow = _single_types(entry.fields_by_name["key"], stack)
            value_spark, value_arrow = _single_types(entry.fields_by_name["value"], stack)
            spark = T.MapType(key_spark, value_spark, True)
            arrow = pa.map_(pa.field("key", key_arrow, False), pa.field("value", value_arrow))
        else:
            spark, arrow = _single_types(field, stack)
            if _repeated(field):
                spark = T.ArrayType(spark, True)
                arrow = pa.list_(pa.field("element", arrow))
        spark_fields.append(T.StructField(field.name, spark, True))
        arrow_fields.append(pa.field(field.name, arrow))
    return T.StructType(spark_fields), pa.struct(arrow_fields)


# ---------------------------------------------------------------------- values


def _single_value(field: Any, value: Any) -> Any:
    if field.type in _UINT64:
        return decimal.Decimal(value)
    if field.type == 14:  # enum: the value's name (its number when the reader lacks it)
        named = field.enum_type.values_by_number.get(value)
        return named.name if named is not None else str(value)
    if field.type in (_MESSAGE, _GROUP):
        return to_row(value)
    return value


def to_row(message: Any) -> Any:
    """The message as pyarrow takes it for its struct type (unset messages: None)."""
    descriptor = message.DESCRIPTOR
    if descriptor.full_name == _TIMESTAMP:
        return message.ToDatetime(tzinfo=UTC)
    row: dict[str, Any] = {}
    for field in descriptor.fields:
        value = getattr(message, field.name)
        if _is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            row[field.name] = [(k, _single_value(value_field, value[k])) for k in value]
        elif _repeated(field):
            row[field.name] = [_single_value(field, v) for v in value]
        elif field.has_presence and not message.HasField(field.name):
            row[field.name] = None
        else:
            row[field.name] = _single_value(field, value)
    return row


def _to_field_value(field: Any, value: Any) -> Any:
    if field.type in _UINT64:
        return int(value)
    if field.type == 14 and isinstance(value, str):
        named = field.enum_type.values_by_name.get(value)
        if named is None:
            raise SerializationError(
                f"{value!r} is not a value of enum {field.enum_type.full_name}"
            )
        return named.number
    return value


def _set_message(target: Any, value: Any) -> None:
    if target.DESCRIPTOR.full_name == _TIMESTAMP:
        if isinstance(value, datetime.datetime):
            target.FromDatetime(value if value.tzinfo else value.replace(tzinfo=UTC))
            return
    from_row(value, target)


def from_row(row: Any, message: Any) -> Any:
    """``message`` filled from ``row`` (a struct's Python value from pyarrow); returns it."""
    for field in message.DESCRIPTOR.fields:
        value = row.get(field.name)
        if value is None:
            continue
        target = getattr(message, field.name)
        if _is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            pairs = value.items() if isinstance(value, dict) else value
            for k, v in pairs:
                if value_field.type in (_MESSAGE, _GROUP):
                    _set_message(target[k], v)
                else:
                    target[k] = _to_field_value(value_field, v)
        elif _repeated(field):
            for v in value:
                if field.type in (_MESSAGE, _GROUP):
                    _set_message(target.add(), v)
                else:
                    target.append(_to_field_value(field, v))
        elif field.type in (_MESSAGE, _GROUP):
            _set_message(target, value)
        else:
            setattr(message, field.name, _to_field_value(field, value))
    return message
