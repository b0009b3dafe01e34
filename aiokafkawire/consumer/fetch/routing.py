"""Which broker serves a partition's fetches: its leader, or a preferred read replica (KIP-392).

Also the leader facts the fetch path reads from the metadata (current leader epoch) and the
partition errors after which the leader must be looked up again.
"""

from __future__ import annotations

import time
from typing import Any

from aiokafkawire import errors
from aiokafkawire.structs import TopicPartition

__all__ = ["ReadReplicas", "current_leader_epoch", "refreshes_leader"]


def refreshes_leader(code: int) -> bool:
    """Whether a partition error means: refresh metadata, then fetch from the leader again."""
    return (
        errors.action_for(code) is errors.ErrorAction.REFRESH_METADATA
        or code in errors.STALE_LEADER_CODES
    )


def current_leader_epoch(metadata: Any, tp: TopicPartition) -> int:
    """The partition's leader epoch in ``metadata`` (-1 when unknown)."""
    info = metadata.topics.get(tp.topic)
    if info is None:
        return -1
    partition = info.partitions.get(tp.partition)
    return partition.leader_epoch if partition is not None else -1


class ReadReplicas:
    """Partitions the leader told us to fetch from a follower, each until a deadline."""

    __slots__ = ("_replicas",)

    def __init__(self) -> None:
        self._replicas: dict[TopicPartition, tuple[int, float]] = {}

    def source_node(self, tp: TopicPartition, metadata: Any, now: float) -> int | None:
        """The broker to fetch ``tp`` from: a preferred read replica or the leader."""
        replica = self._replicas.get(tp)
        if replica is not None:
            if replica[1] > now and replica[0] in metadata.brokers:
                return replica[0]
            del self._replicas[tp]
        leader: int | None = metadata.leader_for(tp.topic, tp.partition)
        return leader

    def prefer(self, tp: TopicPartition, replica: int, for_seconds: float) -> None:
        """Fetch ``tp`` from ``replica`` for a while (the leader is asked again afterwards)."""
        self._replicas[tp] = (replica, time.monotonic() + for_seconds)

    def forget(self, tp: TopicPartition) -> bool:
        """Back to the leader for ``tp``; True when a replica was in use."""
        return self._replicas.pop(tp, None) is not None
