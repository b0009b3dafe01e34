"""Share groups (KIP-932): list, describe, and their start offsets.

A share group's "offset" is its share-partition start offset (SPSO): the first offset not yet
delivered and acknowledged for good.  Altering or deleting it needs an empty group.  Deleting a
share group is the ordinary ``Admin.delete_groups``; its ``share.*`` configs are
``ResourceType.GROUP`` resources of ``describe_configs``/``alter_configs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore
from aiokafkawire.admin._items import by_topic, item_results, itself
from aiokafkawire.admin.groups import listings_of_each_broker
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

# ListGroups filters by group type ("share") from v5.
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
    """An item's error; UNSUPPORTED_VERSION from a coordinator means no share groups there."""
    if not code:
        return None
    if code == errors.UnsupportedVersionError.code:
        return share_groups_unsupported("the group coordinator", message or "")
    return errors.error_for_code(code)(message or "")


def _check_types_filter(connection: Any, node_id: int) -> None:
    """A broker whose ListGroups cannot filter by type serves no share groups."""
    if not connection.versions.supports(ListGroupsRequest.API_KEY, _TYPES_FILTER_VERSION):
        raise share_groups_unsupported(
            f"broker {node_id}", "its ListGroups cannot filter by group type"
        )


def _share_listing(group: Any, node_id: int) -> ShareGroupListing | None:
    """A ListGroups answer's share group as a :class:`ShareGroupListing` (others: None)."""
    if group.group_type != "share":
        return None
    return ShareGroupListing(group.group_id, group.group_state or None, node_id)


def _share_group_description(group: Any, coordinator: int) -> ShareGroupDescription:
    """A ShareGroupDescribe answer's group as a :class:`ShareGroupDescription`."""
    error = _error(group.error_code, group.error_message)
    if error is not None:
        return ShareGroupDescription(group.group_id, coordinator=coordinator, error=error)
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
    return ShareGroupDescription(
        group_id=group.group_id,
        state=group.group_state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor=group.assignor_name,
        members=members,
        coordinator=coordinator,
    )


def _offsets_of(response: Any) -> dict[TopicPartition, ShareGroupOffset]:
    """A DescribeShareGroupOffsets answer's start offsets; a group error is raised."""
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


class ShareGroupCalls(AdminCore):
    """Admin calls about share groups."""

    async def list_share_groups(self) -> list[ShareGroupListing]:
        """Every share group of the cluster (ListGroups filtered to the "share" type)."""
        self._check()
        return await listings_of_each_broker(
            self, ListGroupsRequest(types_filter=["share"]), _share_listing, _check_types_filter
        )

    async def describe_share_groups(
        self, group_ids: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, ShareGroupDescription]:
        """State, epochs, assignor and members (with their assignments) of share groups."""
        self._check()
        results = await self._ask_each_coordinator(
            group_ids,
            lambda group_id: ShareGroupDescribeRequest(group_ids=[group_id]),
            lambda response, node: (
                (group.group_id, _share_group_description(group, node)) for group in response.groups
            ),
        )
        return item_results("describe_share_groups", results, raise_on_error)

    async def list_share_group_offsets(
        self,
        group_id: str,
        topics: Iterable[str] | None = None,
        *,
        raise_on_error: bool = True,
    ) -> dict[TopicPartition, ShareGroupOffset]:
        """A share group's start offsets per partition (of ``topics``, or all it has).

        Named topics are asked for with all their partitions.
        """
        self._check()
        requested = None
        if topics is not None:
            requested = [
                m_describe.DescribeShareGroupOffsetsRequestTopic(
                    topic_name=topic,
                    partitions=(await self._cluster.wait_for_topic(topic)).partition_ids,
                )
                for topic in sorted(set(topics))
            ]
        request = DescribeShareGroupOffsetsRequest(
            groups=[
                m_describe.DescribeShareGroupOffsetsRequestGroup(
                    group_id=group_id, topics=requested
                )
            ]
        )
        response, _ = await self._coordinator_call(group_id, request)
        return item_results("list_share_group_offsets", _offsets_of(response), raise_on_error)

    async def alter_share_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int],
        *,
        raise_on_error: bool = True,
    ) -> dict[TopicPartition, errors.KafkaError | None]:
        """Set a share group's start offsets (the group must have no members)."""
        self._check()
        request = AlterShareGroupOffsetsRequest(
            group_id=group_id,
            topics=[
                m_alter.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=parts)
                for topic, parts in by_topic(
                    (
                        tp.topic,
                        m_alter.AlterShareGroupOffsetsRequestPartition(
                            partition_index=tp.partition, start_offset=int(offset)
                        ),
                    )
                    for tp, offset in sorted(offsets.items())
                ).items()
            ],
        )
        response, _ = await self._coordinator_call(group_id, request)
        top = _error(response.error_code, response.error_message)
        results: dict[TopicPartition, errors.KafkaError | None] = dict.fromkeys(offsets, top)
        if top is None:
            for topic in response.responses:
                for part in topic.partitions:
                    results[TopicPartition(topic.topic_name, part.partition_index)] = _error(
                        part.error_code, part.error_message
                    )
        return item_results("alter_share_group_offsets", results, raise_on_error, itself)

    async def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, errors.KafkaError | None]:
        """Forget a share group's state for whole topics (the group must have no members)."""
        self._check()
        names = sorted(set(topics))
        request = DeleteShareGroupOffsetsRequest(
            group_id=group_id,
            topics=[m_delete.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in names],
        )
        response, _ = await self._coordinator_call(group_id, request)
        top = _error(response.error_code, response.error_message)
        results: dict[str, errors.KafkaError | None] = dict.fromkeys(names, top)
        if top is None:
            for topic in response.responses:
                results[topic.topic_name] = _error(topic.error_code, topic.error_message)
        return item_results("delete_share_group_offsets", results, raise_on_error, itself)
