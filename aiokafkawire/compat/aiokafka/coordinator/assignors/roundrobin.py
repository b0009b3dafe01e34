"""``aiokafka.coordinator.assignors.roundrobin``."""

from __future__ import annotations

from aiokafkawire.compat.aiokafka.coordinator.assignors.abstract import BuiltinAssignor

__all__ = ["RoundRobinPartitionAssignor"]


class RoundRobinPartitionAssignor(BuiltinAssignor):
    """Partitions of all subscribed topics dealt to members in turn (aiokafka's default)."""

    name = "roundrobin"
    native_name = "roundrobin"
