"""The admin client: topics, partitions, configs, groups, offsets and records.

Every call returns typed results; an error that concerns one item (a topic that already exists, a
group that is not empty) is reported on that item's result (``result.error``) instead of failing the
whole call.  Errors that concern the whole call (no broker reachable, the client is closed, the
request timed out) are raised.
"""

from __future__ import annotations

import asyncio
import enum
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire.client_config import split_common_options
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.cluster.metadata import BrokerInfo, TopicInfo
from aiokafkawire.consumer.share import admin as _share_admin
from aiokafkawire.consumer.share.admin import (
    ShareGroupDescription,
    ShareGroupListing,
    ShareGroupOffset,
)
from aiokafkawire.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from aiokafkawire.protocol.messages import create_partitions as m_create_partitions
from aiokafkawire.protocol.messages import create_topics as m_create_topics
from aiokafkawire.protocol.messages import delete_records as m_delete_records
from aiokafkawire.protocol.messages import delete_topics as m_delete_topics
from aiokafkawire.protocol.messages import describe_configs as m_describe_configs
from aiokafkawire.protocol.messages import incremental_alter_configs as m_alter_configs
from aiokafkawire.protocol.messages import list_offsets as m_list_offsets
from aiokafkawire.protocol.messages import offset_commit as m_offset_commit
from aiokafkawire.protocol.messages import offset_delete as m_offset_delete
from aiokafkawire.protocol.messages import offset_fetch as m_offset_fetch
from aiokafkawire.structs import TopicPartition

_RETRY_LIMIT = 5


def _error(code: int, message: str | None = None) -> errors.BrokerResponseError | None:
    """The exception instance for an item's error code, or None for success."""
    if not code:
        return None
    return errors.error_for_code(code)(message or "")


# ------------------------------------------------------------------------------------- types


@dataclass(frozen=True)
class NewTopic:
    """A topic to create.  -1 for partitions/replication means the broker's default (v4+)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignments: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicResult:
    """The outcome of creating or deleting one topic."""

    name: str
    error: errors.KafkaError | None = None
    topic_id: Any = None
    num_partitions: int = -1
    replication_factor: int = -1

    @property
    def ok(self) -> bool:
        """True when the operation succeeded for this topic."""
        return self.error is None


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
    """One member of a described group (assignment/metadata bytes as the protocol carries them)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes
    assigned_partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class GroupDescription:
    """A group's state and members, or the error describing it."""

    group_id: str
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()
    coordinator: int | None = None
    error: errors.KafkaError | None = None


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
class OffsetSpec:
    """Which offset ``list_offsets`` looks up: earliest, latest, max timestamp, or by timestamp."""

    timestamp: int

    EARLIEST = -2
    LATEST = -1
    MAX_TIMESTAMP = -3

    @classmethod
    def earliest(cls) -> OffsetSpec:
        """The log start offset."""
        return cls(cls.EARLIEST)

    @classmethod
    def latest(cls) -> OffsetSpec:
        """The high watermark (next offset to be written)."""
        return cls(cls.LATEST)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        """The offset of the record with the largest timestamp (ListOffsets v7+)."""
        return cls(cls.MAX_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        """The first offset whose timestamp is at or after ``timestamp_ms``."""
        if timestamp_ms < 0:
            raise errors.ConfigError("timestamp must be >= 0")
        return cls(timestamp_ms)


@dataclass(frozen=True)
class ListedOffset:
    """An offset found by ``list_offsets`` (``offset`` -1 when none matches)."""

    offset: int
    timestamp: int = -1
    leader_epoch: int = -1
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class GroupOffset:
    """A committed offset of a group."""

    offset: int
    metadata: str | None = None
    leader_epoch: int = -1
    error: errors.KafkaError | None = None


class ResourceType(enum.IntEnum):
    """Config resource types."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    #: Group configs (KIP-848/KIP-932: ``share.record.lock.duration.ms``,
    #: ``share.auto.offset.reset``, ``share.delivery.count.limit``, ...); Kafka 4.0+.
    GROUP = 32


class AlterOp(enum.IntEnum):
    """Incremental config operations."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class ConfigResource:
    """A topic or broker whose configuration is described or altered."""

    type: ResourceType
    name: str


def _config_target(resource: ConfigResource) -> int | None:
    """The broker a config request about ``resource`` must go to (None: any broker)."""
    if resource.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
        return int(resource.name)
    return None


@dataclass(frozen=True)
class ConfigEntry:
    """One configuration value."""

    name: str
    value: str | None
    read_only: bool = False
    is_default: bool = False
    is_sensitive: bool = False
    source: int = -1


@dataclass(frozen=True)
class ConfigResult:
    """The configuration of one resource, or the error describing it."""

    resource: ConfigResource
    entries: Mapping[str, ConfigEntry] = field(default_factory=dict)
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class ClusterDescription:
    """The cluster's id, controller and brokers."""

    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerInfo, ...]


# ------------------------------------------------------------------------------------- client


class Admin:
    """Administrative operations on a Kafka cluster.

    ``async with Admin(bootstrap_servers="host:9092") as admin: await admin.create_topics(...)``.
    Accepts the common client options (``client_id``, ``request_timeout_ms``, security, ...).
    """

    def __init__(self, **options: Any) -> None:
        common, rest = split_common_options(dict(options))
        if rest:
            raise errors.ConfigError(f"unknown Admin options: {sorted(rest)}")
        self._config = common
        self._cluster: Cluster = common.build_cluster()
        self._started = False
        self._closed = False

    def __repr__(self) -> str:
        return f"<Admin {self._config.bootstrap_servers!r}>"

    @property
    def cluster(self) -> Cluster:
        """The underlying cluster manager."""
        return self._cluster

    async def start(self) -> None:
        """Connect and fetch metadata."""
        if self._closed:
            raise errors.ClientClosedError("the admin client is closed")
        if not self._started:
            self._cluster.want_all_topics()
            await self._cluster.start()
            self._started = True

    async def close(self) -> None:
        """Close every connection."""
        self._closed = True
        await self._cluster.close()

    async def __aenter__(self) -> Admin:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _check(self) -> None:
        if self._closed:
            raise errors.ClientClosedError("the admin client is closed")
        if not self._started:
            raise errors.IllegalStateError("call start() (or use 'async with') first")

    @property
    def _timeout_ms(self) -> int:
        return self._config.request_timeout_ms

    async def _send_controller(self, request: Any, version: int | None = None) -> Any:
        """Send to the controller, following it when it moves (NOT_CONTROLLER)."""
        for _ in range(_RETRY_LIMIT):
            controller = self._cluster.metadata.controller_id
            if controller < 0 or controller not in self._cluster.metadata.brokers:
                connection = await self._cluster.any_connection()
                return await connection.send(request, version)
            try:
                return await self._cluster.send(controller, request, version)
            except errors.KafkaConnectionError:
                await self._cluster.refresh_metadata()
        raise errors.KafkaTimeoutError("the controller could not be reached")

    # ---------------------------------------------------------------- topics

    async def create_topics(
        self,
        topics: Iterable[NewTopic | str],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[str, TopicResult]:
        """Create topics; per-topic errors (e.g. TopicAlreadyExistsError) are in the results."""
        self._check()
        wanted = [t if isinstance(t, NewTopic) else NewTopic(t) for t in topics]
        connection = await self._cluster.any_connection()
        version = connection.versions.version_for(CreateTopicsRequest.API_KEY)
        items = []
        for topic in wanted:
            partitions, replication = topic.num_partitions, topic.replication_factor
            if version < 4 and topic.replica_assignments is None:
                # Before v4 the broker has no defaults to fill in.
                partitions = 1 if partitions < 0 else partitions
                replication = 1 if replication < 0 else replication
            items.append(
                m_create_topics.CreatableTopic(
                    name=topic.name,
                    num_partitions=-1 if topic.replica_assignments else partitions,
                    replication_factor=-1 if topic.replica_assignments else replication,
                    assignments=[
                        m_create_topics.CreatableReplicaAssignment(
                            partition_index=p, broker_ids=list(brokers)
                        )
                        for p, brokers in (topic.replica_assignments or {}).items()
                    ],
                    configs=[
                        m_create_topics.CreatableTopicConfig(name=k, value=v)
                        for k, v in topic.configs.items()
                    ],
                )
            )
        request = CreateTopicsRequest(topics=items, timeout_ms=timeout_ms or self._timeout_ms)
        if version >= 1:
            request.validate_only = validate_only
        elif validate_only:
            raise errors.UnsupportedVersionForBrokerError("validate_only needs CreateTopics v1+")
        response = await self._send_controller(request, version)
        results = {
            t.name: TopicResult(
                name=t.name,
                error=_error(t.error_code, getattr(t, "error_message", None)),
                topic_id=getattr(t, "topic_id", None),
                num_partitions=getattr(t, "num_partitions", -1),
                replication_factor=getattr(t, "replication_factor", -1),
            )
            for t in response.topics
        }
        if not validate_only and any(r.ok for r in results.values()):
            await self._cluster.refresh_metadata()
        return results

    async def delete_topics(
        self, topics: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, TopicResult]:
        """Delete topics by name; per-topic errors are in the results."""
        self._check()
        names = list(topics)
        connection = await self._cluster.any_connection()
        version = connection.versions.version_for(DeleteTopicsRequest.API_KEY)
        request = DeleteTopicsRequest(timeout_ms=timeout_ms or self._timeout_ms)
        if version >= 6:
            request.topics = [m_delete_topics.DeleteTopicState(name=n) for n in names]
        else:
            request.topic_names = names
        response = await self._send_controller(request, version)
        results = {
            r.name: TopicResult(
                name=r.name, error=_error(r.error_code, getattr(r, "error_message", None))
            )
            for r in response.responses
            if r.name is not None
        }
        await self._cluster.refresh_metadata()
        return results

    async def create_partitions(
        self,
        new_totals: Mapping[str, int],
        *,
        assignments: Mapping[str, Sequence[Sequence[int]]] | None = None,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[str, TopicResult]:
        """Grow topics to the given total partition counts."""
        self._check()
        assignments = assignments or {}
        request = CreatePartitionsRequest(
            topics=[
                m_create_partitions.CreatePartitionsTopic(
                    name=name,
                    count=count,
                    assignments=[
                        m_create_partitions.CreatePartitionsAssignment(broker_ids=list(b))
                        for b in assignments[name]
                    ]
                    if name in assignments
                    else None,
                )
                for name, count in new_totals.items()
            ],
            timeout_ms=timeout_ms or self._timeout_ms,
            validate_only=validate_only,
        )
        response = await self._send_controller(request)
        results = {
            r.name: TopicResult(name=r.name, error=_error(r.error_code, r.error_message))
            for r in response.results
        }
        await self._cluster.refresh_metadata()
        return results

    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """Names of all topics in the cluster, sorted."""
        self._check()
        metadata = await self._cluster.refresh_metadata()
        return sorted(
            name
            for name, info in metadata.topics.items()
            if info.error_code == 0 and (include_internal or not info.is_internal)
        )

    async def describe_topics(self, topics: Iterable[str] | None = None) -> dict[str, TopicInfo]:
        """Partitions, leaders and replicas of the named topics (all topics when None).

        An unknown topic maps to a ``TopicInfo`` with its ``error_code`` set.
        """
        self._check()
        metadata = await self._cluster.refresh_metadata()
        names = list(metadata.topics) if topics is None else list(topics)
        missing = [n for n in names if n not in metadata.topics]
        if missing:
            metadata = await self._cluster.refresh_metadata(missing)
        result: dict[str, TopicInfo] = {}
        for name in names:
            info = metadata.topics.get(name)
            if info is None:
                info = TopicInfo(name, None, False, {}, errors.UnknownTopicOrPartitionError.code)
            result[name] = info
        return result

    async def describe_cluster(self) -> ClusterDescription:
        """Cluster id, controller and brokers (DescribeCluster where supported, else Metadata)."""
        self._check()
        connection = await self._cluster.any_connection()
        if connection.versions.supports(DescribeClusterRequest.API_KEY):
            response = await connection.send(DescribeClusterRequest())
            errors.raise_for_code(response.error_code, response.error_message)
            brokers = tuple(
                BrokerInfo(b.broker_id, b.host, b.port, b.rack) for b in response.brokers
            )
            return ClusterDescription(response.cluster_id, response.controller_id, brokers)
        metadata = await self._cluster.refresh_metadata()
        return ClusterDescription(
            metadata.cluster_id, metadata.controller_id, tuple(metadata.brokers.values())
        )

    # ---------------------------------------------------------------- configs

    async def describe_configs(
        self, resources: Iterable[ConfigResource], *, include_synonyms: bool = False
    ) -> dict[ConfigResource, ConfigResult]:
        """The configuration of topics and brokers (broker resources go to that broker)."""
        self._check()
        by_target: dict[int | None, list[ConfigResource]] = defaultdict(list)
        for resource in resources:
            target = _config_target(resource)
            by_target[target].append(resource)
        results: dict[ConfigResource, ConfigResult] = {}
        for target, group in by_target.items():
            request = DescribeConfigsRequest(
                resources=[
                    m_describe_configs.DescribeConfigsResource(
                        resource_type=int(r.type), resource_name=r.name, configuration_keys=None
                    )
                    for r in group
                ],
            )
            request.include_synonyms = include_synonyms
            if target is None:
                response = await (await self._cluster.any_connection()).send(request)
            else:
                response = await self._cluster.send(target, request)
            for item in response.results:
                resource = ConfigResource(ResourceType(item.resource_type), item.resource_name)
                entries = {
                    c.name: ConfigEntry(
                        name=c.name,
                        value=c.value,
                        read_only=c.read_only,
                        is_default=bool(getattr(c, "is_default", False))
                        or getattr(c, "config_source", -1) == 5,
                        is_sensitive=c.is_sensitive,
                        source=getattr(c, "config_source", -1),
                    )
                    for c in item.configs
                }
                results[resource] = ConfigResult(
                    resource, entries, _error(item.error_code, item.error_message)
                )
        return results

    async def alter_configs(
        self,
        changes: Mapping[ConfigResource, Mapping[str, str | tuple[AlterOp, str | None] | None]],
        *,
        validate_only: bool = False,
    ) -> dict[ConfigResource, ConfigResult]:
        """Change configuration incrementally.  A value of None deletes the key; a tuple
        ``(AlterOp.APPEND, "x")`` names the operation explicitly."""
        self._check()
        by_target: dict[int | None, list[ConfigResource]] = defaultdict(list)
        for resource in changes:
            target = _config_target(resource)
            by_target[target].append(resource)
        results: dict[ConfigResource, ConfigResult] = {}
        for target, group in by_target.items():
            items = []
            for resource in group:
                configs = []
                for name, change in changes[resource].items():
                    if isinstance(change, tuple):
                        op, value = change
                    else:
                        op, value = (
                            (AlterOp.DELETE, None) if change is None else (AlterOp.SET, change)
                        )
                    configs.append(
                        m_alter_configs.AlterableConfig(
                            name=name, config_operation=int(op), value=value
                        )
                    )
                items.append(
                    m_alter_configs.AlterConfigsResource(
                        resource_type=int(resource.type),
                        resource_name=resource.name,
                        configs=configs,
                    )
                )
            request = IncrementalAlterConfigsRequest(resources=items, validate_only=validate_only)
            if target is None:
                response = await (await self._cluster.any_connection()).send(request)
            else:
                response = await self._cluster.send(target, request)
            for item in response.responses:
                resource = ConfigResource(ResourceType(item.resource_type), item.resource_name)
                results[resource] = ConfigResult(
                    resource, {}, _error(item.error_code, item.error_message)
                )
        return results

    # ---------------------------------------------------------------- groups

    async def list_groups(self) -> list[GroupListing]:
        """Every group in the cluster: asks each broker, since each knows only its own groups."""
        self._check()
        metadata = await self._cluster.refresh_metadata()

        async def ask(node_id: int) -> list[GroupListing]:
            response = await self._cluster.send(node_id, ListGroupsRequest())
            errors.raise_for_code(response.error_code, f"ListGroups on broker {node_id}")
            return [
                GroupListing(
                    g.group_id,
                    g.protocol_type,
                    getattr(g, "group_state", None) or None,
                    getattr(g, "group_type", None) or None,
                    node_id,
                )
                for g in response.groups
            ]

        answers = await asyncio.gather(*(ask(n) for n in metadata.brokers))
        seen: dict[str, GroupListing] = {}
        for listing in (g for answer in answers for g in answer):
            seen.setdefault(listing.group_id, listing)
        return sorted(seen.values(), key=lambda g: g.group_id)

    async def _coordinator_call(self, group_id: str, request: Any) -> tuple[Any, int]:
        """Send to a group's coordinator, retrying on coordinator errors."""
        for attempt in range(_RETRY_LIMIT):
            broker = await self._cluster.coordinator(group_id)
            try:
                response = await self._cluster.send_to_coordinator(group_id, request)
            except errors.KafkaConnectionError:
                if attempt == _RETRY_LIMIT - 1:
                    raise
                continue
            code = _top_level_error(response)
            if code in (
                errors.NotCoordinatorError.code,
                errors.CoordinatorNotAvailableError.code,
                errors.CoordinatorLoadInProgressError.code,
            ):
                self._cluster.invalidate_coordinator(group_id)
                await asyncio.sleep(self._config.retry_backoff_ms / 1000 * (attempt + 1))
                continue
            return response, broker.node_id
        raise errors.KafkaTimeoutError(f"the coordinator of group {group_id!r} is not available")

    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        """State, protocol and members of groups; decodes consumer-protocol assignments."""
        self._check()
        from aiokafkawire.protocol.messages.consumer_protocol_assignment import (
            ConsumerProtocolAssignment,
        )

        results: dict[str, GroupDescription] = {}
        for group_id in group_ids:
            response, node = await self._coordinator_call(
                group_id, DescribeGroupsRequest(groups=[group_id])
            )
            for group in response.groups:
                members = []
                for m in group.members:
                    assigned: tuple[TopicPartition, ...] = ()
                    if group.protocol_type == "consumer" and m.member_assignment:
                        try:
                            decoded, _ = ConsumerProtocolAssignment.decode_versioned(
                                m.member_assignment
                            )
                            assigned = tuple(
                                TopicPartition(t.topic, p)
                                for t in decoded.assigned_partitions
                                for p in t.partitions
                            )
                        except errors.KafkaError:
                            assigned = ()
                    members.append(
                        MemberDescription(
                            m.member_id,
                            getattr(m, "group_instance_id", None),
                            m.client_id,
                            m.client_host,
                            bytes(m.member_metadata),
                            bytes(m.member_assignment),
                            assigned,
                        )
                    )
                results[group.group_id] = GroupDescription(
                    group.group_id,
                    group.group_state,
                    group.protocol_type,
                    group.protocol_data,
                    tuple(members),
                    node,
                    _error(group.error_code),
                )
        return results

    # ---------------------------------------------------------------- share groups (KIP-932)

    async def list_share_groups(self) -> list[ShareGroupListing]:
        """Every share group of the cluster (ListGroups filtered to the "share" type)."""
        self._check()
        return await _share_admin.list_share_groups(self._cluster)

    async def describe_share_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ShareGroupDescription]:
        """State, epochs, assignor and members (with their assignments) of share groups."""
        self._check()
        return await _share_admin.describe_share_groups(self._coordinator_call, group_ids)

    async def list_share_group_offsets(
        self, group_id: str, topics: Iterable[str] | None = None
    ) -> dict[TopicPartition, ShareGroupOffset]:
        """A share group's start offsets per partition (of ``topics``, or all it has)."""
        self._check()
        return await _share_admin.list_share_group_offsets(
            self._coordinator_call, self._cluster, group_id, topics
        )

    async def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, errors.KafkaError | None]:
        """Set a share group's start offsets (the group must have no members)."""
        self._check()
        return await _share_admin.alter_share_group_offsets(
            self._coordinator_call, group_id, offsets
        )

    async def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str]
    ) -> dict[str, errors.KafkaError | None]:
        """Forget a share group's state for whole topics (the group must have no members)."""
        self._check()
        return await _share_admin.delete_share_group_offsets(
            self._coordinator_call, group_id, topics
        )

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, GroupResult]:
        """Delete empty groups; a non-empty group reports NonEmptyGroupError."""
        self._check()
        results: dict[str, GroupResult] = {}
        for group_id in group_ids:
            response, _ = await self._coordinator_call(
                group_id, DeleteGroupsRequest(groups_names=[group_id])
            )
            for r in response.results:
                results[r.group_id] = GroupResult(r.group_id, _error(r.error_code))
        return results

    async def list_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, GroupOffset]:
        """A group's committed offsets (all of them when ``partitions`` is None)."""
        self._check()
        wanted = None if partitions is None else list(partitions)
        connection = await self._cluster.coordinator_connection(group_id)
        version = connection.versions.version_for(OffsetFetchRequest.API_KEY)
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in wanted or []:
            by_topic[tp.topic].append(tp.partition)
        if version >= 8:
            request = OffsetFetchRequest(
                groups=[
                    m_offset_fetch.OffsetFetchRequestGroup(
                        group_id=group_id,
                        topics=None
                        if wanted is None
                        else [
                            m_offset_fetch.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
                            for t, ps in by_topic.items()
                        ],
                    )
                ]
            )
        else:
            if wanted is None and version < 2:
                raise errors.UnsupportedVersionForBrokerError(
                    "listing all offsets of a group needs OffsetFetch v2+"
                )
            request = OffsetFetchRequest(
                group_id=group_id,
                topics=None
                if wanted is None
                else [
                    m_offset_fetch.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                    for t, ps in by_topic.items()
                ],
            )
        response, _ = await self._coordinator_call(group_id, request)
        result: dict[TopicPartition, GroupOffset] = {}
        if version >= 8:
            group = response.groups[0]
            errors.raise_for_code(group.error_code, f"OffsetFetch for group {group_id!r}")
            topics = group.topics
        else:
            errors.raise_for_code(
                getattr(response, "error_code", 0), f"OffsetFetch for group {group_id!r}"
            )
            topics = response.topics
        for topic in topics:
            for p in topic.partitions:
                result[TopicPartition(topic.name, p.partition_index)] = GroupOffset(
                    p.committed_offset,
                    p.metadata,
                    getattr(p, "committed_leader_epoch", -1),
                    _error(p.error_code),
                )
        return result

    async def alter_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int | GroupOffset]
    ) -> dict[TopicPartition, PartitionResult]:
        """Set a (inactive) group's committed offsets."""
        self._check()
        by_topic: dict[str, list[Any]] = defaultdict(list)
        for tp, value in offsets.items():
            offset = value if isinstance(value, GroupOffset) else GroupOffset(int(value))
            by_topic[tp.topic].append(
                m_offset_commit.OffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=offset.offset,
                    committed_leader_epoch=offset.leader_epoch,
                    committed_metadata=offset.metadata,
                )
            )
        request = OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                m_offset_commit.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        response, _ = await self._coordinator_call(group_id, request)
        return {
            TopicPartition(t.name, p.partition_index): PartitionResult(
                t.name, p.partition_index, _error(p.error_code)
            )
            for t in response.topics
            for p in t.partitions
        }

    async def delete_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, PartitionResult]:
        """Delete a group's committed offsets for partitions it no longer consumes."""
        self._check()
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in partitions:
            by_topic[tp.topic].append(tp.partition)
        request = OffsetDeleteRequest(
            group_id=group_id,
            topics=[
                m_offset_delete.OffsetDeleteRequestTopic(
                    name=t,
                    partitions=[
                        m_offset_delete.OffsetDeleteRequestPartition(partition_index=p) for p in ps
                    ],
                )
                for t, ps in by_topic.items()
            ],
        )
        response, _ = await self._coordinator_call(group_id, request)
        group_error = _error(response.error_code)
        return {
            TopicPartition(t.name, p.partition_index): PartitionResult(
                t.name, p.partition_index, group_error or _error(p.error_code)
            )
            for t in response.topics
            for p in t.partitions
        }

    # ---------------------------------------------------------------- offsets and records

    async def _by_leader(
        self, partitions: Iterable[TopicPartition]
    ) -> tuple[dict[int, list[TopicPartition]], dict[TopicPartition, errors.KafkaError]]:
        leaders: dict[int, list[TopicPartition]] = defaultdict(list)
        failed: dict[TopicPartition, errors.KafkaError] = {}
        for tp in partitions:
            try:
                await self._cluster.wait_for_topic(tp.topic)
            except errors.KafkaError as exc:
                failed[tp] = exc
                continue
            leader = self._cluster.metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                failed[tp] = errors.LeaderNotAvailableError(f"no leader for {tp}")
            else:
                leaders[leader].append(tp)
        return leaders, failed

    async def list_offsets(
        self,
        specs: Mapping[TopicPartition, OffsetSpec | int],
        *,
        isolation_level: str = "read_uncommitted",
    ) -> dict[TopicPartition, ListedOffset]:
        """Look up offsets by spec (earliest, latest, max-timestamp or a timestamp)."""
        self._check()
        wanted = {
            tp: (s if isinstance(s, OffsetSpec) else OffsetSpec(int(s))) for tp, s in specs.items()
        }
        results: dict[TopicPartition, ListedOffset] = {}
        pending = dict(wanted)
        for attempt in range(_RETRY_LIMIT):
            if not pending:
                break
            leaders, failed = await self._by_leader(pending)
            for tp, exc in failed.items():
                results[tp] = ListedOffset(-1, error=exc)
                pending.pop(tp)
            retry: dict[TopicPartition, OffsetSpec] = {}
            answers = await asyncio.gather(
                *(
                    self._list_offsets_on(node, tps, pending, isolation_level)
                    for node, tps in leaders.items()
                ),
                return_exceptions=True,
            )
            for tps, answer in zip(leaders.values(), answers, strict=True):
                if isinstance(answer, BaseException):
                    if not isinstance(answer, errors.KafkaError):
                        raise answer
                    retry.update({tp: pending[tp] for tp in tps})
                    continue
                for tp, listed in answer.items():
                    if listed.error is not None and listed.error.retriable:
                        retry[tp] = pending[tp]
                    results[tp] = listed
            pending = retry
            if pending:
                self._cluster.request_update()
                await asyncio.sleep(self._config.retry_backoff_ms / 1000 * (attempt + 1))
                await self._cluster.refresh_metadata()
        return results

    async def _list_offsets_on(
        self,
        node_id: int,
        partitions: list[TopicPartition],
        specs: Mapping[TopicPartition, OffsetSpec],
        isolation_level: str,
    ) -> dict[TopicPartition, ListedOffset]:
        connection = await self._cluster.connection(node_id)
        version = connection.versions.version_for(ListOffsetsRequest.API_KEY)
        if any(specs[tp].timestamp == OffsetSpec.MAX_TIMESTAMP for tp in partitions) and (
            version < 7
        ):
            raise errors.UnsupportedVersionForBrokerError("max-timestamp needs ListOffsets v7+")
        by_topic: dict[str, list[Any]] = defaultdict(list)
        for tp in partitions:
            by_topic[tp.topic].append(
                m_list_offsets.ListOffsetsPartition(
                    partition_index=tp.partition,
                    timestamp=specs[tp].timestamp,
                    max_num_offsets=1,
                )
            )
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                m_list_offsets.ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()
            ],
        )
        if version >= 2:
            request.isolation_level = 1 if isolation_level == "read_committed" else 0
        response = await connection.send(request, version)
        results: dict[TopicPartition, ListedOffset] = {}
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                if version == 0:
                    offsets = list(p.old_style_offsets)
                    offset, timestamp = (offsets[0] if offsets else -1), -1
                else:
                    offset, timestamp = p.offset, p.timestamp
                results[tp] = ListedOffset(
                    offset, timestamp, getattr(p, "leader_epoch", -1), _error(p.error_code)
                )
        return results

    async def delete_records(
        self, before_offsets: Mapping[TopicPartition, int], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, tuple[int, errors.KafkaError | None]]:
        """Delete records before the given offsets; returns each partition's new low watermark."""
        self._check()
        leaders, failed = await self._by_leader(before_offsets)
        results: dict[TopicPartition, tuple[int, errors.KafkaError | None]] = {
            tp: (-1, exc) for tp, exc in failed.items()
        }
        for node, tps in leaders.items():
            by_topic: dict[str, list[Any]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append(
                    m_delete_records.DeleteRecordsPartition(
                        partition_index=tp.partition, offset=before_offsets[tp]
                    )
                )
            request = DeleteRecordsRequest(
                topics=[
                    m_delete_records.DeleteRecordsTopic(name=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
                timeout_ms=timeout_ms or self._timeout_ms,
            )
            response = await self._cluster.send(node, request)
            for topic in response.topics:
                for p in topic.partitions:
                    results[TopicPartition(topic.name, p.partition_index)] = (
                        p.low_watermark,
                        _error(p.error_code),
                    )
        return results


def _top_level_error(response: Any) -> int:
    """The error code that concerns the coordinator itself, where a response has one."""
    code = getattr(response, "error_code", 0)
    if code:
        return int(code)
    for attr in ("groups", "results"):
        items = getattr(response, attr, None)
        if items:
            first = items[0]
            return int(getattr(first, "error_code", 0))
    return 0
