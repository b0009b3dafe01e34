"""``aiokafka.admin.new_partitions``."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["NewPartitions"]


class NewPartitions:
    """The new total partition count of a topic, with replicas for the added ones if wanted."""

    def __init__(
        self, total_count: int, new_assignments: Sequence[Sequence[int]] | None = None
    ) -> None:
        self.total_count = total_count
        self.new_assignments = new_assignments
