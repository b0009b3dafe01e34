"""The admin client: topics, partitions, configs, groups, offsets and records.

Every call returns typed results, one per item (topic, group, partition, resource).  When any item
failed (a topic that already exists, a group that is not empty), the call raises
:class:`~aiokafkawire.errors.AdminOperationError`, which carries every item's result
(``exc.results``) and the failures (``exc.errors``).  Pass ``raise_on_error=False`` to get the
results back instead, each with its ``error`` (None on success).  Errors that concern the whole
call (no broker reachable, the client is closed, the request timed out) are always raised.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import secrets
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire.client_config import split_common_options, unknown_options_error
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.cluster.metadata import BrokerInfo, TopicInfo
from aiokafkawire.consumer.share import admin as _share_admin
from aiokafkawire.consumer.share.admin import (
    ShareGroupDescription,
    ShareGroupListing,
    ShareGroupOffset,
)
from aiokafkawire.net.credentials import Secret
from aiokafkawire.protocol.messages import (
    AlterClientQuotasRequest,
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    DescribeUserScramCredentialsRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from aiokafkawire.protocol.messages import alter_client_quotas as m_alter_quotas
from aiokafkawire.protocol.messages import alter_user_scram_credentials as m_alter_scram
from aiokafkawire.protocol.messages import create_acls as m_create_acls
from aiokafkawire.protocol.messages import create_partitions as m_create_partitions
from aiokafkawire.protocol.messages import create_topics as m_create_topics
from aiokafkawire.protocol.messages import delete_acls as m_delete_acls
from aiokafkawire.protocol.messages import delete_records as m_delete_records
from aiokafkawire.protocol.messages import delete_topics as m_delete_topics
from aiokafkawire.protocol.messages import describe_client_quotas as m_describe_quotas
from aiokafkawire.protocol.messages import describe_configs as m_describe_configs
from aiokafkawire.protocol.messages import describe_producers as m_describe_producers
from aiokafkawire.protocol.messages import (
    describe_user_scram_credentials as m_describe_scram,
)
from aiokafkawire.protocol.messages import incremental_alter_configs as m_alter_configs
from aiokafkawire.protocol.messages import list_offsets as m_list_offsets
from aiokafkawire.protocol.messages import offset_commit as m_offset_commit
from aiokafkawire.protocol.messages import offset_delete as m_offset_delete
from aiokafkawire.protocol.messages import offset_fetch as m_offset_fetch
from aiokafkawire.structs import TopicPartition

_RETRY_LIMIT = 5
# OffsetCommit/OffsetFetch name topics by id from v10 (KIP-848); the admin calls name them.
_OFFSETS_BY_NAME_MAX_VERSION = 9
#: OffsetFetch carries ``require_stable`` from this version on (KIP-447).
_REQUIRE_STABLE_MIN_VERSION = 7


def _item_results(
    operation: str,
    results: dict[Any, Any],
    raise_on_error: bool,
    error_of: Callable[[Any], errors.KafkaError | None] = lambda result: result.error,
) -> dict[Any, Any]:
    """``results``, unless some item failed and the caller wants an exception for that."""
    if raise_on_error:
        failures = {item: error for item, r in results.items() if (error := error_of(r))}
        if failures:
            raise errors.AdminOperationError(operation, results, failures)
    return results


def _itself(error: errors.KafkaError | None) -> errors.KafkaError | None:
    """For results that are the item's error (or None) themselves."""
    return error


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
            raise unknown_options_error("Admin", rest)
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

    async def stop(self) -> None:
        """The same as :meth:`close` (aiokafka's name)."""
        await self.close()

    def metrics(self) -> dict[str, Any]:
        """A snapshot of this client's per-broker counters (see :mod:`aiokafkawire.metrics`)."""
        return {"brokers": self._config.metrics.snapshot()}

    async def find_coordinator(self, key: str, kind: str = "group") -> BrokerInfo:
        """The broker coordinating a group (``kind="group"``) or transactional id
        (``kind="transaction"``), looked up with FindCoordinator (retried while the coordinator
        is not available, up to ``request_timeout_ms``)."""
        self._check()
        if kind not in ("group", "transaction"):
            raise errors.ConfigError(f"kind must be 'group' or 'transaction', got {kind!r}")
        if not isinstance(key, str) or not key:
            raise errors.KafkaTypeError(f"key must be a non-empty str, got {key!r}")
        self._cluster.invalidate_coordinator(key, kind)  # a fresh answer, not the cache
        return await self._cluster.coordinator(key, kind)

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
        raise_on_error: bool = True,
    ) -> dict[str, TopicResult]:
        """Create topics; returns each topic's :class:`TopicResult`.

        Raises :class:`~aiokafkawire.errors.AdminOperationError` when any topic failed (e.g.
        :class:`~aiokafkawire.errors.TopicAlreadyExistsError`), unless ``raise_on_error=False``.
        """
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
        return _item_results("create_topics", results, raise_on_error)

    async def delete_topics(
        self, topics: Iterable[str], *, timeout_ms: int | None = None, raise_on_error: bool = True
    ) -> dict[str, TopicResult]:
        """Delete topics by name; raises AdminOperationError when any failed (unless
        ``raise_on_error=False``), e.g. with UnknownTopicOrPartitionError."""
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
        return _item_results("delete_topics", results, raise_on_error)

    async def create_partitions(
        self,
        new_totals: Mapping[str, int],
        *,
        assignments: Mapping[str, Sequence[Sequence[int]]] | None = None,
        validate_only: bool = False,
        timeout_ms: int | None = None,
        raise_on_error: bool = True,
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
        return _item_results("create_partitions", results, raise_on_error)

    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """Names of all topics in the cluster, sorted."""
        self._check()
        metadata = await self._cluster.refresh_metadata()
        return sorted(
            name
            for name, info in metadata.topics.items()
            if info.error_code == 0 and (include_internal or not info.is_internal)
        )

    async def describe_topics(
        self, topics: Iterable[str] | None = None, *, raise_on_error: bool = True
    ) -> dict[str, TopicInfo]:
        """Partitions, leaders and replicas of the named topics (all topics when None).

        An unknown topic raises AdminOperationError; with ``raise_on_error=False`` it maps to a
        ``TopicInfo`` with its ``error_code`` set.
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
        return _item_results(
            "describe_topics", result, raise_on_error, lambda info: _error(info.error_code)
        )

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
        self,
        resources: Iterable[ConfigResource],
        *,
        include_synonyms: bool = False,
        raise_on_error: bool = True,
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
        return _item_results("describe_configs", results, raise_on_error)

    async def alter_configs(
        self,
        changes: Mapping[ConfigResource, Mapping[str, str | tuple[AlterOp, str | None] | None]],
        *,
        validate_only: bool = False,
        raise_on_error: bool = True,
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
        return _item_results("alter_configs", results, raise_on_error)

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

    async def _coordinator_call(
        self, group_id: str, request: Any, version: int | None = None
    ) -> tuple[Any, int]:
        """Send to a group's coordinator, retrying on coordinator errors."""
        for attempt in range(_RETRY_LIMIT):
            broker = await self._cluster.coordinator(group_id)
            try:
                response = await self._cluster.send_to_coordinator(group_id, request, version)
            except errors.KafkaConnectionError:
                if attempt == _RETRY_LIMIT - 1:
                    raise
                continue
            if _coordinator_error(response):
                self._cluster.invalidate_coordinator(group_id)
                await asyncio.sleep(self._config.retry_backoff_ms / 1000 * (attempt + 1))
                continue
            return response, broker.node_id
        raise errors.KafkaTimeoutError(f"the coordinator of group {group_id!r} is not available")

    async def describe_groups(
        self, group_ids: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, GroupDescription]:
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
        return _item_results("describe_groups", results, raise_on_error)

    # ---------------------------------------------------------------- share groups (KIP-932)

    async def list_share_groups(self) -> list[ShareGroupListing]:
        """Every share group of the cluster (ListGroups filtered to the "share" type)."""
        self._check()
        return await _share_admin.list_share_groups(self._cluster)

    async def describe_share_groups(
        self, group_ids: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, ShareGroupDescription]:
        """State, epochs, assignor and members (with their assignments) of share groups."""
        self._check()
        results = await _share_admin.describe_share_groups(self._coordinator_call, group_ids)
        return _item_results("describe_share_groups", results, raise_on_error)

    async def list_share_group_offsets(
        self,
        group_id: str,
        topics: Iterable[str] | None = None,
        *,
        raise_on_error: bool = True,
    ) -> dict[TopicPartition, ShareGroupOffset]:
        """A share group's start offsets per partition (of ``topics``, or all it has)."""
        self._check()
        results = await _share_admin.list_share_group_offsets(
            self._coordinator_call, self._cluster, group_id, topics
        )
        return _item_results("list_share_group_offsets", results, raise_on_error)

    async def alter_share_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int],
        *,
        raise_on_error: bool = True,
    ) -> dict[TopicPartition, errors.KafkaError | None]:
        """Set a share group's start offsets (the group must have no members)."""
        self._check()
        results = await _share_admin.alter_share_group_offsets(
            self._coordinator_call, group_id, offsets
        )
        return _item_results("alter_share_group_offsets", results, raise_on_error, _itself)

    async def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, errors.KafkaError | None]:
        """Forget a share group's state for whole topics (the group must have no members)."""
        self._check()
        results = await _share_admin.delete_share_group_offsets(
            self._coordinator_call, group_id, topics
        )
        return _item_results("delete_share_group_offsets", results, raise_on_error, _itself)

    async def delete_groups(
        self, group_ids: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, GroupResult]:
        """Delete empty groups; a non-empty group reports NonEmptyGroupError."""
        self._check()
        results: dict[str, GroupResult] = {}
        for group_id in group_ids:
            response, _ = await self._coordinator_call(
                group_id, DeleteGroupsRequest(groups_names=[group_id])
            )
            for r in response.results:
                results[r.group_id] = GroupResult(r.group_id, _error(r.error_code))
        return _item_results("delete_groups", results, raise_on_error)

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
        connection = await self._cluster.coordinator_connection(group_id)
        # v10 names topics by id only (KIP-848); these calls name them.
        version = connection.versions.version_for(
            OffsetFetchRequest.API_KEY, max_version=_OFFSETS_BY_NAME_MAX_VERSION
        )
        if require_stable and version < _REQUIRE_STABLE_MIN_VERSION:
            raise errors.UnsupportedVersionForBrokerError(
                f"require_stable needs OffsetFetch v{_REQUIRE_STABLE_MIN_VERSION}+"
            )
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
        if require_stable:
            request.require_stable = True
        response, _ = await self._coordinator_call(group_id, request, version)
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
        return _item_results("list_group_offsets", result, raise_on_error)

    async def alter_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int | GroupOffset],
        *,
        raise_on_error: bool = True,
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
        connection = await self._cluster.coordinator_connection(group_id)
        version = connection.versions.version_for(
            OffsetCommitRequest.API_KEY, max_version=_OFFSETS_BY_NAME_MAX_VERSION
        )
        response, _ = await self._coordinator_call(group_id, request, version)
        results = {
            TopicPartition(t.name, p.partition_index): PartitionResult(
                t.name, p.partition_index, _error(p.error_code)
            )
            for t in response.topics
            for p in t.partitions
        }
        return _item_results("alter_group_offsets", results, raise_on_error)

    async def delete_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition], *, raise_on_error: bool = True
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
        results = {
            TopicPartition(t.name, p.partition_index): PartitionResult(
                t.name, p.partition_index, group_error or _error(p.error_code)
            )
            for t in response.topics
            for p in t.partitions
        }
        return _item_results("delete_group_offsets", results, raise_on_error)

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
        raise_on_error: bool = True,
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
        return _item_results("list_offsets", results, raise_on_error)

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
            # v10+: how long the broker may wait for tiered storage (KIP-1075); 0 fails at once.
            timeout_ms=self._timeout_ms,
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
        self,
        before_offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: int | None = None,
        raise_on_error: bool = True,
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
        return _item_results("delete_records", results, raise_on_error, lambda r: r[1])

    # ---------------------------------------------------------------- ACLs

    async def create_acls(
        self, bindings: Iterable[AclBinding], *, raise_on_error: bool = True
    ) -> dict[AclBinding, AclResult]:
        """Create ACL bindings (through any broker: the controller applies them).

        Needs an authorizer on the cluster; without one each binding fails with
        :class:`~aiokafkawire.errors.SecurityDisabledError`.
        """
        self._check()
        wanted = list(dict.fromkeys(bindings))
        for binding in wanted:
            binding.check_concrete()
        if not wanted:
            return {}
        request = CreateAclsRequest(
            creations=[
                m_create_acls.AclCreation(
                    resource_type=int(b.resource_type),
                    resource_name=b.resource_name,
                    resource_pattern_type=int(b.pattern_type),
                    principal=b.principal,
                    host=b.host,
                    operation=int(b.operation),
                    permission_type=int(b.permission_type),
                )
                for b in wanted
            ]
        )
        connection = await self._cluster.any_connection()
        version = connection.versions.version_for(CreateAclsRequest.API_KEY)
        if version < 1 and any(b.pattern_type != PatternType.LITERAL for b in wanted):
            raise errors.UnsupportedVersionForBrokerError("prefixed ACLs need CreateAcls v1+")
        response = await connection.send(request, version)
        if len(response.results) != len(wanted):
            raise errors.ProtocolError(
                f"CreateAcls answered {len(response.results)} results for {len(wanted)} bindings"
            )
        results = {
            b: AclResult(b, _error(r.error_code, r.error_message))
            for b, r in zip(wanted, response.results, strict=True)
        }
        return _item_results("create_acls", results, raise_on_error)

    async def describe_acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACL bindings matching ``acl_filter`` (all of them by default).

        The filter is the call's one item, so its error (no authorizer, not authorized) is raised.
        """
        self._check()
        flt = acl_filter or AclBindingFilter()
        connection = await self._cluster.any_connection()
        version = connection.versions.version_for(DescribeAclsRequest.API_KEY)
        request = DescribeAclsRequest(
            resource_type_filter=int(flt.resource_type),
            resource_name_filter=flt.resource_name,
            principal_filter=flt.principal,
            host_filter=flt.host,
            operation=int(flt.operation),
            permission_type=int(flt.permission_type),
        )
        if version >= 1:
            request.pattern_type_filter = int(flt.pattern_type)
        elif flt.pattern_type not in (PatternType.LITERAL, PatternType.ANY):
            raise errors.UnsupportedVersionForBrokerError("pattern filters need DescribeAcls v1+")
        response = await connection.send(request, version)
        errors.raise_for_code(response.error_code, response.error_message or "DescribeAcls")
        return [
            AclBinding(
                AclResourceType(resource.resource_type),
                resource.resource_name,
                PatternType(resource.pattern_type if version >= 1 else PatternType.LITERAL),
                acl.principal,
                acl.host,
                AclOperation(acl.operation),
                AclPermissionType(acl.permission_type),
            )
            for resource in response.resources
            for acl in resource.acls
        ]

    async def delete_acls(
        self, filters: Iterable[AclBindingFilter], *, raise_on_error: bool = True
    ) -> dict[AclBindingFilter, DeleteAclsResult]:
        """Delete every ACL binding matching each filter; returns what each filter deleted.

        A filter fails with its own error or the first error of deleting a binding it matched.
        """
        self._check()
        wanted = list(dict.fromkeys(filters))
        if not wanted:
            return {}
        connection = await self._cluster.any_connection()
        version = connection.versions.version_for(DeleteAclsRequest.API_KEY)
        request = DeleteAclsRequest(
            filters=[
                m_delete_acls.DeleteAclsFilter(
                    resource_type_filter=int(f.resource_type),
                    resource_name_filter=f.resource_name,
                    pattern_type_filter=int(f.pattern_type),
                    principal_filter=f.principal,
                    host_filter=f.host,
                    operation=int(f.operation),
                    permission_type=int(f.permission_type),
                )
                for f in wanted
            ]
        )
        if version < 1 and any(
            f.pattern_type not in (PatternType.LITERAL, PatternType.ANY) for f in wanted
        ):
            raise errors.UnsupportedVersionForBrokerError("pattern filters need DeleteAcls v1+")
        response = await connection.send(request, version)
        if len(response.filter_results) != len(wanted):
            raise errors.ProtocolError(
                f"DeleteAcls answered {len(response.filter_results)} results for "
                f"{len(wanted)} filters"
            )
        results: dict[AclBindingFilter, DeleteAclsResult] = {}
        for flt, answer in zip(wanted, response.filter_results, strict=True):
            matches = tuple(
                DeletedAcl(
                    AclBinding(
                        AclResourceType(m.resource_type),
                        m.resource_name,
                        PatternType(m.pattern_type if version >= 1 else PatternType.LITERAL),
                        m.principal,
                        m.host,
                        AclOperation(m.operation),
                        AclPermissionType(m.permission_type),
                    ),
                    _error(m.error_code, m.error_message),
                )
                for m in answer.matching_acls
            )
            results[flt] = DeleteAclsResult(
                flt, matches, _error(answer.error_code, answer.error_message)
            )
        return _item_results("delete_acls", results, raise_on_error, DeleteAclsResult.first_error)

    # ---------------------------------------------------------------- SCRAM credentials

    async def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None, *, raise_on_error: bool = True
    ) -> dict[str, UserScramCredentials]:
        """The SCRAM mechanisms and iteration counts of ``users`` (every user by default).

        A named user without credentials fails with
        :class:`~aiokafkawire.errors.ResourceNotFoundError`.
        """
        self._check()
        names = None if users is None else list(dict.fromkeys(users))
        request = DescribeUserScramCredentialsRequest(
            users=None if names is None else [m_describe_scram.UserName(name=n) for n in names]
        )
        response = await (await self._cluster.any_connection()).send(request)
        errors.raise_for_code(
            response.error_code, response.error_message or "DescribeUserScramCredentials"
        )
        results = {
            r.user: UserScramCredentials(
                r.user,
                tuple(
                    ScramCredentialInfo(ScramMechanism(c.mechanism), c.iterations)
                    for c in r.credential_infos
                ),
                _error(r.error_code, r.error_message),
            )
            for r in response.results
        }
        return _item_results("describe_user_scram_credentials", results, raise_on_error)

    async def alter_user_scram_credentials(
        self,
        alterations: Iterable[ScramUpsertion | ScramDeletion],
        *,
        raise_on_error: bool = True,
    ) -> dict[str, ScramAlterationResult]:
        """Create, replace or delete users' SCRAM credentials.

        As Kafka's AdminClient does, the salted password is computed here (PBKDF2 with the
        mechanism's hash over the password's UTF-8 bytes and a random salt), so the password itself
        never goes over the wire.  Kafka refuses two alterations of one user in one call
        (:class:`~aiokafkawire.errors.DuplicateResourceError` on that user's result).
        """
        self._check()
        changes = list(alterations)
        if not changes:
            return {}
        upsertions = []
        deletions = []
        for change in changes:
            if isinstance(change, ScramUpsertion):
                salt = change.salt if change.salt is not None else secrets.token_bytes(32)
                upsertions.append(
                    m_alter_scram.ScramCredentialUpsertion(
                        name=change.user,
                        mechanism=int(change.mechanism),
                        iterations=change.iterations,
                        salt=salt,
                        salted_password=scram_salted_password(
                            change.mechanism, change.password, salt, change.iterations
                        ),
                    )
                )
            else:
                deletions.append(
                    m_alter_scram.ScramCredentialDeletion(
                        name=change.user, mechanism=int(change.mechanism)
                    )
                )
        request = AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions)
        response = await (await self._cluster.any_connection()).send(request)
        results = {
            r.user: ScramAlterationResult(r.user, _error(r.error_code, r.error_message))
            for r in response.results
        }
        return _item_results("alter_user_scram_credentials", results, raise_on_error)

    # ---------------------------------------------------------------- client quotas

    async def describe_client_quotas(
        self, components: Iterable[QuotaFilterComponent] = (), *, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        """Quotas of the entities matching every component (``strict``: no other entity types).

        No components and ``strict=False`` match every entity with quotas.
        """
        self._check()
        request = DescribeClientQuotasRequest(
            components=[
                m_describe_quotas.ComponentData(
                    entity_type=c.entity_type, match_type=int(c.match_type), match=c.match
                )
                for c in components
            ],
            strict=strict,
        )
        response = await (await self._cluster.any_connection()).send(request)
        errors.raise_for_code(response.error_code, response.error_message or "DescribeClientQuotas")
        return {
            QuotaEntity.of({e.entity_type: e.entity_name for e in entry.entity}): {
                v.key: v.value for v in entry.values
            }
            for entry in response.entries or ()
        }

    async def alter_client_quotas(
        self,
        alterations: Iterable[QuotaAlteration],
        *,
        validate_only: bool = False,
        raise_on_error: bool = True,
    ) -> dict[QuotaEntity, QuotaAlterationResult]:
        """Set (a float) or remove (None) quota values of entities."""
        self._check()
        changes = list(alterations)
        if not changes:
            return {}
        request = AlterClientQuotasRequest(
            entries=[
                m_alter_quotas.EntryData(
                    entity=[
                        m_alter_quotas.EntityData(entity_type=t, entity_name=n)
                        for t, n in change.entity.entries
                    ],
                    ops=[
                        m_alter_quotas.OpData(
                            key=key,
                            value=0.0 if value is None else float(value),
                            remove=value is None,
                        )
                        for key, value in change.ops.items()
                    ],
                )
                for change in changes
            ],
            validate_only=validate_only,
        )
        response = await (await self._cluster.any_connection()).send(request)
        results = {
            entity: QuotaAlterationResult(entity, _error(e.error_code, e.error_message))
            for e in response.entries
            for entity in (QuotaEntity.of({d.entity_type: d.entity_name for d in e.entity}),)
        }
        return _item_results("alter_client_quotas", results, raise_on_error)

    # ---------------------------------------------------------------- producers and transactions

    async def describe_producers(
        self, partitions: Iterable[TopicPartition], *, raise_on_error: bool = True
    ) -> dict[TopicPartition, ProducerStates]:
        """The active idempotent/transactional producers of each partition (asks its leader)."""
        self._check()
        leaders, failed = await self._by_leader(partitions)
        results = {tp: ProducerStates(tp, (), exc) for tp, exc in failed.items()}

        async def ask(node: int, tps: list[TopicPartition]) -> None:
            by_topic: dict[str, list[int]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append(tp.partition)
            request = DescribeProducersRequest(
                topics=[
                    m_describe_producers.TopicRequest(name=t, partition_indexes=ps)
                    for t, ps in by_topic.items()
                ]
            )
            response = await self._cluster.send(node, request)
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    results[tp] = ProducerStates(
                        tp,
                        tuple(
                            ProducerState(
                                s.producer_id,
                                s.producer_epoch,
                                s.last_sequence,
                                s.last_timestamp,
                                s.coordinator_epoch,
                                _unless_negative(s.current_txn_start_offset),
                            )
                            for s in p.active_producers
                        ),
                        _error(p.error_code, p.error_message),
                    )

        await asyncio.gather(*(ask(node, tps) for node, tps in leaders.items()))
        return _item_results("describe_producers", results, raise_on_error)

    async def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        min_duration_ms: int | None = None,
        transactional_id_pattern: str | None = None,
    ) -> list[TransactionListing]:
        """Transactions known to any broker's coordinator, optionally filtered.

        ``states`` are Kafka's state names (``Ongoing``, ``CompleteCommit``, ...);
        ``min_duration_ms`` (ListTransactions v1+) keeps transactions running at least that long;
        ``transactional_id_pattern`` (v2+) is a Java regular expression the broker applies.
        """
        self._check()
        metadata = await self._cluster.refresh_metadata()
        state_filters = list(states)
        producer_filters = list(producer_ids)

        async def ask(node_id: int) -> list[TransactionListing]:
            connection = await self._cluster.connection(node_id)
            version = connection.versions.version_for(ListTransactionsRequest.API_KEY)
            request = ListTransactionsRequest(
                state_filters=state_filters, producer_id_filters=producer_filters
            )
            if min_duration_ms is not None:
                if version < 1:
                    raise errors.UnsupportedVersionForBrokerError(
                        "a duration filter needs ListTransactions v1+"
                    )
                request.duration_filter = min_duration_ms
            if transactional_id_pattern is not None:
                if version < 2:
                    raise errors.UnsupportedVersionForBrokerError(
                        "a transactional id pattern needs ListTransactions v2+"
                    )
                request.transactional_id_pattern = transactional_id_pattern
            response = await connection.send(request, version)
            errors.raise_for_code(response.error_code, f"ListTransactions on broker {node_id}")
            return [
                TransactionListing(t.transactional_id, t.producer_id, t.transaction_state, node_id)
                for t in response.transaction_states
            ]

        answers = await asyncio.gather(*(ask(n) for n in metadata.brokers))
        listings = [listing for answer in answers for listing in answer]
        return sorted(listings, key=lambda t: t.transactional_id)

    async def describe_transactions(
        self, transactional_ids: Iterable[str], *, raise_on_error: bool = True
    ) -> dict[str, TransactionDescription]:
        """State, producer, timeout and partitions of transactions (asks each coordinator)."""
        self._check()
        results: dict[str, TransactionDescription] = {}
        for tid in dict.fromkeys(transactional_ids):
            try:
                coordinator = await self._cluster.coordinator(tid, "transaction")
                response = await self._cluster.send_to_coordinator(
                    tid,
                    DescribeTransactionsRequest(transactional_ids=[tid]),
                    kind="transaction",
                    purpose="default",
                )
            except errors.KafkaError as exc:
                if isinstance(exc, errors.BrokerResponseError):
                    results[tid] = TransactionDescription(tid, error=exc)
                    continue
                raise
            for state in response.transaction_states:
                error = _error(state.error_code)
                if error is not None and error.code in (
                    errors.NotCoordinatorError.code,
                    errors.CoordinatorNotAvailableError.code,
                ):
                    self._cluster.invalidate_coordinator(tid, "transaction")
                results[state.transactional_id] = TransactionDescription(
                    state.transactional_id,
                    state.transaction_state,
                    state.producer_id,
                    state.producer_epoch,
                    state.transaction_timeout_ms,
                    _unless_negative(state.transaction_start_time_ms),
                    tuple(TopicPartition(t.topic, p) for t in state.topics for p in t.partitions),
                    coordinator.node_id,
                    error,
                )
        return _item_results("describe_transactions", results, raise_on_error)

    # ---------------------------------------------------------------- log directories

    async def describe_log_dirs(
        self, brokers: Iterable[int] | None = None, *, raise_on_error: bool = True
    ) -> dict[int, dict[str, LogDirDescription]]:
        """Each broker's log directories: error, space, and the size of each replica in them.

        A broker fails with the error of its first failed (e.g. offline) log directory.
        """
        self._check()
        metadata = await self._cluster.refresh_metadata()
        node_ids = list(metadata.brokers) if brokers is None else list(dict.fromkeys(brokers))

        async def ask(node_id: int) -> dict[str, LogDirDescription]:
            response = await self._cluster.send(node_id, DescribeLogDirsRequest(topics=None))
            errors.raise_for_code(
                getattr(response, "error_code", 0), f"DescribeLogDirs on broker {node_id}"
            )
            return {
                r.log_dir: LogDirDescription(
                    r.log_dir,
                    {
                        TopicPartition(t.name, p.partition_index): ReplicaInfo(
                            p.partition_size, p.offset_lag, p.is_future_key
                        )
                        for t in r.topics
                        for p in t.partitions
                    },
                    _unless_negative(r.total_bytes),
                    _unless_negative(r.usable_bytes),
                    _error(r.error_code),
                )
                for r in response.results
            }

        answers = await asyncio.gather(*(ask(n) for n in node_ids))
        results = dict(zip(node_ids, answers, strict=True))
        return _item_results(
            "describe_log_dirs",
            results,
            raise_on_error,
            lambda dirs: next((d.error for d in dirs.values() if d.error is not None), None),
        )


_COORDINATOR_ERRORS = frozenset(
    {
        errors.NotCoordinatorError.code,
        errors.CoordinatorNotAvailableError.code,
        errors.CoordinatorLoadInProgressError.code,
    }
)


def _coordinator_error(response: Any) -> bool:
    """Whether the answer says its broker cannot act as the group's coordinator (yet).

    Some answers carry that at the top (or per group); OffsetCommit and the older OffsetFetch
    only per partition, e.g. COORDINATOR_LOAD_IN_PROGRESS from a broker just started.
    """
    if _top_level_error(response) in _COORDINATOR_ERRORS:
        return True
    return any(
        getattr(partition, "error_code", 0) in _COORDINATOR_ERRORS
        for topic in getattr(response, "topics", None) or ()
        for partition in getattr(topic, "partitions", None) or ()
    )


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


def _unless_negative(value: int) -> int | None:
    """None for the protocol's "not known" values (-1), else the value."""
    return None if value < 0 else value


# ------------------------------------------------------------- ACLs, SCRAM, quotas, transactions


class AclResourceType(enum.IntEnum):
    """What an ACL binding protects (Kafka's ``ResourceType``)."""

    UNKNOWN = 0
    ANY = 1  # filters only
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    """How an ACL binding's resource name matches (Kafka's ``PatternType``)."""

    UNKNOWN = 0
    ANY = 1  # filters only: any pattern type
    MATCH = 2  # filters only: every binding that applies to the named resource
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    """The operation an ACL binding allows or denies (Kafka's ``AclOperation``)."""

    UNKNOWN = 0
    ANY = 1  # filters only
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    """Whether an ACL binding allows or denies (Kafka's ``AclPermissionType``)."""

    UNKNOWN = 0
    ANY = 1  # filters only
    DENY = 2
    ALLOW = 3


# Enum members that only make sense in filters (compared by name: the enums share values).
_FILTER_ONLY_NAMES = frozenset({"ANY", "UNKNOWN", "MATCH"})


@dataclass(frozen=True)
class AclBinding:
    """One ACL: ``principal`` (``"User:alice"``) may or may not do ``operation`` on a resource.

    ``host`` is the client address the binding applies to, ``"*"`` for every host.
    """

    resource_type: AclResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def check_concrete(self) -> None:
        """Raise :class:`~aiokafkawire.errors.ConfigError` if a field holds a filter-only value."""
        for value in (self.resource_type, self.pattern_type, self.operation, self.permission_type):
            if value.name in _FILTER_ONLY_NAMES:
                raise errors.ConfigError(
                    f"an ACL binding cannot use {type(value).__name__}.{value.name}: {self}"
                )


@dataclass(frozen=True)
class AclBindingFilter:
    """Matches ACL bindings: None and the ``ANY`` members match everything.

    ``pattern_type=PatternType.MATCH`` with a resource name matches every binding that applies to
    that resource (literal, wildcard and prefixed ones).
    """

    resource_type: AclResourceType = AclResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    @classmethod
    def matching(cls, binding: AclBinding) -> AclBindingFilter:
        """The filter matching exactly ``binding``."""
        return cls(
            binding.resource_type,
            binding.resource_name,
            binding.pattern_type,
            binding.principal,
            binding.host,
            binding.operation,
            binding.permission_type,
        )


@dataclass(frozen=True)
class AclResult:
    """The outcome of creating one ACL binding."""

    binding: AclBinding
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when the binding was created."""
        return self.error is None


@dataclass(frozen=True)
class DeletedAcl:
    """A binding a delete filter matched, with the error of deleting it (None: deleted)."""

    binding: AclBinding
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class DeleteAclsResult:
    """What one delete filter matched, or the error of the whole filter."""

    filter: AclBindingFilter
    deleted: tuple[DeletedAcl, ...] = ()
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when the filter and every deletion it made succeeded."""
        return self.first_error() is None

    def first_error(self) -> errors.KafkaError | None:
        """The filter's error, else the first error of deleting a binding it matched."""
        if self.error is not None:
            return self.error
        return next((d.error for d in self.deleted if d.error is not None), None)


class ScramMechanism(enum.IntEnum):
    """SCRAM mechanisms as the credential APIs number them."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """The SASL name: ``SCRAM-SHA-256`` or ``SCRAM-SHA-512``."""
        return self.name.replace("_", "-")


_SCRAM_HASHES = {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}
#: Kafka's bounds on SCRAM iterations (``ScramMechanism.minIterations``/``maxIterations``).
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 16384


def scram_salted_password(
    mechanism: ScramMechanism, password: str | Secret, salt: bytes, iterations: int
) -> bytes:
    """SCRAM's ``SaltedPassword`` = Hi(password, salt, i) (RFC 5802), i.e. PBKDF2-HMAC.

    Like Kafka's ``ScramFormatter``, the password's UTF-8 bytes are used as they are (no SASLprep).
    """
    hash_name = _SCRAM_HASHES.get(mechanism)
    if hash_name is None:
        raise errors.ConfigError(f"unknown SCRAM mechanism {mechanism!r}")
    secret = password.reveal() if isinstance(password, Secret) else password
    return hashlib.pbkdf2_hmac(hash_name, secret.encode("utf-8"), salt, iterations)


@dataclass(frozen=True)
class ScramUpsertion:
    """Create or replace ``user``'s credential for ``mechanism`` (the password never leaves here).

    ``salt`` defaults to 32 random bytes; ``iterations`` must lie in Kafka's 4096-16384.
    """

    user: str
    mechanism: ScramMechanism
    password: str | Secret = field(repr=False)
    iterations: int = SCRAM_MIN_ITERATIONS
    salt: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in _SCRAM_HASHES:
            raise errors.ConfigError(f"unknown SCRAM mechanism {self.mechanism!r}")
        if not SCRAM_MIN_ITERATIONS <= self.iterations <= SCRAM_MAX_ITERATIONS:
            raise errors.ConfigError(
                f"SCRAM iterations must be {SCRAM_MIN_ITERATIONS}-{SCRAM_MAX_ITERATIONS}, "
                f"not {self.iterations}"
            )
        if not self.user:
            raise errors.ConfigError("a SCRAM credential needs a user name")


@dataclass(frozen=True)
class ScramDeletion:
    """Delete ``user``'s credential for ``mechanism``."""

    user: str
    mechanism: ScramMechanism


@dataclass(frozen=True)
class ScramCredentialInfo:
    """One SCRAM credential of a user: its mechanism and iteration count."""

    mechanism: ScramMechanism
    iterations: int


@dataclass(frozen=True)
class UserScramCredentials:
    """A user's SCRAM credentials, or the error describing them."""

    user: str
    credentials: tuple[ScramCredentialInfo, ...] = ()
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class ScramAlterationResult:
    """The outcome of altering one user's SCRAM credentials."""

    user: str
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when every alteration of this user succeeded."""
        return self.error is None


class QuotaEntityType:
    """The entity types client quotas apply to."""

    USER = "user"
    CLIENT_ID = "client-id"
    IP = "ip"


@dataclass(frozen=True)
class QuotaEntity:
    """The entity a set of quotas applies to: entity type -> name (None: the default entity).

    Build with ``QuotaEntity.of({"user": "alice", "client-id": None})``.
    """

    entries: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(cls, entries: Mapping[str, str | None]) -> QuotaEntity:
        """The entity with these type -> name entries (order does not matter)."""
        return cls(tuple(sorted(entries.items())))

    def as_dict(self) -> dict[str, str | None]:
        """Entity type -> name (None: the default entity of that type)."""
        return dict(self.entries)


class QuotaMatchType(enum.IntEnum):
    """How a quota filter component matches an entity type's name."""

    EXACT = 0
    DEFAULT = 1
    ANY = 2  # any name, including the default


@dataclass(frozen=True)
class QuotaFilterComponent:
    """Matches one entity type: an exact name, the default entity, or any name."""

    entity_type: str
    match_type: QuotaMatchType = QuotaMatchType.ANY
    match: str | None = None

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> QuotaFilterComponent:
        """Entities whose ``entity_type`` is exactly ``name``."""
        return cls(entity_type, QuotaMatchType.EXACT, name)

    @classmethod
    def of_default_entity(cls, entity_type: str) -> QuotaFilterComponent:
        """The default entity of ``entity_type``."""
        return cls(entity_type, QuotaMatchType.DEFAULT)

    @classmethod
    def of_entity_type(cls, entity_type: str) -> QuotaFilterComponent:
        """Any entity with an ``entity_type`` part."""
        return cls(entity_type, QuotaMatchType.ANY)


@dataclass(frozen=True)
class QuotaAlteration:
    """Set (a float) or remove (None) quota values, e.g. ``{"producer_byte_rate": 1024.0}``."""

    entity: QuotaEntity
    ops: Mapping[str, float | None]


@dataclass(frozen=True)
class QuotaAlterationResult:
    """The outcome of altering one entity's quotas."""

    entity: QuotaEntity
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when the entity's quotas were altered."""
        return self.error is None


@dataclass(frozen=True)
class ProducerState:
    """One active producer of a partition, as its leader reports it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_transaction_start_offset: int | None  # None: no open transaction


@dataclass(frozen=True)
class ProducerStates:
    """The active producers of one partition, or the error describing them."""

    partition: TopicPartition
    active_producers: tuple[ProducerState, ...] = ()
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class TransactionListing:
    """A transaction as ListTransactions reports it."""

    transactional_id: str
    producer_id: int
    state: str
    coordinator: int


@dataclass(frozen=True)
class TransactionDescription:
    """A transaction's state as its coordinator reports it, or the error describing it."""

    transactional_id: str
    state: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    transaction_timeout_ms: int = -1
    transaction_start_time_ms: int | None = None  # None: no transaction in progress
    partitions: tuple[TopicPartition, ...] = ()
    coordinator: int | None = None
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class ReplicaInfo:
    """A replica in a log directory: its size, lag, and whether it is a future (moving) replica."""

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    """One log directory of a broker, or the error describing it."""

    path: str
    replicas: Mapping[TopicPartition, ReplicaInfo] = field(default_factory=dict)
    total_bytes: int | None = None  # None: the broker does not say (before v4)
    usable_bytes: int | None = None
    error: errors.KafkaError | None = None
