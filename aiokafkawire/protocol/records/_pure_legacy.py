"""Legacy message sets (magic 0 and 1), pure Python: reader and builder.

A message: offset int64, size int32, crc uint32 (CRC-32 of magic .. end), magic int8,
attributes int8 (codec bits 0-2, timestamp type bit 3 in magic 1), timestamp int64 (magic 1
only), key (int32 length, -1 = null), value (same).  A compressed "wrapper" message has a null
key and a value holding a compressed inner message set.  Inner offsets are absolute in magic 0
wrappers; in magic 1 wrappers they are relative, and the wrapper carries the absolute offset of
the last inner message.
"""

from __future__ import annotations

import struct
import zlib

from aiokafkawire.errors import CorruptRecordError, EncodeError, IllegalStateError
from aiokafkawire.protocol.records._builder import RecordBatchBuilder, now_ms
from aiokafkawire.protocol.records._types import (
    NO_TIMESTAMP,
    CompressionType,
    Headers,
    IterableBatch,
    Record,
    TimestampType,
)
from aiokafkawire.protocol.records.codecs import compress, decompress

_HEADER_V0 = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_HEADER_V1 = struct.Struct(">qiIbbq")  # ... timestamp
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_CRC_POS = 12
_CRC_START = 16  # the CRC covers magic .. end
#: Smallest message after offset+size: crc, magic, attributes, [timestamp], key and value lengths.
MIN_MESSAGE_SIZE = {0: 14, 1: 22}
_LOG_OVERHEAD = 12

ATTR_CODEC_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08

_NO_TIMESTAMP_TYPE = TimestampType.NO_TIMESTAMP_TYPE
_CREATE_TIME = TimestampType.CREATE_TIME
_LOG_APPEND_TIME = TimestampType.LOG_APPEND_TIME


class _Message:
    """One parsed legacy message (positions into its buffer)."""

    __slots__ = (
        "attributes",
        "crc",
        "end",
        "key",
        "magic",
        "offset",
        "start",
        "timestamp",
        "value",
    )

    def __init__(self, buffer: bytes, start: int, end: int) -> None:
        """Parse the message in ``buffer[start:end]`` (``end`` from its size field)."""
        magic = buffer[start + 16]
        if magic == 0:
            self.offset, _size, self.crc, self.magic, self.attributes = _HEADER_V0.unpack_from(
                buffer, start
            )
            self.timestamp = NO_TIMESTAMP
            pos = start + 18
        else:
            (
                self.offset,
                _size,
                self.crc,
                self.magic,
                self.attributes,
                self.timestamp,
            ) = _HEADER_V1.unpack_from(buffer, start)
            pos = start + 26
        self.start = start
        self.end = end
        self.key, pos = _read_bytes(buffer, pos, end)
        self.value, pos = _read_bytes(buffer, pos, end)
        if pos != end:
            raise CorruptRecordError(f"message at offset {self.offset} has trailing bytes")

    def crc_matches(self, buffer: bytes) -> bool:
        with memoryview(buffer) as view:
            return zlib.crc32(view[self.start + _CRC_START : self.end]) == self.crc


def _read_bytes(buffer: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("message is truncated")
    (length,) = _INT32.unpack_from(buffer, pos)
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or pos + length > end:
        raise CorruptRecordError(f"invalid key/value length {length} in message")
    return buffer[pos : pos + length], pos + length


def _message_end(buffer: bytes, pos: int, limit: int) -> int:
    """End of the message starting at ``pos``, checking its size against ``limit``."""
    (size,) = _INT32.unpack_from(buffer, pos + 8)
    magic = buffer[pos + 16] if pos + 16 < limit else 0
    if size < MIN_MESSAGE_SIZE.get(magic, 14):
        raise CorruptRecordError(f"message size {size} is smaller than a message header")
    return pos + _LOG_OVERHEAD + size


class LegacyRecordBatch(IterableBatch):
    """One top-level legacy message: a plain message (one record) or a compressed wrapper.

    Exposes the same attributes as a v2 ``RecordBatch`` (producer fields are -1, never
    transactional nor control); iterate it for its records.
    """

    __slots__ = ("_buffer", "_check_crcs", "_message", "_records")

    def __init__(self, buffer: bytes, start: int, end: int, check_crcs: bool = True) -> None:
        self._buffer = buffer
        self._check_crcs = check_crcs
        self._message = _Message(buffer, start, end)
        if self._message.magic not in (0, 1):  # pragma: no cover - iter_batches checked it
            raise CorruptRecordError(f"not a legacy message: magic {self._message.magic}")
        self._records: list[Record] | None = None

    magic = property(lambda self: self._message.magic, doc="Message format version: 0 or 1.")
    is_transactional = False
    is_control = False
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    partition_leader_epoch = -1
    has_delete_horizon = False
    delete_horizon_ms = None

    @property
    def crc(self) -> int:
        """The stored CRC-32 of the (outer) message."""
        return int(self._message.crc)

    @property
    def attributes(self) -> int:
        """The attributes byte of the (outer) message."""
        return int(self._message.attributes)

    @property
    def compression_type(self) -> CompressionType:
        """Codec of the wrapper (NONE for a plain message)."""
        return CompressionType(self._message.attributes & ATTR_CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        """NO_TIMESTAMP_TYPE for magic 0, else CREATE_TIME or LOG_APPEND_TIME."""
        message = self._message
        if message.magic == 0:
            return _NO_TIMESTAMP_TYPE
        return _LOG_APPEND_TIME if message.attributes & ATTR_TIMESTAMP_TYPE else _CREATE_TIME

    @property
    def timestamp(self) -> int:
        """The (outer) message timestamp; -1 for magic 0."""
        return int(self._message.timestamp)

    @property
    def base_offset(self) -> int:
        """Offset of the first record (decompresses a wrapper)."""
        if self._message.attributes & ATTR_CODEC_MASK:
            return self.records()[0].offset
        return int(self._message.offset)

    @property
    def last_offset(self) -> int:
        """The offset of the outer message, which is the offset of the last record."""
        return int(self._message.offset)

    @property
    def next_offset(self) -> int:
        """The offset to fetch next after this message."""
        return int(self._message.offset) + 1

    @property
    def size_in_bytes(self) -> int:
        """Size of the outer message on the wire."""
        return self._message.end - self._message.start

    @property
    def record_count(self) -> int:
        """Number of records (decompresses a wrapper)."""
        return len(self.records())

    def validate_crc(self) -> bool:
        """Whether the outer message's CRC-32 matches (inner ones are checked on decode)."""
        return self._message.crc_matches(self._buffer)

    def records(self) -> list[Record]:
        """All records of the message (decoded once; inner CRCs checked unless disabled)."""
        records = self._records
        if records is None:
            records = self._records = self._decode(self._check_crcs)
        return records

    def _decode(self, check_crcs: bool) -> list[Record]:
        message = self._message
        codec = message.attributes & ATTR_CODEC_MASK
        timestamp_type = self.timestamp_type
        if not codec:
            return [
                Record(
                    message.offset,
                    message.timestamp,
                    timestamp_type,
                    message.key,
                    message.value,
                    [],
                )
            ]
        if message.value is None:
            raise CorruptRecordError(f"compressed message at offset {message.offset} has no value")
        inner = decompress(codec, message.value, message.magic)
        try:
            return self._decode_inner(inner, check_crcs, timestamp_type)
        except (IndexError, struct.error) as exc:
            raise CorruptRecordError(
                f"malformed inner message set at offset {message.offset}: {exc}"
            ) from exc

    def _decode_inner(
        self, inner: bytes, check_crcs: bool, wrapper_timestamp_type: TimestampType
    ) -> list[Record]:
        wrapper = self._message
        messages = []
        pos = 0
        end = len(inner)
        while pos < end:
            if end - pos < _LOG_OVERHEAD + 5:
                raise CorruptRecordError("inner message set ends with a partial message")
            message_end = _message_end(inner, pos, end)
            if message_end > end:
                raise CorruptRecordError("inner message set ends with a partial message")
            message = _Message(inner, pos, message_end)
            if message.magic != wrapper.magic:
                raise CorruptRecordError(
                    f"inner message magic {message.magic} differs from its wrapper's "
                    f"{wrapper.magic}"
                )
            if message.attributes & ATTR_CODEC_MASK:
                raise CorruptRecordError("compressed message holds another compressed message")
            if check_crcs and not message.crc_matches(inner):
                raise CorruptRecordError(f"CRC-32 mismatch in inner message {message.offset}")
            messages.append(message)
            pos = message_end
        if not messages:
            raise CorruptRecordError(f"compressed message at offset {wrapper.offset} is empty")
        if wrapper.magic == 0:
            offset_shift = 0
        else:
            # Inner offsets are relative; the wrapper holds the last one's absolute offset.
            offset_shift = wrapper.offset - messages[-1].offset
        records: list[Record] = []
        for message in messages:
            if wrapper.magic == 0:
                timestamp, timestamp_type = NO_TIMESTAMP, _NO_TIMESTAMP_TYPE
            elif wrapper_timestamp_type == _LOG_APPEND_TIME:
                timestamp, timestamp_type = wrapper.timestamp, _LOG_APPEND_TIME
            else:
                timestamp = message.timestamp
                timestamp_type = (
                    _LOG_APPEND_TIME if message.attributes & ATTR_TIMESTAMP_TYPE else _CREATE_TIME
                )
            records.append(
                Record(
                    message.offset + offset_shift,
                    timestamp,
                    timestamp_type,
                    message.key,
                    message.value,
                    [],
                )
            )
        return records

    def __repr__(self) -> str:
        return (
            f"LegacyRecordBatch(magic={self.magic}, offset={self.last_offset}, "
            f"compression={self.compression_type.name})"
        )


class LegacyRecordBatchBuilder(RecordBatchBuilder):
    """Builds a magic 0 or 1 message set: plain messages, or one compressed wrapper message."""

    __slots__ = ()

    _MAGICS = (0, 1)
    _DEFAULT_MAGIC = 1

    def _start(self) -> None:
        magic = self.magic
        if self.compression_type == CompressionType.ZSTD:
            raise EncodeError(f"zstd needs magic 2, not {magic}")
        if self.is_transactional or self.producer_id != -1 or self.base_sequence != -1:
            raise EncodeError(f"magic {magic} cannot carry transactions or producer ids")

    def append(
        self,
        timestamp_ms: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
    ) -> bool:
        """Add a message; False when the set is full (the first message always fits)."""
        if self._built is not None:
            raise IllegalStateError("the message set is already built")
        if headers:
            raise EncodeError(f"record headers need magic 2, not {self.magic}")
        count = self._count
        compressed = bool(self.compression_type)
        if compressed and self.magic == 1:
            offset = count  # relative inner offset
        else:
            offset = self.base_offset + count
        if self.magic == 1:
            if timestamp_ms is None:
                timestamp_ms = now_ms()
        else:
            timestamp_ms = NO_TIMESTAMP
        attributes = (
            ATTR_TIMESTAMP_TYPE
            if self.magic == 1 and self.timestamp_type == _LOG_APPEND_TIME and not compressed
            else 0
        )
        buffer = self._buffer
        size = _message_size(self.magic, key, value)
        if count and len(buffer) + size > self._batch_size:
            return False
        _write_message(buffer, self.magic, offset, attributes, timestamp_ms, key, value)
        if timestamp_ms > self._max_timestamp:
            self._max_timestamp = timestamp_ms
        self._count = count + 1
        return True

    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool
    ) -> None:
        """Refused unless all "none": magic 0/1 have no producer fields."""
        if (producer_id, producer_epoch, base_sequence, is_transactional) != (-1, -1, -1, False):
            raise EncodeError(f"magic {self.magic} cannot carry transactions or producer ids")

    @property
    def record_count(self) -> int:
        """Number of messages appended so far."""
        return self._count

    @property
    def size_in_bytes(self) -> int:
        """Exact size once built; the uncompressed size before."""
        built = self._built
        if built is not None:
            return len(built)
        overhead = _message_size(self.magic, None, b"") if self.compression_type else 0
        return len(self._buffer) + overhead

    def build(self) -> bytes:
        """Return the message set (one compressed wrapper message when a codec is set)."""
        built = self._built
        if built is not None:
            return bytes(built)  # itself: only build_view makes a view, and it does not here
        if not self.compression_type or not self._count:
            built = bytes(self._buffer)
        else:
            payload = compress(self.compression_type, self._buffer, self.magic)
            attributes = int(self.compression_type)
            if self.magic == 1 and self.timestamp_type == _LOG_APPEND_TIME:
                attributes |= ATTR_TIMESTAMP_TYPE
            out = bytearray()
            _write_message(
                out,
                self.magic,
                self.base_offset + self._count - 1,
                attributes,
                self._max_timestamp,
                None,
                payload,
            )
            built = bytes(out)
        self._built = built
        self._buffer = bytearray()
        return built


def estimate_size(magic: int, key: bytes | None, value: bytes | None, compressed: bool) -> int:
    """Upper bound of the size of a message set holding just this message."""
    size = _message_size(magic, key, value)
    return size + _message_size(magic, None, b"") if compressed else size


def _message_size(magic: int, key: bytes | None, value: bytes | None) -> int:
    size = 8 + 4 + 4 + 1 + 1 + 4 + 4 + (8 if magic else 0)
    if key is not None:
        size += len(key)
    if value is not None:
        size += len(value)
    return size


def _write_message(
    out: bytearray,
    magic: int,
    offset: int,
    attributes: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
) -> None:
    start = len(out)
    size = _message_size(magic, key, value) - _LOG_OVERHEAD
    if magic:
        out += _HEADER_V1.pack(offset, size, 0, magic, attributes, timestamp)
    else:
        out += _HEADER_V0.pack(offset, size, 0, magic, attributes)
    if key is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += _INT32.pack(len(key))
        out += key
    if value is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += _INT32.pack(len(value))
        out += value
    with memoryview(out) as view:
        crc = zlib.crc32(view[start + _CRC_START :])
    _UINT32.pack_into(out, start + _CRC_POS, crc)
