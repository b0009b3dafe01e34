"""The records interface with its record batch v2 hot loops compiled (``_crecords``).

Importing this module fails with ``ImportError`` when the C extension was not built; the package
then uses :mod:`._pure`.  Only the per-record loops are compiled: decoding the records of a v2
batch (after decompression, which stays in :mod:`.codecs`) and appending one record to a v2
builder.  Batch headers, CRCs, compression, legacy message sets and control batches are the pure
path's code.  Whenever the compiled code meets input outside its fast path it hands the work to
the pure path, so results and exceptions are the pure path's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from aiokafkawire.errors import CorruptRecordError
from aiokafkawire.protocol.records import _builder, _pure_legacy, _pure_v2
from aiokafkawire.protocol.records._crecords import (
    _setup,
    _setup_builder,
    builder_append,
    decode_consumer_records,
    decode_records,
    decode_share_records,
    encode_record,
    move_into_buffer,
)
from aiokafkawire.protocol.records._crecords import reclaim_buffer as _reclaim_buffer
from aiokafkawire.protocol.records._pure import estimate_size_in_bytes, split_batches
from aiokafkawire.protocol.records._pure_legacy import LegacyRecordBatch
from aiokafkawire.protocol.records._pure_v2 import build_control_batch, rewrite_producer_state
from aiokafkawire.protocol.records._types import (
    Buffer,
    ControlRecord,
    Headers,
    Record,
)

__all__ = [
    "DefaultRecordBatchBuilder",
    "LegacyRecordBatch",
    "LegacyRecordBatchBuilder",
    "RecordBatch",
    "RecordBatchBuilder",
    "build_control_batch",
    "estimate_size_in_bytes",
    "iter_batches",
    "reclaim_buffer",
    "rewrite_producer_state",
]

#: True when records are allocated directly in C (their class layout is the expected one).
DIRECT_RECORDS: bool = _setup(Record, ControlRecord, CorruptRecordError)

_ATTR_TIMESTAMP_TYPE = _pure_v2.ATTR_TIMESTAMP_TYPE
_ATTR_CONTROL = _pure_v2.ATTR_CONTROL
_pure_decode_records = _pure_v2._decode_records


def _decode_records_compiled(*args: Any) -> list[Record]:
    """``_pure_v2._decode_records`` in C; the pure loop for numbers beyond 64 bits."""
    records = decode_records(*args)
    return _pure_decode_records(*args) if records is None else records


# (buf, pos, end, count, base_offset, base_timestamp, log_append_time) of a batch's records
_Body = tuple[bytes, int, int, int, int, int, int | None]


class RecordBatch(_pure_v2.RecordBatch):
    """A v2 record batch whose records are decoded by the C extension."""

    __slots__ = ()

    # Errors are the pure path's: ValueError for bad utf-8 in a header key is wrapped there.
    _decode_records = staticmethod(_decode_records_compiled)

    def _records_frame(self) -> tuple[_Body, tuple[int, int | None]] | None:
        """What the C decoders take of this batch, around the caller's own arguments:
        ``(buf, pos, end, count, base_offset, base_timestamp, log_append_time)`` and
        ``(timestamp_type, leader_epoch)``; None when it has no records to hand out (empty, or a
        control batch)."""
        count = self.record_count
        attributes = self.attributes
        if count == 0 or attributes & _ATTR_CONTROL:
            return None
        buf, pos, end = self._payload()
        if attributes & _ATTR_TIMESTAMP_TYPE:
            timestamp_type, log_append_time = 1, self.max_timestamp
        else:
            timestamp_type, log_append_time = 0, None
        epoch = self.partition_leader_epoch
        body = (buf, pos, end, count, self.base_offset, self.base_timestamp, log_append_time)
        return body, (timestamp_type, epoch if epoch >= 0 else None)

    def consumer_records(
        self,
        record_cls: type[Any],
        topic: str,
        partition: int,
        min_offset: int,
        key_deserializer: Callable[[bytes | None], Any] | None = None,
        value_deserializer: Callable[[bytes | None], Any] | None = None,
    ) -> list[Any]:
        """See :meth:`_pure_v2.RecordBatch.consumer_records`; built by the C extension."""
        frame = self._records_frame()
        if frame is None:
            return []
        body, kind = frame
        records: list[Any] | None = decode_consumer_records(
            *body,
            record_cls,
            topic,
            partition,
            *kind,
            min_offset,
            key_deserializer,
            value_deserializer,
        )
        if records is None:  # numbers beyond 64 bits: the pure path's Python ints
            return super().consumer_records(
                record_cls, topic, partition, min_offset, key_deserializer, value_deserializer
            )
        return records

    def share_records(
        self,
        record_cls: type[Any],
        topic: str,
        partition: int,
        min_offset: int,
        max_offset: int,
        delivery_count: int,
    ) -> list[Any]:
        """See :meth:`_pure_v2.RecordBatch.share_records`; built by the C extension."""
        frame = self._records_frame()
        if frame is None:
            return []
        body, kind = frame
        records: list[Any] | None = decode_share_records(
            *body,
            record_cls,
            topic,
            partition,
            *kind,
            min_offset,
            max_offset,
            delivery_count,
        )
        if records is None:  # numbers beyond 64 bits: the pure path's Python ints
            return super().share_records(
                record_cls, topic, partition, min_offset, max_offset, delivery_count
            )
        return records


AnyBatch = RecordBatch | LegacyRecordBatch


def iter_batches(data: Buffer, *, check_crcs: bool = True) -> Iterator[AnyBatch]:
    """Yield the batches in ``data`` (see :func:`._pure.iter_batches`; v2 batches decode in C)."""
    return split_batches(data, check_crcs, RecordBatch)


class RecordBatchBuilder(_builder.RecordBatchBuilder):
    """``RecordBatchBuilder(magic=...)``: this module's v2 builder, or the legacy builder."""

    __slots__ = ()

    def __new__(cls, magic: int = 2, *args: Any, **kwargs: Any) -> RecordBatchBuilder:
        if cls is not RecordBatchBuilder:
            return object.__new__(cls)
        return object.__new__(
            _builder.builder_class(magic, DefaultRecordBatchBuilder, LegacyRecordBatchBuilder)
        )


def _python_append(
    self: DefaultRecordBatchBuilder,
    timestamp_ms: int | None,
    key: bytes | None,
    value: bytes | None,
    headers: Headers | None = None,
) -> bool:
    """``append`` in Python over the C record encoder: what ``builder_append`` hands unusual
    input to, and all input if it could not register the builder's layout."""
    if self._built is None:
        if timestamp_ms is None:
            timestamp_ms = _builder.now_ms()
        count = self._count
        added = encode_record(
            self._buffer,
            count,
            timestamp_ms - self._base_timestamp if count else 0,
            key,
            value,
            headers,
            self._batch_size,
        )
        if added:
            if not count:
                self._base_timestamp = timestamp_ms
            if timestamp_ms > self._max_timestamp:
                self._max_timestamp = timestamp_ms
            self._count = count + 1
            return True
        if added is not None:
            return False
    # Already built (raises), or input outside the C fast path: the pure path decides.
    return _pure_v2.DefaultRecordBatchBuilder.append(self, timestamp_ms, key, value, headers)


class DefaultRecordBatchBuilder(_pure_v2.DefaultRecordBatchBuilder, RecordBatchBuilder):
    """A v2 builder whose ``append`` is the C function ``builder_append``.

    The C function updates the builder's slots itself once this class is registered with it
    (``DIRECT_APPEND``, just below); anything else it hands to :func:`_python_append`.
    """

    __slots__ = ()

    append = builder_append

    def move_to(self, buffer: bytearray) -> bool:
        """Continue in ``buffer`` (emptied by :func:`reclaim_buffer`) when it has more room than
        the batch's own: the bytes so far are copied into it, and appends then grow into its
        capacity without reallocating.  False, with nothing changed, otherwise."""
        own = self._buffer
        if self._built is not None or buffer.__alloc__() <= own.__alloc__():
            return False
        if not move_into_buffer(own, buffer):
            return False
        self._buffer = buffer
        return True


def reclaim_buffer(buffer: bytearray) -> bool:
    """Make a done batch's ``buffer`` empty with its allocation kept, for a batch to continue
    in (:meth:`DefaultRecordBatchBuilder.move_to`).  False, with nothing changed, while anything
    still holds a view of it (a write still queued) or it is not a plain bytearray."""
    return _reclaim_buffer(buffer, 0)


#: True when ``builder_append`` found this class's slots and appends in C.
DIRECT_APPEND: bool = _setup_builder(DefaultRecordBatchBuilder, _python_append, _builder.now_ms)


class LegacyRecordBatchBuilder(_pure_legacy.LegacyRecordBatchBuilder, RecordBatchBuilder):
    """The pure-Python magic 0/1 builder (a subclass so that isinstance checks hold)."""

    __slots__ = ()
