"""A small OTLP protobuf encoder: the few messages KIP-714 needs (``MetricsData`` with sums and
gauges of numbers), written by hand so that the client needs no protobuf package.

The field numbers are those of ``opentelemetry/proto/metrics/v1/metrics.proto`` (and
``common/v1/common.proto``, ``resource/v1/resource.proto``).  Only the wire types the messages
use are written: varint (0), 64-bit (1) and length-delimited (2).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["CUMULATIVE", "DELTA", "MetricPoint", "encode_metrics_data"]

DELTA = 1  # AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
CUMULATIVE = 2  # AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE

Attributes = Mapping[str, "str | int | float | bool"]


@dataclass(frozen=True)
class MetricPoint:
    """One data point of one metric, ready to encode.

    ``kind`` is ``"sum"`` (a monotonic counter; ``start_ns`` is when it started counting) or
    ``"gauge"``.  ``value`` is written as ``as_int`` when it is an int, else ``as_double``.
    """

    name: str
    kind: str
    value: int | float
    time_ns: int
    start_ns: int = 0
    attributes: Attributes = field(default_factory=dict)
    description: str = ""
    unit: str = ""


def _varint(value: int) -> bytes:
    if value < 0:
        value &= (1 << 64) - 1  # int64 negatives are ten-byte varints
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _bytes_field(number: int, data: bytes) -> bytes:
    return _key(number, 2) + _varint(len(data)) + data


def _string_field(number: int, text: str) -> bytes:
    return _bytes_field(number, text.encode())


def _any_value(value: str | int | float | bool) -> bytes:
    if isinstance(value, bool):
        return _key(2, 0) + _varint(int(value))
    if isinstance(value, int):
        return _key(3, 0) + _varint(value)
    if isinstance(value, float):
        return _key(4, 1) + struct.pack("<d", value)
    return _string_field(1, str(value))


def _key_values(number: int, attributes: Attributes) -> bytes:
    out = b""
    for key, value in attributes.items():
        out += _bytes_field(number, _string_field(1, key) + _bytes_field(2, _any_value(value)))
    return out


def _data_point(point: MetricPoint) -> bytes:
    out = b""
    if point.start_ns:
        out += _key(2, 1) + struct.pack("<Q", point.start_ns)
    out += _key(3, 1) + struct.pack("<Q", point.time_ns)
    if isinstance(point.value, int):
        out += _key(6, 1) + struct.pack("<q", point.value)
    else:
        out += _key(4, 1) + struct.pack("<d", point.value)
    return out + _key_values(7, point.attributes)


def _metric(name: str, points: list[MetricPoint], temporality: int) -> bytes:
    first = points[0]
    out = _string_field(1, name)
    if first.description:
        out += _string_field(2, first.description)
    if first.unit:
        out += _string_field(3, first.unit)
    data = b"".join(_bytes_field(1, _data_point(p)) for p in points)
    if first.kind == "sum":
        data += _key(2, 0) + _varint(temporality) + _key(3, 0) + _varint(1)  # monotonic
        return out + _bytes_field(7, data)
    if first.kind == "gauge":
        return out + _bytes_field(5, data)
    raise ValueError(f"metric kind must be 'sum' or 'gauge', not {first.kind!r}")


def encode_metrics_data(
    points: Iterable[MetricPoint],
    *,
    resource: Attributes,
    scope: str = "aiokafkawire",
    scope_version: str = "",
    temporality: int = CUMULATIVE,
) -> bytes:
    """``points`` as one serialized OTLP ``MetricsData`` (one resource, one scope).

    Points of the same name become the data points of one ``Metric``; ``temporality`` is the
    aggregation temporality written on every sum.
    """
    by_name: dict[str, list[MetricPoint]] = {}
    for point in points:
        by_name.setdefault(point.name, []).append(point)
    metrics = b"".join(
        _bytes_field(2, _metric(name, group, temporality)) for name, group in by_name.items()
    )
    scope_msg = _string_field(1, scope) + (
        _string_field(2, scope_version) if scope_version else b""
    )
    scope_metrics = _bytes_field(1, scope_msg) + metrics
    resource_msg = _key_values(1, resource)
    resource_metrics = _bytes_field(1, resource_msg) + _bytes_field(2, scope_metrics)
    return _bytes_field(1, resource_metrics)
