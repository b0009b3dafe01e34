"""Value types of the share consumer: delivered records, acknowledgement types and outcomes."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Generic, NamedTuple

from aiokafkawire._compiled import fast_fields
from aiokafkawire.errors import KafkaError, KafkaValueError
from aiokafkawire.serialization import K, V
from aiokafkawire.structs import TopicPartition

__all__ = ["AcknowledgeType", "AcknowledgementOutcome", "ShareRecord"]


class AcknowledgeType(enum.IntEnum):
    """How a delivered record is acknowledged (the wire values of ``AcknowledgeTypes``).

    ``GAP`` is only used by the client itself, for offsets of an acquired range that held no
    record for the application (control records, compacted or aborted records).  ``RENEW``
    (KIP-1222, ShareAcknowledge v2, Kafka 4.2+) extends a record's acquisition lock without
    settling it: the record stays this member's until it is accepted, released or rejected.
    """

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4

    @classmethod
    def parse(cls, value: AcknowledgeType | str | int) -> AcknowledgeType:
        """``"accept"`` / ``"release"`` / ``"reject"`` / ``"renew"`` (any case), a member, or its
        number.

        Anything else raises :class:`~aiokafkawire.errors.KafkaValueError` (a ``KafkaError``
        and a ``ValueError``).
        """
        if isinstance(value, AcknowledgeType):
            member = value
        elif isinstance(value, str):
            try:
                member = cls[value.upper()]
            except KeyError:
                raise KafkaValueError(
                    f"unknown acknowledgement {value!r}: use 'accept', 'release', 'reject' or "
                    "'renew'"
                ) from None
        else:
            try:
                member = cls(value)
            except (ValueError, TypeError):
                raise KafkaValueError(
                    f"unknown acknowledgement {value!r}: use AcknowledgeType.ACCEPT, RELEASE, "
                    "REJECT or RENEW"
                ) from None
        if member is cls.GAP:
            raise KafkaValueError("GAP is not an acknowledgement an application can give")
        return member


if TYPE_CHECKING:

    class ShareRecord(NamedTuple, Generic[K, V]):
        """One record delivered by a share group.

        The first nine fields are those of :class:`~aiokafkawire.consumer.ConsumerRecord`;
        ``delivery_count`` is how many times the broker has handed this record out (1 on the first
        delivery, 2 after one release or lock expiry, ...).
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
        delivery_count: int

        @property
        def topic_partition(self) -> TopicPartition:
            """The record's partition as a :class:`TopicPartition`."""
            return TopicPartition(self.topic, self.partition)

else:

    @fast_fields
    class ShareRecord(NamedTuple):
        """One record delivered by a share group.

        The first nine fields are those of :class:`~aiokafkawire.consumer.ConsumerRecord`;
        ``delivery_count`` is how many times the broker has handed this record out (1 on the first
        delivery, 2 after one release or lock expiry, ...).
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
        delivery_count: int

        @property
        def topic_partition(self) -> TopicPartition:
            """The record's partition as a :class:`TopicPartition`."""
            return TopicPartition(self.topic, self.partition)

        @classmethod
        def __class_getitem__(cls, item: Any) -> Any:
            """``ShareRecord[K, V]`` at run time (Python 3.10 has no generic NamedTuple)."""
            return cls


class AcknowledgementOutcome(NamedTuple):
    """The broker's answer to the acknowledgements of one partition sent in one request.

    ``offsets`` maps each acknowledged offset to the type sent; ``error`` is ``None`` when the
    broker applied them, else the typed error (for example
    :class:`~aiokafkawire.errors.AcquisitionLockTimeoutError` for records whose lock had expired,
    :class:`~aiokafkawire.errors.InvalidRecordStateError`,
    :class:`~aiokafkawire.errors.ShareSessionNotFoundError`).
    """

    partition: TopicPartition
    offsets: dict[int, AcknowledgeType]
    error: KafkaError | None
