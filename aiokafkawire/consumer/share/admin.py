"""Share-group administration (KIP-932): list, describe, and the start offsets of share groups.

The :class:`~aiokafkawire.admin.Admin` methods ``list_share_groups``, ``describe_share_groups``,
``list_share_group_offsets``, ``alter_share_group_offsets`` and ``delete_share_group_offsets``
are implemented here.  A share group's "offset" is its share-partition start offset (SPSO): the
first offset not yet delivered and acknowledged for good.  Altering or deleting it needs an
empty group.  Deleting a share group is the ordinary ``Admin.delete_groups``; its ``share.*``
configs are ``ResourceType.GROUP`` resources of ``describe_configs``/``alter_configs``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.share.membership import share_groups_unsupported
from aiokafkawire.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ListGroupsRequest,
    ShareGroupDescribeRequest,
)
from aiokafkawire.protocol.messages import alter_share_group_offsets as m_alter
from aiokafkawire.protocol.messages import delete_share_group_offsets as m_delete
from aiokafkawire.protocol.messages import describe_share_group_offsets as m_describe
from aiokafkawire.structs import TopicPartition

__all__ = [
    "ShareGroupDescription",
    "ShareGroupListing",
    "ShareGroupOffset",
    "ShareMemberDescription",
]

CoordinatorCall = Callable[[str, Any], Awaitable[tuple[Any, int]]]
_TYPES_FILTER_VERSION = 5


@dataclass(frozen=True)
class ShareGroupListing:
    """A share group as ListGroups reports it."""

    group_id: str
    state: str | None
    coordinator: int


@dataclass(frozen=True)
class ShareMemberDescription:
    """One member of a share group and the partitions assigned to it."""

    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topics: tuple[str, ...]
    assignment: frozenset[TopicPartition]


@dataclass(frozen=True)
class ShareGroupDescription:
    """A share group's state, epochs, assignor and members, or the error describing it."""

    group_id: str
    state: str = ""
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor: str = ""
    members: tuple[ShareMemberDescription, ...] = ()
    coordinator: int | None = None
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class ShareGroupOffset:
    """A share-partition's start offset, its leader epoch and lag (-1 where unknown)."""

    start_offset: int
    leader_epoch: int = -1
    lag: int = -1
    error: errors.KafkaError | None = None


def _error(code: int, message: str | None = None) -> errors.KafkaError | None:
    if not code:
        return None
    if code == errors.UnsupportedVersionError.code:
        return share_groups_unsupported("the group coordinator", message or "")
    return errors.error_for_code(code)(message or "")


async def list_share_groups(cluster: Cluster) -> list[ShareGroupListing]:
    """Every share group: asks each broker (ListGroups v5+ with the type filter "share")."""
    metadata = await cluster.refresh_metadata()

    async def ask(node_id: int) -> list[ShareGroupListing]:
        connection = await cluster.connection(node_id)
        if not connection.versions.supports(ListGroupsRequest.API_KEY, _TYPES_FILTER_VERSION):
            raise share_groups_unsupported(
                f"broker {node_id}", "its ListGroups cannot filter by group type"
            )
        request = ListGroupsRequest(types_filter=["share"])
        response = await connection.send(request)
        errors.raise_for_code(response.error_code, f"ListGroups on broker {node_id}")
        return [
            ShareGroupListing(g.group_id, g.group_state or None, node_id)
            for g in response.groups
            if g.group_type == "share"
        ]

    answers = await asyncio.gather(*(ask(node) for node in metadata.brokers))
    seen: dict[str, ShareGroupListing] = {}
    for listing in (g for answer in answers for g in answer):
        seen.setdefault(listing.group_id, listing)
    return sorted(seen.values(), key=lambda g: g.group_id)


async def describe_share_groups(
    call: CoordinatorCall, group_ids: Iterable[str]
) -> dict[str, ShareGroupDescription]:
    """ShareGroupDescribe, one coordinator request per group."""
    results: dict[str, ShareGroupDescription] = {}
    for group_id in group_ids:
        response, node = await call(group_id, ShareGroupDescribeRequest(group_ids=[group_id]))
        for group in response.groups:
            error = _error(group.error_code, group.error_message)
            if error is not None:
                results[group.group_id] = ShareGroupDescription(
                    group.group_id, coordinator=node, error=error
                )
                continue
            members = tuple(
                ShareMemberDescription(
                    member_id=m.member_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rack_id=m.rack_id,
                    subscribed_topics=tuple(m.subscribed_topic_names),
                    assignment=frozenset(
                        TopicPartition(t.topic_name, p)
                        for t in m.assignment.topic_partitions
                        for p in t.partitions
                    ),
                )
                for m in group.members
            )
            results[group.group_id] = ShareGroupDescription(
                group_id=group.group_id,
                state=group.group_state,
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor=group.assignor_name,
                members=members,
                coordinator=node,
            )
    return results


async def list_share_group_offsets(
    call: CoordinatorCall,
    cluster: Cluster,
    group_id: str,
    topics: Iterable[str] | None = None,
) -> dict[TopicPartition, ShareGroupOffset]:
    """DescribeShareGroupOffsets: the start offset of each share-partition of the group.

    ``topics`` None asks for every topic the group has state for; named topics are asked for
    with all their partitions.
    """
    requested = None
    if topics is not None:
        requested = [
            m_describe.DescribeShareGroupOffsetsRequestTopic(
                topic_name=topic, partitions=(await cluster.wait_for_topic(topic)).partition_ids
            )
            for topic in sorted(set(topics))
        ]
    request = DescribeShareGroupOffsetsRequest(
        groups=[
            m_describe.DescribeShareGroupOffsetsRequestGroup(group_id=group_id, topics=requested)
        ]
    )
    response, _ = await call(group_id, request)
    out: dict[TopicPartition, ShareGroupOffset] = {}
    for group in response.groups:
        group_error = _error(group.error_code, group.error_message)
        if group_error is not None:
            raise group_error
        for topic in group.topics:
            for part in topic.partitions:
                out[TopicPartition(topic.topic_name, part.partition_index)] = ShareGroupOffset(
                    start_offset=part.start_offset,
                    leader_epoch=part.leader_epoch,
                    lag=getattr(part, "lag", -1),
                    error=_error(part.error_code, part.error_message),
                )
    return out


async def alter_share_group_offsets(
    call: CoordinatorCall, group_id: str, offsets: Mapping[TopicPartition, int]
) -> dict[TopicPartition, errors.KafkaError | None]:
    """AlterShareGroupOffsets: set start offsets (the group must have no members)."""
    by_topic: dict[str, list[m_alter.AlterShareGroupOffsetsRequestPartition]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append(
            m_alter.AlterShareGroupOffsetsRequestPartition(
                partition_index=tp.partition, start_offset=int(offset)
            )
        )
    request = AlterShareGroupOffsetsRequest(
        group_id=group_id,
        topics=[
            m_alter.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=parts)
            for topic, parts in by_topic.items()
        ],
    )
    response, _ = await call(group_id, request)
    top = _error(response.error_code, response.error_message)
    results: dict[TopicPartition, errors.KafkaError | None] = dict.fromkeys(offsets, top)
    if top is None:
        for topic in response.responses:
            for part in topic.partitions:
                results[TopicPartition(topic.topic_name, part.partition_index)] = _error(
                    part.error_code, part.error_message
                )
    return results


async def delete_share_group_offsets(
    call: CoordinatorCall, group_id: str, topics: Iterable[str]
) -> dict[str, errors.KafkaError | None]:
    """DeleteShareGroupOffsets: forget the group's state for whole topics (empty group)."""
    names = sorted(set(topics))
    request = DeleteShareGroupOffsetsRequest(
        group_id=group_id,
        topics=[m_delete.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in names],
    )
    response, _ = await call(group_id, request)
    top = _error(response.error_code, response.error_message)
    results: dict[str, errors.KafkaError | None] = dict.fromkeys(names, top)
    if top is None:
        for topic in response.responses:
            results[topic.topic_name] = _error(topic.error_code, topic.error_message)
    return results
