"""The compiled records accelerator (``_accel`` + ``_crecords``) against the pure-Python path.

Skipped when the C extension is not built.  Equivalence is checked byte for byte on the builder
side and record for record (or exception type for exception type) on the reader side, for
hand-written edge cases and for Hypothesis-generated and mutated batches.
"""

from __future__ import annotations

import gc
import importlib
import os
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from aiokafkawire.consumer.share.records import ShareRecord
from aiokafkawire.consumer.value_types import ConsumerRecord
from aiokafkawire.errors import CorruptRecordError, IllegalStateError
from aiokafkawire.producer import RecordMetadata
from aiokafkawire.protocol import records as records_api
from aiokafkawire.protocol.primitives import encode_varint
from aiokafkawire.protocol.records import _pure, _pure_v2
from aiokafkawire.protocol.records._types import (
    CompressionType,
    ControlRecord,
    ControlRecordType,
    Record,
    TimestampType,
)

_crecords = pytest.importorskip("aiokafkawire.protocol.records._crecords")
_accel = importlib.import_module("aiokafkawire.protocol.records._accel")

HEADER = _pure_v2.HEADER
HEADER_SIZE = _pure_v2.HEADER_SIZE
INT64_MAX = (1 << 63) - 1

Sample = tuple[Any, Any, Any, Any]  # (timestamp, key, value, headers): loosely typed on purpose

SAMPLE: list[Sample] = [
    (1_700_000_000_000, b"key-0", b"value-0", [("h1", b"v1")]),
    (1_700_000_000_005, None, b"value with null key", []),
    (1_700_000_000_003, b"key-2", None, [("null-header", None), ("utf8-\u00e9", b"")]),
    (1_700_000_100_000, b"", b"", None),
    (1_699_999_000_000, b"k" * 300, b"v" * 20_000, [("big", b"x" * 200)] * 70),
]


# ---------------------------------------------------------------------------------------------
# helpers


def outcome(func: Callable[[], Any]) -> Any:
    """The result of ``func``, or the type of the exception it raised."""
    try:
        return ("ok", func())
    except Exception as exc:
        return ("error", type(exc))


def build(impl: Any, records: list[Sample], **kwargs: Any) -> bytes:
    kwargs.setdefault("batch_size", 1 << 22)
    builder = impl.RecordBatchBuilder(magic=2, **kwargs)
    for timestamp, key, value, headers in records:
        assert builder.append(timestamp, key, value, headers)
    return bytes(builder.build())


def parse(impl: Any, data: bytes, check_crcs: bool = True) -> list[tuple[type, Any]]:
    """Every record of every batch, with its exact class."""
    return [
        (type(record), record)
        for batch in impl.iter_batches(data, check_crcs=check_crcs)
        for record in batch
    ]


def raw_batch(
    body: bytes,
    count: int,
    *,
    base_offset: int = 0,
    base_timestamp: int = 1_700_000_000_000,
    max_timestamp: int = 1_700_000_000_000,
    attributes: int = 0,
) -> bytes:
    """A v2 batch around an arbitrary (possibly malformed) record body, with a valid CRC."""
    out = bytearray(HEADER_SIZE) + body
    HEADER.pack_into(
        out,
        0,
        base_offset,
        len(out) - 12,
        -1,
        2,
        0,
        attributes,
        max(count - 1, 0),
        base_timestamp,
        max_timestamp,
        -1,
        -1,
        -1,
        count,
    )
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def record_body(
    timestamp_delta: int = 0,
    offset_delta: int = 0,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    headers: bytes = b"\x00",
    length: int | None = None,
    raw_varint: Callable[[int], bytes] = encode_varint,
) -> bytes:
    """One encoded record; fields given as raw values so that they can be out of range."""
    body = b"\x00" + raw_varint(timestamp_delta) + raw_varint(offset_delta)
    for field in (key, value):
        body += encode_varint(-1) if field is None else encode_varint(len(field)) + field
    body += headers
    return encode_varint(len(body) if length is None else length) + body


def wide_varint(value: int) -> bytes:
    """A 10-byte varint of an unsigned value that may exceed 64 bits (as Python reads them)."""
    out = bytearray()
    for _ in range(9):
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    assert value < 0x80
    out.append(value)
    return bytes(out)


def consume(
    impl: Any,
    data: bytes,
    min_offset: int = 0,
    record_cls: type = ConsumerRecord,
    key_deserializer: Callable[[Any], Any] | None = None,
    value_deserializer: Callable[[Any], Any] | None = None,
    check_crcs: bool = False,
) -> list[tuple[type, Any]]:
    """Every consumer record of every batch (``RecordBatch.consumer_records``), with its class."""
    return [
        (type(record), record)
        for batch in impl.iter_batches(data, check_crcs=check_crcs)
        for record in batch.consumer_records(
            record_cls, "topic", 3, min_offset, key_deserializer, value_deserializer
        )
    ]


def assert_same_reading(data: bytes, check_crcs: bool = False) -> Any:
    pure = outcome(lambda: parse(_pure, data, check_crcs))
    accel = outcome(lambda: parse(_accel, data, check_crcs))
    assert accel == pure
    pure_consumed = outcome(lambda: consume(_pure, data, check_crcs=check_crcs))
    accel_consumed = outcome(lambda: consume(_accel, data, check_crcs=check_crcs))
    assert accel_consumed == pure_consumed
    return pure


_AccelBuilder: Any = _accel.DefaultRecordBatchBuilder


class PythonAppendBuilder(_AccelBuilder):
    """The accelerated builder with its Python append (the fallback when DIRECT_APPEND is off)."""

    __slots__ = ()
    append = _accel._python_append


class SubclassBuilder(_AccelBuilder):
    """A user subclass with a slot of its own: the C append still applies."""

    __slots__ = ("extra",)


ACCEL_BUILDERS: dict[str, type] = {
    "c-append": _accel.DefaultRecordBatchBuilder,
    "py-append": PythonAppendBuilder,
    "subclass": SubclassBuilder,
}


@pytest.fixture(params=list(ACCEL_BUILDERS))
def accel_builder(request: pytest.FixtureRequest) -> type:
    """Each way the accelerated v2 builder's append can run."""
    return ACCEL_BUILDERS[request.param]


# ---------------------------------------------------------------------------------------------
# selection of the implementation


def test_package_picks_accel_when_built() -> None:
    code = "import aiokafkawire.protocol.records as r; print(r._impl.__name__)"
    env = {k: v for k, v in os.environ.items() if k != "AIOKAFKAWIRE_PURE_PYTHON"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "aiokafkawire.protocol.records._accel"
    env["AIOKAFKAWIRE_PURE_PYTHON"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "aiokafkawire.protocol.records._pure"


def test_pure_and_accel_provide_the_same_names() -> None:
    assert set(_accel.__all__) == set(_pure.__all__)
    for name in _pure.__all__:
        assert callable(getattr(_pure, name)), name
        assert callable(getattr(_accel, name)), name
    if records_api._impl is _accel:
        assert records_api.RecordBatchBuilder is _accel.RecordBatchBuilder
        assert records_api.iter_batches is _accel.iter_batches
    # the pure classes stay the pure ones: nothing was patched
    assert _pure.RecordBatch is _pure_v2.RecordBatch
    assert _pure_v2._decode_records is not _crecords.decode_records
    builder = _pure.RecordBatchBuilder(magic=2)
    assert type(builder) is _pure_v2.DefaultRecordBatchBuilder


def test_accel_classes_are_subclasses_of_the_pure_ones() -> None:
    v2 = _accel.RecordBatchBuilder(magic=2)
    legacy = _accel.RecordBatchBuilder(magic=1)
    assert type(v2) is _accel.DefaultRecordBatchBuilder
    assert type(legacy) is _accel.LegacyRecordBatchBuilder
    for builder in (v2, legacy):
        assert isinstance(builder, _accel.RecordBatchBuilder)
    assert isinstance(v2, _pure_v2.DefaultRecordBatchBuilder)
    (batch,) = _accel.iter_batches(build(_accel, SAMPLE[:1]))
    assert isinstance(batch, _pure_v2.RecordBatch)
    assert repr(batch).startswith("RecordBatch(")


def test_records_are_allocated_directly() -> None:
    # Record's layout is the one the C code knows: no per-record Python call.
    assert _accel.DIRECT_RECORDS is True


def test_append_is_compiled() -> None:
    assert _accel.DIRECT_APPEND is True
    assert vars(_accel.DefaultRecordBatchBuilder)["append"] is _crecords.builder_append
    assert vars(PythonAppendBuilder)["append"] is _accel._python_append
    builder = _accel.RecordBatchBuilder(magic=2)
    assert builder.append.__self__ is builder


# ---------------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name.lower())
@pytest.mark.parametrize(
    "timestamp_type", [TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]
)
def test_round_trip_matches_pure(codec: CompressionType, timestamp_type: TimestampType) -> None:
    kwargs = {
        "compression_type": codec,
        "timestamp_type": timestamp_type,
        "base_offset": 1 << 40,
        "producer_id": 77,
        "producer_epoch": 3,
        "base_sequence": 10,
        "is_transactional": True,
    }
    ours = build(_accel, SAMPLE, **kwargs)
    assert ours == build(_pure, SAMPLE, **kwargs)
    rows = parse(_accel, ours)
    assert rows == parse(_pure, ours)
    assert [cls for cls, _ in rows] == [Record] * len(SAMPLE)
    records = [record for _, record in rows]
    assert [r.offset for r in records] == [(1 << 40) + i for i in range(len(SAMPLE))]
    assert [r.key for r in records] == [s[1] for s in SAMPLE]
    assert [r.value for r in records] == [s[2] for s in SAMPLE]
    assert [r.headers for r in records] == [s[3] or [] for s in SAMPLE]
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        assert {r.timestamp for r in records} == {max(s[0] for s in SAMPLE)}
    else:
        assert [r.timestamp for r in records] == [s[0] for s in SAMPLE]
    assert {r.timestamp_type for r in records} == {timestamp_type}


def test_control_batches_match_pure() -> None:
    data = b"".join(
        impl.build_control_batch(
            kind, producer_id=5, producer_epoch=1, coordinator_epoch=9, timestamp_ms=123
        )
        for impl in (_pure, _accel)
        for kind in (ControlRecordType.COMMIT, ControlRecordType.ABORT)
    )
    rows = parse(_accel, data)
    assert rows == parse(_pure, data)
    assert [cls for cls, _ in rows] == [ControlRecord] * 4
    assert [r.control_type for _, r in rows] == [
        ControlRecordType.COMMIT,
        ControlRecordType.ABORT,
    ] * 2
    assert rows[0][1].coordinator_epoch == 9


def test_records_are_independent_objects() -> None:
    data = build(_accel, [(1, None, b"a", []), (2, None, b"b", [])])
    first, second = (r for _, r in parse(_accel, data))
    first.headers.append(("x", b"y"))
    assert second.headers == []
    first.value = b"changed"  # plain mutable slots, as in the pure path
    assert first == Record(0, 1, TimestampType.CREATE_TIME, None, b"changed", [("x", b"y")])


def test_batch_full_decisions_match_pure(accel_builder: type) -> None:
    for batch_size in (0, 50, 200, 1000):
        results = {}
        for cls in (_pure_v2.DefaultRecordBatchBuilder, accel_builder):
            builder = cls(magic=2, batch_size=batch_size)
            appended = [builder.append(1000 + i, b"k", b"v" * (i * 7), None) for i in range(40)]
            results[cls] = (appended, builder.record_count, builder.size_in_bytes, builder.build())
        assert results[accel_builder] == results[_pure_v2.DefaultRecordBatchBuilder]


def test_builder_state_and_reuse_rules() -> None:
    builder = _accel.RecordBatchBuilder(magic=2)
    assert builder.append(None, None, b"now", None)  # timestamp None: now
    built = builder.build()
    assert builder.build() is built
    with pytest.raises(IllegalStateError):
        builder.append(1, None, b"late", None)
    (record,) = (r for _, r in parse(_accel, built))
    assert record.timestamp > 1_600_000_000_000


@pytest.mark.parametrize(
    ("timestamps", "key", "value", "headers"),
    [
        ([5, 5 + INT64_MAX], b"k", b"v", None),  # delta beyond int64: pure's wrapping encoder
        ([5, -(1 << 70)], b"k", b"v", None),
        ([1, 2], bytearray(b"ba"), memoryview(b"mv"), None),  # memoryview: pure path
        ([1, 2], b"k", b"v", (("t", b"tuple"), ("n", None))),
        ([1, 2], b"k", b"v", [["list-pair", b"v"]]),
        ([1, 2], b"k", b"v", [("ba", bytearray(b"x"))]),
        ([1, 2], b"k", b"v", iter([("it", b"x")])),  # truthy iterator: pure's len() fails
        ([1, 2], b"k", b"v", [(b"bytes-key", b"x")]),
        ([1, 2], b"k", b"v", [("\udc80", b"x")]),  # unencodable key
        ([1, 2], b"k", b"v", [("a", b"x", b"extra")]),
        ([1, 2], "str", b"v", None),
        ([1, 2], b"k", 42, None),
        ([1, 2.5], b"k", b"v", None),
        ([1, "x"], b"k", b"v", None),
        ([True, 3], b"k", b"v", None),
    ],
)
def test_unusual_appends_match_pure(
    accel_builder: type, timestamps: list[Any], key: Any, value: Any, headers: Any
) -> None:
    def run(cls: type) -> Any:
        builder = cls(magic=2)
        results = [
            outcome(lambda t=t: builder.append(t, key, value, headers))  # type: ignore[misc]
            for t in timestamps
        ]
        state = (builder._base_timestamp, builder._max_timestamp, builder.record_count)
        return results, state, outcome(builder.build)

    assert run(accel_builder) == run(_pure_v2.DefaultRecordBatchBuilder)


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.append(timestamp_ms=5, key=b"k", value=b"v", headers=[("h", b"")]),
        lambda b: b.append(5, b"k", value=b"v"),
        lambda b: b.append(5, b"k"),
        lambda b: b.append(5, b"k", b"v", None, "extra"),
        lambda b: b.append(),
        lambda b: type(b).append(object(), 5, b"k", b"v"),
        lambda b: type(b).append(5, b"k", b"v", None),
        lambda b: [b.append(1, None, b"a"), b.append(1 << 64, None, b"b")],
        lambda b: [b.append(-(1 << 63), None, b"a"), b.append(INT64_MAX, None, b"b")],
        lambda b: [b.append(INT64_MAX, None, b"a"), b.append(-(1 << 63), None, b"b")],
    ],
)
def test_unusual_calls_match_pure(accel_builder: type, call: Callable[[Any], Any]) -> None:
    def run(cls: type) -> Any:
        builder = cls(magic=2)
        result = outcome(lambda: call(builder))
        return result, builder.record_count, outcome(builder.build)

    assert run(accel_builder) == run(_pure_v2.DefaultRecordBatchBuilder)


def test_odd_builder_states_match_pure(accel_builder: type) -> None:
    def run(cls: type, damage: Callable[[Any], None]) -> Any:
        builder = cls(magic=2)
        builder.append(10, None, b"a")
        damage(builder)
        result = outcome(lambda: builder.append(20, None, b"b"))
        return result, outcome(lambda: builder.record_count), outcome(builder.build)

    def uninitialised(cls: type) -> Any:
        return outcome(lambda: object.__new__(cls).append(1, None, b"x"))

    damages: list[Callable[[Any], None]] = [
        lambda b: setattr(b, "_count", 1.0),
        lambda b: setattr(b, "_count", True),
        lambda b: setattr(b, "_base_timestamp", 1 << 70),
        lambda b: setattr(b, "_max_timestamp", 15.5),
        lambda b: setattr(b, "_batch_size", 1 << 80),
        lambda b: setattr(b, "_buffer", bytes(b._buffer)),
        lambda b: delattr(b, "_buffer"),
        lambda b: setattr(b, "_built", b""),
    ]
    for damage in damages:
        assert run(accel_builder, damage) == run(_pure_v2.DefaultRecordBatchBuilder, damage)
    assert uninitialised(accel_builder) == uninitialised(_pure_v2.DefaultRecordBatchBuilder)


def test_value_aliasing_the_builder_buffer(accel_builder: type) -> None:
    built = []
    for cls in (_pure_v2.DefaultRecordBatchBuilder, accel_builder):
        builder = cls(magic=2)
        builder.append(1, None, b"x", None)
        buffer = builder._buffer
        assert builder.append(2, buffer, buffer, None)
        built.append(builder.build())
    assert built[0] == built[1]


def test_buffer_exported_while_appending(accel_builder: type) -> None:
    for cls in (_pure_v2.DefaultRecordBatchBuilder, accel_builder):
        builder = cls(magic=2)
        builder.append(1, None, b"x", None)
        with memoryview(builder._buffer):
            with pytest.raises(BufferError):
                builder.append(2, None, b"y" * 1000, None)
        assert builder.record_count == 1


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_build_view_is_the_built_batch_without_a_copy(
    accel_builder: type, codec: CompressionType
) -> None:
    for cls in (_pure_v2.DefaultRecordBatchBuilder, accel_builder):
        builder = cls(magic=2, compression_type=codec)
        twin = cls(magic=2, compression_type=codec)
        for b in (builder, twin):
            for timestamp, key, value, headers in SAMPLE:
                b.append(timestamp, key, value, headers)
        buffer = builder._buffer
        view = builder.build_view()
        assert view.readonly and bytes(view) == twin.build()
        if codec == CompressionType.NONE:
            assert view.obj is buffer  # the records' own buffer: not copied
        assert builder.build_view() is view
        assert builder.build() == twin.build() and builder.size_in_bytes == len(view)
        with pytest.raises(IllegalStateError):
            builder.append(1, None, b"late", None)
    legacy = records_api.RecordBatchBuilder(magic=1)
    legacy.append(1, None, b"x", None)
    assert legacy.build_view() == legacy.build()


def test_buffer_grows_to_the_batch_limit_not_by_eighths() -> None:
    """A batch of 10 KB records is reallocated once per doubling of its limit, as the producer
    raises it: bytearray's own growth (an eighth) reallocated, and copied, it about 40 times on
    its way to 1 MB.  The capacity never exceeds the limit, nor twice the batch's bytes."""
    builder = _accel.DefaultRecordBatchBuilder(magic=2, batch_size=16_384)
    value = b"v" * 10_240
    capacities = set()
    while True:
        if not builder.append(1, None, value, None):
            if builder.batch_size == 1_048_576:
                break
            builder.batch_size *= 2  # what RecordAccumulator.grow does
            continue
        buffer = builder._buffer
        capacity = buffer.__sizeof__() - bytearray().__sizeof__()
        assert len(buffer) < capacity <= max(builder.batch_size, 2 * len(buffer)) + 1
        capacities.add(capacity)
    assert builder.record_count == 102
    assert len(capacities) <= 8  # 16 KB, 32 KB, ... 1 MB
    small = _accel.DefaultRecordBatchBuilder(magic=2, batch_size=1_048_576)
    small.append(1, None, b"x" * 100, None)
    assert small._buffer.__sizeof__() - bytearray().__sizeof__() <= 2 * len(small._buffer) + 1


def test_buffer_allocation_doubles_up_to_batch_size() -> None:
    # bytearray grows by an eighth: a 300 KB batch of 100 B records would be copied some 70
    # times by realloc; the C append doubles the allocation instead (and stops at batch_size).
    builder = _accel.RecordBatchBuilder(magic=2, batch_size=1_000_000)
    allocations = set()
    for i in range(3000):
        assert builder.append(1_700_000_000_000 + i, b"k" * 8, b"v" * 100, None)
        allocations.add(sys.getsizeof(builder._buffer))
    assert len(allocations) <= 16
    assert sys.getsizeof(builder._buffer) < 2 * len(builder._buffer) + 1000
    small = _accel.RecordBatchBuilder(magic=2, batch_size=5000)
    while small.append(1_700_000_000_000, b"k" * 8, b"v" * 100, None):
        pass
    assert sys.getsizeof(small._buffer) <= 5000 + 200  # never allocated past batch_size
    reference = _pure_v2.DefaultRecordBatchBuilder(magic=2, batch_size=5000)
    while reference.append(1_700_000_000_000, b"k" * 8, b"v" * 100, None):
        pass
    assert small.build() == reference.build()


# ---------------------------------------------------------------------------------------------
# malformed input: same records or the same exception type


MALFORMED_BODIES: list[tuple[str, bytes, int]] = [
    ("empty body, count 1", b"", 1),
    ("truncated length varint", b"\x80", 1),
    ("length too small", encode_varint(5) + b"\x00" * 5, 1),
    ("length beyond batch", record_body(length=100), 1),
    ("length longer than content", record_body(length=12) + b"\x00\x00", 1),
    ("negative length", encode_varint(-3) + b"\x00" * 10, 1),
    ("eleven-byte varint", b"\xff" * 10 + b"\x01", 1),
    ("wide length", wide_varint(1 << 66) + b"\x00" * 10, 1),
    ("key length -2", b"\x08\x00\x00\x00" + encode_varint(-2) + b"\x00\x00\x00", 1),
    ("key past record", record_body(key=b"kk", length=6) + b"\x00" * 4, 1),
    ("value length -5", record_body(value=None)[:-2] + encode_varint(-5) + b"\x00", 1),
    ("header count -1", record_body(headers=encode_varint(-1)), 1),
    ("header count huge", record_body(headers=encode_varint(1 << 40)), 1),
    ("wide header count", record_body(headers=wide_varint(1 << 69)), 1),
    ("header key -1", record_body(headers=b"\x02" + encode_varint(-1) + b"\x00"), 1),
    ("header key past end", record_body(headers=b"\x02\x7e"), 1),
    ("header value -2", record_body(headers=b"\x02\x02h" + encode_varint(-2)), 1),
    ("bad utf-8 header key", record_body(headers=b"\x02\x02\xff\x01"), 1),
    ("header count 1 but none", record_body(headers=b"\x02"), 1),
    ("trailing bytes", record_body() + b"\x00", 1),
    ("record length covers extra bytes", record_body(length=10) + b"\x00\x00", 1),
    ("extra bytes then another record", record_body(length=9) + b"\x00" + record_body(), 2),
    ("count larger than records", record_body() * 2, 3),
    ("count smaller than records", record_body() * 3, 2),
    ("count beyond bytes / 7", record_body() * 2, 10_000),
    ("negative count", record_body(), -1),
    ("negative count, no bytes", b"", -5),
]

WELL_FORMED_ODD_BODIES: list[tuple[str, bytes, int]] = [
    ("non-minimal zero header count", record_body(headers=b"\x80\x00"), 1),
    ("non-minimal lengths", b"\x94\x00\x00\x80\x00\x00\x82\x00k\x02v\x00", 1),
    ("negative offset delta", record_body(offset_delta=-7), 1),
    ("negative timestamp delta", record_body(timestamp_delta=-(1 << 40)), 1),
    ("offset beyond int64", record_body(offset_delta=INT64_MAX), 1),
    ("timestamp beyond int64", record_body(timestamp_delta=INT64_MAX), 1),
    (
        "wide timestamp delta",
        record_body(timestamp_delta=(1 << 69) + 5, raw_varint=wide_varint),
        1,
    ),
    ("wide offset delta", record_body(offset_delta=(1 << 68) + 2, raw_varint=wide_varint), 1),
    ("just over 64 bits", record_body(offset_delta=(1 << 64) + 6, raw_varint=wide_varint), 1),
    ("ten-byte minus one", record_body(offset_delta=(1 << 64) - 1, raw_varint=wide_varint), 1),
    ("utf-8 header key", record_body(headers=b"\x02\x04\xc3\xa9\x01"), 1),
    (
        "null key, value and header value",
        record_body(key=None, value=None, headers=b"\x02\x02h\x01"),
        1,
    ),
]


@pytest.mark.parametrize(
    ("body", "count"),
    [(body, count) for _, body, count in MALFORMED_BODIES],
    ids=[name for name, _, _ in MALFORMED_BODIES],
)
@pytest.mark.parametrize("log_append_time", [False, True], ids=["create", "append"])
def test_malformed_records_raise_like_pure(body: bytes, count: int, log_append_time: bool) -> None:
    attributes = _pure_v2.ATTR_TIMESTAMP_TYPE if log_append_time else 0
    data = raw_batch(body, count, attributes=attributes)
    result = assert_same_reading(data)
    if count >= 0 or body:
        assert result == ("error", CorruptRecordError)


@pytest.mark.parametrize(
    ("body", "count"),
    [(body, count) for _, body, count in WELL_FORMED_ODD_BODIES],
    ids=[name for name, _, _ in WELL_FORMED_ODD_BODIES],
)
@pytest.mark.parametrize("log_append_time", [False, True], ids=["create", "append"])
@pytest.mark.parametrize("base", [0, INT64_MAX, -(1 << 63)], ids=["zero", "max", "min"])
def test_odd_but_valid_records_read_like_pure(
    body: bytes, count: int, log_append_time: bool, base: int
) -> None:
    attributes = _pure_v2.ATTR_TIMESTAMP_TYPE if log_append_time else 0
    data = raw_batch(body, count, base_offset=base, base_timestamp=base, attributes=attributes)
    result = assert_same_reading(data)
    if base == 0:
        assert result[0] == "ok"


def test_malformed_compressed_batch_raises_like_pure() -> None:
    body = record_body() + b"\x00"
    for codec in (CompressionType.GZIP, CompressionType.LZ4, CompressionType.ZSTD):
        from aiokafkawire.protocol.records.codecs import compress

        data = raw_batch(compress(codec, body, 2), 1, attributes=int(codec))
        assert assert_same_reading(data) == ("error", CorruptRecordError)


def test_crc_mismatch_raises_like_pure() -> None:
    data = bytearray(build(_pure, SAMPLE))
    data[-1] ^= 1
    assert assert_same_reading(bytes(data), check_crcs=True) == ("error", CorruptRecordError)


def test_decode_records_guards_its_arguments() -> None:
    data = raw_batch(record_body(), 1)
    ok = _crecords.decode_records(
        data, HEADER_SIZE, len(data), 1, 0, 0, TimestampType.CREATE_TIME, None, Record
    )
    assert ok == [Record(0, 0, TimestampType.CREATE_TIME, b"k", b"v", [])]
    for pos, end in ((-1, len(data)), (HEADER_SIZE, len(data) + 1), (10, 5)):
        with pytest.raises(ValueError):
            _crecords.decode_records(
                data, pos, end, 1, 0, 0, TimestampType.CREATE_TIME, None, Record
            )
    with pytest.raises(TypeError):
        _crecords.decode_records(data, HEADER_SIZE, len(data), 1, 0, 0)
    with pytest.raises(TypeError):
        _crecords.decode_records("text", 0, 0, 1, 0, 0, TimestampType.CREATE_TIME, None, Record)
    # base offsets outside int64: handed back to the pure path
    assert (
        _crecords.decode_records(
            data, HEADER_SIZE, len(data), 1, 1 << 64, 0, TimestampType.CREATE_TIME, None, Record
        )
        is None
    )


def test_decode_records_into_another_record_class() -> None:
    class MyRecord(Record):
        __slots__ = ("extra",)

        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self.extra = "made by __init__"

    data = raw_batch(record_body(offset_delta=3), 1)
    (record,) = _crecords.decode_records(
        data, HEADER_SIZE, len(data), 1, 10, 0, TimestampType.CREATE_TIME, None, MyRecord
    )
    assert type(record) is MyRecord
    assert (record.offset, record.extra) == (13, "made by __init__")


def test_other_buffer_types_decode_the_same() -> None:
    data = build(_pure, SAMPLE, compression_type=CompressionType.NONE)
    expected = parse(_pure, data)
    for buf in (bytearray(data), memoryview(data)):
        assert [(type(r), r) for b in _accel.iter_batches(buf) for r in b] == expected
    records = _crecords.decode_records(
        bytearray(data),
        HEADER_SIZE,
        len(data),
        len(SAMPLE),
        0,
        SAMPLE[0][0],
        TimestampType.CREATE_TIME,
        None,
        Record,
    )
    assert records == [r for _, r in expected]


# ---------------------------------------------------------------------------------------------
# consumer records (RecordBatch.consumer_records)


class DictTuple(tuple):  # type: ignore[type-arg]
    """A tuple class with a __dict__: the C path builds it with tuple.__new__, as the pure one."""


def _upper(value: bytes | None) -> Any:
    return None if value is None else value.upper()


def _as_list(value: bytes | None) -> Any:
    return [value]


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize(
    "timestamp_type", [TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]
)
@pytest.mark.parametrize("min_offset", [0, 2, 5, 100])
@pytest.mark.parametrize("record_cls", [ConsumerRecord, tuple, DictTuple])
@pytest.mark.parametrize(
    "deserializers", [(None, None), (_upper, None), (None, _as_list), (_upper, _upper)]
)
def test_consumer_records_match_pure(
    codec: CompressionType,
    timestamp_type: TimestampType,
    min_offset: int,
    record_cls: type,
    deserializers: tuple[Any, Any],
) -> None:
    data = build(_pure, SAMPLE, compression_type=codec, timestamp_type=timestamp_type)
    data += build(_pure, SAMPLE[:2], base_offset=len(SAMPLE))
    pure = consume(_pure, data, min_offset, record_cls, *deserializers, check_crcs=True)
    accel = consume(_accel, data, min_offset, record_cls, *deserializers, check_crcs=True)
    assert accel == pure
    assert len(pure) == max(0, len(SAMPLE) + 2 - min_offset)
    for cls, record in accel:
        assert cls is record_cls
        assert type(record[4]) is int and type(record[7]) is tuple
        assert record[0] == "topic" and record[1] == 3 and record[8] is None


def test_consumer_records_fields() -> None:
    data = raw_batch(record_body(offset_delta=1, headers=b"\x02\x02h\x02v"), 1, base_offset=40)
    data = data[:12] + struct.pack(">i", 7) + data[16:]  # partition leader epoch 7 (not in CRC)
    for impl in (_pure, _accel):
        ((_, record),) = consume(impl, data)
        assert record == ConsumerRecord(
            "topic", 3, 41, 1_700_000_000_000, 0, b"k", b"v", (("h", b"v"),), 7
        )


def test_consumer_records_skip_control_batches() -> None:
    control = _pure_v2.build_control_batch(
        ControlRecordType.COMMIT, producer_id=1, producer_epoch=0
    )
    for impl in (_pure, _accel):
        assert consume(impl, bytes(control)) == []


def test_consumer_records_errors_like_pure() -> None:
    bad_utf8 = raw_batch(record_body(headers=b"\x02\x02\xff\x01"), 1)
    for impl in (_pure, _accel):
        with pytest.raises(CorruptRecordError) as info:
            consume(impl, bad_utf8)
        assert isinstance(info.value.__cause__, UnicodeDecodeError)
        assert "malformed record in batch at offset 0" in str(info.value)
    data = build(_pure, SAMPLE)
    calls: dict[Any, list[Any]] = {_pure: [], _accel: []}

    for impl in (_pure, _accel):

        def failing(value: bytes | None, seen: list[Any] = calls[impl]) -> Any:
            seen.append(value)
            if len(seen) == 3:
                raise ValueError("not mine")
            return value

        with pytest.raises(ValueError, match="not mine"):
            consume(impl, data, 0, ConsumerRecord, None, failing)
    assert calls[_accel] == calls[_pure]
    # beyond int64: the pure path's Python ints
    wide = raw_batch(record_body(offset_delta=INT64_MAX), 1, base_offset=INT64_MAX)
    assert consume(_accel, wide) == consume(_pure, wide)
    assert consume(_accel, wide)[0][1].offset == 2 * INT64_MAX


def test_consumer_records_gc_tracking() -> None:
    data = build(_pure, SAMPLE)
    plain = [r for _, r in consume(_accel, data)]
    assert plain and not any(gc.is_tracked(r) for r in plain)
    assert all(not gc.is_tracked(h) for r in plain for h in r.headers)
    listed = [r for _, r in consume(_accel, data, 0, ConsumerRecord, None, _as_list)]
    assert all(gc.is_tracked(r) for r in listed)
    # a record holding a tracked object is seen by the collector: cycles through it are found
    listed[0].value.append(listed[0])
    del listed
    assert gc.collect() > 0


@pytest.mark.parametrize(
    "decode",
    [
        lambda batch: batch.consumer_records(ConsumerRecord, "topic", 3, 0),
        lambda batch: batch.share_records(ShareRecord, "topic", 3, 0, 10_000, 1),
    ],
    ids=["consumer", "share"],
)
def test_records_pause_the_collector_while_built(decode: Callable[[Any], list[Any]]) -> None:
    """A batch's records (consumer or share) are built without a young-generation collection
    every 700 of them (they are untracked at once); the collector's enabled state is left as it
    was."""
    body = record_body()
    data = raw_batch(body * 3_000, 3_000)
    starts: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            starts.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        gc.collect()
        before = len(starts)
        (batch,) = list(_accel.iter_batches(data, check_crcs=False))
        records = decode(batch)
        during = len(starts) - before
        assert len(records) == 3_000 and during == 0
        assert gc.isenabled()
        gc.disable()
        try:
            assert len(decode(batch)) == 3_000
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        gc.callbacks.remove(seen)


def test_consumer_records_share_equal_timestamps() -> None:
    """Records of one batch with the same timestamp share one int (one allocation less each);
    records skipped before the fetch offset do not leave a freed int behind to share."""
    deltas = [0, 0, 0, 5, 5, 0]
    body = b"".join(record_body(d, i) for i, d in enumerate(deltas))
    data = raw_batch(body, len(deltas), base_offset=10)
    for min_offset in (0, 11, 13, 14):
        pure = consume(_pure, data, min_offset)
        accel = [r for _, r in consume(_accel, data, min_offset)]
        assert accel == [r for _, r in pure]
        base = 1_700_000_000_000
        assert [r.timestamp - base for r in accel] == deltas[max(0, min_offset - 10) :]
    records = [r for _, r in consume(_accel, data)]
    assert records[0].timestamp is records[1].timestamp is records[2].timestamp
    assert records[3].timestamp is records[4].timestamp
    assert records[5].timestamp is not records[0].timestamp  # only the previous one is reused


def test_decode_consumer_records_guards_its_arguments() -> None:
    data = raw_batch(record_body(), 1)
    args: list[Any] = [data, HEADER_SIZE, len(data), 1, 0, 0, None, ConsumerRecord]
    args += ["t", 0, 0, None, 0, None, None]
    assert len(_crecords.decode_consumer_records(*args)) == 1
    with pytest.raises(TypeError):
        _crecords.decode_consumer_records(*args[:-1])
    with pytest.raises(TypeError):
        _crecords.decode_consumer_records(*args[:7], Record, *args[8:])
    with pytest.raises(ValueError):
        _crecords.decode_consumer_records(data, 0, len(data) + 1, *args[3:])
    assert _crecords.decode_consumer_records(*args[:12], 1 << 64, None, None) is None


# ---------------------------------------------------------------------------------------------
# share records (RecordBatch.share_records)


def share(
    impl: Any, data: bytes, first: int, last: int, record_cls: type = ShareRecord, count: int = 2
) -> list[tuple[type, Any]]:
    """Every share record of offsets ``first..last``, with its class (delivery count ``count``)."""
    return [
        (type(record), record)
        for batch in impl.iter_batches(data, check_crcs=True)
        for record in batch.share_records(record_cls, "topic", 3, first, last, count)
    ]


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize(
    "timestamp_type", [TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]
)
@pytest.mark.parametrize("bounds", [(0, 100), (2, 5), (1, 1), (6, 6), (7, 3)])
@pytest.mark.parametrize("record_cls", [ShareRecord, tuple, DictTuple])
def test_share_records_match_pure(
    codec: CompressionType, timestamp_type: TimestampType, bounds: tuple[int, int], record_cls: type
) -> None:
    data = build(_pure, SAMPLE, compression_type=codec, timestamp_type=timestamp_type)
    data += build(_pure, SAMPLE[:2], base_offset=len(SAMPLE))
    pure = share(_pure, data, *bounds, record_cls)
    accel = share(_accel, data, *bounds, record_cls)
    assert accel == pure
    first, last = bounds
    assert [r[2] for _, r in pure] == list(range(first, min(last, len(SAMPLE) + 1) + 1))
    consumed = consume(_pure, data, 0)
    for (cls, record), (_, consumer_record) in zip(accel, consumed[first:], strict=False):
        assert cls is record_cls
        assert tuple(record) == (*consumer_record, 2)  # the consumer's fields, delivery count


def test_share_records_are_untracked_and_skip_control_batches() -> None:
    data = build(_pure, SAMPLE)
    records = [r for _, r in share(_accel, data, 0, 100)]
    assert records and not any(gc.is_tracked(r) for r in records)
    assert records[0].delivery_count == 2 and records[0].topic_partition == ("topic", 3)
    control = _pure_v2.build_control_batch(
        ControlRecordType.COMMIT, producer_id=1, producer_epoch=0
    )
    for impl in (_pure, _accel):
        assert share(impl, bytes(control), 0, 100) == []
        with pytest.raises(CorruptRecordError):
            share(impl, raw_batch(record_body(headers=b"\x02\x02\xff\x01"), 1), 0, 0)


def test_decode_share_records_guards_its_arguments() -> None:
    data = raw_batch(b"".join(record_body(offset_delta=i) for i in range(3)), 3)
    args: list[Any] = [data, HEADER_SIZE, len(data), 3, 0, 0, None, ShareRecord]
    args += ["t", 0, 0, None, 1, 1, 4]
    [record] = _crecords.decode_share_records(*args)
    assert record.offset == 1 and record.delivery_count == 4
    with pytest.raises(TypeError):
        _crecords.decode_share_records(*args[:-1])
    with pytest.raises(TypeError):
        _crecords.decode_share_records(*args[:7], Record, *args[8:])
    with pytest.raises(ValueError):
        _crecords.decode_share_records(data, 0, len(data) + 1, *args[3:])
    assert _crecords.decode_share_records(*args[:13], 1 << 64, 4) is None
    # beyond int64: the pure path's Python ints
    wide = raw_batch(record_body(offset_delta=INT64_MAX), 1, base_offset=INT64_MAX)
    assert share(_accel, wide, 0, 1 << 65) == share(_pure, wide, 0, 1 << 65)


# ---------------------------------------------------------------------------------------------
# fuzzing


header_lists = st.one_of(
    st.none(),
    st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)), max_size=4),
)
samples = st.lists(
    st.tuples(
        st.integers(min_value=-(1 << 45), max_value=1 << 45) | st.none(),
        st.none() | st.binary(max_size=40),
        st.none() | st.binary(max_size=300),
        header_lists,
    ),
    min_size=1,
    max_size=12,
)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(
    samples,
    st.sampled_from(list(CompressionType)),
    st.sampled_from([TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]),
    st.integers(min_value=0, max_value=4000),
)
def test_fuzz_builds_and_reads_like_pure(
    records: list[Sample], codec: CompressionType, ts_type: TimestampType, batch_size: int
) -> None:
    records = [(1 if ts is None else ts, k, v, h) for ts, k, v, h in records]  # no clock
    built = {}
    for cls in (_pure_v2.DefaultRecordBatchBuilder, *ACCEL_BUILDERS.values()):
        builder = cls(
            magic=2, compression_type=codec, timestamp_type=ts_type, batch_size=batch_size
        )
        appended = [builder.append(*record) for record in records]
        built[cls] = (appended, builder.build())
    for cls in ACCEL_BUILDERS.values():
        assert built[cls] == built[_pure_v2.DefaultRecordBatchBuilder]
    data = built[_pure_v2.DefaultRecordBatchBuilder][1]
    assert parse(_accel, data) == parse(_pure, data)


@FUZZ
@given(samples, st.data())
def test_fuzz_mutated_batches_read_like_pure(records: list[Sample], data: st.DataObject) -> None:
    records = [(1 if ts is None else ts, k, v, h) for ts, k, v, h in records]
    batch = bytearray(build(_pure, records))
    body = batch[HEADER_SIZE:]
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        kind = data.draw(st.sampled_from(["flip", "set", "cut", "insert"]), label="kind")
        if not body:
            break
        at = data.draw(st.integers(0, len(body) - 1), label="at")
        if kind == "flip":
            body[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        elif kind == "set":
            body[at] = data.draw(st.integers(0, 255), label="byte")
        elif kind == "cut":
            del body[at : at + data.draw(st.integers(1, 8), label="length")]
        else:
            body[at:at] = data.draw(st.binary(min_size=1, max_size=8), label="bytes")
    count = data.draw(st.sampled_from([len(records), len(records) + 1, 0, -1]), label="count")
    assume(count != 0)  # empty batches are not decoded at all
    mutated = raw_batch(bytes(body), count)
    # The batch alone, and followed by bytes the pure path may read past the batch end into.
    assert_same_reading(mutated)
    assert_same_reading(mutated + bytes(batch), check_crcs=False)


@FUZZ
@given(st.binary(max_size=200), st.integers(-2, 40), st.booleans())
def test_fuzz_random_bodies_read_like_pure(body: bytes, count: int, log_append: bool) -> None:
    assume(count != 0)
    attributes = _pure_v2.ATTR_TIMESTAMP_TYPE if log_append else 0
    assert_same_reading(raw_batch(body, count, attributes=attributes))


# ---------------------------------------------------------------------------------------------
# references and memory


def test_no_reference_leaks() -> None:
    data = build(_pure, SAMPLE) + raw_batch(
        record_body(headers=b"\x02\x02\xff\x01"), 1
    )  # the second batch fails (bad utf-8)
    max_ts = max(s[0] for s in SAMPLE)

    def one_round() -> None:
        batches = list(_accel.iter_batches(data))
        for record in batches[0]:
            assert record.value is None or len(record.value) >= 0
        with pytest.raises(CorruptRecordError):
            batches[1].records()
        for deserializer in (None, _upper, _as_list):
            batches[0].consumer_records(ConsumerRecord, "t", 1, 2, deserializer, deserializer)
            batches[0].consumer_records(DictTuple, "t", 1, 0, None, deserializer)
        with pytest.raises(CorruptRecordError):
            batches[1].consumer_records(ConsumerRecord, "t", 1, 0)
        for cls in ACCEL_BUILDERS.values():
            builder = cls(magic=2)
            for ts, key, value, headers in SAMPLE:
                builder.append(ts, key, value, headers)
            builder.append(None, None, b"now")
            builder.append(7, b"k", memoryview(b"pure path"), (("t", None),))
            with pytest.raises(TypeError):
                builder.append(1, "text", b"v")
            builder.build()

    sentinels = [TimestampType.CREATE_TIME, Record, CorruptRecordError, max_ts, b"k"]
    for _ in range(20):
        one_round()
    gc.collect()
    before = [sys.getrefcount(obj) for obj in sentinels]
    tracemalloc.start()
    try:
        for _ in range(200):
            one_round()
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        for _ in range(1000):
            one_round()
        gc.collect()
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(obj) for obj in sentinels] == before
    assert second - first < 64 * 1024, (first, second)


def test_timestamps_at_the_int_digit_boundaries_build_like_pure() -> None:
    """The compiled append reads ints of up to two digits directly (3.11): every boundary of
    the one-, two- and three-digit forms, both signs, builds what the pure builder builds."""
    edges = [0, 1, (1 << 30) - 1, 1 << 30, (1 << 60) - 1, 1 << 60, (1 << 63) - 1]
    stamps = sorted({sign * edge for edge in edges for sign in (1, -1)} | {-(1 << 63)})
    for base in stamps:
        records = [(base, b"k", b"v", None)] + [(ts, None, b"w", None) for ts in stamps]
        built = {}
        for cls in (_pure_v2.DefaultRecordBatchBuilder, *ACCEL_BUILDERS.values()):
            builder = cls(magic=2, batch_size=1 << 20)
            built[cls] = ([builder.append(*record) for record in records], builder.build())
        for cls in ACCEL_BUILDERS.values():
            assert built[cls] == built[_pure_v2.DefaultRecordBatchBuilder], base


# ---------------------------------------------------------------- NamedTuple fields as members


@pytest.mark.parametrize("cls", [ConsumerRecord, ShareRecord, RecordMetadata])
def test_record_fields_are_member_descriptors_that_read_the_tuple(cls: Any) -> None:
    from aiokafkawire._compiled import pure_python_forced

    if pure_python_forced():
        pytest.skip("the pure paths keep NamedTuple's own properties")
    values = tuple(f"field-{i}".encode() for i in range(len(cls._fields)))
    record = cls(*values)
    for index, name in enumerate(cls._fields):
        descriptor = cls.__dict__[name]
        assert type(descriptor).__name__ == "member_descriptor"
        assert descriptor.__doc__ == f"Alias for field number {index}"
        assert getattr(record, name) is values[index] is record[index]
        with pytest.raises(AttributeError):
            setattr(record, name, b"other")
    # what NamedTuple gives besides the fields is unchanged
    assert record._asdict() == dict(zip(cls._fields, values, strict=True))
    assert record._replace(offset=7).offset == 7  # every one of these classes has an offset
    assert cls._make(values) == record
    with pytest.raises(TypeError):
        cls._make(values[:-1])  # a short tuple is refused, so every field's item exists


def test_fields_as_members_refuses_what_is_not_a_plain_named_tuple() -> None:
    from typing import NamedTuple

    class WithDict(tuple):  # type: ignore[type-arg]  # a __dict__: items are not where a tuple's are
        _fields = ("a",)

    class Pair(NamedTuple):
        a: int
        b: int

    with pytest.raises(TypeError, match="tuple subclass"):
        _crecords.fields_as_members(dict)
    with pytest.raises(TypeError, match="NamedTuple class"):
        _crecords.fields_as_members(WithDict)
    _crecords.fields_as_members(Pair)
    assert Pair(1, 2).b == 2 and type(Pair.__dict__["b"]).__name__ == "member_descriptor"
