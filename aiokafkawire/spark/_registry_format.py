"""Registry formats of the Spark source and sink: Confluent-framed Avro, Protobuf and JSON Schema
keys and values as typed columns (options ``keyFormat`` / ``valueFormat`` = ``avro``,
``protobuf`` or ``json`` with ``schema.registry.url``; Protobuf in ``_registry_protobuf``, JSON
Schema in ``_registry_json``).

On the driver the subject's schema (``valueSubject``, default ``<topic>-value``, at
``valueSchemaVersion``, default ``latest``) is fetched and turned into the column's Spark type.
Executors decode each record with its *writer's* schema, fetched by the record's schema id from
the registry by the executor itself (cached per process; nothing of the driver's process or files
is needed) and read into the reader (subject) schema, so records written with older compatible
schemas fill in the defaults.  The sink encodes a struct column with the subject's schema and id.

Plain Python except for the pyspark types (imported where used), picklable.
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiokafkawire.errors import ConfigError
from aiokafkawire.schema_registry.serde import (
    SerializationContext,
    SerializationError,
    pack_payload,
    unpack_payload,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "REGISTRY_OPTIONS",
    "RegistryColumn",
    "RegistryOptions",
    "avro_types",
    "decode_batch",
    "encode_batches",
    "parse_registry_options",
    "resolve",
]

#: The options of the registry formats (reads and writes), as documented.
REGISTRY_OPTIONS = (
    "keyFormat",
    "valueFormat",
    "schema.registry.url",
    "schema.registry.basic.auth.user.info",
    "schema.registry.bearer.auth.token",
    "keySubject",
    "valueSubject",
    "keySchemaVersion",
    "valueSchemaVersion",
)
_SUPPORTED = ("avro", "protobuf", "json")
_SCHEMA_TYPES = {"avro": "AVRO", "protobuf": "PROTOBUF", "json": "JSON"}
_KNOWN = ("avro", "json", "protobuf")


@dataclass(frozen=True)
class RegistryColumn:
    """How ``column`` (``key`` or ``value``) is encoded: format, subject and version, and once
    resolved on the driver the subject schema's id and text."""

    column: str
    format: str
    subject: str
    version: str = "latest"
    schema_id: int | None = None
    schema_str: str | None = None
    #: protobuf: the base64 descriptors of the schema's imports, then of the schema itself
    schema_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class RegistryOptions:
    """The registry's client settings (secrets: kept out of repr) and the formatted columns."""

    client_conf: Mapping[str, str] = field(repr=False)
    columns: tuple[RegistryColumn, ...]

    def column(self, name: str) -> RegistryColumn | None:
        """The format of column ``name``, if it has one."""
        return next((c for c in self.columns if c.column == name), None)


def _topics(lowered: Mapping[str, str]) -> tuple[str, ...]:
    """The topics a query names (``subscribe``, ``assign``, or the sink's ``topic``)."""
    if "subscribe" in lowered:
        return tuple(t.strip() for t in lowered["subscribe"].split(",") if t.strip())
    if "assign" in lowered:
        try:
            return tuple(json.loads(lowered["assign"]))
        except (ValueError, TypeError):
            return ()
    topic = lowered.get("topic", "").strip()
    return (topic,) if topic else ()


def parse_registry_options(options: Mapping[str, str]) -> RegistryOptions | None:
    """The registry formats of a query's options (None: no ``keyFormat``/``valueFormat``).

    The default subject is ``<topic>-<column>`` of the query's one topic.
    """
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    topics = _topics(lowered)
    columns = []
    for column in ("key", "value"):
        kind = lowered.get(f"{column}format")
        if kind is None:
            continue
        kind = kind.strip().lower()
        if kind not in _KNOWN:
            raise ConfigError(
                f"option '{column}Format' must be one of {', '.join(_KNOWN)}, not {kind!r}"
            )
        if kind not in _SUPPORTED:
            raise ConfigError(
                f"option '{column}Format' = {kind!r} is not supported yet by the Spark source "
                f"and sink (supported: {', '.join(_SUPPORTED)}); read the binary column and "
                "decode it with aiokafkawire.schema_registry"
            )
        subject = lowered.get(f"{column}subject")
        if subject is None:
            if len(topics) != 1:
                raise ConfigError(
                    f"option '{column}Subject' must be set when the query has not exactly one "
                    f"topic (default: <topic>-{column})"
                )
            subject = f"{topics[0]}-{column}"
        version = lowered.get(f"{column}schemaversion", "latest").strip().lower()
        if version != "latest" and not version.isdigit():
            raise ConfigError(
                f"option '{column}SchemaVersion' must be 'latest' or a version number, "
                f"not {version!r}"
            )
        columns.append(RegistryColumn(column, kind, subject.strip(), version))
    if not columns:
        for name in REGISTRY_OPTIONS:
            if name.lower() in lowered:
                raise ConfigError(f"option '{name}' applies only with keyFormat or valueFormat")
        return None
    url = lowered.get("schema.registry.url")
    if not url:
        raise ConfigError("option 'schema.registry.url' must be set with keyFormat/valueFormat")
    conf = {"url": url}
    for name in ("basic.auth.user.info", "bearer.auth.token"):
        if f"schema.registry.{name}" in lowered:
            conf[name] = lowered[f"schema.registry.{name}"]
    return RegistryOptions(conf, tuple(columns))


# ---------------------------------------------------------------------- registry access


def _run_with_client(conf: Mapping[str, str], call: Any) -> Any:
    """``await call(client)`` with a fresh client on a private event loop (tasks and planners
    run no loop of their own)."""
    from aiokafkawire.schema_registry import AsyncSchemaRegistryClient

    async def main() -> Any:
        async with AsyncSchemaRegistryClient(dict(conf)) as client:
            return await call(client)

    return asyncio.run(main())


def resolve(options: RegistryOptions) -> RegistryOptions:
    """On the driver: each column's subject schema (id and text) from the registry."""

    async def fetch(client: Any) -> tuple[RegistryColumn, ...]:
        resolved = []
        for column in options.columns:
            if column.version == "latest":
                found = await client.get_latest_version(column.subject)
            else:
                found = await client.get_version(column.subject, int(column.version))
            if found.schema.schema_type != _SCHEMA_TYPES[column.format]:
                raise ConfigError(
                    f"subject {column.subject!r} holds a {found.schema.schema_type} schema, "
                    f"not the {column.format} the option '{column.column}Format' names"
                )
            resolved.append(
                RegistryColumn(
                    column.column,
                    column.format,
                    column.subject,
                    column.version,
                    found.schema_id,
                    found.schema.schema_str,
                    await _files(client, column, found),
                )
            )
        return tuple(resolved)

    return RegistryOptions(options.client_conf, _run_with_client(options.client_conf, fetch))


async def _files(client: Any, column: RegistryColumn, found: Any) -> tuple[str, ...]:
    """protobuf: the descriptors the schema needs (nothing for the other formats)."""
    if column.format != "protobuf":
        return ()
    from aiokafkawire.spark._registry_protobuf import fetch_files

    async def again(fmt: str | None) -> Any:  # the same version, in another form
        return (await client.get_version(column.subject, found.version, fmt=fmt)).schema

    return await fetch_files(client, found.schema, f"subject {column.subject!r}", again)


_WRITERS: dict[tuple[str, int, str], Any] = {}
_WRITERS_LOCK = threading.Lock()


def _writer_schema(options: RegistryOptions, schema_id: int, kind: str = "avro") -> Any:
    """The parsed writer schema ``schema_id`` (protobuf: its ``FileDescriptor``), fetched once
    per executor process."""
    key = (options.client_conf["url"], schema_id, kind)
    with _WRITERS_LOCK:
        parsed = _WRITERS.get(key)
        if parsed is None:

            async def fetch(client: Any) -> Any:
                schema = await client.get_schema(schema_id)
                if kind == "json":
                    from aiokafkawire.schema_registry.json_schema import _validator

                    return _validator(schema.schema_str)
                if kind != "protobuf":
                    return _parse(schema.schema_str)
                from aiokafkawire.spark._registry_protobuf import build_file, fetch_files

                what = f"schema id {schema_id}"

                async def again(fmt: str | None) -> Any:
                    return await client.get_schema(schema_id, fmt=fmt)

                return build_file(await fetch_files(client, schema, what, again))

            parsed = _WRITERS[key] = _run_with_client(options.client_conf, fetch)
        return parsed


def _parse(schema_str: str) -> Any:
    import fastavro

    return fastavro.parse_schema(json.loads(schema_str))


# ---------------------------------------------------------------------- Avro -> Spark, Arrow

# Avro type -> (pyspark.sql.types class, pyarrow type factory)
_PRIMITIVES = {
    "boolean": ("BooleanType", "bool_"),
    "int": ("IntegerType", "int32"),
    "long": ("LongType", "int64"),
    "float": ("FloatType", "float32"),
    "double": ("DoubleType", "float64"),
    "bytes": ("BinaryType", "binary"),
    "string": ("StringType", "string"),
}
_LOGICAL = {
    "date": "DateType",
    "timestamp-millis": "TimestampType",
    "timestamp-micros": "TimestampType",
}


def avro_types(schema: Any, named: dict[str, Any] | None = None) -> tuple[Any, pa.DataType, bool]:
    """``(Spark type, Arrow type, nullable)`` of the Avro ``schema`` (parsed JSON)."""
    import pyarrow as pa
    from pyspark.sql import types as T

    named = {} if named is None else named
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            raise ConfigError(f"Avro union {schema} has no Spark type (only [null, T] unions)")
        spark, arrow, _ = avro_types(branches[0], named)
        return spark, arrow, len(branches) < len(schema)
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            name, factory = _PRIMITIVES[schema]
            return getattr(T, name)(), getattr(pa, factory)(), False
        if schema in named:
            return avro_types(named[schema], named)
        raise ConfigError(f"Avro type {schema!r} has no Spark type")
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical in _LOGICAL:
        if logical == "date":
            return T.DateType(), pa.date32(), False
        return T.TimestampType(), pa.timestamp("us", tz="UTC"), False
    if logical == "decimal" and kind == "bytes":
        precision, scale = int(schema["precision"]), int(schema.get("scale", 0))
        return T.DecimalType(precision, scale), pa.decimal128(precision, scale), False
    if kind == "record":
        named[schema["name"]] = schema
        if schema.get("namespace"):
            named[f"{schema['namespace']}.{schema['name']}"] = schema
        spark_fields, arrow_fields = [], []
        for f in schema["fields"]:
            spark, arrow, nullable = avro_types(f["type"], named)
            spark_fields.append(T.StructField(f["name"], spark, nullable))
            arrow_fields.append(pa.field(f["name"], arrow, nullable))
        return T.StructType(spark_fields), pa.struct(arrow_fields), False
    if kind == "array":
        spark, arrow, nullable = avro_types(schema["items"], named)
        return T.ArrayType(spark, nullable), pa.list_(pa.field("element", arrow, nullable)), False
    if kind == "map":
        spark, arrow, nullable = avro_types(schema["values"], named)
        return (
            T.MapType(T.StringType(), spark, nullable),
            pa.map_(pa.field("key", pa.string(), False), pa.field("value", arrow, nullable)),
            False,
        )
    if kind == "enum":
        named[schema["name"]] = schema
        return T.StringType(), pa.string(), False
    if kind == "fixed":
        named[schema["name"]] = schema
        return T.BinaryType(), pa.binary(), False
    if isinstance(kind, (str, list)):
        return avro_types(kind, named)
    raise ConfigError(f"Avro schema {schema} has no Spark type")


def _column_types(column: RegistryColumn) -> tuple[Any, pa.DataType]:
    assert column.schema_str is not None, "resolve() first"
    if column.format == "protobuf":
        from aiokafkawire.spark._registry_protobuf import build_file, message_at, message_types

        return message_types(message_at(build_file(column.schema_files), [0]))
    if column.format == "json":
        from aiokafkawire.spark._registry_json import json_types

        return json_types(json.loads(column.schema_str))
    spark, arrow, _ = avro_types(json.loads(column.schema_str))
    return spark, arrow


def spark_field(column: RegistryColumn) -> Any:
    """The Spark field of a resolved formatted column (always nullable: tombstones)."""
    from pyspark.sql.types import StructField

    return StructField(column.column, _column_types(column)[0], True)


# ---------------------------------------------------------------------- decode, encode


def _to_arrow_value(value: Any) -> Any:
    """fastavro's Python value as pyarrow takes it (maps: key/value pairs)."""
    if isinstance(value, dict):
        return {k: _to_arrow_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_arrow_value(v) for v in value]
    return value


def _decode_avro(
    options: RegistryOptions, ctx: SerializationContext, column: RegistryColumn
) -> Any:
    """``decode(data) -> row`` of an Avro column: the writer's schema read into the reader's."""
    import fastavro

    reader = _parse(column.schema_str or "")

    def decode(data: bytes) -> Any:
        schema_id, payload = unpack_payload(data, ctx)
        writer = _writer_schema(options, schema_id)
        try:
            record = fastavro.schemaless_reader(io.BytesIO(payload), writer, reader)
        except (ValueError, TypeError, KeyError, EOFError, StopIteration) as exc:
            raise SerializationError(
                f"{ctx.topic} {column.column}: schema id {schema_id} cannot be read into "
                f"{column.subject} version {column.version}: {exc!r}"
            ) from exc
        return _to_arrow_value(record)

    return decode


def _decode_protobuf(
    options: RegistryOptions, ctx: SerializationContext, column: RegistryColumn
) -> Any:
    """``decode(data) -> row`` of a Protobuf column: read with the subject's message class,
    after checking that the writer's message (schema id and message indexes) is the same."""
    from aiokafkawire.schema_registry.protobuf import decode_message_indexes
    from aiokafkawire.spark._registry_protobuf import build_file, message_at, message_class, to_row

    reader = message_at(build_file(column.schema_files), [0])
    reader_class = message_class(reader)

    def decode(data: bytes) -> Any:
        schema_id, payload = unpack_payload(data, ctx)
        indexes, body = decode_message_indexes(payload)
        writer = message_at(_writer_schema(options, schema_id, "protobuf"), indexes)
        if writer.full_name != reader.full_name:
            raise SerializationError(
                f"{ctx.topic} {column.column}: schema id {schema_id} wrote a "
                f"{writer.full_name}, not the {reader.full_name} of {column.subject} "
                f"version {column.version}"
            )
        message = reader_class()
        try:
            message.ParseFromString(bytes(body))
        except Exception as exc:  # google.protobuf.message.DecodeError and kin
            raise SerializationError(
                f"{ctx.topic} {column.column}: schema id {schema_id}: not a "
                f"{reader.full_name}: {exc}"
            ) from exc
        return to_row(message)

    return decode


def _decode_json(
    options: RegistryOptions, ctx: SerializationContext, column: RegistryColumn
) -> Any:
    """``decode(data) -> row`` of a JSON Schema column: parsed, validated against the writer's
    schema (fetched by id), then shaped by the subject's schema."""
    from aiokafkawire.schema_registry.json_schema import _check
    from aiokafkawire.spark._registry_json import to_row

    reader = json.loads(column.schema_str or "")

    def decode(data: bytes) -> Any:
        schema_id, payload = unpack_payload(data, ctx)
        try:
            value = json.loads(bytes(payload))
        except ValueError as exc:
            raise SerializationError(f"{ctx.topic} {column.column}: not JSON: {exc}") from exc
        _check(_writer_schema(options, schema_id, "json"), value, ctx)
        try:
            return to_row(reader, value)
        except (ValueError, TypeError, AttributeError) as exc:
            raise SerializationError(
                f"{ctx.topic} {column.column}: schema id {schema_id}: the value does not fit "
                f"{column.subject} version {column.version}: {exc}"
            ) from exc

    return decode


_DECODERS = {"avro": _decode_avro, "protobuf": _decode_protobuf, "json": _decode_json}


def decode_batch(options: RegistryOptions, topic: str, batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with its formatted columns decoded into their Arrow struct types."""
    import pyarrow as pa

    for column in options.columns:
        _, arrow = _column_types(column)
        index = batch.schema.get_field_index(column.column)
        decode = _DECODERS[column.format](options, SerializationContext(topic), column)
        rows = [None if d is None else decode(d) for d in batch.column(index).to_pylist()]
        batch = batch.set_column(index, pa.field(column.column, arrow), pa.array(rows, type=arrow))
    return batch


def _from_arrow_value(value: Any) -> Any:
    """pyarrow's Python value as fastavro takes it (maps come as key/value pairs)."""
    if isinstance(value, dict):
        return {k: _from_arrow_value(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {k: _from_arrow_value(v) for k, v in value}
        return [_from_arrow_value(v) for v in value]
    return value


def _encode_avro(column: RegistryColumn, ctx: SerializationContext) -> Any:
    """``encode(row) -> payload`` of an Avro column, with the subject's schema."""
    import fastavro

    parsed = _parse(column.schema_str or "")

    def encode(row: Any) -> bytes:
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, parsed, _from_arrow_value(row))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SerializationError(
                f"{ctx.topic} {column.column}: a row does not match {column.subject} "
                f"version {column.version}: {exc}"
            ) from exc
        return out.getvalue()

    return encode


def _encode_protobuf(column: RegistryColumn, ctx: SerializationContext) -> Any:
    """``encode(row) -> payload`` of a Protobuf column: the subject file's first message."""
    from aiokafkawire.spark._registry_protobuf import (
        build_file,
        from_row,
        message_at,
        message_class,
    )

    reader_class = message_class(message_at(build_file(column.schema_files), [0]))

    def encode(row: Any) -> bytes:
        try:
            message = from_row(row, reader_class())
        except (ValueError, TypeError, KeyError, AttributeError, SerializationError) as exc:
            raise SerializationError(
                f"{ctx.topic} {column.column}: a row does not match {column.subject} "
                f"version {column.version}: {exc}"
            ) from exc
        return b"\x00" + message.SerializeToString()  # message indexes [0]

    return encode


def _encode_json(column: RegistryColumn, ctx: SerializationContext) -> Any:
    """``encode(row) -> payload`` of a JSON Schema column, validated with the subject's schema."""
    from aiokafkawire.schema_registry.json_schema import _check, _validator
    from aiokafkawire.spark._registry_json import from_row

    schema = json.loads(column.schema_str or "")
    validator = _validator(column.schema_str or "")

    def encode(row: Any) -> bytes:
        value = from_row(schema, row)
        _check(validator, value, ctx)
        return json.dumps(value, separators=(",", ":")).encode()

    return encode


_ENCODERS = {"avro": _encode_avro, "protobuf": _encode_protobuf, "json": _encode_json}


def encode_batches(
    options: RegistryOptions, topic: str | None, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``batches`` with each formatted struct column encoded in the Confluent wire format."""
    import pyarrow as pa

    ctx = SerializationContext(topic or "(topic column)")
    encoders = {c.column: _ENCODERS[c.format](c, ctx) for c in options.columns}
    for batch in batches:
        for column in options.columns:
            index = batch.schema.get_field_index(column.column)
            if index < 0:
                continue
            assert column.schema_id is not None
            encode = encoders[column.column]
            encoded = [
                None if row is None else pack_payload(column.schema_id, encode(row))
                for row in batch.column(index).to_pylist()
            ]
            batch = batch.set_column(
                index, pa.field(column.column, pa.binary()), pa.array(encoded, pa.binary())
            )
        yield batch
