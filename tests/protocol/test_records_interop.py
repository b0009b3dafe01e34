"""Interop both ways with independent record implementations, for every magic and codec.

* aiokafka's compiled readers/builders (``aiokafka.record._crecords``) and its pure-Python ones
  (``_DefaultRecordBatchPy`` ...),
* kafka-python 3.x (``kafka.record``), which also implements the KAFKA-3160 lz4 quirk of magic 0.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from aiokafkawire.protocol.records import _pure
from aiokafkawire.protocol.records._types import CompressionType
from aiokafkawire.protocol.records.codecs import compress, decompress

Sample = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

SAMPLE: list[Sample] = [
    (1_700_000_000_000, b"key-0", b"value-0", [("h1", b"v1"), ("h2", b"")]),
    (1_700_000_000_010, None, b"value with a null key", []),
    (1_700_000_000_020, b"key-2", None, [("null-header", None)]),
    (1_700_000_000_030, b"", b"", []),
    (1_700_000_000_040, b"k" * 200, bytes(range(256)) * 300, [("utf8-\u00e9", b"x" * 150)]),
    # More than one 64 KiB lz4 block and several 32 KiB xerial snappy blocks:
    (1_700_000_005_000, b"last", b"v" * 70_000, []),
]

CODECS_BY_MAGIC = [
    (magic, codec)
    for magic in (0, 1, 2)
    for codec in CompressionType
    if not (codec == CompressionType.ZSTD and magic < 2)
]


@dataclass
class Library:
    """Builders and batch readers of one independent implementation."""

    name: str
    default_builder: Callable[..., Any]
    default_batch: Callable[[Any], Any]
    legacy_builder: Callable[..., Any]
    legacy_batch: Callable[[Any, int], Any]
    lz4_magic0: bool = True


def _libraries() -> list[Library]:
    libs = []
    from aiokafka.record import default_records as aio_default
    from aiokafka.record import legacy_records as aio_legacy

    libs.append(
        Library(
            "aiokafka-py",
            aio_default._DefaultRecordBatchBuilderPy,
            aio_default._DefaultRecordBatchPy,
            aio_legacy._LegacyRecordBatchBuilderPy,
            aio_legacy._LegacyRecordBatchPy,
            lz4_magic0=False,  # aiokafka refuses lz4 with magic 0
        )
    )
    try:
        from aiokafka.record import _crecords
    except ImportError:  # pragma: no cover - wheel without the extension
        pass
    else:
        libs.append(
            Library(
                "aiokafka-c",
                _crecords.DefaultRecordBatchBuilder,
                _crecords.DefaultRecordBatch,
                _crecords.LegacyRecordBatchBuilder,
                _crecords.LegacyRecordBatch,
                lz4_magic0=False,
            )
        )
    from kafka.record import default_records as kp_default
    from kafka.record import legacy_records as kp_legacy

    libs.append(
        Library(
            "kafka-python",
            kp_default.DefaultRecordBatchBuilder,
            kp_default.DefaultRecordBatch,
            kp_legacy.LegacyRecordBatchBuilder,
            kp_legacy.LegacyRecordBatch,
        )
    )
    return libs


LIBRARIES = _libraries()


@pytest.fixture(params=LIBRARIES, ids=lambda lib: lib.name)
def lib(request: pytest.FixtureRequest) -> Library:
    library: Library = request.param
    return library


def _skip_unsupported(lib: Library, magic: int, codec: int) -> None:
    if magic == 0 and codec == CompressionType.LZ4 and not lib.lz4_magic0:
        pytest.skip(f"{lib.name} does not implement lz4 for magic 0")


def _split(data: bytes) -> Iterator[tuple[int, memoryview]]:
    """Top-level batches of ``data`` (walked with struct, independently of our reader)."""
    pos = 0
    while pos + 12 <= len(data):
        end = pos + 12 + struct.unpack_from(">i", data, pos + 8)[0]
        yield data[pos + 16], memoryview(data)[pos:end]
        pos = end


def write_theirs(lib: Library, magic: int, codec: int, records: list[Sample]) -> bytes:
    if magic == 2:
        builder = lib.default_builder(2, codec, 0, -1, -1, -1, 1 << 24)
        for i, (timestamp, key, value, headers) in enumerate(records):
            assert builder.append(i, timestamp, key, value, headers) is not None
    else:
        builder = lib.legacy_builder(magic, codec, 1 << 24)
        for i, (timestamp, key, value, _headers) in enumerate(records):
            assert builder.append(i, timestamp, key, value) is not None
    return bytes(builder.build())


def read_theirs(lib: Library, data: bytes) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for magic, view in _split(data):
        batch = lib.default_batch(view) if magic == 2 else lib.legacy_batch(view, magic)
        if magic == 2:
            assert batch.validate_crc()
        for r in batch:
            headers = [(k, None if v is None else bytes(v)) for k, v in r.headers]
            out.append(
                (
                    r.offset,
                    r.timestamp if magic else None,
                    None if r.key is None else bytes(r.key),
                    None if r.value is None else bytes(r.value),
                    headers,
                )
            )
    return out


def read_ours(data: bytes) -> list[tuple[object, ...]]:
    return [
        (r.offset, r.timestamp if batch.magic else None, r.key, r.value, r.headers)
        for batch in _pure.iter_batches(data)
        for r in batch
    ]


def expected(magic: int, base_offset: int, records: list[Sample]) -> list[tuple[object, ...]]:
    return [
        (base_offset + i, timestamp if magic else None, key, value, headers if magic == 2 else [])
        for i, (timestamp, key, value, headers) in enumerate(records)
    ]


def write_ours(magic: int, codec: int, records: list[Sample], base_offset: int = 0) -> bytes:
    builder = _pure.RecordBatchBuilder(
        magic=magic, compression_type=codec, batch_size=1 << 24, base_offset=base_offset
    )
    for timestamp, key, value, headers in records:
        assert builder.append(timestamp, key, value, headers if magic == 2 else None)
    return builder.build()


@pytest.mark.parametrize(("magic", "codec"), CODECS_BY_MAGIC)
def test_ours_read_by_theirs(lib: Library, magic: int, codec: int) -> None:
    _skip_unsupported(lib, magic, codec)
    data = write_ours(magic, codec, SAMPLE)
    assert read_theirs(lib, data) == expected(magic, 0, SAMPLE)


@pytest.mark.parametrize(("magic", "codec"), CODECS_BY_MAGIC)
def test_theirs_read_by_ours(lib: Library, magic: int, codec: int) -> None:
    _skip_unsupported(lib, magic, codec)
    data = write_theirs(lib, magic, codec, SAMPLE)
    base_offset = 0
    if magic == 1 and codec:
        # They leave the wrapper offset at 0 for the broker to assign; inner offsets are relative
        # to it, so the records read (as Java would) from -(n - 1).
        assert struct.unpack_from(">q", data)[0] == 0
        base_offset = -(len(SAMPLE) - 1)
    assert read_ours(data) == expected(magic, base_offset, SAMPLE)
    batches = list(_pure.iter_batches(data))
    if codec:
        assert [batch.compression_type for batch in batches] == [codec]


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_uncompressed_bytes_identical(lib: Library, magic: int) -> None:
    """Without compression there is one correct encoding: ours must equal theirs."""
    ours = write_ours(magic, 0, SAMPLE)
    theirs = write_theirs(lib, magic, 0, SAMPLE)
    if magic == 2 and lib.name == "kafka-python":
        # kafka-python writes partition leader epoch 0; Java (and we) write -1 (no epoch).
        # The field is outside the CRC.
        assert theirs[12:16] == b"\x00\x00\x00\x00"
        theirs = theirs[:12] + b"\xff\xff\xff\xff" + theirs[16:]
    assert ours == theirs


def test_v2_producer_fields_both_ways(lib: Library) -> None:
    theirs = lib.default_builder(2, CompressionType.GZIP, 1, 1234567, 7, 99, 1 << 20)
    ours = _pure.RecordBatchBuilder(
        magic=2,
        compression_type=CompressionType.GZIP,
        is_transactional=True,
        producer_id=1234567,
        producer_epoch=7,
        base_sequence=99,
    )
    for i, (timestamp, key, value, headers) in enumerate(SAMPLE[:3]):
        theirs.append(i, timestamp, key, value, headers)
        ours.append(timestamp, key, value, headers)
    (batch,) = _pure.iter_batches(bytes(theirs.build()))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1234567, 7, 99)
    assert batch.is_transactional and batch.last_offset == 2
    (_magic, view), *_ = _split(ours.build())
    their_batch = lib.default_batch(view)
    assert their_batch.producer_id == 1234567
    assert their_batch.producer_epoch == 7
    assert their_batch.base_sequence == 99
    assert their_batch.is_transactional


def test_absolute_base_offset_read_by_theirs(lib: Library) -> None:
    for magic, codec in [(2, CompressionType.LZ4), (1, CompressionType.GZIP), (0, 0)]:
        data = write_ours(magic, codec, SAMPLE[:3], base_offset=10_000)
        assert [r[0] for r in read_theirs(lib, data)] == [10_000, 10_001, 10_002]


# ---------------------------------------------------------------------------------------------
# KAFKA-3160: magic 0 lz4 frames carry a header checksum computed over the frame magic too
# ---------------------------------------------------------------------------------------------


def test_lz4_magic0_matches_kafka_python_byte_for_byte() -> None:
    kafka_codec = pytest.importorskip("kafka.codec")
    pytest.importorskip("xxhash")
    payload = b"".join(b"message %d " % i for i in range(5000))
    assert compress(CompressionType.LZ4, payload, magic=0) == kafka_codec.lz4_encode_old_kafka(
        payload
    )
    assert decompress(CompressionType.LZ4, kafka_codec.lz4_encode_old_kafka(payload), 0) == payload


def test_lz4_magic0_header_checksum_is_the_broken_one() -> None:
    xxhash = pytest.importorskip("xxhash")
    lz4_frame = pytest.importorskip("lz4.frame")
    payload = b"abc" * 1000
    old = compress(CompressionType.LZ4, payload, magic=0)
    new = compress(CompressionType.LZ4, payload, magic=1)
    # FLG, BD, then the checksum byte: the second byte of xxh32 over magic+FLG+BD (broken)
    # versus over FLG+BD only (the LZ4 spec).
    assert old[6] == xxhash.xxh32(old[0:6]).intdigest() >> 8 & 0xFF
    assert new[6] == xxhash.xxh32(new[4:6]).intdigest() >> 8 & 0xFF
    assert old[6] != new[6] and old[7:] == new[7:]
    assert lz4_frame.decompress(new) == payload
    with pytest.raises(RuntimeError):
        lz4_frame.decompress(old)  # a spec-conforming reader rejects the broken checksum
    # Both read back with magic 0 (brokers wrote either); magic 1 requires the correct one.
    assert decompress(CompressionType.LZ4, old, 0) == payload
    assert decompress(CompressionType.LZ4, new, 0) == payload
    assert decompress(CompressionType.LZ4, new, 1) == payload


def test_lz4_magic0_message_set_with_kafka_python() -> None:
    pytest.importorskip("xxhash")
    kafka_python = next(lib for lib in LIBRARIES if lib.name == "kafka-python")
    theirs = write_theirs(kafka_python, 0, CompressionType.LZ4, SAMPLE)
    ours = write_ours(0, CompressionType.LZ4, SAMPLE)
    assert read_ours(theirs) == expected(0, 0, SAMPLE)
    assert read_theirs(kafka_python, ours) == expected(0, 0, SAMPLE)
    # Identical but for the wrapper offset (they leave 0 for the broker; we write the last one).
    assert struct.unpack_from(">q", ours)[0] == len(SAMPLE) - 1
    assert ours[8:] == theirs[8:]
