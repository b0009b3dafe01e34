"""The fetcher: owns the fetch path's parts, wires them and supervises their loops.

``Consumer`` -> :class:`~.position_lookup.PositionLookup` (resets, KIP-320 validation) -> one
:class:`~.source.BrokerSource` per broker (fetch session, requests, long poll, read replicas)
-> :mod:`.decode` (bytes to records) -> :class:`~.buffer.FetchBuffer` (what ``getmany`` drains).

A dispatch loop resolves unknown positions, validates positions after leader changes and starts
a source for every broker that serves an assigned partition.  Sources live in a registry keyed
by node id; a failed loop is restarted by that key, never by parsing a task name.
"""

from __future__ import annotations

import logging
import time

from aiokafkawire import errors
from aiokafkawire._retry import retry_until_stopped
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire._waits import wait_event
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.fetch.buffer import FetchBuffer
from aiokafkawire.consumer.fetch.config import FetchConfig
from aiokafkawire.consumer.fetch.context import FetchContext
from aiokafkawire.consumer.fetch.decode import RecordDecoder
from aiokafkawire.consumer.fetch.position_lookup import CommittedLookup, PositionLookup
from aiokafkawire.consumer.fetch.source import IDLE_RECHECK_S, BrokerSource
from aiokafkawire.consumer.subscription import SubscriptionState

log = logging.getLogger("aiokafkawire.consumer")

__all__ = ["Fetcher"]

_DISPATCH = "dispatch"
_SOURCE = "fetch"  # task keys of sources: (_SOURCE, node id), named "fetcher:fetch-<node>"


class Fetcher:
    """Fetches records of the assigned partitions into a bounded buffer."""

    def __init__(
        self,
        cluster: Cluster,
        subscription: SubscriptionState,
        config: FetchConfig,
        committed_lookup: CommittedLookup | None = None,
    ) -> None:
        self._cluster = cluster
        self._subs = subscription
        self._config = config
        self.buffer = FetchBuffer(subscription, RecordDecoder(config))
        self._context = FetchContext(cluster, subscription, config, self.buffer)
        self.position_lookup = PositionLookup(self._context, committed_lookup)
        # The user's side is the buffer's and the positions' own methods.
        self.data_event = self.buffer.data_event
        self.has_data = self.buffer.has_data
        self.drain = self.buffer.drain
        self.apply_position = self.buffer.apply_position
        self.apply_offset = self.buffer.apply_offset
        self.discard = self.buffer.discard
        self.list_offsets = self.position_lookup.list_offsets
        self._sources: dict[int, BrokerSource] = {}
        self._tasks = TaskSupervisor("fetcher", self._task_failed)
        self._closed = False
        self._reported: errors.KafkaError | None = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Start the dispatch loop (sources follow as partitions need them)."""
        self._tasks.start(_DISPATCH, self._dispatch_loop())

    async def close(self) -> None:
        """Stop every loop and drop the buffer."""
        self._closed = True
        await self._tasks.stop()
        self.buffer.close()

    def _task_failed(self, key: object, exc: BaseException) -> None:
        if self._closed:
            return
        log.error("fetcher task %s failed; restarting it", key, exc_info=exc)
        if key == _DISPATCH:
            self._tasks.restart(key, self._dispatch_loop)
        elif isinstance(key, tuple) and key[0] == _SOURCE:
            self._tasks.restart(key, self._sources[key[1]].run)

    # ----------------------------------------------------------------- dispatch

    async def _dispatch_loop(self) -> None:
        backoff = self._config.backoff()
        recheck = self._config.retry_backoff_s
        while True:
            changed = self._subs.change_event()
            await retry_until_stopped(
                self._resolve_positions,
                should_retry=self._retry_or_report,
                backoff=backoff,
                what="resolving consumer positions",
            )
            needs_retry = self._start_sources()
            await wait_event(changed, recheck if needs_retry else IDLE_RECHECK_S)

    async def _resolve_positions(self) -> None:
        await self.position_lookup.resolve()
        await self.position_lookup.validate()

    def _retry_or_report(self, exc: BaseException) -> bool:
        """Whether to try resolving positions again after ``exc`` (always, for a KafkaError).

        As the Java client's ``OffsetFetcher`` (``onFailedResponseForResettingPositions``): a
        retriable error is retried quietly; any other one (an authorization failure, say) is
        handed to the user by the next ``getmany`` as the typed error it is, and the positions
        are asked for again after the backoff (the cause may be fixed meanwhile).  One such
        error waits for the user at a time.  Anything but a :class:`KafkaError` is a bug: it
        ends the loop, and its supervisor restarts it.
        """
        if not isinstance(exc, errors.KafkaError):
            return False
        if errors.retriable_in_background(exc):
            return True
        if self._reported is not None and self.buffer.holds(self._reported):
            log.debug("resolving consumer positions failed again: %s", exc)
            return True
        log.error("resolving consumer positions failed: %s", exc)
        self._reported = exc
        self.buffer.report(exc)
        return True

    def _start_sources(self) -> bool:
        """Start a source for each broker serving a partition; True when some must wait."""
        metadata = self._cluster.metadata
        now = time.monotonic()
        needs_retry = False
        for tp, state in self._subs.assignment.items():
            if state.held:
                continue  # released with a notify, which wakes the dispatch loop
            if state.position is None or state.awaiting_validation:
                needs_retry = True
                continue
            node = self._context.replicas.source_node(tp, metadata, now)
            if node is None:
                self._cluster.request_update()
                needs_retry = True
                continue
            if node not in self._sources:
                source = self._sources[node] = BrokerSource(node, self._context)
                self._tasks.start((_SOURCE, node), source.run())
        return needs_retry
