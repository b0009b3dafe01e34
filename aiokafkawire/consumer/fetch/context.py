"""What the fetch path's parts share: the cluster, the positions, the buffer and the routing."""

from __future__ import annotations

import time

from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.fetch.buffer import FetchBuffer
from aiokafkawire.consumer.fetch.config import FetchConfig
from aiokafkawire.consumer.fetch.routing import ReadReplicas
from aiokafkawire.consumer.subscription import PartitionState, SubscriptionState
from aiokafkawire.structs import TopicPartition

__all__ = ["FetchContext"]


class FetchContext:
    """What the fetcher's parts share: the cluster, the positions, the buffer and the routing."""

    __slots__ = ("backoff_until", "buffer", "cluster", "config", "in_flight", "replicas", "subs")

    def __init__(
        self,
        cluster: Cluster,
        subscription: SubscriptionState,
        config: FetchConfig,
        buffer: FetchBuffer,
    ) -> None:
        self.cluster = cluster
        self.subs = subscription
        self.config = config
        self.buffer = buffer
        self.replicas = ReadReplicas()
        #: Partitions in a fetch on its way (by any source).
        self.in_flight: set[TopicPartition] = set()
        #: Partitions not to fetch before a time, unless seeked since (the state's version).
        self.backoff_until: dict[TopicPartition, tuple[float, int]] = {}

    def back_off(self, tp: TopicPartition, state: PartitionState, seconds: float) -> None:
        """Leave ``tp`` alone for ``seconds`` (a seek ends that at once)."""
        self.backoff_until[tp] = (time.monotonic() + seconds, state.version)
