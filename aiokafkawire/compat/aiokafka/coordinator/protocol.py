"""``aiokafka.coordinator.protocol``: a member's subscription and assignment, aiokafka-shaped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from aiokafkawire.structs import TopicPartition

__all__ = ["ConsumerProtocol", "ConsumerProtocolMemberAssignment", "ConsumerProtocolMemberMetadata"]


@dataclass
class ConsumerProtocolMemberMetadata:
    """A member's JoinGroup metadata: the topics it subscribes and its assignor's user data."""

    version: int
    subscription: list[str]
    user_data: bytes = b""


@dataclass
class ConsumerProtocolMemberAssignment:
    """What the leader hands one member: ``[(topic, [partition, ...]), ...]``."""

    class Assignment(NamedTuple):
        topic: str
        partitions: list[int]

    version: int
    assignment: list[ConsumerProtocolMemberAssignment.Assignment] = field(default_factory=list)
    user_data: bytes = b""

    def partitions(self) -> list[TopicPartition]:
        """The assignment as a flat list of partitions."""
        return [
            TopicPartition(topic, partition)
            for topic, partitions in self.assignment
            for partition in partitions
        ]


class ConsumerProtocol:
    """The names of the classic group's "consumer" protocol."""

    PROTOCOL_TYPE = "consumer"
    ASSIGNMENT_STRATEGIES = ("range", "roundrobin")
    METADATA = ConsumerProtocolMemberMetadata
    ASSIGNMENT = ConsumerProtocolMemberAssignment
