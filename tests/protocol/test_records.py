"""Record formats: round trips, partial data, CRCs, unknown magic/codec, control batches, fuzz."""

from __future__ import annotations

import struct
import zlib
from types import ModuleType

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiokafkawire.errors import (
    CorruptRecordError,
    EncodeError,
    IllegalStateError,
    KafkaError,
    UnknownCodecError,
    UnknownMagicError,
)
from aiokafkawire.protocol import records as records_api
from aiokafkawire.protocol.records import _pure
from aiokafkawire.protocol.records._types import (
    CompressionType,
    ControlRecord,
    ControlRecordType,
    TimestampType,
)

IMPLS = [_pure] if records_api._impl is _pure else [_pure, records_api._impl]

CODECS_BY_MAGIC = [
    (magic, codec)
    for magic in (0, 1, 2)
    for codec in CompressionType
    if not (codec == CompressionType.ZSTD and magic < 2)
]

Sample = tuple[int, "bytes | None", "bytes | None", list[tuple[str, "bytes | None"]]]
Row = tuple[object, ...]

SAMPLE: list[Sample] = [
    # (timestamp, key, value, headers)
    (1_700_000_000_000, b"key-0", b"value-0", [("h1", b"v1")]),
    (1_700_000_000_005, None, b"value with null key", []),
    (1_700_000_000_003, b"key-2", None, [("null-header", None), ("utf8-\u00e9", b"")]),
    (1_700_000_100_000, b"", b"", []),
    (1_700_000_000_001, b"k" * 300, b"v" * 20_000, [("big", b"x" * 200)]),
]


@pytest.fixture(params=IMPLS, ids=lambda module: module.__name__.rsplit(".", 1)[-1])
def impl(request: pytest.FixtureRequest) -> ModuleType:
    """Every implementation of the records interface that is importable here."""
    module: ModuleType = request.param
    return module


def build(
    impl: ModuleType,
    magic: int,
    codec: int,
    records: list[Sample],
    **kwargs: object,
) -> bytes:
    builder = impl.RecordBatchBuilder(
        magic=magic, compression_type=codec, batch_size=1 << 20, **kwargs
    )
    for timestamp, key, value, headers in records:
        assert builder.append(timestamp, key, value, headers if magic == 2 else None)
    assert builder.record_count == len(records)
    return bytes(builder.build())


def read_all(impl: ModuleType, data: bytes | bytearray | memoryview, **kwargs: bool) -> list[Row]:
    return [
        (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)
        for batch in impl.iter_batches(data, **kwargs)
        for r in batch
    ]


def expected(magic: int, base_offset: int, records: list[Sample]) -> list[Row]:
    out: list[Row] = []
    for i, (timestamp, key, value, headers) in enumerate(records):
        if magic == 0:
            timestamp, ts_type = -1, TimestampType.NO_TIMESTAMP_TYPE
        else:
            ts_type = TimestampType.CREATE_TIME
        out.append((base_offset + i, timestamp, ts_type, key, value, headers if magic == 2 else []))
    return out


@pytest.mark.parametrize(("magic", "codec"), CODECS_BY_MAGIC)
def test_round_trip_every_magic_and_codec(impl: ModuleType, magic: int, codec: int) -> None:
    data = build(impl, magic, codec, SAMPLE, base_offset=4242)
    batches = list(impl.iter_batches(data))
    assert read_all(impl, data) == expected(magic, 4242, SAMPLE)
    assert all(batch.magic == magic for batch in batches)
    assert batches[0].base_offset == 4242
    assert batches[-1].last_offset == 4242 + len(SAMPLE) - 1
    assert batches[-1].next_offset == 4242 + len(SAMPLE)
    if codec:
        assert len(batches) == 1
        assert batches[0].compression_type == codec
    if magic < 2 and not codec:
        assert len(batches) == len(SAMPLE)  # one message per record


def test_v2_batch_header_fields(impl: ModuleType) -> None:
    data = build(
        impl,
        2,
        CompressionType.LZ4,
        SAMPLE,
        base_offset=7,
        is_transactional=True,
        producer_id=123456789,
        producer_epoch=3,
        base_sequence=42,
        partition_leader_epoch=9,
    )
    (batch,) = impl.iter_batches(data)
    assert (batch.base_offset, batch.last_offset, batch.next_offset) == (7, 11, 12)
    assert batch.is_transactional and not batch.is_control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (123456789, 3, 42)
    assert batch.partition_leader_epoch == 9
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    assert batch.compression_type == CompressionType.LZ4
    assert batch.record_count == 5
    assert batch.base_timestamp == SAMPLE[0][0]
    assert batch.max_timestamp == max(r[0] for r in SAMPLE)
    assert batch.size_in_bytes == len(data)
    # The header layout, independently of the reader.
    base_offset, length, leader_epoch, magic, crc, attributes = struct.unpack_from(">qiibIh", data)
    assert (base_offset, length, leader_epoch, magic) == (7, len(data) - 12, 9, 2)
    assert attributes == 0x10 | 3
    assert crc == crc32c.crc32c(data[21:])


def test_v2_log_append_time_uses_max_timestamp(impl: ModuleType) -> None:
    data = build(impl, 2, 0, SAMPLE, timestamp_type=TimestampType.LOG_APPEND_TIME)
    (batch,) = impl.iter_batches(data)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    stamps = {(r.timestamp, r.timestamp_type) for r in batch}
    assert stamps == {(max(r[0] for r in SAMPLE), TimestampType.LOG_APPEND_TIME)}


@pytest.mark.parametrize("codec", [0, 1])
def test_v1_log_append_time(impl: ModuleType, codec: int) -> None:
    data = build(impl, 1, codec, SAMPLE[:3], timestamp_type=TimestampType.LOG_APPEND_TIME)
    records = [r for batch in impl.iter_batches(data) for r in batch]
    assert {r.timestamp_type for r in records} == {TimestampType.LOG_APPEND_TIME}
    if codec:  # the wrapper's timestamp wins
        assert {r.timestamp for r in records} == {max(r[0] for r in SAMPLE[:3])}


def test_v1_wrapper_relative_offsets_with_gaps(impl: ModuleType) -> None:
    """A compacted v1 wrapper: inner relative offsets 0, 2, 5; wrapper holds the last absolute."""
    inner = bytearray()
    for relative in (0, 2, 5):
        inner += _legacy_message(1, relative, 0, 1000 + relative, b"k", b"v%d" % relative)
    wrapper = _legacy_message(1, 105, 1, 2000, None, _gzip(bytes(inner)))
    (batch,) = impl.iter_batches(wrapper)
    assert [r.offset for r in batch] == [100, 102, 105]
    assert [r.value for r in batch] == [b"v0", b"v2", b"v5"]
    assert (batch.base_offset, batch.last_offset, batch.next_offset) == (100, 105, 106)


def test_v0_wrapper_absolute_inner_offsets(impl: ModuleType) -> None:
    inner = b"".join(_legacy_message(0, offset, 0, -1, None, b"x") for offset in (50, 51, 53))
    wrapper = _legacy_message(0, 53, 1, -1, None, _gzip(inner))
    (batch,) = impl.iter_batches(wrapper)
    assert [r.offset for r in batch] == [50, 51, 53]
    assert {r.timestamp for r in batch} == {-1}


def test_legacy_builder_wire_format(impl: ModuleType) -> None:
    """Byte-exact v1 uncompressed message and v1 wrapper offsets, checked by hand."""
    data = build(impl, 1, 0, [(1234, b"k", b"value", [])], base_offset=77)
    assert data == _legacy_message(1, 77, 0, 1234, b"k", b"value")
    data = build(impl, 1, CompressionType.GZIP, [(1, None, b"a", []), (5, None, b"b", [])])
    offset, _size, _crc, magic, attributes, timestamp = struct.unpack_from(">qiIbbq", data)
    assert (offset, magic, attributes, timestamp) == (1, 1, 1, 5)
    assert struct.unpack_from(">i", data, 26) == (-1,)  # null wrapper key
    (value_len,) = struct.unpack_from(">i", data, 30)
    inner = zlib.decompress(data[34 : 34 + value_len], 47)
    assert inner == _legacy_message(1, 0, 0, 1, None, b"a") + _legacy_message(
        1, 1, 0, 5, None, b"b"
    )


def test_control_batch(impl: ModuleType) -> None:
    data = impl.build_control_batch(
        ControlRecordType.ABORT,
        producer_id=99,
        producer_epoch=4,
        coordinator_epoch=17,
        base_offset=300,
        timestamp_ms=5555,
    )
    data += impl.build_control_batch(
        ControlRecordType.COMMIT, producer_id=99, producer_epoch=4, base_offset=301
    )
    abort, commit = impl.iter_batches(data)
    assert abort.is_control and abort.is_transactional
    assert (abort.producer_id, abort.producer_epoch) == (99, 4)
    (marker,) = abort
    assert marker.is_control and marker.control_type == ControlRecordType.ABORT
    assert marker.coordinator_epoch == 17
    assert (marker.offset, marker.timestamp) == (300, 5555)
    assert marker.key == b"\x00\x00\x00\x00"
    assert marker.value == b"\x00\x00\x00\x00\x00\x11"
    (marker,) = commit
    assert marker.control_type == ControlRecordType.COMMIT
    data_record = next(iter(next(impl.iter_batches(build(impl, 2, 0, SAMPLE[:1])))))
    assert not data_record.is_control and data_record.control_type is None


@pytest.mark.parametrize(("magic", "codec"), CODECS_BY_MAGIC)
def test_partial_trailing_batch_is_ignored(impl: ModuleType, magic: int, codec: int) -> None:
    first = build(impl, magic, codec, SAMPLE[:2], base_offset=0)
    second = build(impl, magic, codec, SAMPLE[2:4], base_offset=2)
    whole = read_all(impl, first + second)
    assert whole == expected(magic, 0, SAMPLE[:4])
    # Uncompressed legacy sets hold one message per record: find where each one ends.
    ends, pos = [], 0
    while pos < len(second):
        pos += 12 + struct.unpack_from(">i", second, pos + 8)[0]
        ends.append(pos)
    records_per_batch = 2 // len(ends)
    for cut in range(1, len(second)):
        complete_batches = sum(1 for end in ends if end <= cut)
        assert (
            read_all(impl, first + second[:cut])
            == whole[: 2 + complete_batches * records_per_batch]
        )
    assert read_all(impl, b"") == []
    assert read_all(impl, first[:11]) == []


@pytest.mark.parametrize(("magic", "codec"), CODECS_BY_MAGIC)
def test_crc_corruption(impl: ModuleType, magic: int, codec: int) -> None:
    records = SAMPLE[:2]
    data = bytearray(build(impl, magic, codec, records))
    if codec:
        data[-3] ^= 0x01  # somewhere in the compressed payload
    else:
        data[data.rindex(b"null key")] ^= 0x01  # in the last value
    with pytest.raises(CorruptRecordError):
        read_all(impl, bytes(data))
    if not codec:  # without the check the flipped byte simply shows up
        values = [r[4] for r in read_all(impl, bytes(data), check_crcs=False)]
        assert values[-1] == b"value with oull key"


def test_legacy_inner_crc_checked(impl: ModuleType) -> None:
    inner = bytearray(_legacy_message(1, 0, 0, 1, None, b"payload"))
    inner[-1] ^= 0xFF
    wrapper = _legacy_message(1, 0, 1, 1, None, _gzip(bytes(inner)))
    with pytest.raises(CorruptRecordError):
        read_all(impl, wrapper)
    assert read_all(impl, wrapper, check_crcs=False)[0][4] == b"payloa" + bytes([ord("d") ^ 0xFF])


def test_unknown_magic(impl: ModuleType) -> None:
    data = bytearray(build(impl, 2, 0, SAMPLE[:1]))
    data[16] = 7
    with pytest.raises(UnknownMagicError, match="7"):
        read_all(impl, bytes(data))


@pytest.mark.parametrize("magic", [1, 2])
def test_unknown_codec(impl: ModuleType, magic: int) -> None:
    data = bytearray(build(impl, magic, CompressionType.GZIP, SAMPLE[:2]))
    attributes_pos = 22 if magic == 2 else 17
    data[attributes_pos] = (data[attributes_pos] & ~0x07) | 6
    with pytest.raises(UnknownCodecError, match="6"):
        read_all(impl, bytes(data), check_crcs=False)


def test_builder_reports_full(impl: ModuleType) -> None:
    for magic in (0, 1, 2):
        builder = impl.RecordBatchBuilder(magic=magic, batch_size=1000)
        assert builder.append(1, b"k", b"x" * 5000)  # the first record always fits
        assert not builder.append(2, b"k", b"x")
        builder = impl.RecordBatchBuilder(magic=magic, batch_size=1000)
        accepted = 0
        while builder.append(1, None, b"y" * 50) and accepted < 1000:
            accepted += 1
        assert 5 < accepted < 20
        data = builder.build()
        assert len(data) <= 1000
        assert builder.size_in_bytes == len(data)
        assert len(read_all(impl, data)) == builder.record_count == accepted
        with pytest.raises(IllegalStateError):
            builder.append(1, None, b"late")


def test_builder_rejects_invalid_settings(impl: ModuleType) -> None:
    with pytest.raises(UnknownMagicError):
        impl.RecordBatchBuilder(magic=3)
    with pytest.raises(EncodeError):
        impl.RecordBatchBuilder(magic=1, compression_type=CompressionType.ZSTD)
    with pytest.raises(EncodeError):
        impl.RecordBatchBuilder(magic=1).append(1, None, b"v", [("h", b"")])


def test_large_offsets_and_negative_timestamp_delta(impl: ModuleType) -> None:
    records: list[Sample] = [
        (10_000, b"a", b"1", []),
        (9_000, b"b", b"2", []),
        (10**12, b"c", b"3", []),
    ]
    data = build(impl, 2, 0, records, base_offset=2**40)
    assert read_all(impl, data) == expected(2, 2**40, records)


def test_accepts_bytearray_and_memoryview(impl: ModuleType) -> None:
    data = build(impl, 2, 0, SAMPLE)
    assert (
        read_all(impl, bytearray(data)) == read_all(impl, memoryview(data)) == read_all(impl, data)
    )


def test_batch_smaller_than_header_is_corrupt(impl: ModuleType) -> None:
    data = struct.pack(">qiib", 0, 20, -1, 2) + bytes(16)
    with pytest.raises(CorruptRecordError):
        read_all(impl, data)
    with pytest.raises(CorruptRecordError):
        read_all(impl, struct.pack(">qi", 0, 3) + bytes(3))


def test_public_interface_names() -> None:
    for name in records_api.__all__:
        assert getattr(records_api, name) is not None
    assert records_api.read_records is records_api.iter_batches
    builder = records_api.RecordBatchBuilder(magic=1)
    assert isinstance(builder, records_api.RecordBatchBuilder)
    assert isinstance(builder, records_api.LegacyRecordBatchBuilder)


# ---------------------------------------------------------------------------------------------
# fuzz: garbage raises KafkaError subclasses only
# ---------------------------------------------------------------------------------------------

_VALID = [build(_pure, magic, codec, SAMPLE[:3]) for magic, codec in CODECS_BY_MAGIC]


def _consume(data: bytes, check_crcs: bool) -> None:
    for batch in _pure.iter_batches(data, check_crcs=check_crcs):
        for record in batch:
            _ = (record.offset, record.key, record.value, record.headers)
            if isinstance(record, ControlRecord):
                _ = (record.control_type, record.coordinator_epoch)
        _ = (batch.base_offset, batch.last_offset, batch.compression_type, batch.timestamp_type)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.booleans())
def test_fuzz_random_bytes(data: bytes, check_crcs: bool) -> None:
    try:
        _consume(data, check_crcs)
    except KafkaError:
        pass


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(range(len(_VALID))),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6),
    st.integers(0, 64),
)
def test_fuzz_mutated_batches(index: int, mutations: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(_VALID[index])
    for position, byte in mutations:
        data[position % len(data)] = byte
    for candidate in (bytes(data), bytes(data[: len(data) - cut])):
        try:
            _consume(candidate, check_crcs=False)
        except KafkaError:
            pass


# ---------------------------------------------------------------------------------------------
# independent hand-written encoders for fixtures
# ---------------------------------------------------------------------------------------------


def _legacy_message(
    magic: int, offset: int, attributes: int, timestamp: int, key: bytes | None, value: bytes
) -> bytes:
    body = struct.pack(">bb", magic, attributes)
    if magic:
        body += struct.pack(">q", timestamp)
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def _gzip(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(("magic", "codec"), CODECS_BY_MAGIC)
def test_estimate_size_is_an_upper_bound(impl: ModuleType, magic: int, codec: int) -> None:
    for timestamp, key, value, headers in SAMPLE:
        headers = headers if magic == 2 else []
        estimate = impl.estimate_size_in_bytes(magic, codec, key, value, headers)
        actual = len(build(impl, magic, 0, [(timestamp, key, value, headers)]))
        assert actual <= estimate <= actual + 40
    with pytest.raises(UnknownMagicError):
        impl.estimate_size_in_bytes(5, 0, None, None)


def test_is_full(impl: ModuleType) -> None:
    for magic in (0, 1, 2):
        builder = impl.RecordBatchBuilder(magic=magic, batch_size=200)
        assert not builder.is_full()
        builder.append(1, None, b"x" * 300)
        assert builder.is_full()


def test_empty_batch_kept_by_compaction(impl: ModuleType) -> None:
    """A batch whose records were all compacted away: no records, offsets still advance."""
    header = struct.pack(
        ">bhiqqqhii", 2, 0x10 | CompressionType.LZ4, 9, 1000, 1000, 77, 1, 5, 0
    )  # magic .. record count, no payload although the codec is lz4
    body = struct.pack(">I", crc32c.crc32c(header[1:]))
    data = struct.pack(">qii", 500, 4 + 1 + len(body) + len(header) - 1, -1)
    data += header[:1] + body + header[1:]
    (batch,) = impl.iter_batches(data)
    assert list(batch) == []
    assert (batch.base_offset, batch.last_offset, batch.next_offset) == (500, 509, 510)
    assert (batch.producer_id, batch.base_sequence) == (77, 5)


def test_producer_state_set_at_drain_and_rewritten(impl: ModuleType) -> None:
    builder = impl.RecordBatchBuilder(magic=2, compression_type=CompressionType.GZIP)
    for timestamp, key, value, headers in SAMPLE[:3]:
        builder.append(timestamp, key, value, headers)
    builder.set_producer_state(4000, 2, 17, True)
    data = builder.build()
    with pytest.raises(IllegalStateError):
        builder.set_producer_state(1, 1, 1, False)
    (batch,) = impl.iter_batches(data)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4000, 2, 17)
    assert batch.is_transactional
    rewritten = impl.rewrite_producer_state(
        data, producer_id=4001, producer_epoch=0, base_sequence=0, is_transactional=False
    )
    assert crc32c.crc32c(rewritten[21:]) == struct.unpack_from(">I", rewritten, 17)[0]
    (batch,) = impl.iter_batches(rewritten)  # the CRC is checked here too
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4001, 0, 0)
    assert not batch.is_transactional
    assert batch.compression_type == CompressionType.GZIP
    assert read_all(impl, rewritten) == read_all(impl, data)
    with pytest.raises(EncodeError):
        impl.rewrite_producer_state(
            build(impl, 1, 0, SAMPLE[:1]), producer_id=1, producer_epoch=1, base_sequence=1
        )
    legacy = impl.RecordBatchBuilder(magic=1)
    legacy.set_producer_state(-1, -1, -1, False)
    with pytest.raises(EncodeError):
        legacy.set_producer_state(1, 0, 0, False)
