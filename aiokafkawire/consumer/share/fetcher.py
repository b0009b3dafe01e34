"""Share fetching: one ShareFetch loop (and share session) per partition leader.

Each broker that leads an assigned partition gets its own loop on its own ("share-fetch")
connection, so leaders are fetched in parallel and the coordinator's heartbeats never queue
behind a long poll.  A loop sends one request at a time (the session epoch of the next request
depends on the answer) and keeps at most one answer of records waiting for the application: the
next ShareFetch goes out as soon as the previous answer has been handed out, so it is on the wire
while the application handles those records.

Acknowledgements ride on the next ShareFetch to the partition's leader when the partition is in
that session; otherwise (partition no longer assigned, or no fetch due: the application has not
taken the records yet, or :meth:`ShareFetcher.commit` wants them out now) a ShareAcknowledge
carries them.  The broker's verdicts come back as
:class:`~aiokafkawire.consumer.share.records.AcknowledgementOutcome` values.

Fetched data is decoded once into :class:`ShareRecord` tuples; only offsets inside the answer's
``AcquiredRecords`` ranges are delivered, each with its range's delivery count, and acquired
offsets without a record for the application are acknowledged as GAP.
"""

from __future__ import annotations

import asyncio
import logging
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire._waits import timeout_after, wait_event
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.records import ConsumerRecord
from aiokafkawire.consumer.share.acknowledgements import Acknowledgements, build_batches
from aiokafkawire.consumer.share.membership import share_groups_unsupported
from aiokafkawire.consumer.share.records import (
    AcknowledgementOutcome,
    AcknowledgeType,
    ShareRecord,
)
from aiokafkawire.consumer.share.session import SessionState, ShareSession
from aiokafkawire.protocol.messages import ShareAcknowledgeRequest, ShareFetchRequest
from aiokafkawire.protocol.messages import share_acknowledge as m_ack
from aiokafkawire.protocol.messages import share_fetch as m_fetch
from aiokafkawire.protocol.records import iter_batches
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer.share")

__all__ = ["ShareFetchConfig", "ShareFetcher"]

AckMap = dict[TopicPartition, dict[int, AcknowledgeType]]
OutcomeHandler = Callable[[list[AcknowledgementOutcome]], None]
FatalHandler = Callable[[errors.KafkaError], None]

_IDLE_RECHECK_S = 1.0
_LOOP = "fetch"  # task keys of the per-leader loops: (_LOOP, node id)
_SESSION_CODES = frozenset(
    (errors.ShareSessionNotFoundError.code, errors.InvalidShareSessionEpochError.code)
)
_FATAL_CODES = frozenset(
    cls.code
    for cls in (
        errors.GroupAuthorizationFailedError,
        errors.TopicAuthorizationFailedError,
        errors.UnsupportedVersionError,
    )
)
_new = tuple.__new__


class ShareFetchConfig:
    """The fetch-related share consumer options."""

    __slots__ = (
        "acquire_mode",
        "check_crcs",
        "fetch_max_bytes",
        "fetch_max_wait_ms",
        "fetch_min_bytes",
        "group_id",
        "key_deserializer",
        "max_poll_records",
        "request_timeout_ms",
        "retry_backoff_ms",
        "value_deserializer",
    )

    def __init__(
        self,
        *,
        group_id: str,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52_428_800,
        max_poll_records: int = 500,
        acquire_mode: int = 0,
        check_crcs: bool = True,
        key_deserializer: Callable[[bytes | None], Any] | None = None,
        value_deserializer: Callable[[bytes | None], Any] | None = None,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.group_id = group_id
        #: ShareFetch v2 ``ShareAcquireMode``: 0 batch-optimized, 1 record-limit (KIP-1206).
        self.acquire_mode = acquire_mode
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.max_poll_records = max_poll_records
        self.check_crcs = check_crcs
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms


class _Chunk:
    """The records of one partition from one ShareFetch answer, handed out progressively."""

    __slots__ = ("index", "node_id", "records", "tp")

    def __init__(self, node_id: int, tp: TopicPartition, records: list[ShareRecord]) -> None:
        self.node_id = node_id
        self.tp = tp
        self.records = records
        self.index = 0


class _CommitRequest:
    """Acknowledgements :meth:`ShareFetcher.commit` wants sent now, and who waits for them."""

    __slots__ = ("acks", "future")

    def __init__(self, acks: AckMap, future: asyncio.Future[list[AcknowledgementOutcome]]):
        self.acks = acks
        self.future = future


class ShareFetcher:
    """Owns the share sessions, the per-leader loops and the buffer of fetched records."""

    def __init__(
        self,
        cluster: Cluster,
        config: ShareFetchConfig,
        acknowledgements: Acknowledgements,
        *,
        member_id: Callable[[], str],
        on_outcomes: OutcomeHandler,
        on_fatal: FatalHandler,
    ) -> None:
        self._cluster = cluster
        self._config = config
        self._acks = acknowledgements
        self._member_id = member_id
        self._on_outcomes = on_outcomes
        self._on_fatal = on_fatal
        self._assignment: set[TopicPartition] = set()
        self._sessions: dict[int, ShareSession] = {}
        self._wakes: dict[int, asyncio.Event] = {}
        self._loops: dict[int, asyncio.Task[None]] = {}
        self._waiting_chunks: dict[int, int] = {}
        self._commits: dict[int, list[_CommitRequest]] = {}
        self._buffer: deque[_Chunk] = deque()
        self._data_event = asyncio.Event()
        self._changed = asyncio.Event()
        self._tasks = TaskSupervisor("share-fetcher", self._task_failed)
        self._closing = False
        self.acquisition_lock_timeout_ms: int | None = None

    # ----------------------------------------------------------------- control

    def start(self) -> None:
        """Start the dispatch loop (it starts one loop per leader)."""
        if not self._tasks.running("dispatch"):
            self._tasks.start("dispatch", self._dispatch_loop())

    def set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        """Follow a new assignment: loops fetch the new set from their next request on."""
        self._assignment = set(partitions)
        self._changed.set()
        for wake in self._wakes.values():
            wake.set()

    @property
    def assignment(self) -> set[TopicPartition]:
        """The partitions the group assigned to this member."""
        return set(self._assignment)

    def _task_failed(self, key: object, exc: BaseException) -> None:
        if self._closing:
            return
        log.error("share fetcher: %s failed", key, exc_info=exc)
        if isinstance(key, tuple) and key[0] == _LOOP:
            self._wakes.pop(key[1], None)
            self._changed.set()  # the dispatcher restarts it
        self._on_fatal(
            exc if isinstance(exc, errors.KafkaError) else errors.KafkaError(f"{key}: {exc!r}")
        )

    def _leader(self, tp: TopicPartition) -> int | None:
        return self._cluster.metadata.leader_for(tp.topic, tp.partition)

    def _topic_id(self, topic: str) -> Any:
        info = self._cluster.metadata.topics.get(topic)
        return None if info is None else info.topic_id

    # ----------------------------------------------------------------- the buffer

    def has_data(self) -> bool:
        """Whether fetched records wait to be handed out."""
        return bool(self._buffer)

    async def wait_for_data(self, timeout: float | None) -> bool:
        """Wait (bounded) until records are buffered."""
        return await wait_event(self._data_event, timeout)

    def drain(self, max_records: int) -> list[tuple[TopicPartition, list[ShareRecord]]]:
        """Hand out up to ``max_records`` buffered records (oldest answers first), as runs of
        one partition each: ``[(partition, records), ...]``."""
        out: list[tuple[TopicPartition, list[ShareRecord]]] = []
        taken = 0
        while self._buffer and taken < max_records:
            chunk = self._buffer[0]
            want = max_records - taken
            if chunk.index == 0 and len(chunk.records) <= want:
                part = chunk.records
            else:
                part = chunk.records[chunk.index : chunk.index + want]
            chunk.index += len(part)
            taken += len(part)
            out.append((chunk.tp, part))
            if chunk.index >= len(chunk.records):
                self._buffer.popleft()
                self._chunk_done(chunk.node_id)
        if not self._buffer:
            self._data_event.clear()
        return out

    def _chunk_done(self, node_id: int) -> None:
        left = self._waiting_chunks.get(node_id, 0) - 1
        self._waiting_chunks[node_id] = max(left, 0)
        if left <= 0:
            wake = self._wakes.get(node_id)
            if wake is not None:
                wake.set()

    def _drop_buffered(self, node_id: int) -> None:
        """Drop undelivered records fetched from a broker whose session is gone.

        The broker released them with the session (or will when their locks expire); they are
        no longer this consumer's to hand out or acknowledge.
        """
        kept: deque[_Chunk] = deque()
        for chunk in self._buffer:
            if chunk.node_id != node_id:
                kept.append(chunk)
                continue
            for record in chunk.records[chunk.index :]:
                self._acks.forget_offset(chunk.tp, record.offset)
        self._buffer = kept
        self._waiting_chunks[node_id] = 0
        if not kept:
            self._data_event.clear()

    # ----------------------------------------------------------------- commits

    def wake_all(self) -> None:
        """Let every loop look at pending acknowledgements now."""
        for wake in self._wakes.values():
            wake.set()

    async def commit(self, acks: AckMap) -> list[AcknowledgementOutcome]:
        """Send ``acks`` now (each partition to its leader) and wait for the broker's verdicts."""
        by_node: dict[int, AckMap] = {}
        outcomes: list[AcknowledgementOutcome] = []
        for tp, offsets in acks.items():
            node = self._leader(tp)
            if node is None or self._sessions.get(node) is None:
                outcomes.append(
                    AcknowledgementOutcome(
                        tp,
                        dict(offsets),
                        errors.NotLeaderOrFollowerError(
                            f"{tp.topic}-{tp.partition}: no share session with its leader"
                        ),
                    )
                )
                continue
            by_node.setdefault(node, {})[tp] = offsets
        loop = asyncio.get_running_loop()
        futures = []
        for node, node_acks in by_node.items():
            future: asyncio.Future[list[AcknowledgementOutcome]] = loop.create_future()
            self._commits.setdefault(node, []).append(_CommitRequest(node_acks, future))
            futures.append(future)
            wake = self._wakes.get(node)
            if wake is not None:
                wake.set()
        if outcomes:
            self._on_outcomes(outcomes)
        for answered in await asyncio.gather(*futures):
            outcomes.extend(answered)
        return outcomes

    # ----------------------------------------------------------------- dispatch

    async def _dispatch_loop(self) -> None:
        while True:
            self._changed.clear()
            needs_retry = False
            for tp in self._assignment:
                node = self._leader(tp)
                if node is None or self._topic_id(tp.topic) is None:
                    self._cluster.request_update()
                    needs_retry = True
                    continue
                self._ensure_loop(node)
            await wait_event(
                self._changed,
                self._config.retry_backoff_ms / 1000 if needs_retry else _IDLE_RECHECK_S,
            )

    def _ensure_loop(self, node: int) -> None:
        if node in self._wakes or self._closing:
            return
        self._wakes[node] = asyncio.Event()
        self._sessions.setdefault(node, ShareSession(node))
        self._loops[node] = self._tasks.start((_LOOP, node), self._node_loop(node))

    # ----------------------------------------------------------------- per-leader loop

    def _led_by(self, node: int) -> list[TopicPartition]:
        return [
            tp
            for tp in self._assignment
            if self._leader(tp) == node and self._topic_id(tp.topic) is not None
        ]

    def _pending_for(self, node: int) -> bool:
        return any(self._leader(tp) == node for tp in self._acks.pending_partitions())

    async def _node_loop(self, node: int) -> None:
        session = self._sessions[node]
        wake = self._wakes[node]
        backoff = self._config.retry_backoff_ms / 1000
        while not self._closing:
            wake.clear()
            wanted = self._led_by(node)
            can_fetch = bool(wanted) and self._waiting_chunks.get(node, 0) == 0
            try:
                if session.state is SessionState.NEW:
                    if can_fetch:
                        # The opening request (epoch 0) may not carry acknowledgements: those
                        # wait for the next one.
                        await self._fetch(node, session, wanted, {}, [])
                        backoff = self._config.retry_backoff_ms / 1000
                        continue
                    if self._pending_for(node) or self._commits.get(node):
                        self._fail(
                            self._acks.take_pending(lambda tp: self._leader(tp) == node),
                            self._commits.pop(node, []),
                            errors.ShareSessionNotFoundError(
                                f"no share session with broker {node} to acknowledge through"
                            ),
                        )
                else:
                    commits = self._commits.pop(node, [])
                    acks = self._acks.take_pending(lambda tp: self._leader(tp) == node)
                    for request in commits:
                        _merge(acks, request.acks)
                    wanted_set = set(wanted)
                    if acks and (
                        commits or not can_fetch or any(tp not in wanted_set for tp in acks)
                    ):
                        # A commit waits for its verdicts (one request answers them all), no
                        # fetch is due, or partitions are outside the session's fetch set (a
                        # ShareFetch naming them would fetch them again): acknowledge now.
                        send_now = (
                            acks
                            if commits or not can_fetch
                            else {tp: a for tp, a in acks.items() if tp not in wanted_set}
                        )
                        acks = {tp: a for tp, a in acks.items() if tp not in send_now}
                        await self._acknowledge(node, session, send_now, commits)
                        commits = []
                        if session.state is not SessionState.OPEN:
                            self._acks.put_back(acks)
                            continue
                    if can_fetch:
                        await self._fetch(node, session, wanted, acks, commits)
                        backoff = self._config.retry_backoff_ms / 1000
                        continue
            except (errors.KafkaConnectionError, errors.KafkaTimeoutError) as exc:
                log.info("share request to broker %s failed: %s", node, exc)
                self._cluster.request_update()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
                continue
            if session.state is SessionState.OPEN and (
                self._pending_for(node) or self._commits.get(node)
            ):
                continue
            await wait_event(wake, _IDLE_RECHECK_S)
        await self._close_session(node, session)

    def _fail(self, acks: AckMap, commits: list[_CommitRequest], error: errors.KafkaError) -> None:
        outcomes = [AcknowledgementOutcome(tp, dict(a), error) for tp, a in acks.items()]
        self._report(outcomes, commits)

    def _report(
        self, outcomes: list[AcknowledgementOutcome], commits: list[_CommitRequest]
    ) -> None:
        """Hand outcomes to the consumer and to the commits waiting for them."""
        if outcomes:
            self._on_outcomes(outcomes)
        for request in commits:
            if not request.future.done():
                request.future.set_result([o for o in outcomes if o.partition in request.acks])

    def _session_lost(self, node: int, session: ShareSession, *, answered_error: bool) -> None:
        """The broker's session is gone (or its epoch unknown): start over, drop its records."""
        if answered_error:
            session.session_error()
        else:
            session.lost()
        self._drop_buffered(node)

    async def _send(self, node: int, request: Any, extra_ms: int = 0) -> Any:
        connection = await self._cluster.connection(node, purpose="share-fetch")
        if not connection.versions.supports(request.API_KEY):
            raise share_groups_unsupported(
                f"broker {node} ({connection.host}:{connection.port})",
                f"it has no {type(request).__name__[:-7]} API",
            )
        return await connection.send(request, timeout_ms=self._config.request_timeout_ms + extra_ms)

    async def _fetch(
        self,
        node: int,
        session: ShareSession,
        wanted: list[TopicPartition],
        acks: AckMap,
        commits: list[_CommitRequest],
    ) -> None:
        config = self._config
        to_add, to_forget = session.plan(wanted)
        topics: dict[Any, list[m_fetch.FetchPartition]] = {}
        for tp in sorted(set(to_add) | set(acks)):
            batches = acks.get(tp)
            topics.setdefault(self._topic_id(tp.topic), []).append(
                m_fetch.FetchPartition(
                    partition_index=tp.partition,
                    acknowledgement_batches=_wire_batches(m_fetch.AcknowledgementBatch, batches),
                )
            )
        forgotten: dict[Any, list[int]] = {}
        for tp in to_forget:
            forgotten.setdefault(self._topic_id(tp.topic), []).append(tp.partition)
        request = ShareFetchRequest(
            group_id=config.group_id,
            member_id=self._member_id(),
            share_session_epoch=session.request_epoch,
            max_wait_ms=config.fetch_max_wait_ms,
            min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_max_bytes,
            max_records=config.max_poll_records,
            batch_size=config.max_poll_records,
            share_acquire_mode=config.acquire_mode,
            topics=[m_fetch.FetchTopic(topic_id=t, partitions=p) for t, p in topics.items()],
            forgotten_topics_data=[
                m_fetch.ForgottenTopic(topic_id=t, partitions=p) for t, p in forgotten.items()
            ],
        )
        try:
            response = await self._send(node, request, config.fetch_max_wait_ms)
        except (errors.KafkaConnectionError, errors.KafkaTimeoutError) as exc:
            self._session_lost(node, session, answered_error=False)
            self._fail(acks, commits, exc)
            raise
        except BaseException:
            # Cancelled or refused before an answer: the broker's epoch is unknown.
            self._session_lost(node, session, answered_error=False)
            self._acks.put_back(acks)
            self._fail({}, commits, errors.KafkaError("the share fetch was abandoned"))
            raise
        code = response.error_code
        if code:
            self._top_level_error(node, session, code, response.error_message, acks, commits)
            return
        session.answered()
        lock_ms = response.acquisition_lock_timeout_ms
        self.acquisition_lock_timeout_ms = lock_ms
        names = self._topic_names()
        outcomes: list[AcknowledgementOutcome] = []
        answered: set[TopicPartition] = set()
        chunks: list[_Chunk] = []
        for topic in response.responses:
            name = names.get(topic.topic_id)
            if name is None:
                continue
            for part in topic.partitions:
                tp = TopicPartition(name, part.partition_index)
                answered.add(tp)
                sent = acks.get(tp)
                if sent:
                    outcomes.append(
                        AcknowledgementOutcome(
                            tp,
                            dict(sent),
                            _error(part.acknowledge_error_code, part.acknowledge_error_message, tp),
                        )
                    )
                if part.error_code:
                    self._partition_error(node, tp, part.error_code, part.error_message)
                    continue
                if part.acquired_records:
                    records = self._delivered(tp, part.records, part.acquired_records, lock_ms)
                    if records:
                        chunks.append(_Chunk(node, tp, records))
        for tp, sent in acks.items():
            if tp not in answered:
                outcomes.append(AcknowledgementOutcome(tp, dict(sent), None))
        if chunks:
            self._buffer.extend(chunks)
            self._waiting_chunks[node] = self._waiting_chunks.get(node, 0) + len(chunks)
            self._data_event.set()
        self._report(outcomes, commits)

    def _topic_names(self) -> dict[Any, str]:
        return {
            info.topic_id: name
            for name, info in self._cluster.metadata.topics.items()
            if info.topic_id is not None
        }

    def _top_level_error(
        self,
        node: int,
        session: ShareSession,
        code: int,
        message: str | None,
        acks: AckMap,
        commits: list[_CommitRequest],
    ) -> None:
        error = _error(code, message, None)
        assert error is not None
        if code == errors.UnsupportedVersionError.code:
            error = share_groups_unsupported(f"broker {node}", message or "")
        self._fail(acks, commits, error)
        if code in _SESSION_CODES:
            log.info("share session with broker %s: %s; opening a new one", node, error)
            self._session_lost(node, session, answered_error=True)
            return
        # Any other top-level error: the broker's view of the session is uncertain.
        self._session_lost(node, session, answered_error=True)
        if code in _FATAL_CODES:
            self._on_fatal(error)
        else:
            log.info("share fetch from broker %s: %s", node, error)

    def _partition_error(
        self, node: int, tp: TopicPartition, code: int, message: str | None
    ) -> None:
        error = _error(code, message, tp)
        if errors.action_for(code) is errors.ErrorAction.REFRESH_METADATA:
            log.info("share fetch %s from broker %s: %s; refreshing metadata", tp, node, error)
            self._cluster.request_update()
            self._changed.set()
        elif code in _FATAL_CODES:
            assert error is not None
            self._on_fatal(error)
        else:
            log.warning("share fetch %s from broker %s: %s", tp, node, error)

    def _delivered(
        self,
        tp: TopicPartition,
        raw: bytes | None,
        acquired: list[Any],
        lock_timeout_ms: int,
    ) -> list[ShareRecord]:
        """Records of the acquired ranges (with their delivery counts); the rest are gaps."""
        ranges = sorted((a.first_offset, a.last_offset, a.delivery_count) for a in acquired)
        acks = self._acks
        for first, last, count in ranges:
            acks.acquire(tp, first, last, count, lock_timeout_ms)
        topic, partition = tp
        config = self._config
        out: list[ShareRecord] = []
        if raw:
            lowest, highest = ranges[0][0], ranges[-1][1]
            decoded: list[Any] = []
            for batch in iter_batches(raw, check_crcs=config.check_crcs):
                if batch.last_offset < lowest or batch.magic != 2:
                    continue
                decoded.extend(
                    batch.consumer_records(
                        ConsumerRecord,
                        topic,
                        partition,
                        lowest,
                        config.key_deserializer,
                        config.value_deserializer,
                    )
                )
            # Each record becomes a ShareRecord: its nine fields and its range's delivery count.
            if len(ranges) == 1:
                tail = (ranges[0][2],)
                out = [_new(ShareRecord, r + tail) for r in decoded if r[2] <= highest]
            else:
                offsets = [r[2] for r in decoded]
                for first, last, count in ranges:
                    tail = (count,)
                    run = decoded[bisect_left(offsets, first) : bisect_right(offsets, last)]
                    out.extend([_new(ShareRecord, r + tail) for r in run])
        if len(out) < sum(last - first + 1 for first, last, _ in ranges):
            delivered = {record.offset for record in out}
            acks.acknowledge_gaps(
                tp,
                [
                    offset
                    for first, last, _ in ranges
                    for offset in range(first, last + 1)
                    if offset not in delivered
                ],
            )
        return out

    async def _acknowledge(
        self,
        node: int,
        session: ShareSession,
        acks: AckMap,
        commits: list[_CommitRequest],
    ) -> None:
        """One ShareAcknowledge (the session's next epoch, or -1 when it is closing)."""
        topics: dict[Any, list[m_ack.AcknowledgePartition]] = {}
        for tp in sorted(acks):
            topics.setdefault(self._topic_id(tp.topic), []).append(
                m_ack.AcknowledgePartition(
                    partition_index=tp.partition,
                    acknowledgement_batches=_wire_batches(m_ack.AcknowledgementBatch, acks[tp]),
                )
            )
        request = ShareAcknowledgeRequest(
            group_id=self._config.group_id,
            member_id=self._member_id(),
            share_session_epoch=session.request_epoch,
            topics=[m_ack.AcknowledgeTopic(topic_id=t, partitions=p) for t, p in topics.items()],
        )
        try:
            response = await self._send(node, request)
        except (errors.KafkaConnectionError, errors.KafkaTimeoutError) as exc:
            self._session_lost(node, session, answered_error=False)
            self._fail(acks, commits, exc)
            raise
        except BaseException:
            self._session_lost(node, session, answered_error=False)
            self._fail(acks, commits, errors.KafkaError("the acknowledgement was abandoned"))
            raise
        code = response.error_code
        if code:
            self._top_level_error(node, session, code, response.error_message, acks, commits)
            return
        session.answered()
        names = self._topic_names()
        outcomes: list[AcknowledgementOutcome] = []
        answered: set[TopicPartition] = set()
        for topic in response.responses:
            name = names.get(topic.topic_id)
            if name is None:
                continue
            for part in topic.partitions:
                tp = TopicPartition(name, part.partition_index)
                sent = acks.get(tp)
                if sent is None:
                    continue
                answered.add(tp)
                outcomes.append(
                    AcknowledgementOutcome(
                        tp, dict(sent), _error(part.error_code, part.error_message, tp)
                    )
                )
                if errors.action_for(part.error_code) is errors.ErrorAction.REFRESH_METADATA:
                    self._cluster.request_update()
        for tp, sent in acks.items():
            if tp not in answered:
                outcomes.append(AcknowledgementOutcome(tp, dict(sent), None))
        self._report(outcomes, commits)

    # ----------------------------------------------------------------- closing

    async def _close_session(self, node: int, session: ShareSession) -> None:
        """Send the final request (epoch -1) with the last acknowledgements of this broker."""
        acks = self._acks.take_pending(lambda tp: self._leader(tp) == node)
        commits = self._commits.pop(node, [])
        for request in commits:
            _merge(acks, request.acks)
        if session.state is not SessionState.OPEN:
            session.close()
            if acks or commits:
                self._fail(
                    acks,
                    commits,
                    errors.ShareSessionNotFoundError(
                        f"no share session with broker {node}: the acknowledgements cannot be sent"
                    ),
                )
            return
        session.close()
        try:
            await self._acknowledge(node, session, acks, commits)
        except (errors.KafkaConnectionError, errors.KafkaTimeoutError) as exc:
            log.info("closing the share session with broker %s failed: %s", node, exc)

    async def close(self, timeout: float) -> None:
        """Finish each loop's request, close every share session (epoch -1), stop the loops."""
        self._closing = True
        self.wake_all()
        loops = [task for task in self._loops.values() if not task.done()]
        if loops:
            try:
                async with timeout_after(timeout):
                    await asyncio.wait(loops)
            except (TimeoutError, asyncio.TimeoutError):
                log.info("share fetcher: loops did not finish within %.1fs", timeout)
        await self._tasks.stop()
        for requests in self._commits.values():
            for request in requests:
                if not request.future.done():
                    request.future.set_exception(
                        errors.ClientClosedError("the share consumer closed before the commit")
                    )
        self._commits.clear()


def _merge(into: AckMap, more: Mapping[TopicPartition, Mapping[int, AcknowledgeType]]) -> None:
    for tp, offsets in more.items():
        into.setdefault(tp, {}).update(offsets)


def _wire_batches(cls: Any, acks: Mapping[int, AcknowledgeType] | None) -> list[Any]:
    if not acks:
        return []
    return [
        cls(first_offset=b.first_offset, last_offset=b.last_offset, acknowledge_types=list(b.types))
        for b in build_batches(acks)
    ]


def _error(code: int, message: str | None, tp: TopicPartition | None) -> errors.KafkaError | None:
    if not code:
        return None
    where = f"{tp.topic}-{tp.partition}" if tp is not None else "share request"
    return errors.error_for_code(code)(message or where)
