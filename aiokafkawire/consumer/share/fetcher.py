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
import enum
import logging
from collections.abc import Callable, Iterable
from typing import Any

from aiokafkawire import errors
from aiokafkawire._retry import Backoff, retry_until_stopped
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire._waits import timeout_after, wait_event
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer.share.acknowledgements import Acknowledgements
from aiokafkawire.consumer.share.buffer import ShareRecordBuffer
from aiokafkawire.consumer.share.codec import AckMap, has_renewals, merge_acks, without_renewals
from aiokafkawire.consumer.share.config import ShareFetchConfig
from aiokafkawire.consumer.share.records import AcknowledgementOutcome, ShareRecord
from aiokafkawire.consumer.share.session import SessionState, ShareSession
from aiokafkawire.consumer.share.session_requests import (
    CommitRequest,
    FatalHandler,
    OutcomeHandler,
    SessionRequests,
)
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer.share")

__all__ = ["ShareFetchConfig", "ShareFetcher"]

_IDLE_RECHECK_S = 1.0
#: How long acknowledgements made while a leader's last answer is still buffered wait for the
#: application to take it (and the next ShareFetch to carry them) before a ShareAcknowledge
#: takes them alone.
_ACK_HOLD_S = 0.05
_LOOP = "fetch"  # task keys of the per-leader loops: (_LOOP, node id)


class _Step(enum.Enum):
    """What one round of a leader's loop did, for what the loop does next."""

    FETCHED = "fetched"  # a ShareFetch was answered: go on at once, the backoff resets
    AGAIN = "again"  # the session closed under an acknowledgement: go round at once
    IDLE = "idle"  # nothing more due now: wait for a wake (unless acknowledgements wait)
    HOLD = "hold"  # acknowledgements wait for the next ShareFetch, due once the answer is taken


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
        self._on_outcomes = on_outcomes
        self._on_fatal = on_fatal
        self._assignment: set[TopicPartition] = set()
        self._sessions: dict[int, ShareSession] = {}
        self._wakes: dict[int, asyncio.Event] = {}
        self._loops: dict[int, asyncio.Task[None]] = {}
        self._commits: dict[int, list[CommitRequest]] = {}
        self._changed = asyncio.Event()
        self.buffer = ShareRecordBuffer(self._wake)
        self._requests = SessionRequests(
            cluster,
            config,
            acknowledgements,
            self.buffer,
            member_id=member_id,
            on_outcomes=on_outcomes,
            on_fatal=on_fatal,
            on_metadata_stale=self._changed.set,
        )
        self._tasks = TaskSupervisor("share-fetcher", self._task_failed)
        self._closing = False

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
        # A leader's loop ends only on an error the error table does not retry (or a bug): it
        # is not started again.  The error is the consumer's for good (its next call raises
        # it), and a new loop would only send the refused request again, as fast as it is
        # refused (its wake stays, so the dispatcher starts none).
        log.error("share fetcher: %s failed", key, exc_info=exc)
        self._on_fatal(
            exc if isinstance(exc, errors.KafkaError) else errors.KafkaError(f"{key}: {exc!r}")
        )

    def _leader(self, tp: TopicPartition) -> int | None:
        return self._cluster.metadata.leader_for(tp.topic, tp.partition)

    def _topic_id(self, topic: str) -> Any:
        return self._requests.topic_id(topic)

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """The broker's acquisition lock timeout, from the latest ShareFetch answer."""
        return self._requests.acquisition_lock_timeout_ms

    # ----------------------------------------------------------------- the buffer

    def has_data(self) -> bool:
        """Whether fetched records wait to be handed out."""
        return self.buffer.has_data()

    async def wait_for_data(self, timeout: float | None) -> bool:
        """Wait (bounded) until records are buffered."""
        return await self.buffer.wait_for_data(timeout)

    def drain(self, max_records: int) -> list[tuple[TopicPartition, list[ShareRecord]]]:
        """Hand out up to ``max_records`` buffered records (oldest answers first), as runs of
        one partition each: ``[(partition, records), ...]``."""
        return self.buffer.drain(max_records)

    def _wake(self, node_id: int) -> None:
        wake = self._wakes.get(node_id)
        if wake is not None:
            wake.set()

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
            self._commits.setdefault(node, []).append(CommitRequest(node_acks, future))
            futures.append(future)
            self._wake(node)
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
        # Failed requests wait retry_backoff_ms doubling to retry_backoff_max_ms (never below
        # the first wait, however large); any round that went through starts over.  What is
        # worth another try is the error table's answer (errors.retriable_in_background): a
        # lost connection, a timeout, an unreadable answer.  Anything else ends the loop and
        # reaches the consumer (_task_failed), whose next poll raises it.
        backoff = Backoff(self._config.retry_backoff_ms, self._config.retry_backoff_max_ms)
        may_hold = True  # acknowledgements may wait for the next ShareFetch once per answer

        async def attempt() -> _Step | None:
            return None if self._closing else await self._step(node, session, may_hold)

        def failed(exc: BaseException) -> None:
            log.info("share request to broker %s failed: %s", node, exc)
            self._cluster.request_update()  # the leader may have moved

        while not self._closing:
            wake.clear()
            step = await retry_until_stopped(
                attempt,
                should_retry=errors.retriable_in_background,
                backoff=backoff,
                what=f"share request to broker {node}",
                on_retry=failed,
            )
            if step is _Step.FETCHED:
                may_hold = True
                continue
            if step is _Step.HOLD:
                may_hold = False
                await wait_event(wake, _ACK_HOLD_S)
                continue
            if (
                step is None
                or step is _Step.AGAIN
                or (
                    session.state is SessionState.OPEN
                    and (self._pending_for(node) or self._commits.get(node))
                )
            ):
                continue  # (None: closing; the loop ends)
            await wait_event(wake, _IDLE_RECHECK_S)
        await self._close_session(node, session)

    async def _step(self, node: int, session: ShareSession, may_hold: bool = False) -> _Step:
        """One round of a leader's loop: acknowledge and/or fetch, whatever is due.

        With ``may_hold``, acknowledgements made while the leader's last answer is still
        buffered wait (:data:`_ACK_HOLD_S` at most) for the application to take it: the
        ShareFetch then due carries them, instead of a ShareAcknowledge round trip before it
        (as the next poll sends them in the Java client)."""
        wanted = self._led_by(node)
        can_fetch = bool(wanted) and self.buffer.waiting(node) == 0
        if (
            may_hold
            and wanted
            and not can_fetch
            and session.state is SessionState.OPEN
            and not self._commits.get(node)
            and not self._acks.renewing
            and self._pending_for(node)
        ):
            return _Step.HOLD
        if session.state is SessionState.NEW:
            if can_fetch:
                # The opening request (epoch 0) may not carry acknowledgements: those
                # wait for the next one.
                await self._requests.fetch(node, session, wanted, {}, [])
                return _Step.FETCHED
            if self._pending_for(node) or self._commits.get(node):
                self._requests.fail(
                    self._acks.take_pending(lambda tp: self._leader(tp) == node),
                    self._commits.pop(node, []),
                    errors.ShareSessionNotFoundError(
                        f"no share session with broker {node} to acknowledge through"
                    ),
                )
            return _Step.IDLE
        commits = self._commits.pop(node, [])
        acks = self._acks.take_pending(lambda tp: self._leader(tp) == node)
        for request in commits:
            merge_acks(acks, request.acks)
        wanted_set = set(wanted)
        # RENEWs (KIP-1222) go in a ShareAcknowledge: a ShareFetch carrying one fetches nothing.
        alone = commits or not can_fetch or (self._acks.renewing and has_renewals(acks))
        if acks and (alone or any(tp not in wanted_set for tp in acks)):
            # A commit waits for its verdicts (one request answers them all), no fetch is
            # due, locks are renewed, or partitions are outside the session's fetch set (a
            # ShareFetch naming them would fetch them again): acknowledge now.
            send_now = acks if alone else {tp: a for tp, a in acks.items() if tp not in wanted_set}
            acks = {tp: a for tp, a in acks.items() if tp not in send_now}
            await self._requests.acknowledge(node, session, send_now, commits)
            commits = []
            if session.state is not SessionState.OPEN:
                self._acks.put_back(acks)
                return _Step.AGAIN
        if can_fetch:
            await self._requests.fetch(node, session, wanted, acks, commits)
            return _Step.FETCHED
        return _Step.IDLE

    # ----------------------------------------------------------------- closing

    async def _close_session(self, node: int, session: ShareSession) -> None:
        """Send the final request (epoch -1) with the last acknowledgements of this broker.

        RENEWs are dropped: closing the session releases every record it still holds."""
        acks = self._acks.take_pending(lambda tp: self._leader(tp) == node)
        commits = self._commits.pop(node, [])
        for request in commits:
            merge_acks(acks, request.acks)
        if self._acks.renewing:
            acks = without_renewals(acks)
        if session.state is not SessionState.OPEN:
            session.close()
            if acks or commits:
                self._requests.fail(
                    acks,
                    commits,
                    errors.ShareSessionNotFoundError(
                        f"no share session with broker {node}: the acknowledgements cannot be sent"
                    ),
                )
            return
        session.close()
        try:
            await self._requests.acknowledge(node, session, acks, commits)
        except errors.KafkaError as exc:
            # Not retried: the consumer is closing.  The acknowledgements it carried have
            # failed with this error already (their outcomes, and the commits waiting).
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
