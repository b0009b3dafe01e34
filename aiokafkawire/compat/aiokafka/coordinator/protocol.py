"""``aiokafka.coordinator.protocol``: a member's subscription and assignment, aiokafka-shaped.

Both encode to (and decode from) the classic group's "consumer" protocol bytes, version 0
fields: what aiokafka's ``Struct`` classes of the same names do.
"""

from __future__ import annotations

import struct
from typing import Any, ClassVar, NamedTuple

from aiokafkawire.errors import CorruptRecordError
from aiokafkawire.structs import TopicPartition

__all__ = ["ConsumerProtocol", "ConsumerProtocolMemberAssignment", "ConsumerProtocolMemberMetadata"]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._at = 0

    def take(self, layout: struct.Struct) -> int:
        try:
            (value,) = layout.unpack_from(self._data, self._at)
        except struct.error as exc:
            raise CorruptRecordError(f"truncated consumer protocol data: {exc}") from None
        self._at += layout.size
        return int(value)

    def raw(self, size: int) -> bytes:
        if size < 0 or self._at + size > len(self._data):
            raise CorruptRecordError("truncated consumer protocol data")
        chunk = bytes(self._data[self._at : self._at + size])
        self._at += size
        return chunk

    def string(self) -> str:
        return self.raw(self.take(_INT16)).decode("utf-8")

    def nullable_bytes(self) -> bytes:
        size = self.take(_INT32)
        return b"" if size < 0 else self.raw(size)


def _string(text: str) -> bytes:
    encoded = text.encode("utf-8")
    return _INT16.pack(len(encoded)) + encoded


def _bytes(data: bytes | None) -> bytes:
    return _INT32.pack(-1) if data is None else _INT32.pack(len(data)) + data


class _Struct:
    """aiokafka's Struct calling convention: fields by position or by name."""

    FIELDS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(self.FIELDS):
            raise TypeError(f"{type(self).__name__} takes {len(self.FIELDS)} fields")
        values = dict(zip(self.FIELDS, args, strict=False))
        values.update(kwargs)
        unknown = set(values) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(unknown)}")
        for name in self.FIELDS:
            setattr(self, name, values.get(name))

    def get_item(self, name: str) -> Any:
        """The field called ``name``."""
        if name not in self.FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, f) == getattr(other, f) for f in self.FIELDS
        )

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.FIELDS)
        return f"{type(self).__name__}({shown})"


class ConsumerProtocolMemberMetadata(_Struct):
    """A member's JoinGroup metadata: the topics it subscribes and its assignor's user data."""

    FIELDS = ("version", "subscription", "user_data")
    version: int
    subscription: list[str]
    user_data: bytes

    def encode(self) -> bytes:
        """The metadata's bytes."""
        topics = list(self.subscription or ())
        return b"".join(
            [
                _INT16.pack(self.version or 0),
                _INT32.pack(len(topics)),
                *(_string(t) for t in topics),
                _bytes(self.user_data),
            ]
        )

    @classmethod
    def decode(cls, data: bytes) -> ConsumerProtocolMemberMetadata:
        """Parse metadata bytes."""
        reader = _Reader(data)
        version = reader.take(_INT16)
        topics = [reader.string() for _ in range(reader.take(_INT32))]
        return cls(version, topics, reader.nullable_bytes())


class ConsumerProtocolMemberAssignment(_Struct):
    """What the leader hands one member: ``[(topic, [partition, ...]), ...]``."""

    class Assignment(NamedTuple):
        topic: str
        partitions: list[int]

    FIELDS = ("version", "assignment", "user_data")
    version: int
    assignment: list[ConsumerProtocolMemberAssignment.Assignment]
    user_data: bytes

    def partitions(self) -> list[TopicPartition]:
        """The assignment as a flat list of partitions."""
        return [
            TopicPartition(topic, partition)
            for topic, partitions in self.assignment or ()
            for partition in partitions
        ]

    def encode(self) -> bytes:
        """The assignment's bytes."""
        parts = [_INT16.pack(self.version or 0), _INT32.pack(len(self.assignment or ()))]
        for topic, partitions in self.assignment or ():
            parts.append(_string(topic))
            parts.append(_INT32.pack(len(partitions)))
            parts.extend(_INT32.pack(p) for p in partitions)
        parts.append(_bytes(self.user_data))
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> ConsumerProtocolMemberAssignment:
        """Parse assignment bytes."""
        reader = _Reader(data)
        version = reader.take(_INT16)
        assignment = []
        for _ in range(reader.take(_INT32)):
            topic = reader.string()
            partitions = [reader.take(_INT32) for _ in range(reader.take(_INT32))]
            assignment.append(cls.Assignment(topic, partitions))
        return cls(version, assignment, reader.nullable_bytes())


class ConsumerProtocol:
    """The names of the classic group's "consumer" protocol."""

    PROTOCOL_TYPE = "consumer"
    ASSIGNMENT_STRATEGIES = ("range", "roundrobin")
    METADATA = ConsumerProtocolMemberMetadata
    ASSIGNMENT = ConsumerProtocolMemberAssignment
