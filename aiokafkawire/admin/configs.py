"""Configuration of topics, brokers, broker loggers and groups: describe and alter."""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore
from aiokafkawire.admin._items import error_or_none, item_results
from aiokafkawire.protocol.messages import (
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
)
from aiokafkawire.protocol.messages import describe_configs as m_describe_configs
from aiokafkawire.protocol.messages import incremental_alter_configs as m_alter_configs

# DescribeConfigs' config_source value for a default a broker (not the user) set.
_DEFAULT_CONFIG_SOURCE = 5
#: ListConfigResources names the resource types from v1 (KIP-1142, Kafka 4.1); v0 is Kafka
#: 3.7's ListClientMetricsResources, which lists client metrics subscriptions only.
_RESOURCE_TYPES_VERSION = 1


class ResourceType(enum.IntEnum):
    """Config resource types."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    #: Client metrics subscriptions (KIP-714: ``metrics``, ``interval.ms``, ``match``); the
    #: resource name is the subscription's.  Kafka 3.7+.
    CLIENT_METRICS = 16
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
    """A topic, broker, broker logger, group or client metrics subscription whose
    configuration is described, altered or listed."""

    type: ResourceType
    name: str


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


_ConfigChange = str | tuple[AlterOp, str | None] | None


def _by_target(resources: Iterable[ConfigResource]) -> dict[int | None, list[ConfigResource]]:
    """Resources per broker their request must go to (None: any broker).

    Broker and broker-logger configs are only known to that broker itself.
    """
    grouped: dict[int | None, list[ConfigResource]] = defaultdict(list)
    for resource in resources:
        broker_only = resource.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER)
        grouped[int(resource.name) if broker_only else None].append(resource)
    return grouped


def _entry(c: Any) -> ConfigEntry:
    """A DescribeConfigs answer's config as a :class:`ConfigEntry`."""
    source = getattr(c, "config_source", -1)
    return ConfigEntry(
        name=c.name,
        value=c.value,
        read_only=c.read_only,
        is_default=bool(getattr(c, "is_default", False)) or source == _DEFAULT_CONFIG_SOURCE,
        is_sensitive=c.is_sensitive,
        source=source,
    )


def _alterable(name: str, change: _ConfigChange) -> m_alter_configs.AlterableConfig:
    """One change: a value sets, None deletes, ``(op, value)`` names the operation."""
    if isinstance(change, tuple):
        op, value = change
    else:
        op, value = (AlterOp.DELETE, None) if change is None else (AlterOp.SET, change)
    return m_alter_configs.AlterableConfig(name=name, config_operation=int(op), value=value)


class ConfigCalls(AdminCore):
    """Admin calls about configuration."""

    async def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        include_synonyms: bool = False,
        raise_on_error: bool = True,
    ) -> dict[ConfigResource, ConfigResult]:
        """The configuration of resources: topics, brokers and broker loggers (those go to that
        broker), groups (Kafka 4.0+) and client metrics subscriptions (Kafka 3.7+)."""
        self._check()
        results: dict[ConfigResource, ConfigResult] = {}
        for target, group in _by_target(resources).items():
            request = DescribeConfigsRequest(
                resources=[
                    m_describe_configs.DescribeConfigsResource(
                        resource_type=int(r.type), resource_name=r.name, configuration_keys=None
                    )
                    for r in group
                ],
            )
            request.include_synonyms = include_synonyms
            response = await self._send_to(target, request)
            for item in response.results:
                resource = ConfigResource(ResourceType(item.resource_type), item.resource_name)
                entries = {c.name: _entry(c) for c in item.configs}
                results[resource] = ConfigResult(
                    resource, entries, error_or_none(item.error_code, item.error_message)
                )
        return item_results("describe_configs", results, raise_on_error)

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
        results: dict[ConfigResource, ConfigResult] = {}
        for target, group in _by_target(changes).items():
            items = [
                m_alter_configs.AlterConfigsResource(
                    resource_type=int(resource.type),
                    resource_name=resource.name,
                    configs=[_alterable(n, c) for n, c in changes[resource].items()],
                )
                for resource in group
            ]
            request = IncrementalAlterConfigsRequest(resources=items, validate_only=validate_only)
            response = await self._send_to(target, request)
            for item in response.responses:
                resource = ConfigResource(ResourceType(item.resource_type), item.resource_name)
                results[resource] = ConfigResult(
                    resource, {}, error_or_none(item.error_code, item.error_message)
                )
        return item_results("alter_configs", results, raise_on_error)

    async def list_config_resources(
        self, types: Iterable[ResourceType] | None = None
    ) -> list[ConfigResource]:
        """The resources that have configurations, of ``types`` (every type the broker lists
        when None or empty), sorted: ListConfigResources (KIP-1142, Kafka 4.1+).

        A Kafka 3.7-4.0 broker lists client metrics subscriptions only (its
        ListClientMetricsResources, KIP-714): asking it for other types raises
        :class:`~aiokafkawire.errors.UnsupportedVersionForBrokerError`, as the Java client does.
        """
        self._check()
        wanted = sorted({ResourceType(t) for t in types or ()})
        connection = await self._cluster.any_connection()
        api = ListConfigResourcesRequest.API_KEY
        if not connection.versions.supports(api):
            raise errors.UnsupportedVersionForBrokerError(
                "listing config resources needs ListConfigResources (Kafka 4.1+; Kafka 3.7+ "
                "lists client metrics subscriptions)"
            )
        version = connection.versions.version_for(api)
        if version < _RESOURCE_TYPES_VERSION and wanted != [ResourceType.CLIENT_METRICS]:
            raise errors.UnsupportedVersionForBrokerError(
                f"broker {connection.host}:{connection.port} lists client metrics resources only "
                "(ListConfigResources v0); types=[ResourceType.CLIENT_METRICS] is all it can list"
            )
        request = ListConfigResourcesRequest()
        if version >= _RESOURCE_TYPES_VERSION:
            request.resource_types = [int(t) for t in wanted]
        response = await connection.send(request, version)
        errors.raise_for_code(response.error_code, "ListConfigResources")
        known = {int(t) for t in ResourceType}
        return sorted(
            (
                ConfigResource(ResourceType(r.resource_type), r.resource_name)
                for r in response.config_resources
                if r.resource_type in known  # a type newer than this client: not one to name
            ),
            key=lambda r: (int(r.type), r.name),
        )
