"""``aiokafka.admin.config_resource``."""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum

from aiokafkawire.admin import ConfigResource as NativeConfigResource
from aiokafkawire.admin import ResourceType

__all__ = ["ConfigResource", "ConfigResourceType"]


class ConfigResourceType(IntEnum):
    """The kinds of config resource aiokafka names (Kafka's resource type codes)."""

    BROKER = 4
    TOPIC = 2


class ConfigResource:
    """A broker or topic whose configs to describe, or to alter to ``configs``."""

    def __init__(
        self,
        resource_type: ConfigResourceType | str | int,
        name: str,
        configs: Mapping[str, str | None] | None = None,
    ) -> None:
        if isinstance(resource_type, str):
            resource_type = ConfigResourceType[resource_type.upper()]
        self.resource_type = ConfigResourceType(resource_type)
        self.name = name
        self.configs = configs

    def native(self) -> NativeConfigResource:
        """aiokafkawire's :class:`~aiokafkawire.ConfigResource` for the same resource."""
        return NativeConfigResource(ResourceType(int(self.resource_type)), self.name)
