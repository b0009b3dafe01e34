"""``aiokafka.coordinator.assignors.abstract``: aiokafka's assignor interface, bridged both ways.

An aiokafka-style assignor (``assign(cluster, members)`` over aiokafka's member metadata) runs
inside aiokafkawire's group membership through :class:`_AssignorBridge`; the built-in aiokafka
assignors map to aiokafkawire's own (same names, same results as the Java client's).
"""

from __future__ import annotations

import abc
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from aiokafkawire.compat.aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafkawire.consumer.group.assignors import (
    EAGER,
    MemberAssignment,
    MemberSubscription,
    PartitionAssignor,
    create_assignor,
)
from aiokafkawire.errors import KafkaTypeError
from aiokafkawire.structs import TopicPartition

__all__ = ["AbstractPartitionAssignor", "ClusterView", "native_assignor"]


class AbstractPartitionAssignor(abc.ABC):
    """An aiokafka partition assignor: ``name``, ``assign``, ``metadata``, ``on_assignment``."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The strategy's name in JoinGroup."""

    @classmethod
    @abc.abstractmethod
    def assign(
        cls, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """Every member's assignment (run by the group leader)."""

    @classmethod
    @abc.abstractmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        """This member's JoinGroup metadata for ``topics``."""

    @classmethod
    @abc.abstractmethod
    def on_assignment(cls, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Called on every member with its assignment."""


class ClusterView:
    """What aiokafka assignors read of the cluster: ``partitions_for_topic`` and ``topics``."""

    def __init__(self, partitions_per_topic: Mapping[str, int]) -> None:
        self._counts = dict(partitions_per_topic)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The partition ids of ``topic``, None when unknown."""
        count = self._counts.get(topic)
        return None if count is None else set(range(count))

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        """The topics the assignment covers."""
        return set(self._counts)


def to_member_assignment(
    version: int, partitions: Iterable[TopicPartition], user_data: bytes | None = None
) -> ConsumerProtocolMemberAssignment:
    """aiokafka's assignment struct for a list of partitions."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    return ConsumerProtocolMemberAssignment(
        version,
        [
            ConsumerProtocolMemberAssignment.Assignment(topic, sorted(ids))
            for topic, ids in sorted(by_topic.items())
        ],
        user_data or b"",
    )


class _AssignorBridge:
    """Runs an aiokafka-style assignor where aiokafkawire expects a :class:`PartitionAssignor`."""

    rebalance_protocol = EAGER

    def __init__(self, assignor: Any) -> None:
        self._assignor = assignor
        self.name: str = assignor.name
        self.version: int = getattr(assignor, "version", 0)

    def subscription_user_data(
        self, topics: Collection[str], owned: Sequence[TopicPartition]
    ) -> bytes | None:
        return self._assignor.metadata(topics).user_data or None

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, MemberSubscription],
    ) -> dict[str, MemberAssignment]:
        members = {
            member_id: ConsumerProtocolMemberMetadata(
                self.version, list(sub.topics), sub.user_data or b""
            )
            for member_id, sub in subscriptions.items()
        }
        answer = self._assignor.assign(ClusterView(partitions_per_topic), members)
        result = {member_id: MemberAssignment([]) for member_id in subscriptions}
        for member_id, assignment in answer.items():
            result[member_id] = MemberAssignment(
                assignment.partitions(), assignment.user_data or None
            )
        return result

    def on_assignment(self, assignment: MemberAssignment, generation: int) -> None:
        self._assignor.on_assignment(
            to_member_assignment(self.version, assignment.partitions, assignment.user_data)
        )
        on_generation = getattr(self._assignor, "on_generation_assignment", None)
        if on_generation is not None:
            on_generation(generation)

    def __repr__(self) -> str:
        return f"<aiokafka assignor {self._assignor!r}>"


def native_assignor(strategy: Any) -> str | PartitionAssignor:
    """aiokafkawire's assignor for an entry of aiokafka's ``partition_assignment_strategy``."""
    native_name = getattr(strategy, "native_name", None)
    if native_name is not None:
        return native_name
    if isinstance(strategy, str):
        return strategy
    if isinstance(strategy, type) and issubclass(strategy, AbstractPartitionAssignor):
        return _AssignorBridge(strategy)
    if isinstance(strategy, AbstractPartitionAssignor):
        return _AssignorBridge(strategy)
    raise KafkaTypeError(
        f"partition_assignment_strategy items must be AbstractPartitionAssignor classes, "
        f"got {strategy!r}"
    )


def native_assign(
    name: str, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
) -> dict[str, ConsumerProtocolMemberAssignment]:
    """aiokafka's ``assign`` computed by aiokafkawire's assignor called ``name``."""
    topics = {topic for metadata in members.values() for topic in metadata.subscription}
    counts = {}
    for topic in topics:
        partitions = cluster.partitions_for_topic(topic)
        if partitions:
            counts[topic] = len(partitions)
    subscriptions = {
        member_id: MemberSubscription(member_id, list(metadata.subscription), metadata.user_data)
        for member_id, metadata in members.items()
    }
    answer = create_assignor(name).assign(counts, subscriptions)
    return {
        member_id: to_member_assignment(0, assignment.partitions, assignment.user_data)
        for member_id, assignment in answer.items()
    }


class BuiltinAssignor(AbstractPartitionAssignor):
    """An aiokafka built-in assignor: run by aiokafkawire's assignor of the same name."""

    name = ""
    native_name = ""
    version = 0

    @classmethod
    def assign(
        cls, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """Every member's assignment, as aiokafkawire's assignor of this name computes it."""
        return native_assign(cls.native_name, cluster, members)

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        """The subscription with no user data."""
        return ConsumerProtocolMemberMetadata(cls.version, list(topics), b"")

    @classmethod
    def on_assignment(cls, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Built-in assignors keep no state here (the consumer's own assignor does)."""
