"""``aiokafka.coordinator.assignors.range``."""

from __future__ import annotations

from aiokafkawire.compat.aiokafka.coordinator.assignors.abstract import BuiltinAssignor

__all__ = ["RangePartitionAssignor"]


class RangePartitionAssignor(BuiltinAssignor):
    """Each topic's partitions split into contiguous ranges, one per member."""

    name = "range"
    native_name = "range"
