"""aiokafka's :class:`ConsumerRecord` made from aiokafkawire's, one by one or a list at a time.

The compiled twin (``_ccompat``, when built) allocates each record as ``object.__new__`` does and
sets its eleven fields in the dataclass's order, as the dataclass ``__init__`` would, without
running Python code per record.  The pure functions below are the reference: both make equal,
ordinary instances of the dataclass.  The serialized sizes are the lengths of the raw key and
value (-1 for None); a deserializer (None for none) gets the raw key or value and any exception
it raises propagates unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from aiokafkawire._compiled import load_accelerator
from aiokafkawire.compat.aiokafka.structs import ConsumerRecord
from aiokafkawire.consumer import ConsumerRecord as NativeRecord

__all__ = ["FIELDS", "compat_record", "compat_records"]

Deserializer = Callable[[Any], Any] | None

#: The field order the compiled twin writes; checked against the dataclass at import.
FIELDS = (
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "checksum",
    "serialized_key_size",
    "serialized_value_size",
    "headers",
)


def _pure_record(
    cls: type[ConsumerRecord[Any, Any]],
    native: NativeRecord,
    key_deserializer: Deserializer,
    value_deserializer: Deserializer,
    /,
) -> ConsumerRecord[Any, Any]:
    key, value = native.key, native.value
    key_size = len(key) if key is not None else -1
    value_size = len(value) if value is not None else -1
    if key_deserializer is not None:
        key = key_deserializer(key)
    if value_deserializer is not None:
        value = value_deserializer(value)
    return cls(
        native.topic,
        native.partition,
        native.offset,
        native.timestamp,
        native.timestamp_type,
        key,
        value,
        None,
        key_size,
        value_size,
        native.headers,
    )


def _pure_records(
    cls: type[ConsumerRecord[Any, Any]],
    natives: list[NativeRecord],
    key_deserializer: Deserializer,
    value_deserializer: Deserializer,
    /,
) -> list[ConsumerRecord[Any, Any]]:
    return [_pure_record(cls, r, key_deserializer, value_deserializer) for r in natives]


if tuple(field.name for field in dataclasses.fields(ConsumerRecord)) != FIELDS:  # pragma: no cover
    raise ImportError("aiokafka's ConsumerRecord fields changed: update _ccompat.c and FIELDS")

_compiled: Any = load_accelerator("aiokafkawire.compat.aiokafka.consumer._ccompat")

#: ``compat_record(cls, native, key_deserializer, value_deserializer)``: one record.
compat_record: Callable[
    [type[ConsumerRecord[Any, Any]], NativeRecord, Deserializer, Deserializer],
    ConsumerRecord[Any, Any],
] = _pure_record if _compiled is None else _compiled.compat_record

#: ``compat_records(cls, natives, key_deserializer, value_deserializer)``: a list of records.
compat_records: Callable[
    [type[ConsumerRecord[Any, Any]], list[NativeRecord], Deserializer, Deserializer],
    list[ConsumerRecord[Any, Any]],
] = _pure_records if _compiled is None else _compiled.compat_records
