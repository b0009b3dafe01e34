"""Topics, partitions and the cluster: create, delete, grow, list and describe."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore
from aiokafkawire.admin._items import error_or_none, item_results
from aiokafkawire.client_config import check_int
from aiokafkawire.cluster.metadata import BrokerInfo, PartitionInfo, TopicInfo
from aiokafkawire.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeTopicPartitionsRequest,
)
from aiokafkawire.protocol.messages import create_partitions as m_create_partitions
from aiokafkawire.protocol.messages import create_topics as m_create_topics
from aiokafkawire.protocol.messages import delete_topics as m_delete_topics
from aiokafkawire.protocol.messages import describe_topic_partitions as m_describe_topics

# CreateTopics v4 lets the broker fill in default partition counts and replication factors.
_BROKER_DEFAULTS_VERSION = 4
# DeleteTopics names topics in a list of structs (that may carry topic ids) from v6.
_DELETE_TOPIC_STATES_VERSION = 6


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


@dataclass(frozen=True, slots=True)
class PartitionDescription(PartitionInfo):
    """A partition as ``describe_topics`` reports it: :class:`PartitionInfo` and, from
    DescribeTopicPartitions (Kafka 3.8+, KIP-966), the eligible leader replicas (ELR) and the
    last known ELR.  ``None`` when the answer does not say (Metadata, or a cluster without
    ELR: ``eligible.leader.replicas.version`` off)."""

    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class TopicDescription(TopicInfo):
    """A topic as ``describe_topics`` reports it: a :class:`TopicInfo` whose partitions are
    :class:`PartitionDescription` values."""

    partitions: Mapping[int, PartitionDescription]


@dataclass(frozen=True)
class ClusterDescription:
    """The cluster's id, controller and brokers."""

    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerInfo, ...]


def _replicas(nodes: Sequence[int] | None) -> tuple[int, ...] | None:
    return None if nodes is None else tuple(nodes)


class _TopicPages:
    """One topic of a paged DescribeTopicPartitions answer: its partitions from every page."""

    __slots__ = ("partitions", "topic")

    def __init__(self, topic: Any) -> None:
        self.topic = topic
        self.partitions: dict[int, PartitionDescription] = {}

    def add(self, partitions: Iterable[Any]) -> None:
        name = self.topic.name
        for p in partitions:
            self.partitions[p.partition_index] = PartitionDescription(
                name,
                p.partition_index,
                p.leader_id,
                p.leader_epoch,
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                tuple(p.offline_replicas),
                p.error_code,
                _replicas(p.eligible_leader_replicas),
                _replicas(p.last_known_elr),
            )

    def description(self) -> TopicDescription:
        topic = self.topic
        topic_id = None if topic.topic_id is None or topic.topic_id.int == 0 else topic.topic_id
        return TopicDescription(
            topic.name, topic_id, topic.is_internal, self.partitions, topic.error_code
        )


def _creatable(topic: NewTopic, version: int) -> m_create_topics.CreatableTopic:
    """``topic`` as CreateTopics ``version`` carries it."""
    partitions, replication = topic.num_partitions, topic.replication_factor
    if version < _BROKER_DEFAULTS_VERSION and topic.replica_assignments is None:
        # Before v4 the broker has no defaults to fill in.
        partitions = 1 if partitions < 0 else partitions
        replication = 1 if replication < 0 else replication
    return m_create_topics.CreatableTopic(
        name=topic.name,
        num_partitions=-1 if topic.replica_assignments else partitions,
        replication_factor=-1 if topic.replica_assignments else replication,
        assignments=[
            m_create_topics.CreatableReplicaAssignment(partition_index=p, broker_ids=list(brokers))
            for p, brokers in (topic.replica_assignments or {}).items()
        ],
        configs=[
            m_create_topics.CreatableTopicConfig(name=k, value=v) for k, v in topic.configs.items()
        ],
    )


class TopicCalls(AdminCore):
    """Admin calls about topics, their partitions, and the cluster."""

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
        request = CreateTopicsRequest(
            topics=[_creatable(topic, version) for topic in wanted],
            timeout_ms=timeout_ms or self._timeout_ms,
        )
        if version >= 1:
            request.validate_only = validate_only
        elif validate_only:
            raise errors.UnsupportedVersionForBrokerError("validate_only needs CreateTopics v1+")
        response = await self._send_controller(request, version)
        results = {
            t.name: TopicResult(
                name=t.name,
                error=error_or_none(t.error_code, getattr(t, "error_message", None)),
                topic_id=getattr(t, "topic_id", None),
                num_partitions=getattr(t, "num_partitions", -1),
                replication_factor=getattr(t, "replication_factor", -1),
            )
            for t in response.topics
        }
        if not validate_only and any(r.ok for r in results.values()):
            await self._cluster.refresh_metadata()
        return item_results("create_topics", results, raise_on_error)

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
        if version >= _DELETE_TOPIC_STATES_VERSION:
            request.topics = [m_delete_topics.DeleteTopicState(name=n) for n in names]
        else:
            request.topic_names = names
        response = await self._send_controller(request, version)
        results = {
            r.name: TopicResult(
                name=r.name, error=error_or_none(r.error_code, getattr(r, "error_message", None))
            )
            for r in response.responses
            if r.name is not None
        }
        await self._cluster.refresh_metadata()
        return item_results("delete_topics", results, raise_on_error)

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
            r.name: TopicResult(name=r.name, error=error_or_none(r.error_code, r.error_message))
            for r in response.results
        }
        await self._cluster.refresh_metadata()
        return item_results("create_partitions", results, raise_on_error)

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
        self,
        topics: Iterable[str] | None = None,
        *,
        raise_on_error: bool = True,
        partition_limit_per_response: int = 2000,
    ) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and eligible leader replicas of the named topics (all
        topics when None).

        Where the brokers have DescribeTopicPartitions (Kafka 3.8+, KIP-966) it is used, page
        by page of at most ``partition_limit_per_response`` partitions (the broker may lower
        it; Java's ``partitionSizeLimitPerResponse``), with ELR and last known ELR; else
        Metadata.  An unknown topic raises AdminOperationError; with ``raise_on_error=False``
        it maps to a ``TopicDescription`` with its ``error_code`` set.
        """
        self._check()
        check_int("partition_limit_per_response", partition_limit_per_response, minimum=1)
        if topics is None:
            metadata = await self._cluster.refresh_metadata()
            names = list(metadata.topics)
        else:
            names = list(dict.fromkeys(topics))
        connection = await self._cluster.any_connection()
        if connection.versions.supports(DescribeTopicPartitionsRequest.API_KEY):
            result = await self._describe_topic_partitions(names, partition_limit_per_response)
        else:
            result = await self._describe_by_metadata(names)
        return item_results(
            "describe_topics", result, raise_on_error, lambda info: error_or_none(info.error_code)
        )

    async def _describe_topic_partitions(
        self, names: list[str], limit: int
    ) -> dict[str, TopicDescription]:
        """DescribeTopicPartitions, following ``NextCursor`` until the last page."""
        found: dict[str, _TopicPages] = {}
        cursor: m_describe_topics.Cursor | None = None
        request_topics = [m_describe_topics.TopicRequest(name=n) for n in sorted(names)]
        while True:
            request = DescribeTopicPartitionsRequest(
                topics=request_topics, response_partition_limit=limit, cursor=cursor
            )
            response = await self._send_any(request)
            for topic in response.topics:
                if topic.name is not None:
                    found.setdefault(topic.name, _TopicPages(topic)).add(topic.partitions)
            following = response.next_cursor
            if following is None:
                break
            if cursor is not None and (following.topic_name, following.partition_index) <= (
                cursor.topic_name,
                cursor.partition_index,
            ):
                raise errors.ProtocolError(
                    f"DescribeTopicPartitions: the next cursor {following.topic_name}-"
                    f"{following.partition_index} does not move past {cursor.topic_name}-"
                    f"{cursor.partition_index}"
                )
            cursor = m_describe_topics.Cursor(
                topic_name=following.topic_name, partition_index=following.partition_index
            )
        unknown = errors.UnknownTopicOrPartitionError.code
        return {
            name: found[name].description()
            if name in found
            else TopicDescription(name, None, False, {}, unknown)
            for name in names
        }

    async def _describe_by_metadata(self, names: list[str]) -> dict[str, TopicDescription]:
        """Metadata's view (brokers without DescribeTopicPartitions: no ELR)."""
        metadata = await self._cluster.refresh_metadata()
        missing = [n for n in names if n not in metadata.topics]
        if missing:
            metadata = await self._cluster.refresh_metadata(missing)
        result: dict[str, TopicDescription] = {}
        for name in names:
            info = metadata.topics.get(name)
            if info is None:
                result[name] = TopicDescription(
                    name, None, False, {}, errors.UnknownTopicOrPartitionError.code
                )
                continue
            partitions = {
                index: PartitionDescription(
                    p.topic,
                    p.partition,
                    p.leader,
                    p.leader_epoch,
                    p.replicas,
                    p.isr,
                    p.offline_replicas,
                    p.error_code,
                )
                for index, p in info.partitions.items()
            }
            result[name] = TopicDescription(
                name, info.topic_id, info.is_internal, partitions, info.error_code
            )
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
