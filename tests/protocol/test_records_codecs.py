"""Codecs: framings written by other clients, streaming zstd, lazy imports, garbage input."""

from __future__ import annotations

import gzip
import os
import struct
import sys

import pytest

from aiokafkawire.errors import (
    CompressionLibraryMissingError,
    CorruptRecordError,
    UnknownCodecError,
)
from aiokafkawire.protocol.records import codecs
from aiokafkawire.protocol.records._types import CompressionType

PAYLOAD = b"".join(b"record %06d; " % i for i in range(20_000))  # ~280 KB, several blocks


def test_xxh32_against_reference() -> None:
    xxhash = pytest.importorskip("xxhash")
    for length in [*range(40), 100, 1000]:
        data = os.urandom(length)
        for seed in (0, 1, 0xFFFFFFFF):
            assert codecs.xxh32(data, seed) == xxhash.xxh32_intdigest(data, seed)


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize("payload", [b"", b"x", PAYLOAD])
def test_round_trip(codec: CompressionType, payload: bytes) -> None:
    for magic in (0, 1, 2) if codec != CompressionType.ZSTD else (2,):
        assert codecs.decompress(codec, codecs.compress(codec, payload, magic), magic) == payload


def test_gzip_is_a_gzip_stream_and_reads_concatenated_members() -> None:
    data = codecs.compress(CompressionType.GZIP, PAYLOAD)
    assert data[:2] == b"\x1f\x8b" and gzip.decompress(data) == PAYLOAD
    two = gzip.compress(b"first ") + gzip.compress(b"second")
    assert codecs.decompress(CompressionType.GZIP, two) == b"first second"


def test_snappy_writes_xerial_framing() -> None:
    cramjam = pytest.importorskip("cramjam")
    data = codecs.compress(CompressionType.SNAPPY, PAYLOAD)
    assert data[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, out, blocks = 16, b"", 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        out += bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + length]))
        pos += 4 + length
        blocks += 1
    assert out == PAYLOAD
    assert blocks == -(-len(PAYLOAD) // (32 * 1024))  # SnappyOutputStream's 32 KiB blocks


def test_snappy_reads_raw_block() -> None:
    cramjam = pytest.importorskip("cramjam")
    raw = bytes(cramjam.snappy.compress_raw(PAYLOAD))
    assert codecs.decompress(CompressionType.SNAPPY, raw) == PAYLOAD


def test_lz4_frame_matches_java_settings() -> None:
    data = codecs.compress(CompressionType.LZ4, PAYLOAD, magic=2)
    # magic, FLG 0x60 (version 1, independent blocks, no content size/checksum), BD 64 KiB.
    assert data[:6] == b"\x04\x22\x4d\x18\x60\x40"


def test_zstd_frames_without_content_size_and_several_frames() -> None:
    zstandard = pytest.importorskip("zstandard")
    streaming = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD)
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(streaming)  # the one-shot API cannot
    assert codecs.decompress(CompressionType.ZSTD, streaming) == PAYLOAD
    sized = zstandard.ZstdCompressor().compress(b"tail")
    assert codecs.decompress(CompressionType.ZSTD, streaming + sized) == PAYLOAD + b"tail"
    assert codecs.decompress(CompressionType.ZSTD, sized + sized) == b"tailtail"


@pytest.mark.parametrize("codec", [c for c in CompressionType if c])
def test_garbage_and_truncation_raise_corrupt(codec: CompressionType) -> None:
    good = codecs.compress(codec, PAYLOAD)
    for bad in (b"\x00garbage" * 5, good[: len(good) // 2]):
        with pytest.raises(CorruptRecordError):
            codecs.decompress(codec, bad)


def test_unknown_codec() -> None:
    with pytest.raises(UnknownCodecError, match="5"):
        codecs.decompress(5, b"")
    with pytest.raises(UnknownCodecError, match="4"):
        codecs.compress(CompressionType.ZSTD, b"", magic=1)


def test_missing_library_fails_only_that_codec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codecs, "_modules", {})
    monkeypatch.setattr(codecs, "_zstd_contexts", {})
    monkeypatch.setitem(sys.modules, "zstandard", None)  # makes `import zstandard` fail
    with pytest.raises(CompressionLibraryMissingError, match="zstandard"):
        codecs.compress(CompressionType.ZSTD, b"data")
    with pytest.raises(CompressionLibraryMissingError, match="zstandard"):
        codecs.decompress(CompressionType.ZSTD, b"data")
    assert codecs.decompress(CompressionType.LZ4, codecs.compress(CompressionType.LZ4, b"ok")) == (
        b"ok"
    )


def test_a_producer_with_a_missing_codec_library_fails_when_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aiokafkawire.producer import Producer

    monkeypatch.setattr(codecs, "_modules", {})
    monkeypatch.setattr(codecs, "_zstd_contexts", {})
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(CompressionLibraryMissingError, match="zstandard"):
        Producer(compression="zstd")
    codecs.ensure_available(CompressionType.LZ4)  # the others load (and stay loaded)
    assert "lz4.frame" in codecs._modules
    Producer(compression="lz4")


def test_snappy_falls_back_to_python_snappy(monkeypatch: pytest.MonkeyPatch) -> None:
    snappy = pytest.importorskip("snappy")  # imported before cramjam is hidden below
    monkeypatch.setattr(codecs, "_modules", {})
    monkeypatch.setitem(sys.modules, "cramjam", None)
    data = codecs.compress(CompressionType.SNAPPY, PAYLOAD)
    assert codecs.decompress(CompressionType.SNAPPY, data) == PAYLOAD
    assert codecs._modules == {"snappy": snappy}
    monkeypatch.setattr(codecs, "_modules", {})
    monkeypatch.setitem(sys.modules, "snappy", None)
    with pytest.raises(CompressionLibraryMissingError, match="python-snappy"):
        codecs.decompress(CompressionType.SNAPPY, data)
