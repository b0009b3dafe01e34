"""Small value types shared by every layer of the client."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["OffsetAndMetadata", "TopicPartition"]


class TopicPartition(NamedTuple):
    """One partition of one topic; hashable and ordered by (topic, partition)."""

    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    """A committed (or to-be-committed) position: the offset of the *next* record to read.

    ``leader_epoch`` is the epoch of the last record read (None when unknown).  The consumer's
    commits and the producer's ``send_offsets_to_transaction`` both take it.
    """

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None
