"""The fetcher: one long-poll loop per leader broker, a bounded prefetch buffer, offset lookups.

Each broker that leads an assigned partition gets its own loop on its own ("fetch") connection.
A loop fetches the partitions that have a known position, are not paused and have fewer than
``_MAX_CHUNKS_PER_PARTITION`` fetched responses waiting, so records are prefetched while the user
handles earlier ones but the buffer stays bounded.  Fetched data is decoded once, in one pass, into
:class:`ConsumerRecord` tuples; positions advance only when records are handed out by
:meth:`Fetcher.drain`.

A dispatch loop resolves unknown positions (committed offset, else ``auto_offset_reset`` through
ListOffsets), validates positions after leader changes (OffsetForLeaderEpoch) and starts the
per-broker loops.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import heapq
import logging
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer._waits import wait_event
from aiokafkawire.consumer.records import ConsumerRecord, OffsetAndMetadata
from aiokafkawire.consumer.subscription import PartitionState, SubscriptionState
from aiokafkawire.protocol.messages import (
    FetchRequest,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
)
from aiokafkawire.protocol.messages.fetch import FetchPartition, FetchTopic, ForgottenTopic
from aiokafkawire.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsTopic
from aiokafkawire.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from aiokafkawire.protocol.records import ControlRecordType, iter_batches
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer")

__all__ = ["FetchConfig", "Fetcher", "PositionUpdate"]

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
_RESET_TIMESTAMPS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}
_MAX_CHUNKS_PER_PARTITION = 2
_IDLE_RECHECK_S = 1.0
_TOPIC_ID_FETCH_VERSION = 13
_OFFSET_FOR_LEADER_EPOCH_KEY = 23

# Partition errors after which the leader must be looked up again.
_METADATA_ERRORS = frozenset(
    cls.code
    for cls in (
        errors.NotLeaderOrFollowerError,
        errors.UnknownTopicOrPartitionError,
        errors.LeaderNotAvailableError,
        errors.FencedLeaderEpochError,
        errors.UnknownLeaderEpochError,
        errors.KafkaStorageErrorError,
        errors.OffsetNotAvailableError,
        errors.NotCoordinatorError,
        errors.FetchSessionTopicIdErrorError,
    )
)
_SESSION_ERRORS = frozenset(
    (errors.FetchSessionIdNotFoundError.code, errors.InvalidFetchSessionEpochError.code)
)

CommittedLookup = Callable[
    [list[TopicPartition]], Awaitable[dict[TopicPartition, OffsetAndMetadata | None]]
]


class FetchConfig:
    """The fetch-related consumer options."""

    __slots__ = (
        "auto_offset_reset",
        "check_crcs",
        "client_rack",
        "fetch_max_bytes",
        "fetch_max_wait_ms",
        "fetch_min_bytes",
        "fetch_sessions",
        "isolation_level",
        "key_deserializer",
        "max_partition_fetch_bytes",
        "request_timeout_ms",
        "retry_backoff_ms",
        "value_deserializer",
    )

    def __init__(
        self,
        *,
        auto_offset_reset: str = "latest",
        check_crcs: bool = True,
        client_rack: str = "",
        fetch_max_bytes: int = 52_428_800,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_sessions: bool = True,
        isolation_level: str = "read_uncommitted",
        key_deserializer: Callable[[bytes | None], Any] | None = None,
        value_deserializer: Callable[[bytes | None], Any] | None = None,
        max_partition_fetch_bytes: int = 1_048_576,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.auto_offset_reset = auto_offset_reset
        self.check_crcs = check_crcs
        self.client_rack = client_rack
        self.fetch_max_bytes = fetch_max_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_sessions = fetch_sessions
        self.isolation_level = isolation_level
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms

    @property
    def read_committed(self) -> bool:
        """Whether aborted transactional records are filtered out."""
        return self.isolation_level == "read_committed"


class PositionUpdate(NamedTuple):
    """A partition's position after a drained run of records."""

    offset: int
    leader_epoch: int | None
    version: int


class _Chunk:
    """Records of one partition from one fetch response, handed out progressively.

    The raw bytes are decoded on first use (in :meth:`Fetcher.drain`), so the next fetch of the
    partition is already on the wire while this one is decoded.
    """

    __slots__ = (
        "aborted",
        "index",
        "last_epoch",
        "next_offset",
        "raw",
        "records",
        "start_offset",
        "version",
    )

    def __init__(
        self,
        raw: bytes,
        aborted: list[Any] | None,
        start_offset: int,
        next_offset: int,
        version: int,
    ) -> None:
        self.raw: bytes | None = raw
        self.aborted = aborted
        self.records: list[ConsumerRecord] | None = None
        self.index = 0
        self.start_offset = start_offset
        self.next_offset = next_offset
        self.version = version
        self.last_epoch: int | None = None


class _FetchSession:
    """Client side of a KIP-227 incremental fetch session with one broker."""

    __slots__ = ("epoch", "id", "sent")

    def __init__(self) -> None:
        self.id = 0
        self.epoch = 0
        self.sent: dict[TopicPartition, tuple[int, int, int, int]] = {}

    def reset(self) -> None:
        """Start over with a full fetch request (a new session)."""
        self.id = 0
        self.epoch = 0
        self.sent = {}

    def plan(
        self, wanted: dict[TopicPartition, tuple[int, int, int, int]]
    ) -> tuple[dict[TopicPartition, tuple[int, int, int, int]], list[TopicPartition]]:
        """What to put in the next request: (partitions to send, partitions to forget)."""
        if self.id == 0:
            return dict(wanted), []
        changed = {tp: v for tp, v in wanted.items() if self.sent.get(tp) != v}
        forgotten = [tp for tp in self.sent if tp not in wanted]
        return changed, forgotten

    def completed(
        self, response_session_id: int, wanted: dict[TopicPartition, tuple[int, int, int, int]]
    ) -> None:
        """A response arrived: remember the session and what the broker now caches."""
        if response_session_id == 0:
            self.reset()
            return
        if self.id != response_session_id:
            self.id = response_session_id
            self.epoch = 1
        else:
            self.epoch = self.epoch + 1 if self.epoch < 2**31 - 1 else 1
        self.sent = dict(wanted)


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
        self.committed_lookup = committed_lookup
        self._buffer: dict[TopicPartition, deque[_Chunk]] = {}
        self._in_flight: set[TopicPartition] = set()
        self._backoff_until: dict[TopicPartition, tuple[float, int]] = {}
        # KIP-392: partitions the leader told us to fetch from a follower, until a deadline.
        self._read_replicas: dict[TopicPartition, tuple[int, float]] = {}
        self._errors: deque[Exception] = deque()
        self._data_event = asyncio.Event()
        self._node_loops: set[int] = set()
        self._tasks = TaskSupervisor("fetcher", self._task_failed)
        self._closed = False
        self._fatal: BaseException | None = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Start the dispatch loop (per-broker loops follow as partitions need them)."""
        self._tasks.start("dispatch", self._dispatch_loop())

    async def close(self) -> None:
        """Stop every loop and drop the buffer."""
        self._closed = True
        await self._tasks.stop()
        self._buffer.clear()
        self._data_event.set()

    def _task_failed(self, name: str, exc: BaseException) -> None:
        if self._closed:
            return
        log.error("fetcher task %s failed; restarting it", name, exc_info=exc)
        if name == "dispatch":
            self._tasks.restart(name, self._dispatch_loop)
        elif name.startswith("fetch-"):
            node = int(name[6:])
            self._tasks.restart(name, functools.partial(self._node_loop, node))

    # ----------------------------------------------------------------- buffer (user side)

    def data_event(self) -> asyncio.Event:
        """Set whenever records (or an error) may be available."""
        return self._data_event

    def has_data(self, partitions: Iterable[TopicPartition] | None = None) -> bool:
        """Whether :meth:`drain` would return something now (cheap check)."""
        if self._errors:
            return True
        wanted = None if partitions is None else set(partitions)
        assignment = self._subs.assignment
        for tp, chunks in self._buffer.items():
            if wanted is not None and tp not in wanted:
                continue
            state = assignment.get(tp)
            if state is not None and not state.paused and chunks:
                return True
        return False

    def drain(
        self,
        max_records: int,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        advance: bool = True,
    ) -> tuple[dict[TopicPartition, list[ConsumerRecord]], dict[TopicPartition, PositionUpdate]]:
        """Take up to ``max_records`` buffered records out of the buffer.

        Returns the records per partition and, per partition, the position after them (the
        next offset, the leader epoch and the partition state's version).  With ``advance`` the
        positions are applied at once; otherwise the caller applies them as it hands records
        out (see :meth:`apply_position`).  Raises a pending partition error first (e.g. offset
        out of range with no reset policy).
        """
        if self._errors:
            raise self._errors.popleft()
        wanted = None if partitions is None else set(partitions)
        assignment = self._subs.assignment
        result: dict[TopicPartition, list[ConsumerRecord]] = {}
        ends: dict[TopicPartition, PositionUpdate] = {}
        remaining = max_records
        freed = False
        for tp in list(self._buffer):
            if remaining <= 0:
                break
            if wanted is not None and tp not in wanted:
                continue
            chunks = self._buffer[tp]
            state = assignment.get(tp)
            if state is None:
                del self._buffer[tp]
                freed = True
                continue
            if state.paused:
                continue
            position = state.position
            epoch = state.leader_epoch
            taken: list[ConsumerRecord] | None = None
            while chunks:
                chunk = chunks[0]
                if chunk.version != state.version or chunk.start_offset != position:
                    chunks.clear()  # stale: the position moved since this was fetched
                    break
                records = chunk.records
                if records is None:
                    try:
                        records = self._materialize(tp, chunk)
                    except Exception:
                        # Fetch again from the position: the error repeats until the user seeks.
                        del self._buffer[tp]
                        if position is not None:
                            state.seek(position, epoch)
                        self._subs.notify()
                        raise
                index = chunk.index
                left = len(records) - index
                if left > remaining:
                    part = records[index : index + remaining]
                    chunk.index = index + remaining
                    remaining = 0
                    last = part[-1]
                    position = last.offset + 1
                    chunk.start_offset = position
                    epoch = last.leader_epoch
                else:
                    part = records[index:] if index else records
                    remaining -= left
                    chunks.popleft()
                    position = chunk.next_offset
                    if chunk.last_epoch is not None:
                        epoch = chunk.last_epoch
                if part:
                    if taken is None:
                        taken = part
                    else:
                        taken.extend(part)
                if remaining <= 0:
                    break
            if position is not None and position != state.position:
                if advance:
                    state.position = position
                    state.leader_epoch = epoch
                ends[tp] = PositionUpdate(position, epoch, state.version)
            if taken:
                result[tp] = taken
            if not chunks:
                del self._buffer[tp]
                freed = True
            elif taken:
                # Round-robin fairness: a partition just served goes to the back of the line.
                self._buffer[tp] = self._buffer.pop(tp)
        if freed:
            self._subs.notify()
        if not self.has_data():
            self._data_event.clear()
        return result, ends

    def _materialize(self, tp: TopicPartition, chunk: _Chunk) -> list[ConsumerRecord]:
        """Decode a chunk's bytes (once); a corrupt batch raises here, to the user."""
        raw = chunk.raw
        assert raw is not None
        chunk.raw = None
        # The cyclic collector is paused while a chunk is decoded: decoding creates no cycles,
        # and every collection it would trigger walks (and promotes) the records just made, which
        # costs more than the decoding itself.  The previous state is restored right after.
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        try:
            records, _next, last_epoch = self._parse(tp, raw, chunk.start_offset, chunk.aborted)
        finally:
            if collecting:
                gc.enable()
        chunk.records = records
        chunk.last_epoch = last_epoch
        chunk.aborted = None
        return records

    def apply_position(self, tp: TopicPartition, update: PositionUpdate) -> None:
        """Apply a position returned by :meth:`drain` (ignored if the partition was seeked)."""
        state = self._subs.assignment.get(tp)
        if state is not None and state.version == update.version:
            state.position = update.offset
            state.leader_epoch = update.leader_epoch

    def discard(self, partitions: Iterable[TopicPartition]) -> None:
        """Drop buffered data of partitions (revoked, seeked)."""
        for tp in partitions:
            self._buffer.pop(tp, None)

    # ----------------------------------------------------------------- dispatch loop

    async def _dispatch_loop(self) -> None:
        backoff = self._config.retry_backoff_ms / 1000
        while True:
            changed = self._subs.change_event()
            try:
                await self._resolve_positions()
                await self._validate_positions()
            except errors.KafkaError as exc:
                log.info("resolving consumer positions failed: %s; retrying", exc)
                await asyncio.sleep(backoff)
                continue
            metadata = self._cluster.metadata
            needs_retry = False
            for tp, state in self._subs.assignment.items():
                if state.position is None or state.awaiting_validation:
                    needs_retry = True
                    continue
                leader = self._source_node(tp, metadata, time.monotonic())
                if leader is None:
                    self._cluster.request_update()
                    needs_retry = True
                    continue
                if leader not in self._node_loops:
                    self._node_loops.add(leader)
                    self._tasks.start(f"fetch-{leader}", self._node_loop(leader))
            timeout = backoff if needs_retry else _IDLE_RECHECK_S
            await wait_event(changed, timeout)

    async def _resolve_positions(self) -> None:
        subs = self._subs
        missing = [
            tp
            for tp, st in subs.assignment.items()
            if st.position is None and st.reset_strategy is None
        ]
        if missing:
            versions = {tp: subs.assignment[tp].version for tp in missing}
            committed: dict[TopicPartition, OffsetAndMetadata | None] = {}
            if self.committed_lookup is not None:
                committed = await self.committed_lookup(missing)
            for tp in missing:
                state = subs.assignment.get(tp)
                if state is None or state.version != versions[tp] or state.position is not None:
                    continue
                found = committed.get(tp)
                if found is not None and found.offset >= 0:
                    state.seek(found.offset, found.leader_epoch)
                    if found.leader_epoch is not None and self._supports_validation(tp):
                        state.awaiting_validation = True
                else:
                    state.request_reset(self._config.auto_offset_reset)
        to_reset: dict[TopicPartition, str] = {
            tp: st.reset_strategy
            for tp, st in subs.assignment.items()
            if st.position is None and st.reset_strategy is not None
        }
        if not to_reset:
            return
        lookups: dict[TopicPartition, int] = {}
        for tp, strategy in to_reset.items():
            timestamp = _RESET_TIMESTAMPS.get(strategy)
            if timestamp is None:
                state = subs.assignment[tp]
                if state.pending_error is None:
                    state.pending_error = errors.NoOffsetForPartitionError(
                        f"no committed offset for {tp} and auto_offset_reset={strategy!r}"
                    )
                    self._errors.append(state.pending_error)
                    self._data_event.set()
                continue
            lookups[tp] = timestamp
        if not lookups:
            return
        versions = {tp: subs.assignment[tp].version for tp in lookups}
        offsets = await self.list_offsets(lookups)
        for tp, (offset, _timestamp, epoch) in offsets.items():
            state = subs.assignment.get(tp)
            if state is None or state.version != versions[tp] or offset is None:
                continue
            log.debug("reset %s to offset %d (%s)", tp, offset, to_reset[tp])
            state.seek(offset, epoch)
        subs.notify()

    def _supports_validation(self, tp: TopicPartition) -> bool:
        leader = self._cluster.metadata.leader_for(tp.topic, tp.partition)
        if leader is None:
            return False
        connection = (
            self._cluster.pool.cached(*self._address(leader), purpose="fetch")
            if leader in self._cluster.metadata.brokers
            else None
        )
        if connection is None:
            return False
        return connection.versions.supports(_OFFSET_FOR_LEADER_EPOCH_KEY, 2)

    def _address(self, node: int) -> tuple[str, int]:
        broker = self._cluster.metadata.brokers[node]
        return broker.host, broker.port

    async def _validate_positions(self) -> None:
        """After a leader change, check the log was not truncated below our position (KIP-320)."""
        subs = self._subs
        pending = [
            tp
            for tp, st in subs.assignment.items()
            if st.awaiting_validation and st.position is not None
        ]
        for st in subs.assignment.values():
            if st.awaiting_validation and st.position is None:
                st.awaiting_validation = False
        if not pending:
            return
        metadata = self._cluster.metadata
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in pending:
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                self._cluster.request_update()
                continue
            by_node.setdefault(leader, []).append(tp)
        for node, tps in by_node.items():
            connection = await self._cluster.connection(node, "fetch")
            if not connection.versions.supports(_OFFSET_FOR_LEADER_EPOCH_KEY, 2):
                for tp in tps:
                    subs.assignment[tp].awaiting_validation = False
                continue
            topics: dict[str, list[OffsetForLeaderPartition]] = {}
            versions: dict[TopicPartition, int] = {}
            for tp in tps:
                state = subs.assignment[tp]
                versions[tp] = state.version
                topics.setdefault(tp.topic, []).append(
                    OffsetForLeaderPartition(
                        partition=tp.partition,
                        current_leader_epoch=self._leader_epoch(tp),
                        leader_epoch=state.leader_epoch if state.leader_epoch is not None else -1,
                    )
                )
            request = OffsetForLeaderEpochRequest(
                replica_id=-1,
                topics=[OffsetForLeaderTopic(topic=t, partitions=p) for t, p in topics.items()],
            )
            response = await connection.send(request)
            for topic in response.topics:
                for result in topic.partitions:
                    tp = TopicPartition(topic.topic, result.partition)
                    current = subs.assignment.get(tp)
                    if current is None or current.version != versions.get(tp):
                        continue
                    state = current
                    if result.error_code:
                        if result.error_code in _METADATA_ERRORS:
                            self._cluster.request_update()
                            continue
                        log.warning(
                            "validating position of %s failed: %s",
                            tp,
                            errors.error_for_code(result.error_code).name,
                        )
                        state.awaiting_validation = False
                        continue
                    state.awaiting_validation = False
                    position = state.position
                    if (
                        position is not None
                        and result.end_offset >= 0
                        and result.end_offset < position
                    ):
                        log.warning(
                            "log of %s was truncated to %d below our position %d; resuming there",
                            tp,
                            result.end_offset,
                            position,
                        )
                        state.seek(result.end_offset, result.leader_epoch)
                        self._buffer.pop(tp, None)  # stale after the seek
        subs.notify()

    def _leader_epoch(self, tp: TopicPartition) -> int:
        info = self._cluster.metadata.topics.get(tp.topic)
        if info is None:
            return -1
        partition = info.partitions.get(tp.partition)
        return partition.leader_epoch if partition is not None else -1

    # ----------------------------------------------------------------- offsets lookups

    async def list_offsets(
        self, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int | None, int | None, int | None]]:
        """ListOffsets at the leaders: ``{tp: (offset, timestamp, leader_epoch)}``.

        ``offset`` is ``None`` when no record matches (a timestamp after the last record).
        Retriable errors are retried (refreshing metadata) until ``request_timeout_ms``.
        """
        result: dict[TopicPartition, tuple[int | None, int | None, int | None]] = {}
        remaining = dict(timestamps)
        deadline = time.monotonic() + self._config.request_timeout_ms / 1000
        backoff = self._config.retry_backoff_ms / 1000
        while remaining:
            failed: dict[TopicPartition, int] = {}
            last_error: Exception | None = None
            metadata = self._cluster.metadata
            missing_topics = {tp.topic for tp in remaining if tp.topic not in metadata.topics}
            for topic in missing_topics:
                await self._cluster.wait_for_topic(topic)
            metadata = self._cluster.metadata
            by_node: dict[int, dict[TopicPartition, int]] = {}
            for tp, ts in remaining.items():
                leader = metadata.leader_for(tp.topic, tp.partition)
                if leader is None:
                    failed[tp] = ts
                    continue
                by_node.setdefault(leader, {})[tp] = ts
            for node, part in by_node.items():
                try:
                    answers = await self._list_offsets_at(node, part)
                except (errors.KafkaConnectionError, errors.KafkaTimeoutError) as exc:
                    last_error = exc
                    failed.update(part)
                    continue
                for tp, answer in answers.items():
                    if isinstance(answer, Exception):
                        last_error = answer
                        if getattr(answer, "retriable", False):
                            failed[tp] = part[tp]
                        else:
                            raise answer
                    else:
                        result[tp] = answer
            remaining = failed
            if remaining:
                self._cluster.request_update()
                if time.monotonic() + backoff > deadline:
                    raise errors.KafkaTimeoutError(
                        f"offsets of {sorted(remaining)} not found in time: {last_error}"
                    )
                await asyncio.sleep(backoff)
        return result

    async def _list_offsets_at(
        self, node: int, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int | None, int | None, int | None] | Exception]:
        connection = await self._cluster.connection(node, "default")
        version = connection.versions.version_for(ListOffsetsRequest.API_KEY)
        topics: dict[str, list[ListOffsetsPartition]] = {}
        for tp, ts in timestamps.items():
            partition = ListOffsetsPartition(partition_index=tp.partition, timestamp=ts)
            if version == 0:
                partition.max_num_offsets = 1
            if version >= 4:
                partition.current_leader_epoch = self._leader_epoch(tp)
            topics.setdefault(tp.topic, []).append(partition)
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[ListOffsetsTopic(name=t, partitions=p) for t, p in topics.items()],
            # v10+: how long the broker may wait for tiered storage (KIP-1075); 0 would fail
            # such lookups at once.  Dropped by older versions.
            timeout_ms=self._config.request_timeout_ms,
        )
        if version >= 2:
            request.isolation_level = 1 if self._config.read_committed else 0
        response = await connection.send(request, version)
        answers: dict[TopicPartition, tuple[int | None, int | None, int | None] | Exception] = {}
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                if p.error_code:
                    exc = errors.error_for_code(p.error_code)(f"ListOffsets for {tp}")
                    answers[tp] = exc
                    continue
                if version == 0:
                    offsets = p.old_style_offsets
                    answers[tp] = (offsets[0] if offsets else None, None, None)
                else:
                    offset = p.offset if p.offset >= 0 else None
                    timestamp = p.timestamp if p.timestamp >= 0 else None
                    epoch = getattr(p, "leader_epoch", -1)
                    answers[tp] = (offset, timestamp, epoch if epoch >= 0 else None)
        return answers

    # ----------------------------------------------------------------- per-broker loops

    def _fetchable(self, node: int) -> list[tuple[TopicPartition, PartitionState]]:
        metadata = self._cluster.metadata
        now = time.monotonic()
        buffer = self._buffer
        in_flight = self._in_flight
        chosen = []
        for tp, state in self._subs.assignment.items():
            if state.paused or state.fetch_position is None or state.awaiting_validation:
                continue
            if tp in in_flight or len(buffer.get(tp, ())) >= _MAX_CHUNKS_PER_PARTITION:
                continue
            if self._source_node(tp, metadata, now) != node:
                continue
            backoff = self._backoff_until.get(tp)
            if backoff is not None:
                # A seek (new version) ends the backoff at once.
                if backoff[0] > now and backoff[1] == state.version:
                    continue
                del self._backoff_until[tp]
            chosen.append((tp, state))
        return chosen

    def _source_node(self, tp: TopicPartition, metadata: Any, now: float) -> int | None:
        """The broker to fetch ``tp`` from: a preferred read replica (KIP-392) or the leader."""
        replica = self._read_replicas.get(tp)
        if replica is not None:
            if replica[1] > now and replica[0] in metadata.brokers:
                return replica[0]
            del self._read_replicas[tp]
        leader: int | None = metadata.leader_for(tp.topic, tp.partition)
        return leader

    async def _node_loop(self, node: int) -> None:
        session = _FetchSession()
        backoff = self._config.retry_backoff_ms / 1000
        while True:
            changed = self._subs.change_event()
            partitions = self._fetchable(node)
            if not partitions:
                await wait_event(changed, _IDLE_RECHECK_S)
                if self._backoff_until:
                    await asyncio.sleep(0)
                continue
            tps = [tp for tp, _ in partitions]
            self._in_flight.update(tps)
            try:
                await self._fetch_once(node, partitions, session)
            except (errors.KafkaConnectionError, errors.KafkaTimeoutError) as exc:
                log.info("fetch from broker %d failed: %s", node, exc)
                session.reset()
                self._cluster.request_update()
                await asyncio.sleep(backoff)
            except errors.UnsupportedVersionForBrokerError:
                raise
            except errors.KafkaError as exc:
                log.warning("fetch from broker %d failed: %s", node, exc)
                session.reset()
                await asyncio.sleep(backoff)
            finally:
                self._in_flight.difference_update(tps)

    async def _fetch_once(
        self,
        node: int,
        partitions: list[tuple[TopicPartition, PartitionState]],
        session: _FetchSession,
    ) -> None:
        config = self._config
        connection = await self._cluster.connection(node, "fetch")
        metadata = self._cluster.metadata
        topic_ids: dict[str, Any] = {}
        use_ids = True
        for tp, _ in partitions:
            info = metadata.topics.get(tp.topic)
            topic_id = info.topic_id if info is not None else None
            if topic_id is None:
                use_ids = False
            else:
                topic_ids[tp.topic] = topic_id
        version = connection.versions.version_for(
            FetchRequest.API_KEY, max_version=None if use_ids else _TOPIC_ID_FETCH_VERSION - 1
        )
        if version < 7 or not config.fetch_sessions:
            session.reset()
        # The fetch plan: per partition (fetch offset, current epoch, last fetched epoch, max bytes)
        wanted: dict[TopicPartition, tuple[int, int, int, int]] = {}
        versions: dict[TopicPartition, int] = {}
        for tp, state in partitions:
            assert state.fetch_position is not None
            # The epoch of the last batch *fetched*, not consumed: with records still buffered,
            # the consumed one may be of an older epoch that ends before the fetch position, and
            # the broker would report a divergence that is not there.
            last_fetched = state.fetch_epoch
            wanted[tp] = (
                state.fetch_position,
                self._leader_epoch(tp),
                last_fetched if last_fetched is not None else -1,
                state.fetch_size or config.max_partition_fetch_bytes,
            )
            versions[tp] = state.version
        if version >= 7 and config.fetch_sessions:
            to_send, forgotten = session.plan(wanted)
        else:
            to_send, forgotten = wanted, []
        by_topic: dict[str, list[FetchPartition]] = {}
        for tp, (offset, current_epoch, last_epoch, max_bytes) in to_send.items():
            by_topic.setdefault(tp.topic, []).append(
                FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=current_epoch,
                    fetch_offset=offset,
                    last_fetched_epoch=last_epoch,
                    log_start_offset=-1,
                    partition_max_bytes=max_bytes,
                )
            )
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=config.fetch_max_wait_ms,
            min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_max_bytes,
            isolation_level=1 if config.read_committed else 0,
            rack_id=config.client_rack,
        )
        request.topics = [
            FetchTopic(topic=t, topic_id=topic_ids[t], partitions=p)
            if version >= _TOPIC_ID_FETCH_VERSION
            else FetchTopic(topic=t, partitions=p)
            for t, p in by_topic.items()
        ]
        if version >= 7 and config.fetch_sessions:
            request.session_id = session.id
            request.session_epoch = session.epoch
            forgotten_by_topic: dict[str, list[int]] = {}
            for tp in forgotten:
                forgotten_by_topic.setdefault(tp.topic, []).append(tp.partition)
            request.forgotten_topics_data = [
                ForgottenTopic(topic=t, topic_id=topic_ids[t], partitions=p)
                if version >= _TOPIC_ID_FETCH_VERSION
                else ForgottenTopic(topic=t, partitions=p)
                for t, p in forgotten_by_topic.items()
                if version < _TOPIC_ID_FETCH_VERSION or t in topic_ids
            ]
        elif version >= 7:
            request.session_epoch = -1  # sessionless full fetch
        response = await connection.send(
            request, version, timeout_ms=config.request_timeout_ms + config.fetch_max_wait_ms
        )
        if version >= 7 and response.error_code:
            if response.error_code in _SESSION_ERRORS:
                log.debug("fetch session with broker %d reset: %s", node, response.error_code)
                session.reset()
                return
            errors.raise_for_code(response.error_code, f"Fetch from broker {node}")
        if version >= 7 and config.fetch_sessions:
            session.completed(response.session_id, wanted)
        names_by_id = {v: k for k, v in topic_ids.items()}
        got_data = False
        for topic in response.responses:
            name = (
                topic.topic
                if version < _TOPIC_ID_FETCH_VERSION
                else names_by_id.get(topic.topic_id)
            )
            if name is None:
                continue
            for data in topic.partitions:
                tp = TopicPartition(name, data.partition_index)
                plan = wanted.get(tp)
                if plan is None:
                    continue
                if self._handle_partition(tp, data, plan, versions[tp], version, node):
                    got_data = True
        if got_data:
            self._data_event.set()

    def _handle_partition(
        self,
        tp: TopicPartition,
        data: Any,
        plan: tuple[int, int, int, int],
        version_at_request: int,
        fetch_version: int,
        node: int = -1,
    ) -> bool:
        """Apply one partition of a fetch response from broker ``node``; True when buffered."""
        state = self._subs.assignment.get(tp)
        fetch_offset = plan[0]
        if (
            state is None
            or state.version != version_at_request
            or state.fetch_position != fetch_offset
        ):
            return False
        code = data.error_code
        if code:
            return self._partition_error(tp, state, code)
        if data.high_watermark >= 0:
            state.highwater = data.high_watermark
            state.last_poll_ms = int(time.time() * 1000)
        lso = getattr(data, "last_stable_offset", -1)
        if lso >= 0:
            state.last_stable_offset = lso
        log_start = getattr(data, "log_start_offset", -1)
        if log_start >= 0:
            state.log_start_offset = log_start
        replica = getattr(data, "preferred_read_replica", -1)
        if replica is not None and replica >= 0 and replica != node:
            # The leader wants this partition read from a nearby follower (KIP-392); the leader
            # is asked again after metadata_max_age_ms or an error at the follower.
            self._read_replicas[tp] = (
                replica,
                time.monotonic() + self._cluster.metadata_max_age_ms / 1000,
            )
            log.debug("%s: fetching from preferred read replica %d", tp, replica)
            self._subs.notify()
            return False
        diverging = getattr(data, "diverging_epoch", None)
        if diverging is not None and diverging.epoch >= 0 and diverging.end_offset >= 0:
            if diverging.end_offset < fetch_offset:
                position = state.position
                if position is not None and position <= diverging.end_offset:
                    # Only records fetched ahead and not handed out lie past the divergence:
                    # fetch again from what the user consumed, skipping nothing.
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
                # Buffered chunks are stale now; dropped here, not left in front of the data
                # the next fetch brings (drain clears a partition's chunks behind a stale one).
                self._buffer.pop(tp, None)
                self._subs.notify()
                return False
        raw = data.records
        if not raw:
            return False
        aborted = getattr(data, "aborted_transactions", None)
        next_offset, fetched_epoch = _next_offset_and_epoch(raw, fetch_offset)
        if next_offset == fetch_offset:
            # Only a partial batch: it is larger than the size we asked for, so ask for more.
            current = plan[3]
            limit = max(self._config.fetch_max_bytes, current)
            state.fetch_size = min(max(current * 2, len(raw) * 2), max(limit, len(raw) * 2))
            log.info(
                "%s: a record batch exceeds %d bytes; fetching with %d",
                tp,
                current,
                state.fetch_size,
            )
            return False
        state.fetch_size = None
        state.fetch_position = next_offset
        if fetched_epoch is not None:
            state.fetch_epoch = fetched_epoch
        chunks = self._buffer.get(tp)
        if chunks is None:
            chunks = self._buffer[tp] = deque()
        chunks.append(_Chunk(raw, aborted, fetch_offset, next_offset, state.version))
        return True

    def _partition_error(self, tp: TopicPartition, state: PartitionState, code: int) -> bool:
        backoff = self._config.retry_backoff_ms / 1000
        if self._read_replicas.pop(tp, None) is not None:
            # Whatever went wrong at the follower, the leader decides again.
            self._subs.notify()
            if code == errors.OffsetOutOfRangeError.code:
                return False
        if code == errors.OffsetOutOfRangeError.code:
            strategy = self._config.auto_offset_reset
            if strategy in _RESET_TIMESTAMPS:
                log.info(
                    "offset %s of %s is out of range; resetting to %s",
                    state.fetch_position,
                    tp,
                    strategy,
                )
                # Records buffered before the bad offset stay valid; only the fetch restarts.
                self._buffer.pop(tp, None)
                state.request_reset(strategy)
            else:
                error = errors.OffsetOutOfRangeClientError(
                    f"fetch offset {state.fetch_position} of {tp} is out of range"
                )
                state.pending_error = error
                self._errors.append(error)
                self._backoff_until[tp] = (time.monotonic() + 3600, state.version)
                self._data_event.set()
            self._subs.notify()
            return False
        if code in _METADATA_ERRORS:
            log.debug("fetch of %s: %s; refreshing metadata", tp, errors.error_for_code(code).name)
            self._cluster.request_update()
            if code in (errors.FencedLeaderEpochError.code, errors.NotLeaderOrFollowerError.code):
                if state.leader_epoch is not None and self._supports_validation(tp):
                    state.awaiting_validation = True
            self._backoff_until[tp] = (time.monotonic() + backoff, state.version)
            return False
        failure = errors.error_for_code(code)(f"fetching {tp}")
        if failure.retriable:
            self._backoff_until[tp] = (time.monotonic() + backoff, state.version)
            return False
        log.error("fetching %s failed: %s", tp, failure)
        self._errors.append(failure)
        self._backoff_until[tp] = (time.monotonic() + backoff * 10, state.version)
        self._data_event.set()
        return False

    def _parse(
        self, tp: TopicPartition, raw: bytes, fetch_offset: int, aborted: list[Any] | None
    ) -> tuple[list[ConsumerRecord], int, int | None]:
        """Decode one partition's record data into records at or after ``fetch_offset``."""
        topic, partition = tp
        key_deserializer = self._config.key_deserializer
        value_deserializer = self._config.value_deserializer
        read_committed = self._config.read_committed
        heap: list[tuple[int, int]] = []
        if read_committed and aborted:
            heap = [(a.first_offset, a.producer_id) for a in aborted]
            heapq.heapify(heap)
        aborted_producers: set[int] = set()
        out: list[ConsumerRecord] = []
        new = tuple.__new__  # skips the namedtuple's Python-level __new__
        next_offset = fetch_offset
        last_epoch: int | None = None
        make = ConsumerRecord
        for batch in iter_batches(raw, check_crcs=self._config.check_crcs):
            last = batch.last_offset
            if last < fetch_offset:
                continue
            if batch.magic == 2:
                epoch: int | None = batch.partition_leader_epoch
                if epoch is not None and epoch < 0:
                    epoch = None
                while heap and heap[0][0] <= last:
                    aborted_producers.add(heapq.heappop(heap)[1])
                if batch.is_control:
                    if aborted_producers:
                        for record in batch:
                            if record.control_type == ControlRecordType.ABORT:
                                aborted_producers.discard(batch.producer_id)
                    next_offset = batch.next_offset
                    last_epoch = epoch
                    continue
                if (
                    aborted_producers
                    and batch.is_transactional
                    and batch.producer_id in aborted_producers
                ):
                    next_offset = batch.next_offset
                    last_epoch = epoch
                    continue
            else:
                epoch = None
            if batch.magic == 2:
                # One call per batch: the records are built as ConsumerRecord tuples directly
                # (in C when the accelerator is built), deserializers applied.
                part = batch.consumer_records(
                    make, topic, partition, fetch_offset, key_deserializer, value_deserializer
                )
                if part:
                    if out:
                        out.extend(part)
                    else:
                        out = part
            else:
                records = batch.records()
                if batch.base_offset < fetch_offset:
                    # Only the first batch of a response can start before the fetch offset.
                    records = [r for r in records if r.offset >= fetch_offset]
                kd = key_deserializer or _identity
                vd = value_deserializer or _identity
                out.extend(
                    [
                        new(
                            make,
                            (
                                topic,
                                partition,
                                r.offset,
                                r.timestamp,
                                int(r.timestamp_type),
                                kd(r.key),
                                vd(r.value),
                                tuple(r.headers) if r.headers else _NO_HEADERS,
                                None,
                            ),
                        )
                        for r in records
                    ]
                )
            next_offset = max(next_offset, batch.next_offset)
            last_epoch = epoch
        return out, next_offset, last_epoch


_BATCH_PREFIX = struct.Struct(">qi")  # baseOffset, batchLength
_V2_HEADER_START = struct.Struct(">qiibIhi")  # ... magic, crc, attributes, lastOffsetDelta
_V2_MIN_LENGTH = 49  # a v2 batch header is 61 bytes; batchLength excludes the first 12


def _next_offset(raw: bytes, fetch_offset: int) -> int:
    """The offset after the last whole batch in ``raw`` (headers only, nothing decoded)."""
    return _next_offset_and_epoch(raw, fetch_offset)[0]


def _next_offset_and_epoch(raw: bytes, fetch_offset: int) -> tuple[int, int | None]:
    """The offset after the last whole batch in ``raw``, and that batch's leader epoch.

    Reads the v2 batch headers in place; anything else (legacy message sets, malformed
    headers) goes to :func:`_next_offset_of_batches`, which raises what decoding would raise
    (legacy data carries no leader epoch: None).
    """
    next_offset = fetch_offset
    epoch: int | None = None
    pos = 0
    total = len(raw)
    prefix = _BATCH_PREFIX.unpack_from
    header = _V2_HEADER_START.unpack_from
    while total - pos >= 12:
        size = prefix(raw, pos)[1]
        if size < _V2_MIN_LENGTH:
            return _next_offset_of_batches(raw, fetch_offset), None
        end = pos + 12 + size
        if end > total:
            break  # partial trailing batch
        if raw[pos + 16] != 2:
            return _next_offset_of_batches(raw, fetch_offset), None
        base, _, batch_epoch, _, _, _, last_delta = header(raw, pos)
        last = base + last_delta
        if last >= fetch_offset and last + 1 > next_offset:
            next_offset = last + 1
            epoch = batch_epoch if batch_epoch >= 0 else None
        pos = end
    return next_offset, epoch


def _next_offset_of_batches(raw: bytes, fetch_offset: int) -> int:
    """:func:`_next_offset` through the records package (any magic)."""
    next_offset = fetch_offset
    for batch in iter_batches(raw, check_crcs=False):
        if batch.last_offset >= fetch_offset:
            following = batch.next_offset
            if following > next_offset:
                next_offset = following
    return next_offset


_NO_HEADERS: tuple[tuple[str, bytes | None], ...] = ()


def _identity(value: Any) -> Any:
    return value
