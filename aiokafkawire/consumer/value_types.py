"""Value types the consumer hands to users: records and committed offsets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, NamedTuple

from aiokafkawire._compiled import fast_fields
from aiokafkawire.serialization import K, V
from aiokafkawire.structs import OffsetAndMetadata

__all__ = ["ConsumerGroupMetadata", "ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp"]


if TYPE_CHECKING:

    class ConsumerRecord(NamedTuple, Generic[K, V]):
        """One record as delivered to the user.

        ``key`` and ``value`` are the deserialized payloads (raw ``bytes`` without deserializers);
        ``headers`` is a tuple of ``(str, bytes | None)`` pairs; ``leader_epoch`` is ``None`` for
        records of legacy message sets.  ``timestamp_type`` is 0 (create time), 1 (log append time)
        or -1 (none: magic 0).
        """

        topic: str
        partition: int
        offset: int
        timestamp: int
        timestamp_type: int
        key: K
        value: V
        headers: tuple[tuple[str, bytes | None], ...]
        leader_epoch: int | None

else:

    @fast_fields
    class ConsumerRecord(NamedTuple):
        """One record as delivered to the user.

        ``key`` and ``value`` are the deserialized payloads (raw ``bytes`` without deserializers);
        ``headers`` is a tuple of ``(str, bytes | None)`` pairs; ``leader_epoch`` is ``None`` for
        records of legacy message sets.  ``timestamp_type`` is 0 (create time), 1 (log append time)
        or -1 (none: magic 0).
        """

        topic: str
        partition: int
        offset: int
        timestamp: int
        timestamp_type: int
        key: Any
        value: Any
        headers: tuple[tuple[str, bytes | None], ...]
        leader_epoch: int | None

        @classmethod
        def __class_getitem__(cls, item: Any) -> Any:
            """``ConsumerRecord[K, V]`` at run time (Python 3.10 has no generic NamedTuple)."""
            return cls


class OffsetAndTimestamp(NamedTuple):
    """The answer of :meth:`Consumer.offsets_for_times` for one partition."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


class ConsumerGroupMetadata(NamedTuple):
    """The consumer's group membership, for ``Producer.send_offsets_to_transaction``."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
