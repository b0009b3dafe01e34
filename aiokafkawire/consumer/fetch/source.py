"""A per-broker source: the long-poll loop that fetches the partitions one broker serves.

Each broker that leads (or, KIP-392, is the preferred read replica of) an assigned partition
gets one :class:`BrokerSource` on its own "fetch" connection.  A source fetches the partitions
that have a known position, are not paused, are not in flight elsewhere and have fewer than
``MAX_CHUNKS_PER_PARTITION`` answers waiting in the buffer, so records are prefetched while the
user handles earlier ones but the buffer stays bounded.  It keeps the broker's fetch session and
applies each partition of an answer: new positions, diverging epochs, read-replica hints, errors.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from aiokafkawire import errors
from aiokafkawire._retry import retry_until_stopped
from aiokafkawire._waits import wait_event
from aiokafkawire.consumer.fetch.buffer import MAX_CHUNKS_PER_PARTITION, FetchedChunk
from aiokafkawire.consumer.fetch.config import RESET_TIMESTAMPS
from aiokafkawire.consumer.fetch.context import FetchContext
from aiokafkawire.consumer.fetch.decode import scan
from aiokafkawire.consumer.fetch.position_lookup import supports_validation
from aiokafkawire.consumer.fetch.request import (
    SESSION_VERSION,
    TOPIC_ID_VERSION,
    build_fetch_request,
)
from aiokafkawire.consumer.fetch.routing import (
    current_leader_epoch,
    refreshes_leader,
)
from aiokafkawire.consumer.fetch.session import FetchSession, PartitionPlan
from aiokafkawire.consumer.subscription import PartitionState
from aiokafkawire.protocol.messages import FetchRequest
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer")

__all__ = ["IDLE_RECHECK_S", "BrokerSource"]

#: How long an idle loop sleeps before looking at the assignment again without being woken.
IDLE_RECHECK_S = 1.0
_OUT_OF_RANGE = errors.OffsetOutOfRangeError.code
_FATAL_BACKOFF_FACTOR = 10  # a partition that failed for good is fetched again this much later


class BrokerSource:
    """Fetches from one broker: its fetch session, requests, and the answers' partitions."""

    def __init__(self, node: int, context: FetchContext) -> None:
        self.node = node
        self._ctx = context
        self.session = FetchSession()

    async def run(self) -> None:
        """The long-poll loop (until cancelled); a restarted loop opens a new session."""
        self.session.reset()
        backoff = self._ctx.config.backoff()
        while True:
            await retry_until_stopped(
                self._poll_once,
                should_retry=self._after_failure,
                backoff=backoff,
                what=f"fetch from broker {self.node}",
            )

    async def _poll_once(self) -> None:
        """One fetch of the partitions due, or a wait for some to become due."""
        ctx = self._ctx
        changed = ctx.subs.change_event()
        partitions = self.fetchable()
        if not partitions:
            await wait_event(changed, IDLE_RECHECK_S)
            if ctx.backoff_until:
                await asyncio.sleep(0)
            return
        tps = [tp for tp, _ in partitions]
        ctx.in_flight.update(tps)
        try:
            await self.fetch_once(partitions)
        finally:
            ctx.in_flight.difference_update(tps)

    def _after_failure(self, exc: BaseException) -> bool:
        """Whether to fetch again (after the backoff) when a whole fetch request failed.

        As the Java client's ``AbstractFetch``: a failed request or a request-level error is
        logged, the session starts over with a full fetch and metadata is looked up again (the
        leader may have moved); the fetch is tried again.  A broker without a Fetch version we
        speak, or anything but a :class:`KafkaError` (a bug), ends the loop for its supervisor.
        """
        if not isinstance(exc, errors.KafkaError) or isinstance(
            exc, errors.UnsupportedVersionForBrokerError
        ):
            return False
        level = logging.INFO if errors.retriable_in_background(exc) else logging.WARNING
        log.log(level, "fetch from broker %d failed: %s", self.node, exc)
        self.session.reset()
        self._ctx.cluster.request_update()
        return True

    def fetchable(self) -> list[tuple[TopicPartition, PartitionState]]:
        """The partitions this broker serves that are due for a fetch now."""
        ctx = self._ctx
        metadata = ctx.cluster.metadata
        now = time.monotonic()
        buffer = ctx.buffer
        in_flight = ctx.in_flight
        backoffs = ctx.backoff_until
        chosen = []
        for tp, state in ctx.subs.assignment.items():
            if (
                state.paused
                or state.held
                or state.fetch_position is None
                or state.awaiting_validation
            ):
                continue
            if tp in in_flight or buffer.waiting(tp) >= MAX_CHUNKS_PER_PARTITION:
                continue
            if ctx.replicas.source_node(tp, metadata, now) != self.node:
                continue
            backoff = backoffs.get(tp)
            if backoff is not None:
                # A seek (new version) ends the backoff at once.
                if backoff[0] > now and backoff[1] == state.version:
                    continue
                del backoffs[tp]
            chosen.append((tp, state))
        return chosen

    # ----------------------------------------------------------------- one fetch

    async def fetch_once(self, partitions: list[tuple[TopicPartition, PartitionState]]) -> None:
        """One Fetch request for ``partitions`` and its answer applied."""
        ctx = self._ctx
        config = ctx.config
        connection = await ctx.cluster.connection(self.node, "fetch")
        topic_ids = self._topic_ids(partitions)
        version = connection.versions.version_for(
            FetchRequest.API_KEY,
            max_version=None if topic_ids is not None else TOPIC_ID_VERSION - 1,
        )
        use_session = version >= SESSION_VERSION and config.fetch_sessions
        session = self.session
        if not use_session:
            session.reset()
        wanted, versions = self._plan(partitions)
        to_send, forgotten = session.plan(wanted) if use_session else (wanted, [])
        request = build_fetch_request(
            config, version, to_send, forgotten, session if use_session else None, topic_ids or {}
        )
        response = await connection.send(
            request, version, timeout_ms=config.request_timeout_ms + config.fetch_max_wait_ms
        )
        if version >= SESSION_VERSION and response.error_code:
            if response.error_code in errors.FETCH_SESSION_CODES:
                log.debug("fetch session with broker %d reset: %s", self.node, response.error_code)
                session.reset()
                return
            errors.raise_for_code(response.error_code, f"Fetch from broker {self.node}")
        if use_session:
            session.completed(response.session_id, wanted)
        names_by_id = {v: k for k, v in (topic_ids or {}).items()}
        got_data = False
        for topic in response.responses:
            name = topic.topic if version < TOPIC_ID_VERSION else names_by_id.get(topic.topic_id)
            if name is None:
                continue
            for data in topic.partitions:
                tp = TopicPartition(name, data.partition_index)
                plan = wanted.get(tp)
                if plan is None:
                    continue
                if self.handle_partition(tp, data, plan, versions[tp], version):
                    got_data = True
        if got_data:
            ctx.buffer.wake()

    def _topic_ids(
        self, partitions: list[tuple[TopicPartition, PartitionState]]
    ) -> dict[str, Any] | None:
        """The topic ids of the partitions' topics; None when one is unknown (fetch by name)."""
        metadata = self._ctx.cluster.metadata
        topic_ids: dict[str, Any] = {}
        complete = True
        for tp, _ in partitions:
            info = metadata.topics.get(tp.topic)
            topic_id = info.topic_id if info is not None else None
            if topic_id is None:
                complete = False
            else:
                topic_ids[tp.topic] = topic_id
        return topic_ids if complete else None

    def _plan(
        self, partitions: list[tuple[TopicPartition, PartitionState]]
    ) -> tuple[dict[TopicPartition, PartitionPlan], dict[TopicPartition, int]]:
        """Per partition what to ask for, and the state's version at the time of asking."""
        metadata = self._ctx.cluster.metadata
        max_bytes = self._ctx.config.max_partition_fetch_bytes
        wanted: dict[TopicPartition, PartitionPlan] = {}
        versions: dict[TopicPartition, int] = {}
        for tp, state in partitions:
            assert state.fetch_position is not None
            # The epoch of the last batch *fetched*, not consumed: with records still buffered,
            # the consumed one may be of an older epoch that ends before the fetch position, and
            # the broker would report a divergence that is not there.
            last_fetched = state.fetch_epoch
            wanted[tp] = (
                state.fetch_position,
                current_leader_epoch(metadata, tp),
                last_fetched if last_fetched is not None else -1,
                state.fetch_size or max_bytes,
            )
            versions[tp] = state.version
        return wanted, versions

    # ----------------------------------------------------------------- one partition's answer

    def handle_partition(
        self,
        tp: TopicPartition,
        data: Any,
        plan: PartitionPlan,
        version_at_request: int,
        fetch_version: int,
    ) -> bool:
        """Apply one partition of a fetch answer; True when records were buffered."""
        ctx = self._ctx
        state = ctx.subs.assignment.get(tp)
        if state is None:
            return False
        code = data.error_code
        if not code:
            # The log's offsets hold whatever position the request was for, and must be kept
            # even when its records are stale: in an incremental fetch session the broker
            # sends a partition again only once these change, so a high watermark dropped
            # here (a seek raced the answer) would stay unknown while the log is idle.
            self._note_offsets(state, data)
        fetch_offset = plan[0]
        if state.version != version_at_request or state.fetch_position != fetch_offset:
            return False
        if code:
            self._partition_error(tp, state, code)
            return False
        replica = getattr(data, "preferred_read_replica", -1)
        if replica is not None and replica >= 0 and replica != self.node:
            # The leader wants this partition read from a nearby follower (KIP-392); the leader
            # is asked again after metadata_max_age_ms or an error at the follower.
            ctx.replicas.prefer(tp, replica, ctx.cluster.metadata_max_age_ms / 1000)
            log.debug("%s: fetching from preferred read replica %d", tp, replica)
            ctx.subs.notify()
            return False
        diverging = getattr(data, "diverging_epoch", None)
        if (
            diverging is not None
            and diverging.epoch >= 0
            and 0 <= diverging.end_offset < fetch_offset
        ):
            self._diverged(tp, state, diverging)
            return False
        raw = data.records
        if not raw:
            return False
        return self._buffer_records(
            tp, state, raw, plan, getattr(data, "aborted_transactions", None)
        )

    @staticmethod
    def _note_offsets(state: PartitionState, data: Any) -> None:
        """Keep the high watermark, last stable offset and log start the broker reported."""
        if data.high_watermark >= 0:
            state.highwater = data.high_watermark
            state.last_poll_ms = int(time.time() * 1000)
        lso = getattr(data, "last_stable_offset", -1)
        if lso >= 0:
            state.last_stable_offset = lso
        log_start = getattr(data, "log_start_offset", -1)
        if log_start >= 0:
            state.log_start_offset = log_start

    def _diverged(self, tp: TopicPartition, state: PartitionState, diverging: Any) -> None:
        """The log diverged below the fetch position (KIP-320): fetch again from a safe place."""
        position = state.position
        if position is not None and position <= diverging.end_offset:
            # Only records fetched ahead and not handed out lie past the divergence: fetch
            # again from what the user consumed, skipping nothing.
            log.info(
                "log of %s diverged at epoch %d offset %d, past the position %d; "
                "fetching again from the position",
                tp,
                diverging.epoch,
                diverging.end_offset,
                position,
            )
            state.seek(position, state.leader_epoch)
        else:
            log.warning(
                "log of %s diverged at epoch %d; records consumed past offset %d were "
                "truncated; resuming there",
                tp,
                diverging.epoch,
                diverging.end_offset,
            )
            state.seek(diverging.end_offset, diverging.epoch)
        # Buffered chunks are stale now; dropped here, not left in front of the data the next
        # fetch brings (drain clears a partition's chunks behind a stale one).
        self._ctx.buffer.discard((tp,))
        self._ctx.subs.notify()

    def _buffer_records(
        self,
        tp: TopicPartition,
        state: PartitionState,
        raw: bytes,
        plan: PartitionPlan,
        aborted: list[Any] | None,
    ) -> bool:
        fetch_offset = plan[0]
        scanned = scan(raw, fetch_offset)
        if scanned.next_offset == fetch_offset:
            # Only a partial batch: it is larger than the size we asked for, so ask for more.
            current = plan[3]
            limit = max(self._ctx.config.fetch_max_bytes, current)
            state.fetch_size = min(max(current * 2, len(raw) * 2), max(limit, len(raw) * 2))
            log.info(
                "%s: a record batch exceeds %d bytes; fetching with %d",
                tp,
                current,
                state.fetch_size,
            )
            return False
        state.fetch_size = None
        state.fetch_position = scanned.next_offset
        if scanned.epoch is not None:
            state.fetch_epoch = scanned.epoch
        self._ctx.buffer.add(tp, FetchedChunk(scanned, aborted, fetch_offset, state.version))
        return True

    def _partition_error(self, tp: TopicPartition, state: PartitionState, code: int) -> None:
        ctx = self._ctx
        backoff = ctx.config.retry_backoff_s
        if ctx.replicas.forget(tp):
            # Whatever went wrong at the follower, the leader decides again.
            ctx.subs.notify()
            if code == _OUT_OF_RANGE:
                return
        if code == _OUT_OF_RANGE:
            self._out_of_range(tp, state)
            return
        if refreshes_leader(code):
            log.debug("fetch of %s: %s; refreshing metadata", tp, errors.error_for_code(code).name)
            ctx.cluster.request_update()
            if code in errors.LEADER_CHANGED_CODES:
                if state.leader_epoch is not None and supports_validation(ctx.cluster, tp):
                    state.awaiting_validation = True
            ctx.back_off(tp, state, backoff)
            return
        failure = errors.error_for_code(code)(f"fetching {tp}")
        if failure.retriable:
            ctx.back_off(tp, state, backoff)
            return
        log.error("fetching %s failed: %s", tp, failure)
        ctx.buffer.report(failure)
        ctx.back_off(tp, state, backoff * _FATAL_BACKOFF_FACTOR)

    def _out_of_range(self, tp: TopicPartition, state: PartitionState) -> None:
        ctx = self._ctx
        strategy = ctx.config.auto_offset_reset
        if strategy in RESET_TIMESTAMPS:
            log.info(
                "offset %s of %s is out of range; resetting to %s",
                state.fetch_position,
                tp,
                strategy,
            )
            # Records buffered before the bad offset stay valid; only the fetch restarts.
            ctx.buffer.discard((tp,))
            state.request_reset(strategy)
        else:
            error = errors.OffsetOutOfRangeClientError(
                f"fetch offset {state.fetch_position} of {tp} is out of range"
            )
            state.pending_error = error
            ctx.buffer.report(error)
            ctx.back_off(tp, state, 3600)
        ctx.subs.notify()
