"""Compression codecs of Kafka record batches and message sets, written to match the Java client.

* gzip: a gzip stream (several members are read too).
* snappy: written in the xerial framing of ``SnappyOutputStream`` (what Java writes for every
  magic); read in that framing or as one raw snappy block.
* lz4: the LZ4 frame format with independent 64 KiB blocks and no content size, as
  ``KafkaLZ4BlockOutputStream`` writes.  Magic 0 carries the header checksum computed over the
  frame magic too (KAFKA-3160); it is written that way and accepted whatever its value on read.
* zstd: zstd frames; frames without a content size (Java's streaming writer) are read
  incrementally.

Compression libraries are imported on first use, so a missing one only fails the codec that
needs it, with :class:`~aiokafkawire.errors.CompressionLibraryMissingError`.  Undecodable input
raises :class:`~aiokafkawire.errors.CorruptRecordError`; an unknown codec id
:class:`~aiokafkawire.errors.UnknownCodecError`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from aiokafkawire.errors import (
    CompressionLibraryMissingError,
    CorruptRecordError,
    KafkaError,
    UnknownCodecError,
)
from aiokafkawire.protocol.records._types import Buffer, CompressionType

__all__ = [
    "compress",
    "decompress",
    "ensure_available",
    "xxh32",
]

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024  # SnappyOutputStream's default block size
_INT32 = struct.Struct(">i")

_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_GZIP_LEVEL = 6  # java.util.zip.Deflater.DEFAULT_COMPRESSION
_ZSTD_LEVEL = 3  # zstd's (and Kafka's) default level

_modules: dict[str, ModuleType] = {}


def _load(name: str, package: str) -> ModuleType:
    """Import a compression module once; a missing one is a typed error naming the package."""
    module = _modules.get(name)
    if module is None:
        try:
            module = __import__(name, fromlist=["_"])
        except ImportError as exc:
            raise CompressionLibraryMissingError(
                f"the {package!r} package is needed for this codec but cannot be imported: {exc}"
            ) from exc
        _modules[name] = module
    return module


# ---------------------------------------------------------------------------------------------
# xxHash32 (only needed on the few bytes of an LZ4 frame header)
# ---------------------------------------------------------------------------------------------

_P1 = 2654435761
_P2 = 2246822519
_P3 = 3266489917
_P4 = 668265263
_P5 = 374761393
_M32 = 0xFFFFFFFF


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """The 32-bit xxHash of ``data`` (pure Python; meant for short inputs)."""
    length = len(data)
    pos = 0
    if length >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        limit = length - 16
        while pos <= limit:
            w1, w2, w3, w4 = struct.unpack_from("<IIII", data, pos)
            v1 = (_rotl((v1 + w1 * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + w2 * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + w3 * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + w4 * _P2) & _M32, 13) * _P1) & _M32
            pos += 16
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        acc = (seed + _P5) & _M32
    acc = (acc + length) & _M32
    while pos + 4 <= length:
        (word,) = struct.unpack_from("<I", data, pos)
        acc = (_rotl((acc + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < length:
        acc = (_rotl((acc + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    acc ^= acc >> 15
    acc = (acc * _P2) & _M32
    acc ^= acc >> 13
    acc = (acc * _P3) & _M32
    acc ^= acc >> 16
    return acc


# ---------------------------------------------------------------------------------------------
# gzip
# ---------------------------------------------------------------------------------------------


def _gzip_compress(data: Buffer) -> bytes:
    compressor = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _gzip_decompress(data: Buffer) -> bytes:
    parts = []
    remaining: Buffer = data
    # Concatenated gzip members are one valid stream (GZIPInputStream reads them all).
    for _ in range(len(data)):
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        parts.append(decompressor.decompress(remaining))
        if not decompressor.eof:
            raise CorruptRecordError("gzip data is truncated")
        remaining = decompressor.unused_data
        if not remaining:
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)


# ---------------------------------------------------------------------------------------------
# snappy
# ---------------------------------------------------------------------------------------------


def _snappy_raw() -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """(compress_raw, decompress_raw) from cramjam, else from python-snappy."""
    try:
        cramjam = _load("cramjam", "cramjam")
        return cramjam.snappy.compress_raw, cramjam.snappy.decompress_raw
    except CompressionLibraryMissingError:
        snappy = _load("snappy", "python-snappy")
        return snappy.compress, snappy.uncompress


def _snappy_compress(data: Buffer) -> bytes:
    compress_raw = _snappy_raw()[0]
    view = memoryview(data)
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(compress_raw(view[start : start + _XERIAL_BLOCK_SIZE]))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _snappy_decompress(data: Buffer) -> bytes:
    decompress_raw = _snappy_raw()[1]
    view = memoryview(data)
    if bytes(view[:8]) != _XERIAL_MAGIC:
        return bytes(decompress_raw(view))
    if len(view) < 16:
        raise CorruptRecordError("xerial snappy header is truncated")
    parts = []
    pos = 16
    end = len(view)
    while pos < end:
        if pos + 4 > end:
            raise CorruptRecordError("xerial snappy block length is truncated")
        (block_len,) = _INT32.unpack_from(view, pos)
        pos += 4
        if block_len < 0 or pos + block_len > end:
            raise CorruptRecordError(f"xerial snappy block of {block_len} bytes is truncated")
        parts.append(bytes(decompress_raw(view[pos : pos + block_len])))
        pos += block_len
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# lz4
# ---------------------------------------------------------------------------------------------


def _lz4_header_checksum_pos(data: Buffer) -> int:
    """Position of the header checksum byte of an LZ4 frame (after the optional fields)."""
    if len(data) < 7 or bytes(data[:4]) != _LZ4_FRAME_MAGIC:
        raise CorruptRecordError("not an LZ4 frame")
    flags = data[4]
    pos = 6
    if flags & 0x08:  # content size present
        pos += 8
    if flags & 0x01:  # dictionary id present
        pos += 4
    if len(data) <= pos:
        raise CorruptRecordError("LZ4 frame header is truncated")
    return pos


def _lz4_compress(data: Buffer, magic: int) -> bytes:
    frame = _load("lz4.frame", "lz4")
    out = frame.compress(
        data,
        block_size=frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    if magic == 0:
        # KAFKA-3160: 0.8/0.9 brokers expect the checksum over the frame magic + descriptor.
        hc_pos = _lz4_header_checksum_pos(out)
        patched = bytearray(out)
        patched[hc_pos] = (xxh32(bytes(out[:hc_pos])) >> 8) & 0xFF
        return bytes(patched)
    return bytes(out)


def _lz4_decompress(data: Buffer, magic: int) -> bytes:
    frame = _load("lz4.frame", "lz4")
    if magic == 0:
        # Accept the broken (KAFKA-3160) checksum and a correct one alike: the message CRC
        # already protects these bytes, so put the correct one in place for the library.
        hc_pos = _lz4_header_checksum_pos(data)
        patched = bytearray(data)
        patched[hc_pos] = (xxh32(bytes(patched[4:hc_pos])) >> 8) & 0xFF
        data = patched
    out = frame.decompress(data)
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# zstd
# ---------------------------------------------------------------------------------------------

_zstd_contexts: dict[str, Any] = {}


def _zstd_compress(data: Buffer) -> bytes:
    compressor = _zstd_contexts.get("c")
    if compressor is None:
        compressor = _load("zstandard", "zstandard").ZstdCompressor(level=_ZSTD_LEVEL)
        _zstd_contexts["c"] = compressor
    return bytes(compressor.compress(data))


def _zstd_decompress(data: Buffer) -> bytes:
    zstandard = _load("zstandard", "zstandard")
    decompressor = _zstd_contexts.get("d")
    if decompressor is None:
        decompressor = zstandard.ZstdDecompressor()
        _zstd_contexts["d"] = decompressor
    try:
        # One-shot works when the frame declares its size and is the only one.
        return bytes(decompressor.decompress(data, allow_extra_data=False))
    except zstandard.ZstdError:
        pass
    parts = []
    remaining: Buffer = data
    for _ in range(len(data)):
        stream = decompressor.decompressobj()
        parts.append(stream.decompress(remaining))
        if not stream.eof:
            raise CorruptRecordError("zstd data is truncated")
        remaining = stream.unused_data
        if not remaining:
            break
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# dispatch
# ---------------------------------------------------------------------------------------------


def _check_codec(codec: int, magic: int) -> None:
    if codec not in (0, 1, 2, 3, 4) or (codec == CompressionType.ZSTD and magic < 2):
        raise UnknownCodecError(f"unknown compression codec {codec} for magic {magic}")


def compress(codec: int, data: Buffer, magic: int = 2) -> bytes:
    """Compress ``data`` with ``codec`` (a :class:`CompressionType`) the way Java does."""
    _check_codec(codec, magic)
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        return _gzip_compress(data)
    if codec == CompressionType.SNAPPY:
        return _snappy_compress(data)
    if codec == CompressionType.LZ4:
        return _lz4_compress(data, magic)
    return _zstd_compress(data)


def ensure_available(codec: int) -> None:
    """Load ``codec``'s library now: :class:`CompressionLibraryMissingError` if it is missing.

    A producer calls this when it is configured, so a missing library is reported at once
    (not when the first batch is sent) and no import happens on the send path.
    """
    compress(codec, b"-")


def decompress(codec: int, data: Buffer, magic: int = 2) -> bytes:
    """Decompress ``data`` written with ``codec`` by any Kafka client."""
    _check_codec(codec, magic)
    try:
        if codec == CompressionType.NONE:
            return bytes(data)
        if codec == CompressionType.GZIP:
            return _gzip_decompress(data)
        if codec == CompressionType.SNAPPY:
            return _snappy_decompress(data)
        if codec == CompressionType.LZ4:
            return _lz4_decompress(data, magic)
        return _zstd_decompress(data)
    except KafkaError:
        raise
    except Exception as exc:
        name = CompressionType(codec).name.lower()
        raise CorruptRecordError(f"cannot decompress {name} data: {exc}") from exc
