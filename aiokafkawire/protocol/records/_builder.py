"""The base of the magic 0/1 and magic 2 builders: their settings, shared state and interface."""

from __future__ import annotations

import time
from typing import Any, ClassVar, TypeVar

from aiokafkawire.errors import EncodeError, UnknownMagicError
from aiokafkawire.protocol.records._types import (
    NO_TIMESTAMP,
    CompressionType,
    Headers,
    TimestampType,
)

_NO_TIMESTAMP_TYPE = TimestampType.NO_TIMESTAMP_TYPE
_Builder = TypeVar("_Builder", bound="RecordBatchBuilder")


def now_ms() -> int:
    """The wall clock in milliseconds: the timestamp of a record appended without one."""
    return int(time.time() * 1000)


def builder_class(magic: int, v2: type[_Builder], legacy: type[_Builder]) -> type[_Builder]:
    """``v2`` for magic 2, ``legacy`` for magic 0 and 1; else ``UnknownMagicError``."""
    if magic == 2:
        return v2
    if magic in (0, 1):
        return legacy
    raise UnknownMagicError(f"cannot build record batches with magic {magic}")


class RecordBatchBuilder:
    """Builds one record batch (magic 2) or one message set (magic 0/1) for a produce request.

    ``RecordBatchBuilder(magic=...)`` returns the builder for that magic: a
    ``DefaultRecordBatchBuilder`` for magic 2 and a ``LegacyRecordBatchBuilder`` for 0 and 1, both
    subclasses.  :meth:`append` adds records until the batch is full (the first record is always
    accepted), :meth:`build` returns the bytes.
    """

    __slots__ = (
        "_batch_size",
        "_buffer",
        "_built",
        "_count",
        "_max_timestamp",
        "_spent",
        "base_offset",
        "base_sequence",
        "compression_type",
        "is_transactional",
        "magic",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "timestamp_type",
    )

    def __new__(cls, magic: int = 2, *args: Any, **kwargs: Any) -> RecordBatchBuilder:
        if cls is not RecordBatchBuilder:
            return object.__new__(cls)
        # Imported here: the subclasses import this module.
        from aiokafkawire.protocol.records._pure_legacy import LegacyRecordBatchBuilder
        from aiokafkawire.protocol.records._pure_v2 import DefaultRecordBatchBuilder

        return object.__new__(
            builder_class(magic, DefaultRecordBatchBuilder, LegacyRecordBatchBuilder)
        )

    #: The magics a subclass writes, and the one it writes when ``magic`` is not given.
    _MAGICS: ClassVar[tuple[int, ...]] = ()
    _DEFAULT_MAGIC: ClassVar[int] = 2
    #: Bytes kept free at the start of the buffer (the v2 batch header, written by build()).
    _RESERVED: ClassVar[int] = 0

    def __init__(
        self,
        magic: int | None = None,
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
        """Settings a format cannot carry raise ``EncodeError``; ``magic=None`` is the
        subclass's own (2, or 1 for the legacy builder)."""
        if magic is None:
            magic = self._DEFAULT_MAGIC
        elif magic not in self._MAGICS:
            magics = " or ".join(map(str, self._MAGICS))
            raise EncodeError(f"{type(self).__name__} writes magic {magics}, not {magic}")
        self.magic = magic
        self.compression_type = CompressionType(compression_type)
        self.is_transactional = is_transactional
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.base_offset = base_offset
        self.timestamp_type = TimestampType(timestamp_type) if magic else _NO_TIMESTAMP_TYPE
        self.partition_leader_epoch = partition_leader_epoch
        self._batch_size = batch_size
        self._buffer = bytearray(self._RESERVED)
        self._count = 0
        self._max_timestamp = NO_TIMESTAMP
        self._built: bytes | memoryview | None = None
        self._spent: bytearray | None = None  # see take_spent_buffer
        self._start()

    def _start(self) -> None:
        """Refuse what the format cannot carry (``EncodeError``); set the format's own state."""

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

    def build_view(self) -> memoryview:
        """:meth:`build`'s batch as a read-only view, without copying it into ``bytes`` where
        the format allows (magic 2).  For a holder that keeps the batch until it is written and
        never changes it: the producer, whose frames then reference it."""
        return memoryview(self.build())

    def take_spent_buffer(self) -> bytearray | None:
        """Once built: the buffer the records were appended to, handed over for reuse (see
        ``reclaim_buffer``) when the built batch does not use it (a compressed batch); else,
        or if taken already, None."""
        spent, self._spent = self._spent, None
        return spent

    def move_to(self, buffer: bytearray) -> bool:
        """Continue writing in ``buffer``, an emptied buffer of larger capacity (see
        ``reclaim_buffer``); False, with nothing changed, when this builder cannot.  The pure
        builders cannot: their appends would give the capacity back."""
        return False

    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool
    ) -> None:
        """Set the idempotence/transaction fields before :meth:`build` (magic 2 only)."""
        raise NotImplementedError  # pragma: no cover

    def is_full(self) -> bool:
        """Whether the uncompressed size has reached ``batch_size``."""
        return len(self._buffer) >= self._batch_size

    @property
    def batch_size(self) -> int:
        """The uncompressed size limit: :meth:`append` refuses records beyond it (but the first)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, limit: int) -> None:
        # Raised while the batch is open: the producer grows its batches in steps, as its
        # buffer memory allows, instead of reserving the whole batch_size up front.
        self._batch_size = limit

    @property
    def record_count(self) -> int:
        """Number of records appended so far."""
        return self._count

    @property
    def size_in_bytes(self) -> int:
        """Size of the batch so far (exact once built; uncompressed estimate before)."""
        raise NotImplementedError  # pragma: no cover
