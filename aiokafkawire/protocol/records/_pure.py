"""The pure-Python implementation of the records interface (always importable on its own)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TypeVar

from aiokafkawire.errors import CorruptRecordError, UnknownMagicError
from aiokafkawire.protocol.records import _pure_legacy, _pure_v2
from aiokafkawire.protocol.records._builder import RecordBatchBuilder
from aiokafkawire.protocol.records._pure_legacy import LegacyRecordBatch, LegacyRecordBatchBuilder
from aiokafkawire.protocol.records._pure_v2 import (
    DefaultRecordBatchBuilder,
    RecordBatch,
    build_control_batch,
    rewrite_producer_state,
)
from aiokafkawire.protocol.records._types import LOG_OVERHEAD, Buffer, Headers

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

AnyBatch = RecordBatch | LegacyRecordBatch
_V2Batch = TypeVar("_V2Batch", bound=RecordBatch)

_INT32 = struct.Struct(">i")
#: Java's LegacyRecord.RECORD_OVERHEAD_V0: nothing smaller can be a message or batch.
_MIN_SIZE = 14
_MAGIC_POS = 16


def iter_batches(data: Buffer, *, check_crcs: bool = True) -> Iterator[AnyBatch]:
    """Yield the batches in ``data``: v2 ``RecordBatch`` objects and legacy top-level messages.

    A trailing partial batch (as fetch responses have) is ignored.  With ``check_crcs`` every
    batch's CRC is verified before it is yielded (and legacy inner messages' when decoded).
    Raises ``CorruptRecordError``, ``UnknownMagicError`` (or ``UnknownCodecError`` while decoding).
    """
    return split_batches(data, check_crcs, RecordBatch)


def split_batches(
    data: Buffer, check_crcs: bool, v2_batch: type[_V2Batch]
) -> Iterator[_V2Batch | LegacyRecordBatch]:
    """:func:`iter_batches` with ``v2_batch`` as the class of magic 2 batches (the accelerator's
    subclass decodes in C)."""
    buffer = data if type(data) is bytes else bytes(data)
    pos = 0
    total = len(buffer)
    unpack_int32 = _INT32.unpack_from
    while total - pos >= LOG_OVERHEAD:
        (size,) = unpack_int32(buffer, pos + 8)
        if size < _MIN_SIZE:
            raise CorruptRecordError(f"record batch size {size} at byte {pos} is too small")
        end = pos + LOG_OVERHEAD + size
        if end > total:
            return  # partial trailing batch
        magic = buffer[pos + _MAGIC_POS]
        batch: _V2Batch | LegacyRecordBatch
        if magic == 2:
            batch = v2_batch(buffer, pos, end)
        elif magic == 0 or magic == 1:
            if size < (14 if magic == 0 else 22):
                raise CorruptRecordError(f"message size {size} at byte {pos} is too small")
            batch = LegacyRecordBatch(buffer, pos, end, check_crcs)
        else:
            raise UnknownMagicError(f"unknown record batch magic {magic} at byte {pos}")
        if check_crcs and not batch.validate_crc():
            raise CorruptRecordError(
                f"CRC mismatch in magic {magic} batch at byte {pos} (stored {batch.crc:#010x})"
            )
        yield batch
        pos = end


def estimate_size_in_bytes(
    magic: int,
    compression_type: int,
    key: bytes | None,
    value: bytes | None,
    headers: Headers | None = None,
) -> int:
    """Upper bound of the size of a batch (or message set) holding only this record.

    The uncompressed size (plus a wrapper message for compressed magic 0/1), as the Java
    producer uses to refuse records larger than ``max.request.size``.
    """
    if magic == 2:
        return _pure_v2.estimate_size(key, value, headers)
    if magic in (0, 1):
        return _pure_legacy.estimate_size(magic, key, value, bool(compression_type))
    raise UnknownMagicError(f"unknown record batch magic {magic}")


def reclaim_buffer(buffer: bytearray) -> bool:
    """Make a done batch's ``buffer`` empty with its allocation kept, for a batch to continue
    in (:meth:`RecordBatchBuilder.move_to`).  Always False here: a pure builder's appends would
    give the capacity back (bytearray shrinks below half its allocation)."""
    return False
