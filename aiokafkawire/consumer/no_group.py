"""A subscription without a group: every partition of the subscribed topics is read.

As aiokafka and kafka-python do for a consumer without ``group_id``: no coordinator, no
commits.  :class:`NoGroupAssignment` assigns every partition of the subscribed topics (or of
the topics the pattern matches) that the metadata shows, and follows the metadata: partitions
added to a topic, and topics created that the pattern matches, are read from their
``auto_offset_reset`` position as soon as a refresh shows them.  A rebalance listener is told of
the changes as a group member's is (``on_partitions_assigned`` runs before anything of the new
partitions is fetched).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire._waits import wait_event
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.cluster.metadata import ClusterMetadata
from aiokafkawire.consumer.listener_calls import call_listener
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer")

__all__ = ["NoGroupAssignment"]

#: How often the metadata at hand is compared with the assignment (a refresh is not awaited).
_WATCH_INTERVAL_S = 0.5
_LOOP = "no-group-assignment"


class NoGroupAssignment:
    """Keeps the assignment equal to the subscribed topics' partitions (no group)."""

    def __init__(
        self,
        cluster: Cluster,
        subscription: SubscriptionState,
        discard_buffered: Callable[[Iterable[TopicPartition]], None],
    ) -> None:
        self._cluster = cluster
        self._subs = subscription
        self._discard_buffered = discard_buffered
        self._wakeup = asyncio.Event()
        self._seen: tuple[ClusterMetadata, frozenset[str], object] | None = None
        self._tasks = TaskSupervisor("consumer", self._task_failed)
        self._closed = False

    def start(self) -> None:
        """Start following the metadata."""
        self._tasks.start(_LOOP, self._run())

    def subscription_changed(self) -> None:
        """The subscribed topics (or pattern) changed: apply it now."""
        self._seen = None
        self._wakeup.set()

    async def close(self) -> None:
        """Stop following; the assignment stays as it is."""
        self._closed = True
        await self._tasks.stop()

    def _task_failed(self, name: object, exc: BaseException) -> None:
        if self._closed:
            return
        log.error("consumer task %s failed; restarting it", name, exc_info=exc)
        self._tasks.restart(_LOOP, self._run)

    async def _run(self) -> None:
        while True:
            self._wakeup.clear()
            await self.sync()
            await wait_event(self._wakeup, _WATCH_INTERVAL_S)

    def wanted(self) -> set[TopicPartition]:
        """Every partition of the subscribed topics in the metadata at hand."""
        topics = self._cluster.metadata.topics
        wanted: set[TopicPartition] = set()
        for topic in self._subs.matching_topics(topics):
            info = topics.get(topic)
            if info is not None and not info.error_code:
                wanted.update(TopicPartition(topic, p) for p in info.partitions)
        return wanted

    async def sync(self) -> None:
        """Assign what is new (held until the listener returns), revoke what is gone."""
        subs = self._subs
        metadata = self._cluster.metadata
        last = self._seen
        if (
            last is not None
            and last[0] is metadata
            and last[1] == subs.topics
            and last[2] is subs.pattern
        ):
            return
        self._seen = (metadata, frozenset(subs.topics), subs.pattern)
        wanted = self.wanted()
        owned = set(subs.assignment)
        # A topic missing from one answer (an error, a leader election) keeps its partitions;
        # only topics no longer subscribed (or no longer matched) are given up.
        still = subs.matching_topics(metadata.topics)
        gone = {tp for tp in owned - wanted if tp.topic not in still}
        added = wanted - owned
        if gone:
            subs.hold(gone)
            self._discard_buffered(gone)
            await call_listener(subs.listener, "on_partitions_revoked", gone, "consumer")
            subs.remove_partitions(gone)
        if added:
            log.info("consumer without a group: reading %s", sorted(added))
            subs.add_partitions(added, held=True)
            try:
                await call_listener(subs.listener, "on_partitions_assigned", added, "consumer")
            finally:
                subs.release(added)
