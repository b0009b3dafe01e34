"""Consumer groups: list, describe, delete, and their committed offsets."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore, coordinator_retriable
from aiokafkawire.admin._items import by_topic, error_or_none, item_results
from aiokafkawire.protocol.messages import (
    ConsumerGroupDescribeRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from aiokafkawire.protocol.messages import offset_commit as m_offset_commit
from aiokafkawire.protocol.messages import offset_delete as m_offset_delete
from aiokafkawire.protocol.messages import offset_fetch as m_offset_fetch
from aiokafkawire.structs import TopicPartition

# OffsetCommit/OffsetFetch name topics by id from v10 (KIP-848); the admin calls name them.
_OFFSETS_BY_NAME_MAX_VERSION = 9
#: OffsetFetch carries ``require_stable`` from this version on (KIP-447).
_REQUIRE_STABLE_MIN_VERSION = 7
# OffsetFetch asks for several groups at once, in a list of groups, from v8.
_OFFSET_FETCH_GROUPS_VERSION = 8
# OffsetFetch can ask for all of a group's offsets (topics null) from v2.
_OFFSET_FETCH_ALL_VERSION = 2
#: ListGroups filters by state from v4 (KIP-518), by type from v5 (KIP-848).
_STATES_FILTER_VERSION = 4
_TYPES_FILTER_VERSION = 5


@dataclass(frozen=True)
class GroupListing:
    """A group as ListGroups reports it."""

    group_id: str
    protocol_type: str
    state: str | None = None
    group_type: str | None = None
    coordinator: int | None = None


@dataclass(frozen=True)
class MemberDescription:
    """One member of a described group.

    Classic groups (DescribeGroups): ``metadata`` and ``assignment`` are the bytes the
    protocol carries (``assigned_partitions`` decoded from a consumer-protocol assignment).
    Consumer-protocol groups (KIP-848, ConsumerGroupDescribe): the bytes are empty and the
    broker's view is in ``member_epoch``, ``assigned_partitions`` (what the member owns now),
    ``target_assignment`` (what the broker is moving it to), the subscription and
    ``member_type`` (``"consumer"``, or ``"classic"`` for a classic member in a consumer
    group; ``None`` when the broker does not say, ConsumerGroupDescribe v0).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes
    assigned_partitions: tuple[TopicPartition, ...] = ()
    member_epoch: int = -1
    rack_id: str | None = None
    subscribed_topics: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    target_assignment: tuple[TopicPartition, ...] = ()
    member_type: str | None = None


@dataclass(frozen=True)
class GroupDescription:
    """A group's state and members, or the error describing it.

    ``group_type`` is ``"classic"`` or ``"consumer"`` (KIP-848); for a consumer group
    ``protocol`` is the broker's assignor, and ``group_epoch`` / ``assignment_epoch`` are the
    group's epoch and its target assignment's (-1 for classic groups).
    """

    group_id: str
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()
    coordinator: int | None = None
    error: errors.KafkaError | None = None
    group_type: str = "classic"
    group_epoch: int = -1
    assignment_epoch: int = -1


@dataclass(frozen=True)
class GroupResult:
    """The outcome of an operation on one group."""

    group_id: str
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when the operation succeeded for this group."""
        return self.error is None


@dataclass(frozen=True)
class PartitionResult:
    """The outcome of an operation on one partition."""

    topic: str
    partition: int
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when the operation succeeded for this partition."""
        return self.error is None


@dataclass(frozen=True)
class GroupOffset:
    """A committed offset of a group."""

    offset: int
    metadata: str | None = None
    leader_epoch: int = -1
    error: errors.KafkaError | None = None


class _Listing(Protocol):
    @property
    def group_id(self) -> str: ...


L = TypeVar("L", bound=_Listing)


async def listings_of_each_broker(
    admin: AdminCore,
    request: ListGroupsRequest,
    listing_of: Callable[[Any, int], L | None],
    check_broker: Callable[[Any, int], None] | None = None,
) -> list[L]:
    """ListGroups on every broker (each knows only the groups it coordinates), merged: the first
    listing of each group, sorted by group id.  ``listing_of(group, node_id)`` is None for a
    group to leave out; ``check_broker(connection, node_id)`` may refuse a broker first."""

    async def ask(node_id: int) -> list[L]:
        if check_broker is not None:
            check_broker(await admin._cluster.connection(node_id), node_id)
        response = await admin._cluster.send(node_id, request)
        errors.raise_for_code(response.error_code, f"ListGroups on broker {node_id}")
        listings = (listing_of(group, node_id) for group in response.groups)
        return [listing for listing in listings if listing is not None]

    seen: dict[str, L] = {}
    for answer in (await admin._ask_each_broker(ask)).values():
        for listing in answer:
            seen.setdefault(listing.group_id, listing)
    return sorted(seen.values(), key=lambda g: g.group_id)


def _group_listing(group: Any, node_id: int) -> GroupListing:
    """A ListGroups answer's group as a :class:`GroupListing` (states and types from v4/v5)."""
    return GroupListing(
        group.group_id,
        group.protocol_type,
        getattr(group, "group_state", None) or None,
        getattr(group, "group_type", None) or None,
        node_id,
    )


def _assigned_partitions(protocol_type: str, assignment: bytes) -> tuple[TopicPartition, ...]:
    """The partitions in a consumer-protocol assignment (none for other protocols or bad bytes)."""
    from aiokafkawire.protocol.messages.consumer_protocol_assignment import (
        ConsumerProtocolAssignment,
    )

    if protocol_type != "consumer" or not assignment:
        return ()
    try:
        decoded, _ = ConsumerProtocolAssignment.decode_versioned(assignment)
    except errors.KafkaError:
        return ()
    return tuple(
        TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions
    )


def _group_description(group: Any, coordinator: int) -> GroupDescription:
    """A DescribeGroups answer's group as a :class:`GroupDescription`."""
    members = tuple(
        MemberDescription(
            m.member_id,
            getattr(m, "group_instance_id", None),
            m.client_id,
            m.client_host,
            bytes(m.member_metadata),
            bytes(m.member_assignment),
            _assigned_partitions(group.protocol_type, m.member_assignment),
        )
        for m in group.members
    )
    return GroupDescription(
        group.group_id,
        group.group_state,
        group.protocol_type,
        group.protocol_data,
        members,
        coordinator,
        error_or_none(group.error_code, getattr(group, "error_message", None)),
    )


#: ConsumerGroupDescribe's ``MemberType`` (v1+, KIP-1099).
_MEMBER_TYPES = {0: "classic", 1: "consumer"}


def _partitions_of(assignment: Any) -> tuple[TopicPartition, ...]:
    """A ConsumerGroupDescribe ``Assignment`` as partitions, sorted."""
    pairs = (
        TopicPartition(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions
    )
    return tuple(sorted(pairs))


def _consumer_group_description(group: Any, coordinator: int) -> GroupDescription:
    """A ConsumerGroupDescribe answer's group (a KIP-848 group) as a :class:`GroupDescription`."""
    error = error_or_none(group.error_code, group.error_message)
    if error is not None:
        return GroupDescription(group.group_id, coordinator=coordinator, error=error)
    members = tuple(
        MemberDescription(
            m.member_id,
            m.instance_id,
            m.client_id,
            m.client_host,
            b"",
            b"",
            _partitions_of(m.assignment),
            member_epoch=m.member_epoch,
            rack_id=m.rack_id,
            subscribed_topics=tuple(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            target_assignment=_partitions_of(m.target_assignment),
            member_type=_MEMBER_TYPES.get(getattr(m, "member_type", -1)),
        )
        for m in group.members
    )
    return GroupDescription(
        group.group_id,
        group.group_state,
        "consumer",
        group.assignor_name,
        members,
        coordinator,
        group_type="consumer",
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
    )


def _offset_fetch_request(
    group_id: str, wanted: list[TopicPartition] | None, version: int
) -> OffsetFetchRequest:
    """OffsetFetch for ``wanted`` (None: every partition the group committed) in ``version``."""
    partitions = by_topic((tp.topic, tp.partition) for tp in wanted or [])
    if version >= _OFFSET_FETCH_GROUPS_VERSION:
        topics = [
            m_offset_fetch.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
            for t, ps in partitions.items()
        ]
        return OffsetFetchRequest(
            groups=[
                m_offset_fetch.OffsetFetchRequestGroup(
                    group_id=group_id, topics=None if wanted is None else topics
                )
            ]
        )
    if wanted is None and version < _OFFSET_FETCH_ALL_VERSION:
        raise errors.UnsupportedVersionForBrokerError(
            "listing all offsets of a group needs OffsetFetch v2+"
        )
    return OffsetFetchRequest(
        group_id=group_id,
        topics=None
        if wanted is None
        else [
            m_offset_fetch.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
            for t, ps in partitions.items()
        ],
    )


class GroupCalls(AdminCore):
    """Admin calls about consumer groups and their offsets."""

    async def list_groups(
        self, *, types: Iterable[str] | None = None, states: Iterable[str] | None = None
    ) -> list[GroupListing]:
        """Every group in the cluster: asks each broker, since each knows only its own groups.

        ``types`` (``"classic"``, ``"consumer"``, ``"share"``, ``"streams"``; ListGroups v5+,
        KIP-848) and ``states`` (``"Stable"``, ``"Empty"``, ...; v4+, KIP-518) are filters the
        brokers apply (case-insensitively); a broker too old for one raises
        :class:`~aiokafkawire.errors.UnsupportedVersionForBrokerError`.
        """
        self._check()
        request = ListGroupsRequest()
        needed = 0
        if states is not None:
            request.states_filter = sorted(set(states))
            needed = _STATES_FILTER_VERSION
        if types is not None:
            request.types_filter = sorted(set(types))
            needed = _TYPES_FILTER_VERSION

        def check_broker(connection: Any, node_id: int) -> None:
            if not connection.versions.supports(ListGroupsRequest.API_KEY, needed):
                raise errors.UnsupportedVersionForBrokerError(
                    f"broker {node_id} cannot filter groups by "
                    f"{'type' if types is not None else 'state'} (ListGroups v{needed}+ needed)"
                )

        return await listings_of_each_broker(
            self, request, _group_listing, check_broker if needed else None
        )

    async def describe_groups(
        self, group_ids: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, GroupDescription]:
        """State, protocol and members of groups, as the Java client describes consumer groups.

        A consumer-protocol group (KIP-848) is described with ConsumerGroupDescribe (member
        epochs, assignments and target assignments); a classic group with DescribeGroups at
        the newest version both sides speak (consumer-protocol assignments decoded).  An unknown
        group is :class:`~aiokafkawire.errors.GroupIdNotFoundError` from Kafka 4.0 on
        (DescribeGroups v6, KIP-1043); older brokers describe it in the ``"Dead"`` state.
        """
        self._check()
        results = {group_id: await self._describe_group(group_id) for group_id in group_ids}
        return item_results("describe_groups", results, raise_on_error)

    async def _describe_group(self, group_id: str) -> GroupDescription:
        """ConsumerGroupDescribe where the coordinator has it; DescribeGroups for the groups it
        does not know as consumer-protocol groups (classic ones, or none), and elsewhere (as
        Java's ``DescribeConsumerGroupsHandler``)."""
        if await self._coordinator_supports(group_id, ConsumerGroupDescribeRequest.API_KEY):
            response, node = await self._coordinator_call(
                group_id, ConsumerGroupDescribeRequest(group_ids=[group_id])
            )
            (group,) = response.groups
            # Tansu 0.6 answers every group without error, epoch -1 (never a real KIP-848
            # group's): that is no consumer-protocol group either.
            if group.error_code not in errors.NOT_A_CONSUMER_GROUP_CODES and not (
                group.error_code == 0 and group.group_epoch < 0
            ):
                return _consumer_group_description(group, node)
        response, node = await self._coordinator_call(
            group_id, DescribeGroupsRequest(groups=[group_id])
        )
        (group,) = response.groups
        return _group_description(group, node)

    async def _coordinator_supports(self, group_id: str, api_key: int) -> bool:
        """Whether the coordinator of ``group_id`` speaks ``api_key`` (the lookup retried as
        a coordinator call is)."""

        async def attempt() -> bool:
            connection = await self._cluster.coordinator_connection(group_id)
            return connection.versions.supports(api_key)

        def forget_coordinator(_: BaseException) -> None:
            self._cluster.invalidate_coordinator(group_id)

        return await self._retried(
            attempt, coordinator_retriable, f"group {group_id!r}", forget_coordinator
        )

    async def delete_groups(
        self, group_ids: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, GroupResult]:
        """Delete empty groups; a non-empty group reports NonEmptyGroupError."""
        self._check()
        results = await self._ask_each_coordinator(
            group_ids,
            lambda group_id: DeleteGroupsRequest(groups_names=[group_id]),
            lambda response, _: (
                (r.group_id, GroupResult(r.group_id, error_or_none(r.error_code)))
                for r in response.results
            ),
        )
        return item_results("delete_groups", results, raise_on_error)

    async def _offsets_version(self, group_id: str, api_key: int) -> int:
        """The version of OffsetFetch/OffsetCommit to use, naming topics (v10 names them by id
        only, KIP-848)."""
        try:
            connection = await self._cluster.coordinator_connection(group_id)
        except errors.KafkaConnectionError:
            # The cached coordinator is gone (and now forgotten): ask who took over, once.
            connection = await self._cluster.coordinator_connection(group_id)
        return connection.versions.version_for(api_key, max_version=_OFFSETS_BY_NAME_MAX_VERSION)

    async def list_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        raise_on_error: bool = True,
        require_stable: bool = False,
    ) -> dict[TopicPartition, GroupOffset]:
        """A group's committed offsets (all of them when ``partitions`` is None).

        ``require_stable`` (OffsetFetch v7+, as Java's ``ListConsumerGroupOffsetsOptions``)
        reads what the coordinator has written and replicated, as consumers do: a partition
        whose offsets a transaction has not yet decided reports ``UnstableOffsetCommitError``.
        Without it, a coordinator that has just taken over may answer offsets older than its
        predecessor acknowledged (Kafka 4's coordinator reads at its own high watermark).
        """
        self._check()
        wanted = None if partitions is None else list(partitions)
        version = await self._offsets_version(group_id, OffsetFetchRequest.API_KEY)
        if require_stable and version < _REQUIRE_STABLE_MIN_VERSION:
            raise errors.UnsupportedVersionForBrokerError(
                f"require_stable needs OffsetFetch v{_REQUIRE_STABLE_MIN_VERSION}+"
            )
        request = _offset_fetch_request(group_id, wanted, version)
        if require_stable:
            request.require_stable = True
        response, _ = await self._coordinator_call(group_id, request, version)
        answer = response.groups[0] if version >= _OFFSET_FETCH_GROUPS_VERSION else response
        errors.raise_for_code(
            getattr(answer, "error_code", 0), f"OffsetFetch for group {group_id!r}"
        )
        result = {
            TopicPartition(topic.name, p.partition_index): GroupOffset(
                p.committed_offset,
                p.metadata,
                getattr(p, "committed_leader_epoch", -1),
                error_or_none(p.error_code),
            )
            for topic in answer.topics
            for p in topic.partitions
        }
        return item_results("list_group_offsets", result, raise_on_error)

    async def alter_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int | GroupOffset],
        *,
        raise_on_error: bool = True,
    ) -> dict[TopicPartition, PartitionResult]:
        """Set a (inactive) group's committed offsets."""
        self._check()
        partitions = by_topic(
            (tp.topic, _committed_partition(tp, value)) for tp, value in offsets.items()
        )
        request = OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                m_offset_commit.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in partitions.items()
            ],
        )
        version = await self._offsets_version(group_id, OffsetCommitRequest.API_KEY)
        response, _ = await self._coordinator_call(group_id, request, version)
        results = {
            TopicPartition(t.name, p.partition_index): PartitionResult(
                t.name, p.partition_index, error_or_none(p.error_code)
            )
            for t in response.topics
            for p in t.partitions
        }
        return item_results("alter_group_offsets", results, raise_on_error)

    async def delete_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition], *, raise_on_error: bool = True
    ) -> dict[TopicPartition, PartitionResult]:
        """Delete a group's committed offsets for partitions it no longer consumes."""
        self._check()
        request = OffsetDeleteRequest(
            group_id=group_id,
            topics=[
                m_offset_delete.OffsetDeleteRequestTopic(
                    name=t,
                    partitions=[
                        m_offset_delete.OffsetDeleteRequestPartition(partition_index=p) for p in ps
                    ],
                )
                for t, ps in by_topic((tp.topic, tp.partition) for tp in partitions).items()
            ],
        )
        response, _ = await self._coordinator_call(group_id, request)
        group_error = error_or_none(response.error_code)
        results = {
            TopicPartition(t.name, p.partition_index): PartitionResult(
                t.name, p.partition_index, group_error or error_or_none(p.error_code)
            )
            for t in response.topics
            for p in t.partitions
        }
        return item_results("delete_group_offsets", results, raise_on_error)


def _committed_partition(
    tp: TopicPartition, value: int | GroupOffset
) -> m_offset_commit.OffsetCommitRequestPartition:
    """One partition's offset (and its leader epoch and metadata) as OffsetCommit carries it."""
    offset = value if isinstance(value, GroupOffset) else GroupOffset(int(value))
    return m_offset_commit.OffsetCommitRequestPartition(
        partition_index=tp.partition,
        committed_offset=offset.offset,
        committed_leader_epoch=offset.leader_epoch,
        committed_metadata=offset.metadata,
    )
