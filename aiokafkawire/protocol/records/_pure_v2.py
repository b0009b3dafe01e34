"""Record batch v2 (magic 2), pure Python: reader, builder, control batches.

Layout: baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8, crc uint32
(CRC-32C of everything after it), attributes int16, lastOffsetDelta int32, baseTimestamp int64,
maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence int32, recordCount int32,
then the records (compressed as one block when a codec is set).  Each record: length varint,
attributes int8, timestampDelta varlong, offsetDelta varint, key (varint length, -1 = null),
value (same), header count varint, headers (varint-length utf-8 key, varint-length value).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

from aiokafkawire.errors import CorruptRecordError, EncodeError, IllegalStateError
from aiokafkawire.protocol.primitives import encode_varint, read_varint
from aiokafkawire.protocol.records._builder import RecordBatchBuilder, now_ms
from aiokafkawire.protocol.records._types import (
    NO_TIMESTAMP,
    CompressionType,
    ControlRecord,
    ControlRecordType,
    Headers,
    IterableBatch,
    Record,
    TimestampType,
)
from aiokafkawire.protocol.records.codecs import compress, decompress

_crc32c: Callable[[Any, int], int] | None = None


def crc32c(data: Any, value: int = 0) -> int:
    """CRC-32C of ``data`` (continuing from ``value``, the CRC of the bytes before it); the
    ``crc32c`` package is imported on first use, not with this module: importing it costs ~50 ms
    of CPU (it loads ``importlib.metadata``), and with the compiled records accelerator this pure
    path never needs it."""
    global _crc32c
    if _crc32c is None:
        from crc32c import crc32c as loaded

        _crc32c = loaded
        return loaded(data, value)
    return _crc32c(data, value)


HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
#: Bytes of the header not counted in batchLength (baseOffset + batchLength).
_LENGTH_START = 12
_MAGIC_POS = 16
_CRC_POS = 17
_CRC_START = 21  # the CRC covers attributes .. end
_UINT32 = struct.Struct(">I")

ATTR_CODEC_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

_CREATE_TIME = TimestampType.CREATE_TIME
_LOG_APPEND_TIME = TimestampType.LOG_APPEND_TIME

# Pre-encoded zigzag varints of small non-negative ints: record lengths, deltas and sizes are
# almost always small, and a tuple lookup is much cheaper than encoding.
_SMALL = 8192
_VARINTS: tuple[bytes, ...] = tuple(encode_varint(i) for i in range(_SMALL))
_NULL_LENGTH = encode_varint(-1)


def _varint(value: int) -> bytes:
    return _VARINTS[value] if 0 <= value < _SMALL else encode_varint(value)


def _encode_headers(headers: Headers) -> bytes:
    out = bytearray(_varint(len(headers)))
    for header_key, header_value in headers:
        key_bytes = header_key.encode("utf-8")
        out += _varint(len(key_bytes))
        out += key_bytes
        if header_value is None:
            out += _NULL_LENGTH
        else:
            out += _varint(len(header_value))
            out += header_value
    return bytes(out)


def _decode_records(  # long: the hot loop, varints and fields decoded inline for speed
    buf: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    timestamp_type: TimestampType,
    log_append_time: int | None,
    record_cls: Callable[..., Any],
) -> list[Any]:
    """Decode ``count`` records from ``buf[pos:end]`` in one pass (varints decoded inline);
    ``record_cls(offset, timestamp, timestamp_type, key, value, headers)`` makes each."""
    records: list[Any] = []
    append = records.append
    read = read_varint
    for _ in range(count):
        byte = buf[pos]
        if byte < 0x80:
            length = (byte >> 1) ^ -(byte & 1)
            pos += 1
        else:
            byte2 = buf[pos + 1]
            if byte2 < 0x80:  # two-byte varints are common: lengths and deltas < 8192
                length = (byte & 0x7F) | (byte2 << 7)
                length = (length >> 1) ^ -(length & 1)
                pos += 2
            else:
                length, pos = read(buf, pos)
        record_end = pos + length
        if length < 6 or record_end > end:
            raise CorruptRecordError(f"record length {length} does not fit its batch")
        pos += 1  # record attributes: unused
        byte = buf[pos]
        if byte < 0x80:
            timestamp_delta = (byte >> 1) ^ -(byte & 1)
            pos += 1
        else:
            byte2 = buf[pos + 1]
            if byte2 < 0x80:  # two-byte varints are common: lengths and deltas < 8192
                timestamp_delta = (byte & 0x7F) | (byte2 << 7)
                timestamp_delta = (timestamp_delta >> 1) ^ -(timestamp_delta & 1)
                pos += 2
            else:
                timestamp_delta, pos = read(buf, pos)
        byte = buf[pos]
        if byte < 0x80:
            offset_delta = (byte >> 1) ^ -(byte & 1)
            pos += 1
        else:
            byte2 = buf[pos + 1]
            if byte2 < 0x80:  # two-byte varints are common: lengths and deltas < 8192
                offset_delta = (byte & 0x7F) | (byte2 << 7)
                offset_delta = (offset_delta >> 1) ^ -(offset_delta & 1)
                pos += 2
            else:
                offset_delta, pos = read(buf, pos)
        byte = buf[pos]
        if byte < 0x80:
            key_len = (byte >> 1) ^ -(byte & 1)
            pos += 1
        else:
            byte2 = buf[pos + 1]
            if byte2 < 0x80:  # two-byte varints are common: lengths and deltas < 8192
                key_len = (byte & 0x7F) | (byte2 << 7)
                key_len = (key_len >> 1) ^ -(key_len & 1)
                pos += 2
            else:
                key_len, pos = read(buf, pos)
        if key_len >= 0:
            key: bytes | None = buf[pos : pos + key_len]
            pos += key_len
        elif key_len == -1:
            key = None
        else:
            raise CorruptRecordError(f"invalid record key length {key_len}")
        byte = buf[pos]
        if byte < 0x80:
            value_len = (byte >> 1) ^ -(byte & 1)
            pos += 1
        else:
            byte2 = buf[pos + 1]
            if byte2 < 0x80:  # two-byte varints are common: lengths and deltas < 8192
                value_len = (byte & 0x7F) | (byte2 << 7)
                value_len = (value_len >> 1) ^ -(value_len & 1)
                pos += 2
            else:
                value_len, pos = read(buf, pos)
        if value_len >= 0:
            value: bytes | None = buf[pos : pos + value_len]
            pos += value_len
        elif value_len == -1:
            value = None
        else:
            raise CorruptRecordError(f"invalid record value length {value_len}")
        header_count = buf[pos]
        if header_count == 0:
            pos += 1
            headers: Headers = []
        else:
            header_count, pos = read(buf, pos)
            headers = _decode_headers(buf, pos, record_end, header_count)
            pos = record_end
        if pos != record_end:
            raise CorruptRecordError("record length does not match its content")
        append(
            record_cls(
                base_offset + offset_delta,
                base_timestamp + timestamp_delta if log_append_time is None else log_append_time,
                timestamp_type,
                key,
                value,
                headers,
            )
        )
    if pos != end:
        raise CorruptRecordError("record count does not match the batch length")
    return records


def _decode_headers(buf: bytes, pos: int, end: int, count: int) -> Headers:
    if count < 0:
        raise CorruptRecordError(f"invalid header count {count}")
    headers: Headers = []
    for _ in range(count):
        key_len, pos = read_varint(buf, pos)
        if key_len < 0:
            raise CorruptRecordError(f"invalid header key length {key_len}")
        header_key = buf[pos : pos + key_len].decode("utf-8")
        pos += key_len
        value_len, pos = read_varint(buf, pos)
        if value_len >= 0:
            header_value: bytes | None = buf[pos : pos + value_len]
            pos += value_len
        elif value_len == -1:
            header_value = None
        else:
            raise CorruptRecordError(f"invalid header value length {value_len}")
        if pos > end:
            raise CorruptRecordError("record headers overrun the record")
        headers.append((header_key, header_value))
    if pos != end:
        raise CorruptRecordError("record length does not match its headers")
    return headers


class RecordBatch(IterableBatch):
    """A record batch (magic 2) read from a buffer; iterate it for its records.

    The header fields are attributes; the records are decoded (and decompressed) on first use,
    all at once, and kept.
    """

    __slots__ = (
        "_buffer",
        "_end",
        "_records",
        "_start",
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "record_count",
    )

    def __init__(self, buffer: bytes, start: int, end: int) -> None:
        if end - start < HEADER_SIZE:
            raise CorruptRecordError(
                f"record batch of {end - start} bytes is smaller than its {HEADER_SIZE}-byte header"
            )
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = HEADER.unpack_from(buffer, start)
        self._buffer = buffer
        self._start = start
        self._end = end
        self._records: list[Record] | None = None

    @property
    def compression_type(self) -> CompressionType:
        """Codec of the records (bits 0-2 of the attributes)."""
        return CompressionType(self.attributes & ATTR_CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        """CREATE_TIME or LOG_APPEND_TIME (bit 3)."""
        return _LOG_APPEND_TIME if self.attributes & ATTR_TIMESTAMP_TYPE else _CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        """Whether the batch belongs to a transaction (bit 4)."""
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        """Whether the batch holds a control record (bit 5)."""
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        """Whether ``base_timestamp`` is the compaction delete horizon (bit 6)."""
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon set by log compaction, if any."""
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def last_offset(self) -> int:
        """Offset of the last record (kept even when compaction removed it)."""
        return int(self.base_offset + self.last_offset_delta)

    @property
    def next_offset(self) -> int:
        """The offset to fetch next after this batch."""
        return int(self.base_offset + self.last_offset_delta + 1)

    @property
    def size_in_bytes(self) -> int:
        """Size of the whole batch on the wire."""
        return self._end - self._start

    def validate_crc(self) -> bool:
        """Whether the stored CRC-32C matches the bytes after it."""
        view = memoryview(self._buffer)[self._start + _CRC_START : self._end]
        return bool(crc32c(view) == self.crc)

    def records(self) -> list[Record]:
        """All records of the batch (decoded once)."""
        records = self._records
        if records is None:
            records = self._records = self._decode()
        return records

    def _decode(self) -> list[Record]:
        return self._decode_with(None)

    def _decode_with(self, make: Callable[..., Any] | None) -> list[Any]:
        """The records, each made by ``make(offset, timestamp, timestamp_type, key, value,
        headers)`` (None: ``Record``, or ``ControlRecord`` in a control batch); always Python."""
        if self.record_count == 0:
            # Compaction keeps emptied batches (for producer state); Java skips their payload.
            return []
        attributes = self.attributes
        buf, pos, end = self._payload()
        if attributes & ATTR_TIMESTAMP_TYPE:
            timestamp_type, log_append_time = _LOG_APPEND_TIME, self.max_timestamp
        else:
            timestamp_type, log_append_time = _CREATE_TIME, None
        # A record maker is a Python callable: the module's loop, never a compiled hook.
        decode = self._decode_records if make is None else _decode_records
        try:
            return decode(
                buf,
                pos,
                end,
                self.record_count,
                self.base_offset,
                self.base_timestamp,
                timestamp_type,
                log_append_time,
                make or (ControlRecord if attributes & ATTR_CONTROL else Record),
            )
        except (IndexError, ValueError) as exc:  # short buffer, bad varint or utf-8
            raise CorruptRecordError(
                f"malformed record in batch at offset {self.base_offset}: {exc}"
            ) from exc

    #: The per-record loop (a subclass may put a compiled one here).
    _decode_records: Callable[..., list[Record]] = staticmethod(_decode_records)

    def _payload(self) -> tuple[bytes, int, int]:
        """The records' bytes as ``(buffer, start, end)``: decompressed, or in place."""
        codec = self.attributes & ATTR_CODEC_MASK
        if codec:
            view = memoryview(self._buffer)[self._start + HEADER_SIZE : self._end]
            buf = decompress(codec, view, 2)
            return buf, 0, len(buf)
        return self._buffer, self._start + HEADER_SIZE, self._end

    def consumer_records(  # long: the hot loop, decoding inlined for speed
        self,
        record_cls: type[Any],
        topic: str,
        partition: int,
        min_offset: int,
        key_deserializer: Callable[[bytes | None], Any] | None = None,
        value_deserializer: Callable[[bytes | None], Any] | None = None,
    ) -> list[Any]:
        """The batch's records as the consumer hands them out (from ``min_offset`` on).

        When the batch starts before ``min_offset`` (the first batch of a fetch), its records
        before ``min_offset`` are left out.

        Each is ``tuple.__new__(record_cls, (topic, partition, offset, timestamp,
        timestamp_type, key, value, headers, leader_epoch))``: ``timestamp_type`` a plain int,
        ``headers`` a tuple of pairs, ``leader_epoch`` None when the batch has none; key and
        value go through the deserializers (in record order, key first) once the whole batch
        decoded.  A control batch has none.
        """
        if self.attributes & ATTR_CONTROL:
            return []
        if key_deserializer is None and value_deserializer is None and self._records is None:
            # Built while decoding, without Record objects in between: one tracked object per
            # record instead of three keeps the cyclic collector's work down.
            return self._tuple_records(record_cls, topic, partition, (), min_offset, math.inf)
        epoch = self.partition_leader_epoch
        leader_epoch = epoch if epoch >= 0 else None
        timestamp_type = 1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0
        new = tuple.__new__
        records = self.records()
        if self.base_offset < min_offset:
            records = [r for r in records if r.offset >= min_offset]
        kd = key_deserializer or _identity
        vd = value_deserializer or _identity
        return [
            new(
                record_cls,
                (
                    topic,
                    partition,
                    r.offset,
                    r.timestamp,
                    timestamp_type,
                    kd(r.key),
                    vd(r.value),
                    tuple(r.headers) if r.headers else (),
                    leader_epoch,
                ),
            )
            for r in records
        ]

    def share_records(
        self,
        record_cls: type[Any],
        topic: str,
        partition: int,
        min_offset: int,
        max_offset: int,
        delivery_count: int,
    ) -> list[Any]:
        """The batch's records of offsets ``min_offset..max_offset`` (one acquired range) as the
        share consumer hands them out, keys and values raw.

        Each is ``tuple.__new__(record_cls, (topic, partition, offset, timestamp,
        timestamp_type, key, value, headers, leader_epoch, delivery_count))``, the fields of
        :meth:`consumer_records` and the range's delivery count.  A control batch has none.
        """
        if self.attributes & ATTR_CONTROL:
            return []
        return self._tuple_records(
            record_cls, topic, partition, (delivery_count,), min_offset, max_offset
        )

    def _tuple_records(
        self,
        record_cls: type[Any],
        topic: str,
        partition: int,
        tail: tuple[Any, ...],
        min_offset: int,
        max_offset: float,
    ) -> list[Any]:
        """The loop of :meth:`consumer_records` (raw keys and values) and :meth:`share_records`:
        ``tuple.__new__(record_cls, (topic, partition, offset, timestamp, timestamp_type, key,
        value, headers, leader_epoch, *tail))`` for each record decoded, those before
        ``min_offset`` (when the batch starts before it) and after ``max_offset`` left out."""
        epoch = self.partition_leader_epoch
        # The fields after the headers: the leader epoch, then the caller's.
        after = (epoch if epoch >= 0 else None, *tail)
        timestamp_type = 1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0
        new = tuple.__new__

        def make(
            offset: int, timestamp: int, _type: Any, key: Any, value: Any, headers: Any
        ) -> Any:
            head = (
                topic,
                partition,
                offset,
                timestamp,
                timestamp_type,
                key,
                value,
                tuple(headers) if headers else (),
            )
            return new(record_cls, head + after)  # a concatenation: cheaper than unpacking

        made = self._decode_with(make)
        if self.base_offset < min_offset or self.last_offset > max_offset:
            made = [r for r in made if min_offset <= r[2] <= max_offset]
        return made

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"records={self.record_count}, compression={self.compression_type.name}, "
            f"transactional={self.is_transactional}, control={self.is_control})"
        )


def _identity(value: Any) -> Any:
    return value


class DefaultRecordBatchBuilder(RecordBatchBuilder):
    """Builds one magic 2 record batch; records go straight into one growing bytearray.

    The producer fields (``producer_id``, ``producer_epoch``, ``base_sequence``,
    ``is_transactional``) are read by :meth:`build`, so an idempotent producer may assign them
    when it drains the batch (:meth:`set_producer_state`).
    """

    __slots__ = ("_base_timestamp",)

    _MAGICS = (2,)
    _RESERVED = HEADER_SIZE  # the header, written by build()

    def _start(self) -> None:
        self._base_timestamp = NO_TIMESTAMP

    def append(
        self,
        timestamp_ms: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
    ) -> bool:
        """Add a record; False when the batch is full (the first record always fits)."""
        if self._built is not None:
            raise IllegalStateError("the batch is already built")
        count = self._count
        if timestamp_ms is None:
            timestamp_ms = now_ms()
        if count:
            timestamp_delta = timestamp_ms - self._base_timestamp
        else:
            self._base_timestamp = timestamp_ms
            timestamp_delta = 0
        small = _SMALL
        varints = _VARINTS
        # Encode the body in one join, then prefix its length: one copy of key and value.
        if key is None:
            key_part = _NULL_LENGTH
            key = b""
        else:
            key_len = len(key)
            key_part = varints[key_len] if key_len < small else encode_varint(key_len)
        if value is None:
            value_part = _NULL_LENGTH
            value = b""
        else:
            value_len = len(value)
            value_part = varints[value_len] if value_len < small else encode_varint(value_len)
        body = b"".join(
            (
                b"\x00",  # record attributes
                varints[timestamp_delta]
                if 0 <= timestamp_delta < small
                else encode_varint(timestamp_delta),
                varints[count] if count < small else encode_varint(count),
                key_part,
                key,
                value_part,
                value,
                _encode_headers(headers) if headers else b"\x00",
            )
        )
        body_len = len(body)
        length_part = varints[body_len] if body_len < small else encode_varint(body_len)
        buffer = self._buffer
        if count and len(buffer) + len(length_part) + body_len > self._batch_size:
            return False
        buffer += length_part
        buffer += body
        if timestamp_ms > self._max_timestamp:
            self._max_timestamp = timestamp_ms
        self._count = count + 1
        return True

    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool
    ) -> None:
        """Set the idempotence/transaction fields before :meth:`build`."""
        if self._built is not None:
            raise IllegalStateError("the batch is already built; use rewrite_producer_state()")
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional

    @property
    def size_in_bytes(self) -> int:
        """Exact size once built; the uncompressed size before."""
        built = self._built
        return len(built) if built is not None else len(self._buffer)

    def build(self) -> bytes:
        """Compress, write the header and the CRC-32C, and return the batch."""
        built = self._built
        if built is None:
            return self._build(copy=True)
        return built if type(built) is bytes else bytes(built)

    def build_view(self) -> memoryview:
        """The built batch as a read-only view of the buffer the records were appended to (no
        copy into ``bytes``)."""
        built = self._built
        if built is None:
            built = self._build(copy=False)
        return built if type(built) is memoryview else memoryview(built)

    def _build(self, *, copy: bool) -> Any:
        codec = self.compression_type
        out = self._buffer
        payload = None
        if codec:
            # The compressed body stays as the codec returned it: _finish copies it once,
            # into the batch (not into a new header buffer first, then again into bytes).
            payload = compress(codec, memoryview(out)[HEADER_SIZE:], 2)
            self._spent = out  # no part of the built batch: reusable (take_spent_buffer)
            out = bytearray(HEADER_SIZE)
        attributes = int(codec)
        if self.timestamp_type == _LOG_APPEND_TIME:
            attributes |= ATTR_TIMESTAMP_TYPE
        if self.is_transactional:
            attributes |= ATTR_TRANSACTIONAL
        count = self._count
        built = _finish(
            out,
            self.base_offset,
            self.partition_leader_epoch,
            attributes,
            count - 1,
            self._base_timestamp,
            self._max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            count,
            payload,
            copy=copy,
        )
        self._built = built
        self._buffer = bytearray()
        return built


def estimate_size(key: bytes | None, value: bytes | None, headers: Headers | None = None) -> int:
    """Upper bound of the size of a batch holding just this record (uncompressed)."""
    # header + record length, attributes, timestamp delta, offset delta, key/value lengths
    size = HEADER_SIZE + 5 + 1 + 10 + 5 + 5 + 5 + 5
    size += len(key) if key is not None else 0
    size += len(value) if value is not None else 0
    if headers:
        size += len(_encode_headers(headers))
    return size


def _finish(
    out: bytearray,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    count: int,
    payload: bytes | None = None,
    *,
    copy: bool = True,
) -> Any:
    """Write the header into ``out[:61]`` and the CRC-32C over ``out[21:]`` (+ ``payload``).

    With a ``payload`` (a compressed body), ``out`` is the header alone and the batch is
    ``out + payload``, joined once (with ``copy=False`` behind a view).  Without, the batch is
    ``out`` as ``bytes``, or with ``copy=False`` a read-only view of ``out`` (which then must
    not change).
    """
    HEADER.pack_into(
        out,
        0,
        base_offset,
        len(out) - _LENGTH_START + (len(payload) if payload is not None else 0),
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    with memoryview(out) as view:
        crc = crc32c(view[_CRC_START:])
    if payload is not None:
        _UINT32.pack_into(out, _CRC_POS, crc32c(payload, crc))
        joined = b"".join((out, payload))
        return joined if copy else memoryview(joined)
    _UINT32.pack_into(out, _CRC_POS, crc)
    return bytes(out) if copy else memoryview(out).toreadonly()


_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


def build_control_batch(
    control_type: ControlRecordType | int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    timestamp_ms: int | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Build a transactional control batch holding one commit or abort marker."""
    if timestamp_ms is None:
        timestamp_ms = now_ms()
    key = _CONTROL_KEY.pack(0, int(control_type))
    value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    body = (
        b"".join(
            (b"\x00", _VARINTS[0], _VARINTS[0], _varint(len(key)), key, _varint(len(value)), value)
        )
        + _VARINTS[0]
    )
    out = bytearray(HEADER_SIZE)
    out += _varint(len(body))
    out += body
    return _finish(
        out,
        base_offset,
        partition_leader_epoch,
        ATTR_TRANSACTIONAL | ATTR_CONTROL,
        0,
        timestamp_ms,
        timestamp_ms,
        producer_id,
        producer_epoch,
        -1,
        1,
    )


_PRODUCER_STATE = struct.Struct(">qhi")
_PRODUCER_STATE_POS = 43  # producerId, producerEpoch, baseSequence
_ATTRIBUTES = struct.Struct(">h")
_ATTRIBUTES_POS = 21


def rewrite_producer_state(
    batch: bytes,
    *,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    is_transactional: bool | None = None,
) -> bytes:
    """Return a built v2 batch with new producer fields and a recomputed CRC-32C.

    For a producer that must resend a batch under a new epoch or sequence (KIP-360) without
    re-encoding the records.
    """
    if len(batch) < HEADER_SIZE or batch[_MAGIC_POS] != 2:
        raise EncodeError("producer state can only be rewritten in a built magic 2 batch")
    out = bytearray(batch)
    _PRODUCER_STATE.pack_into(out, _PRODUCER_STATE_POS, producer_id, producer_epoch, base_sequence)
    if is_transactional is not None:
        (attributes,) = _ATTRIBUTES.unpack_from(out, _ATTRIBUTES_POS)
        attributes = (
            attributes | ATTR_TRANSACTIONAL
            if is_transactional
            else attributes & ~ATTR_TRANSACTIONAL
        )
        _ATTRIBUTES.pack_into(out, _ATTRIBUTES_POS, attributes)
    with memoryview(out) as view:
        crc = crc32c(view[_CRC_START:])
    _UINT32.pack_into(out, _CRC_POS, crc)
    return bytes(out)
