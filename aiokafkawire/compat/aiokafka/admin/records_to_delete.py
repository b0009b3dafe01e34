"""``aiokafka.admin.records_to_delete``."""

from __future__ import annotations

__all__ = ["RecordsToDelete"]


class RecordsToDelete:
    """Delete a partition's records before ``before_offset``."""

    def __init__(self, before_offset: int) -> None:
        self.before_offset = before_offset
