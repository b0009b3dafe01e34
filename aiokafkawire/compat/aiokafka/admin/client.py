"""``aiokafka.admin.client``: ``AIOKafkaAdminClient`` on aiokafkawire's :class:`Admin`.

aiokafka's admin returns the broker's response objects for most calls; here those calls return
a :class:`Response` whose ``to_object()`` gives the same dictionary aiokafka's does (the fields
callers read: per-item error codes and messages, descriptions), built from aiokafkawire's typed
results.
"""

from __future__ import annotations

import copy
import ssl
from collections.abc import Mapping
from typing import Any

from aiokafkawire.admin import Admin
from aiokafkawire.compat.aiokafka._bootstrap import start_client
from aiokafkawire.compat.aiokafka._options import connection_options
from aiokafkawire.compat.aiokafka.admin.config_resource import ConfigResource
from aiokafkawire.compat.aiokafka.admin.new_partitions import NewPartitions
from aiokafkawire.compat.aiokafka.admin.new_topic import NewTopic
from aiokafkawire.compat.aiokafka.admin.records_to_delete import RecordsToDelete
from aiokafkawire.compat.aiokafka.structs import OffsetAndMetadata
from aiokafkawire.errors import BrokerResponseError, KafkaError
from aiokafkawire.structs import TopicPartition

__all__ = ["AIOKafkaAdminClient", "Response"]


class Response:
    """A broker answer as aiokafka hands it out: ``to_object()`` is its dictionary."""

    def __init__(self, api: str, fields: dict[str, Any]) -> None:
        self._api = api
        self._fields = fields

    def to_object(self) -> dict[str, Any]:
        """The answer as a dictionary (a copy)."""
        return copy.deepcopy(self._fields)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_fields"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return f"{self._api}({self._fields!r})"


def _code(error: KafkaError | None) -> int:
    if error is None:
        return 0
    return error.code if isinstance(error, BrokerResponseError) else -1


def _message(error: KafkaError | None) -> str | None:
    return None if error is None else error.message or None


def _topic_errors(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per-topic ``{topic, error_code, error_message}`` as CreateTopics/CreatePartitions answer."""
    return [
        {"topic": name, "error_code": _code(r.error), "error_message": _message(r.error)}
        for name, r in results.items()
    ]


class AIOKafkaAdminClient:  # long: aiokafka's admin API, each call a delegation and a reshape
    """aiokafka's admin client, with aiokafka's arguments and return shapes."""

    def __init__(
        self,
        *,
        loop: Any = None,
        bootstrap_servers: str | list[str] = "localhost",
        client_id: str = "aiokafka-0.14.0",
        request_timeout_ms: int = 40000,
        connections_max_idle_ms: int = 540000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300000,
        security_protocol: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        api_version: None = None,
        sasl_mechanism: str = "PLAIN",
        sasl_plain_username: str | None = None,
        sasl_plain_password: str | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        sasl_oauth_token_provider: Any = None,
    ) -> None:
        self._admin = Admin(**connection_options(locals()))
        # A dropped client's warning names what the user made, and how to stop it.
        self._admin._dropped_as = ("AIOKafkaAdminClient", "admin.close()")

    @property
    def native(self) -> Admin:
        """The aiokafkawire :class:`~aiokafkawire.Admin` doing the work."""
        return self._admin

    async def start(self) -> None:
        """Connect to the cluster."""
        await start_client(self._admin.start())

    async def close(self) -> None:
        """Close every connection."""
        await self._admin.close()

    async def __aenter__(self) -> AIOKafkaAdminClient:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ topics

    async def create_topics(
        self,
        new_topics: list[NewTopic],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> Response:
        """Create topics; per-topic errors are in ``to_object()["topic_errors"]``."""
        results = await self._admin.create_topics(
            [topic.native() for topic in new_topics],
            validate_only=validate_only,
            timeout_ms=timeout_ms,
            raise_on_error=False,
        )
        return Response(
            "CreateTopicsResponse",
            {
                "throttle_time_ms": 0,
                "topic_errors": _topic_errors(results),
            },
        )

    async def delete_topics(self, topics: list[str], timeout_ms: int | None = None) -> Response:
        """Delete topics; per-topic codes are in ``to_object()["topic_error_codes"]``."""
        results = await self._admin.delete_topics(
            topics, timeout_ms=timeout_ms, raise_on_error=False
        )
        return Response(
            "DeleteTopicsResponse",
            {
                "throttle_time_ms": 0,
                "topic_error_codes": [
                    {"topic": name, "error_code": _code(result.error)}
                    for name, result in results.items()
                ],
            },
        )

    async def create_partitions(
        self,
        topic_partitions: dict[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> Response:
        """Grow topics to new total partition counts."""
        assignments = {
            name: list(spec.new_assignments)
            for name, spec in topic_partitions.items()
            if spec.new_assignments
        }
        results = await self._admin.create_partitions(
            {name: spec.total_count for name, spec in topic_partitions.items()},
            assignments=assignments or None,
            validate_only=validate_only,
            timeout_ms=timeout_ms,
            raise_on_error=False,
        )
        return Response(
            "CreatePartitionsResponse",
            {
                "throttle_time_ms": 0,
                "topic_errors": _topic_errors(results),
            },
        )

    async def list_topics(self) -> list[str]:
        """Every topic's name (internal ones included, as aiokafka)."""
        return await self._admin.list_topics(include_internal=True)

    async def describe_topics(self, topics: list[str] | None = None) -> list[dict[str, Any]]:
        """Each topic's partitions, as aiokafka's metadata dictionaries."""
        found = await self._admin.describe_topics(topics, raise_on_error=False)
        return [
            {
                "error_code": info.error_code,
                "topic": name,
                "is_internal": info.is_internal,
                "partitions": [
                    {
                        "error_code": part.error_code,
                        "partition": part.partition,
                        "leader": part.leader,
                        "replicas": list(part.replicas),
                        "isr": list(part.isr),
                        "offline_replicas": list(part.offline_replicas),
                    }
                    for _, part in sorted(info.partitions.items())
                ],
            }
            for name, info in found.items()
        ]

    async def describe_cluster(self) -> dict[str, Any]:
        """The cluster's id, controller and brokers."""
        cluster = await self._admin.describe_cluster()
        return {
            "throttle_time_ms": 0,
            "brokers": [
                {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                for b in cluster.brokers
            ],
            "cluster_id": cluster.cluster_id,
            "controller_id": cluster.controller_id,
        }

    # ------------------------------------------------------------------ configs

    async def describe_configs(
        self, config_resources: list[ConfigResource], include_synonyms: bool = False
    ) -> list[Response]:
        """The configs of brokers and topics."""
        results = await self._admin.describe_configs(
            [resource.native() for resource in config_resources],
            include_synonyms=include_synonyms,
            raise_on_error=False,
        )
        resources = [
            {
                "error_code": _code(result.error),
                "error_message": _message(result.error),
                "resource_type": int(resource.type),
                "resource_name": resource.name,
                "config_entries": [
                    {
                        "config_names": entry.name,
                        "config_value": entry.value,
                        "read_only": entry.read_only,
                        "is_default": entry.is_default,
                        "is_sensitive": entry.is_sensitive,
                    }
                    for entry in (result.entries or {}).values()
                ],
            }
            for resource, result in results.items()
        ]
        return [
            Response("DescribeConfigsResponse", {"throttle_time_ms": 0, "resources": resources})
        ]

    async def alter_configs(self, config_resources: list[ConfigResource]) -> list[Response]:
        """Set the given configs (each resource's whole set, as AlterConfigs does)."""
        results = await self._admin.alter_configs(
            {resource.native(): dict(resource.configs or {}) for resource in config_resources},
            raise_on_error=False,
        )
        resources = [
            {
                "error_code": _code(result.error),
                "error_message": _message(result.error),
                "resource_type": int(resource.type),
                "resource_name": resource.name,
            }
            for resource, result in results.items()
        ]
        return [Response("AlterConfigsResponse", {"throttle_time_ms": 0, "resources": resources})]

    # ------------------------------------------------------------------ groups

    async def list_consumer_groups(
        self, broker_ids: list[int] | None = None
    ) -> list[tuple[str, str]]:
        """``(group_id, protocol_type)`` of every group."""
        listings = await self._admin.list_groups()
        return [(listing.group_id, listing.protocol_type) for listing in listings]

    async def describe_consumer_groups(
        self,
        group_ids: list[str],
        group_coordinator_id: int | None = None,
        include_authorized_operations: bool = False,
    ) -> list[Response]:
        """Each group's state and members."""
        found = await self._admin.describe_groups(group_ids, raise_on_error=False)
        return [
            Response(
                "DescribeGroupsResponse",
                {
                    "throttle_time_ms": 0,
                    "groups": [
                        {
                            "error_code": _code(group.error),
                            "group": group_id,
                            "state": group.state,
                            "protocol_type": group.protocol_type,
                            "protocol": group.protocol,
                            "members": [
                                {
                                    "member_id": member.member_id,
                                    "client_id": member.client_id,
                                    "client_host": member.client_host,
                                    "member_metadata": member.metadata,
                                    "member_assignment": member.assignment,
                                }
                                for member in group.members
                            ],
                        }
                    ],
                },
            )
            for group_id, group in found.items()
        ]

    async def list_consumer_group_offsets(
        self,
        group_id: str,
        group_coordinator_id: int | None = None,
        partitions: list[TopicPartition] | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets."""
        offsets = await self._admin.list_group_offsets(group_id, partitions)
        return {
            tp: OffsetAndMetadata(found.offset, found.metadata or "")
            for tp, found in offsets.items()
            if found.offset >= 0
        }

    async def find_coordinator(self, group_id: str, coordinator_type: int = 0) -> int:
        """The node id of the group's (0) or transactional id's (1) coordinator."""
        kind = "group" if coordinator_type == 0 else "transaction"
        return (await self._admin.find_coordinator(group_id, kind)).node_id

    # ------------------------------------------------------------------ records

    async def delete_records(
        self,
        records_to_delete: Mapping[TopicPartition, RecordsToDelete],
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, int]:
        """Delete records before the given offsets; each partition's new low watermark."""
        results = await self._admin.delete_records(
            {tp: spec.before_offset for tp, spec in records_to_delete.items()},
            timeout_ms=timeout_ms,
        )
        return {tp: low_watermark for tp, (low_watermark, _) in results.items()}
