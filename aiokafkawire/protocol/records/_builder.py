"""The builder interface shared by the magic 0/1 and magic 2 builders of the pure-Python path."""

from __future__ import annotations

from typing import Any

from aiokafkawire.errors import UnknownMagicError
from aiokafkawire.protocol.records._types import CompressionType, Headers, TimestampType


class RecordBatchBuilder:
    """Builds one record batch (magic 2) or one message set (magic 0/1) for a produce request.

    ``RecordBatchBuilder(magic=...)`` returns the builder for that magic: a
    ``DefaultRecordBatchBuilder`` for magic 2 and a ``LegacyRecordBatchBuilder`` for 0 and 1, both
    subclasses.  :meth:`append` adds records until the batch is full (the first record is always
    accepted), :meth:`build` returns the bytes.
    """

    __slots__ = ()

    magic: int
    compression_type: CompressionType
    _batch_size: int

    def __new__(cls, magic: int = 2, *args: Any, **kwargs: Any) -> RecordBatchBuilder:
        if cls is not RecordBatchBuilder:
            return object.__new__(cls)
        # Imported here: the subclasses import this module.
        if magic == 2:
            from aiokafkawire.protocol.records._pure_v2 import DefaultRecordBatchBuilder

            return object.__new__(DefaultRecordBatchBuilder)
        if magic in (0, 1):
            from aiokafkawire.protocol.records._pure_legacy import LegacyRecordBatchBuilder

            return object.__new__(LegacyRecordBatchBuilder)
        raise UnknownMagicError(f"cannot build record batches with magic {magic}")

    def __init__(
        self,
        magic: int = 2,
        compression_type: CompressionType | int = CompressionType.NONE,
        is_transactional: bool = False,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        batch_size: int = 16384,
        base_offset: int = 0,
        timestamp_type: TimestampType | int = TimestampType.CREATE_TIME,
        partition_leader_epoch: int = -1,
    ) -> None:
        raise NotImplementedError  # pragma: no cover - the subclasses implement it

    def append(
        self,
        timestamp_ms: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
    ) -> bool:
        """Add a record; return False (and add nothing) when it does not fit any more.

        ``timestamp_ms=None`` means now.  Offsets are assigned in order from ``base_offset``.
        """
        raise NotImplementedError  # pragma: no cover

    def build(self) -> bytes:
        """Return the finished batch; afterwards :meth:`append` is refused."""
        raise NotImplementedError  # pragma: no cover

    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool
    ) -> None:
        """Set the idempotence/transaction fields before :meth:`build` (magic 2 only)."""
        raise NotImplementedError  # pragma: no cover

    def is_full(self) -> bool:
        """Whether the uncompressed size has reached ``batch_size``."""
        raise NotImplementedError  # pragma: no cover

    @property
    def batch_size(self) -> int:
        """The uncompressed size limit: :meth:`append` refuses records beyond it (but the first)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, limit: int) -> None:
        # Raised while the batch is open: the producer grows its batches in steps, as its
        # buffer memory allows, instead of reserving the whole batch_size up front.
        self._batch_size = limit  # type: ignore[misc]  # a slot of every subclass

    @property
    def record_count(self) -> int:
        """Number of records appended so far."""
        raise NotImplementedError  # pragma: no cover

    @property
    def size_in_bytes(self) -> int:
        """Size of the batch so far (exact once built; uncompressed estimate before)."""
        raise NotImplementedError  # pragma: no cover
