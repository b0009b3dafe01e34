"""The JSON Schema registry format of the Spark source and sink (``keyFormat``/``valueFormat`` =
``json``): a registered JSON schema as Spark and Arrow types, JSON values as rows and back.

Types: ``object`` with ``properties`` -> struct, ``object`` with only ``additionalProperties``
(a schema) -> map<string, T>, ``array`` with ``items`` -> array, ``integer`` -> bigint,
``number`` -> double, ``boolean``, ``string`` (``format`` ``date-time`` -> timestamp, ``date``
-> date), a string ``enum`` -> string; ``["T", "null"]`` type lists, local ``$ref``
(``#/definitions/…``, ``#/$defs/…``).  Anything else (``oneOf``/``anyOf``, several types,
recursive references, a missing ``type``) is refused with a ConfigError naming where it is.
Every Spark field is nullable: ``required`` is checked by validation, and records of older
schemas may lack a field.
"""

from __future__ import annotations

import datetime
from typing import Any

from aiokafkawire.errors import ConfigError

__all__ = ["from_row", "json_types", "to_row"]

UTC = datetime.timezone.utc


def _deref(
    schema: Any, root: Any, where: str, seen: tuple[str, ...]
) -> tuple[Any, tuple[str, ...]]:
    """``schema`` with its local ``$ref`` followed (and the refs followed so far)."""
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise ConfigError(f"JSON schema at {where}: only local $ref are supported, not {ref!r}")
        if ref in seen:
            raise ConfigError(f"JSON schema at {where}: {ref} is recursive: it has no Spark type")
        seen = (*seen, ref)
        target = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise ConfigError(f"JSON schema at {where}: {ref} names nothing")
            target = target[part]
        schema = target
    return schema, seen


def _kind(schema: Any, where: str) -> str:
    """The one non-null ``type`` of ``schema``."""
    if not isinstance(schema, dict):
        raise ConfigError(f"JSON schema at {where} is not an object: it has no Spark type")
    kind = schema.get("type")
    if kind is None and "enum" in schema:
        values = schema["enum"]
        if all(isinstance(v, str) or v is None for v in values):
            return "string"
    if kind is None and "properties" in schema:
        return "object"
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) == 1:
            return str(kinds[0])
    if isinstance(kind, str) and kind != "null":
        return kind
    unsupported = [k for k in ("oneOf", "anyOf", "allOf", "not") if k in schema]
    what = unsupported[0] if unsupported else f"type {kind!r}"
    raise ConfigError(f"JSON schema at {where}: {what} has no Spark type")


def json_types(
    schema: Any, root: Any = None, where: str = "#", seen: tuple[str, ...] = ()
) -> tuple[Any, Any]:
    """``(Spark type, Arrow type)`` of the JSON ``schema`` (parsed) inside ``root``."""
    import pyarrow as pa
    from pyspark.sql import types as T

    root = schema if root is None else root
    schema, seen = _deref(schema, root, where, seen)
    kind = _kind(schema, where)
    if kind == "object":
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, dict):
            spark, arrow = json_types(extra, root, f"{where}/additionalProperties", seen)
            return T.MapType(T.StringType(), spark, True), pa.map_(pa.string(), arrow)
        spark_fields, arrow_fields = [], []
        for name, sub in (properties or {}).items():
            spark, arrow = json_types(sub, root, f"{where}/properties/{name}", seen)
            spark_fields.append(T.StructField(name, spark, True))
            arrow_fields.append(pa.field(name, arrow))
        return T.StructType(spark_fields), pa.struct(arrow_fields)
    if kind == "array":
        if not isinstance(schema.get("items"), dict):
            raise ConfigError(f"JSON schema at {where}: an array needs one 'items' schema")
        spark, arrow = json_types(schema["items"], root, f"{where}/items", seen)
        return T.ArrayType(spark, True), pa.list_(pa.field("element", arrow))
    if kind == "string":
        form = schema.get("format")
        if form == "date-time":
            return T.TimestampType(), pa.timestamp("us", tz="UTC")
        if form == "date":
            return T.DateType(), pa.date32()
        return T.StringType(), pa.string()
    simple = {
        "integer": (T.LongType(), pa.int64()),
        "number": (T.DoubleType(), pa.float64()),
        "boolean": (T.BooleanType(), pa.bool_()),
    }
    if kind in simple:
        return simple[kind]
    raise ConfigError(f"JSON schema at {where}: type {kind!r} has no Spark type")


def _parse_time(value: str) -> datetime.datetime:
    parsed = datetime.datetime.fromisoformat(value[:-1] + "+00:00" if value[-1:] in "Zz" else value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def to_row(schema: Any, value: Any, root: Any = None) -> Any:
    """The JSON ``value`` as pyarrow takes it for ``json_types(schema)`` (validated first)."""
    root = schema if root is None else root
    schema, _ = _deref(schema, root, "#", ())
    if value is None:
        return None
    kind = _kind(schema, "#")
    if kind == "object":
        properties = schema.get("properties")
        if not properties and isinstance(schema.get("additionalProperties"), dict):
            extra = schema["additionalProperties"]
            return [(k, to_row(extra, v, root)) for k, v in value.items()]
        return {name: to_row(sub, value.get(name), root) for name, sub in properties.items()}
    if kind == "array":
        return [to_row(schema["items"], v, root) for v in value]
    if kind == "string" and schema.get("format") == "date-time":
        return _parse_time(value)
    if kind == "string" and schema.get("format") == "date":
        return datetime.date.fromisoformat(value)
    if kind == "number":
        return float(value)
    return value


def from_row(schema: Any, value: Any, root: Any = None) -> Any:
    """A struct column's Python value (from pyarrow) as the JSON ``schema`` holds it: null
    properties are left out unless required, timestamps and dates as ISO 8601 text."""
    root = schema if root is None else root
    schema, _ = _deref(schema, root, "#", ())
    if value is None:
        return None
    kind = _kind(schema, "#")
    if kind == "object":
        properties = schema.get("properties")
        if not properties and isinstance(schema.get("additionalProperties"), dict):
            pairs = value.items() if isinstance(value, dict) else value
            extra = schema["additionalProperties"]
            return {k: from_row(extra, v, root) for k, v in pairs}
        required = set(schema.get("required", ()))
        return {
            name: from_row(sub, value.get(name), root)
            for name, sub in properties.items()
            if value.get(name) is not None or name in required
        }
    if kind == "array":
        return [from_row(schema["items"], v, root) for v in value]
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value
