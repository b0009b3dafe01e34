"""``aiokafka.structs``: aiokafka's value types, shaped as aiokafka shapes them.

``TopicPartition`` is aiokafkawire's own class (the same tuple).  ``OffsetAndMetadata`` has
aiokafka's two fields, so ``offset, metadata = committed`` keeps working; ``RecordMetadata`` and
``ConsumerRecord`` carry every field aiokafka's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from aiokafkawire.errors import KafkaError
from aiokafkawire.structs import TopicPartition

__all__ = [
    "BrokerMetadata",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "PartitionMetadata",
    "RecordMetadata",
    "TopicPartition",
]

KT = TypeVar("KT")
VT = TypeVar("VT")


class BrokerMetadata(NamedTuple):
    """A broker as metadata describes it."""

    nodeId: int | str  # aiokafka's field name
    host: str
    port: int
    rack: str | None


class PartitionMetadata(NamedTuple):
    """A partition as a Metadata response describes it."""

    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    error: KafkaError | None


class OffsetAndMetadata(NamedTuple):
    """An offset to commit, with its metadata string (aiokafka's two fields)."""

    offset: int
    metadata: str


class RecordMetadata(NamedTuple):
    """Where a sent record was written."""

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int | None
    timestamp_type: int
    log_start_offset: int | None


@dataclass
class ConsumerRecord(Generic[KT, VT]):
    """A record as aiokafka hands it out (``checksum`` is always ``None`` since Kafka 0.11)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: KT | None
    value: VT | None
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    headers: Sequence[tuple[str, bytes | None]]


class OffsetAndTimestamp(NamedTuple):
    """The answer of ``offsets_for_times`` for one partition."""

    offset: int
    timestamp: int | None
