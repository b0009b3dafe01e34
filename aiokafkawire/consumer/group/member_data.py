"""The bytes a classic group carries for consumers: subscriptions and assignments.

JoinGroup carries each member's ``ConsumerProtocolSubscription`` (topics, owned partitions,
assignor user data, generation, rack) as opaque metadata; SyncGroup carries the leader's
``ConsumerProtocolAssignment`` per member.  This module turns them into the assignors' types and
back, with no I/O and no membership state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiokafkawire.consumer.group.assignors import (
    MemberAssignment,
    MemberSubscription,
    PartitionAssignor,
)
from aiokafkawire.protocol.messages import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from aiokafkawire.protocol.messages import consumer_protocol_assignment as cpa
from aiokafkawire.protocol.messages import consumer_protocol_subscription as cps
from aiokafkawire.structs import TopicPartition

__all__ = [
    "SUBSCRIPTION_VERSION",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

#: The ConsumerProtocolSubscription version we send (v3: with rack id).
SUBSCRIPTION_VERSION = 3


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def encode_subscription(
    assignor: PartitionAssignor,
    topics: list[str],
    owned: Iterable[TopicPartition],
    *,
    generation: int,
    rack_id: str | None,
) -> bytes:
    """This member's JoinGroup metadata for ``assignor``."""
    owned = sorted(owned)
    subscription = ConsumerProtocolSubscription(
        topics=topics,
        user_data=assignor.subscription_user_data(topics, owned),
        owned_partitions=[
            cps.TopicPartition(topic=t, partitions=p) for t, p in _by_topic(owned).items()
        ],
        generation_id=generation,
        rack_id=rack_id or None,
    )
    return subscription.encode_versioned(SUBSCRIPTION_VERSION)


def decode_subscription(member: Any) -> tuple[MemberSubscription, int]:
    """A JoinGroup answer's member entry -> its subscription and the version it was sent in."""
    decoded, version = ConsumerProtocolSubscription.decode_versioned(member.metadata)
    owned = [
        TopicPartition(t.topic, p)
        for t in (getattr(decoded, "owned_partitions", None) or [])
        for p in t.partitions
    ]
    subscription = MemberSubscription(
        member_id=member.member_id,
        topics=list(decoded.topics),
        user_data=decoded.user_data,
        owned_partitions=owned,
        generation_id=getattr(decoded, "generation_id", -1),
        rack_id=getattr(decoded, "rack_id", None),
        group_instance_id=getattr(member, "group_instance_id", None),
    )
    return subscription, version


def encode_assignment(assignment: MemberAssignment, version: int) -> bytes:
    """The leader's SyncGroup bytes for one member, in ``version`` (the group's lowest)."""
    return ConsumerProtocolAssignment(
        assigned_partitions=[
            cpa.TopicPartition(topic=t, partitions=p)
            for t, p in _by_topic(assignment.partitions).items()
        ],
        user_data=assignment.user_data,
    ).encode_versioned(version)


def decode_assignment(raw: bytes | None) -> MemberAssignment:
    """A SyncGroup answer's assignment bytes (empty: nothing assigned)."""
    if not raw:
        return MemberAssignment([], None)
    decoded, _ = ConsumerProtocolAssignment.decode_versioned(raw)
    partitions = [
        TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions
    ]
    return MemberAssignment(partitions, decoded.user_data)
