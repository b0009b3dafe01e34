"""``aiokafka.admin``: the admin client and its request types."""

from __future__ import annotations

from aiokafkawire.compat.aiokafka.admin.client import AIOKafkaAdminClient
from aiokafkawire.compat.aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafkawire.compat.aiokafka.admin.new_partitions import NewPartitions
from aiokafkawire.compat.aiokafka.admin.new_topic import NewTopic
from aiokafkawire.compat.aiokafka.admin.records_to_delete import RecordsToDelete

__all__ = [
    "AIOKafkaAdminClient",
    "ConfigResource",
    "ConfigResourceType",
    "NewPartitions",
    "NewTopic",
    "RecordsToDelete",
]
