"""Types shared by every implementation of the record formats: enums and the record objects."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from enum import IntEnum
from typing import ClassVar

from aiokafkawire.errors import CorruptRecordError

Buffer = bytes | bytearray | memoryview
Headers = list[tuple[str, bytes | None]]

#: Offset + length prefix shared by every format (int64 offset, int32 size).
LOG_OVERHEAD = 12
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1


class CompressionType(IntEnum):
    """The codec in bits 0-2 of a batch's (or wrapper message's) attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    """Meaning of a record's timestamp (bit 3 of the attributes; magic 0 has none)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(IntEnum):
    """The type field in the key of a control record."""

    ABORT = 0
    COMMIT = 1


_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


class Record:
    """One record read from a batch (any magic).

    ``offset`` is absolute; ``headers`` is a list of ``(str, bytes | None)`` (always empty for
    magic 0 and 1); ``timestamp`` is -1 for magic 0.
    """

    __slots__ = ("headers", "key", "offset", "timestamp", "timestamp_type", "value")

    is_control: ClassVar[bool] = False

    def __init__(
        self,
        offset: int,
        timestamp: int,
        timestamp_type: TimestampType,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = headers

    @property
    def control_type(self) -> ControlRecordType | None:
        """The marker type of a control record; ``None`` for data records."""
        return None

    def _fields(self) -> tuple[object, ...]:
        return (
            self.offset,
            self.timestamp,
            self.timestamp_type,
            self.key,
            self.value,
            self.headers,
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable value object

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(offset={self.offset!r}, timestamp={self.timestamp!r}, "
            f"timestamp_type={self.timestamp_type!r}, key={self.key!r}, value={self.value!r}, "
            f"headers={self.headers!r})"
        )


class ControlRecord(Record):
    """A record of a control batch: a transaction commit or abort marker.

    Its key holds ``version: int16, type: int16``; the value of a commit/abort marker holds
    ``version: int16, coordinator_epoch: int32``.
    """

    __slots__ = ()

    is_control: ClassVar[bool] = True

    @property
    def control_type(self) -> ControlRecordType | None:
        """ABORT or COMMIT; ``None`` for an unknown type (Java ignores those too)."""
        key = self.key
        if key is None or len(key) < 4:
            raise CorruptRecordError(f"control record key is too short: {key!r}")
        _version, marker = _CONTROL_KEY.unpack_from(key)
        try:
            return ControlRecordType(marker)
        except ValueError:
            return None

    @property
    def coordinator_epoch(self) -> int | None:
        """The transaction coordinator epoch carried in a commit/abort marker's value."""
        value = self.value
        if value is None or len(value) < 6:
            return None
        return int(_CONTROL_VALUE.unpack_from(value)[1])


class IterableBatch:
    """What v2 batches and legacy messages share: iterating and counting their records."""

    __slots__ = ()

    def records(self) -> list[Record]:
        """All records of the batch (decoded once)."""
        raise NotImplementedError  # pragma: no cover - both batch classes define it

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def __len__(self) -> int:
        return len(self.records())
