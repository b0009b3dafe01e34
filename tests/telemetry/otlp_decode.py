"""A tiny protobuf wire-format reader for the tests: enough to check our OTLP bytes by field
number without the opentelemetry-proto package."""

from __future__ import annotations

import struct
from typing import Any


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """``(field number, wire type, value)`` for every field of one message, in order."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        else:
            raise ValueError(f"unexpected wire type {wire}")
        out.append((number, wire, value))
    return out


def one(buf: bytes, number: int) -> Any:
    found = [v for n, _, v in fields(buf) if n == number]
    assert len(found) == 1, (number, found)
    return found[0]


def many(buf: bytes, number: int) -> list[Any]:
    return [v for n, _, v in fields(buf) if n == number]


def key_values(buf: bytes, number: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in many(buf, number):
        key = one(kv, 1).decode()
        number_, _wire, value = fields(one(kv, 2))[0]
        if number_ == 1:
            out[key] = value.decode()
        elif number_ == 2:
            out[key] = bool(value)
        elif number_ == 3:
            out[key] = value - (1 << 64) if value >= 1 << 63 else value
        else:
            out[key] = struct.unpack("<d", value)[0]
    return out


def decode_metrics_data(buf: bytes) -> dict[str, Any]:
    """MetricsData -> {"resource": {...}, "scope": name, "metrics": {name: {...}}}."""
    resource_metrics = one(buf, 1)
    resource = key_values(one(resource_metrics, 1), 1)
    scope_metrics = one(resource_metrics, 2)
    scope = one(one(scope_metrics, 1), 1).decode()
    metrics: dict[str, Any] = {}
    for metric in many(scope_metrics, 2):
        name = one(metric, 1).decode()
        kinds = {n: v for n, _, v in fields(metric) if n in (5, 7)}
        assert len(kinds) == 1, name
        ((kind_number, data),) = kinds.items()
        entry: dict[str, Any] = {"kind": "gauge" if kind_number == 5 else "sum", "points": []}
        if kind_number == 7:
            entry["temporality"] = one(data, 2)
            entry["monotonic"] = bool(one(data, 3))
        for point in many(data, 1):
            pf = {n: v for n, _, v in fields(point) if n != 7}
            if 6 in pf:
                value: int | float = struct.unpack("<q", pf[6])[0]
            else:
                value = struct.unpack("<d", pf[4])[0]
            entry["points"].append(
                {
                    "value": value,
                    "time_ns": struct.unpack("<Q", pf[3])[0],
                    "start_ns": struct.unpack("<Q", pf[2])[0] if 2 in pf else 0,
                    "attributes": key_values(point, 7),
                }
            )
        metrics[name] = entry
    return {"resource": resource, "scope": scope, "metrics": metrics}
