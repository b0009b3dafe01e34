"""``aiokafka.coordinator.assignors.sticky.sticky_assignor``."""

from __future__ import annotations

from aiokafkawire.compat.aiokafka.coordinator.assignors.abstract import BuiltinAssignor

__all__ = ["StickyPartitionAssignor"]


class StickyPartitionAssignor(BuiltinAssignor):
    """Balanced, and moves as few partitions as possible between rebalances.

    In a consumer it is aiokafkawire's sticky assignor (with the member state the protocol
    needs); called directly, ``assign`` has no previous assignment to keep.
    """

    name = "sticky"
    native_name = "sticky"
    generation = -1

    @classmethod
    def on_generation_assignment(cls, generation: int) -> None:
        """Remember the group generation of the last assignment (aiokafka's hook)."""
        cls.generation = generation
