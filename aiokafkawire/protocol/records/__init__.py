"""Kafka record formats: legacy message sets (magic 0/1), record batches (magic 2), codecs.

This is the one interface the rest of the client uses.  The implementation behind it is chosen
once at import (``_impl``): a compiled accelerator module ``_accel`` when one is installed, else
the pure-Python :mod:`aiokafkawire.protocol.records._pure`, which stays importable and testable on
its own (set ``AIOKAFKAWIRE_PURE_PYTHON=1`` to force it).  An accelerator must provide the same
names as ``_pure``.

Reading::

    for batch in iter_batches(fetch_records, check_crcs=True):
        for record in batch:
            record.offset, record.timestamp, record.key, record.value, record.headers

Writing::

    builder = RecordBatchBuilder(magic=2, compression_type=CompressionType.LZ4)
    while builder.append(timestamp_ms, key, value, headers): ...
    payload = builder.build()
"""

from __future__ import annotations

from types import ModuleType

from aiokafkawire._compiled import load_accelerator
from aiokafkawire.protocol.records import _pure
from aiokafkawire.protocol.records._types import (
    CompressionType,
    ControlRecord,
    ControlRecordType,
    Headers,
    Record,
    TimestampType,
)


def _choose_impl() -> ModuleType:
    """The accelerator when installed (unless AIOKAFKAWIRE_PURE_PYTHON is set), else pure Python."""
    return load_accelerator("aiokafkawire.protocol.records._accel") or _pure


_impl: ModuleType = _choose_impl()

RecordBatchBuilder = _impl.RecordBatchBuilder
DefaultRecordBatchBuilder = _impl.DefaultRecordBatchBuilder
LegacyRecordBatchBuilder = _impl.LegacyRecordBatchBuilder
RecordBatch = _impl.RecordBatch
LegacyRecordBatch = _impl.LegacyRecordBatch
build_control_batch = _impl.build_control_batch
estimate_size_in_bytes = _impl.estimate_size_in_bytes
iter_batches = _impl.iter_batches
rewrite_producer_state = _impl.rewrite_producer_state
reclaim_buffer = _impl.reclaim_buffer
#: The name used in docs/DESIGN.md.
read_records = iter_batches

__all__ = [
    "CompressionType",
    "ControlRecord",
    "ControlRecordType",
    "DefaultRecordBatchBuilder",
    "Headers",
    "LegacyRecordBatch",
    "LegacyRecordBatchBuilder",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "TimestampType",
    "build_control_batch",
    "estimate_size_in_bytes",
    "iter_batches",
    "read_records",
    "reclaim_buffer",
    "rewrite_producer_state",
]
