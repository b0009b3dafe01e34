"""Small value types shared by every layer of the client."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TopicPartition"]


class TopicPartition(NamedTuple):
    """One partition of one topic; hashable and ordered by (topic, partition)."""

    topic: str
    partition: int
