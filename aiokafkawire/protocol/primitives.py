"""Kafka wire primitives: fixed-width integers, varints, strings, bytes, UUIDs.

Every ``read_*`` function takes a buffer (``bytes``/``bytearray``/``memoryview``) and a position
and returns ``(value, new_position)``; every ``write_*`` function appends to a ``bytearray``.
Generated codecs call the precompiled :class:`struct.Struct` objects directly and fall back to these
helpers only for variable-length types.  A short buffer raises :class:`struct.error` or
:class:`IndexError`; callers translate that into a typed protocol error.
"""

from __future__ import annotations

import struct
import uuid

Buffer = bytes | bytearray | memoryview

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)


def zigzag_encode64(value: int) -> int:
    """Map a signed 64-bit integer onto an unsigned one (small magnitudes stay small)."""
    return ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF


def zigzag_decode(value: int) -> int:
    """Inverse of the zigzag mapping."""
    return (value >> 1) ^ -(value & 1)


def encode_unsigned_varint(value: int) -> bytes:
    """Encode a non-negative integer as an unsigned LEB128 varint."""
    if value < 0x80:
        if value < 0:
            raise ValueError(f"unsigned varint cannot hold {value}")
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode a signed integer (int32 or int64 range) as a zigzag varint."""
    if -64 <= value < 64:
        return bytes((((value << 1) ^ (value >> 63)) & 0xFF,))
    return encode_unsigned_varint(zigzag_encode64(value))


def read_unsigned_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; at most 10 bytes are read."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    result = byte & 0x7F
    shift = 7
    pos += 1
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint is longer than 10 bytes")


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Decode a zigzag (signed) varint or varlong at ``pos``."""
    byte = buf[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    value, pos = read_unsigned_varint(buf, pos)
    return (value >> 1) ^ -(value & 1), pos


def write_unsigned_varint(out: bytearray, value: int) -> None:
    """Append an unsigned varint to ``out``."""
    if 0 <= value < 0x80:
        out.append(value)
    else:
        out += encode_unsigned_varint(value)


def write_varint(out: bytearray, value: int) -> None:
    """Append a zigzag varint to ``out``."""
    if -64 <= value < 64:
        out.append(((value << 1) ^ (value >> 63)) & 0xFF)
    else:
        out += encode_unsigned_varint(zigzag_encode64(value))


def varint_size(value: int) -> int:
    """Number of bytes :func:`encode_varint` produces for ``value``."""
    unsigned = zigzag_encode64(value)
    size = 1
    while unsigned >= 0x80:
        unsigned >>= 7
        size += 1
    return size
