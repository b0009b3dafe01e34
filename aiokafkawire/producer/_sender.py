"""The sender loop: routes each partition's queue to its leader's sink and runs the drains."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from aiokafkawire import errors
from aiokafkawire._retry import Backoff, retry_until_stopped
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.metrics import ClientMetrics, ProducerStats
from aiokafkawire.producer._accumulator import RecordAccumulator
from aiokafkawire.producer._outcomes import BatchOutcomes
from aiokafkawire.producer._partition import PartitionCursor
from aiokafkawire.producer._request import PRODUCE_KEY, ProduceRequestBuilder
from aiokafkawire.producer._sink import BrokerSink, SinkPolicy
from aiokafkawire.producer._txn import TransactionManager, should_retry
from aiokafkawire.structs import TopicPartition

__all__ = ["PRODUCE_KEY", "Sender"]

log = logging.getLogger("aiokafkawire.producer")

IDEMPOTENT_MAX_IN_FLIGHT = 5
# The first wait after AddPartitionsToTxn could not add every partition yet (as the Java
# client's, CONCURRENT_TRANSACTIONS being the common case right after the previous EndTxn).
ADD_PARTITIONS_FIRST_BACKOFF_MS = 20


class Sender:
    """The sender loop of one producer: routing, expiry, producer ids; sinks drain."""

    def __init__(
        self,
        cluster: Cluster,
        accumulator: RecordAccumulator,
        txn: TransactionManager,
        *,
        acks: int,
        idempotent: bool,
        linger_ms: float,
        max_request_size: int,
        max_in_flight: int,
        request_timeout_ms: int,
        delivery_timeout_ms: int,
        retry_backoff_ms: int,
        retry_backoff_max_ms: int,
        metrics: ClientMetrics | None = None,
    ) -> None:
        self.metrics = metrics if metrics is not None and metrics.hooks else None
        self.cluster = cluster
        self.accumulator = accumulator
        self.txn = txn
        self.idempotent = idempotent
        self.retry_backoff = retry_backoff_ms / 1000
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.wakeup = accumulator.wakeup
        self.flushing = 0
        self.outcomes = BatchOutcomes(
            cluster,
            accumulator,
            txn,
            idempotent=idempotent,
            retry_backoff=self.retry_backoff,
            delivery_timeout=self.delivery_timeout,
            metrics=self.metrics,
        )
        self.build_request = ProduceRequestBuilder(
            cluster, txn, acks=acks, request_timeout_ms=request_timeout_ms
        )
        self.policy = SinkPolicy(
            idempotent=idempotent,
            linger=linger_ms / 1000,
            partition_limit=min(IDEMPOTENT_MAX_IN_FLIGHT, max_in_flight) if idempotent else 1,
            max_in_flight=max_in_flight,
            max_request_size=max_request_size,
            request_timeout_ms=request_timeout_ms,
        )
        self._init_backoff = Backoff(retry_backoff_ms, retry_backoff_max_ms)
        self._add_backoff = Backoff(
            min(retry_backoff_ms, ADD_PARTITIONS_FIRST_BACKOFF_MS), retry_backoff_max_ms
        )
        # While a leader stopped answering: metadata again after each of these delays, until it
        # names another leader (the controller fences a frozen broker after its session timeout,
        # which may come after the first refresh that a request timeout triggers).
        self._stall_backoff = Backoff(retry_backoff_ms, retry_backoff_max_ms)
        self._next_stall_refresh: float | None = None
        # Transactions v2 bump the epoch at every EndTxn: sequences restart from 0.
        txn.on_new_epoch = self._forget_acknowledged
        self.tasks = TaskSupervisor(
            "producer-sender", self._task_failed, on_last_pass=self._ended_with_the_loop
        )
        self._add_task: asyncio.Task[None] | None = None
        self._sinks: dict[int, BrokerSink] = {}  # by broker node id
        # Every queue is owned by one sink (its ``leader``'s), or by this while none is known.
        self._unrouted: dict[TopicPartition, PartitionCursor] = {}
        self._routed_for: Any = None  # the metadata snapshot the queues were routed by

    @property
    def stats(self) -> ProducerStats:
        """What the producer sent, failed and retried so far."""
        return self.outcomes.stats

    @property
    def closing(self) -> bool:
        """Whether the producer is closing (everything queued is sent, nothing retried)."""
        return self.outcomes.closing

    def _forget_acknowledged(self) -> None:
        for cursor in self.accumulator.batches.values():
            cursor.acked_next = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Start the sender loop."""
        self.tasks.start("sender", self._run())

    def _ended_with_the_loop(self, key: Any) -> None:
        # A flush waits for this loop (a close in a task of the loop's last pass): run it again.
        if key == "sender" and self.flushing and not self.closing:
            self.ensure_running()  # unless the flush started it again already

    def ensure_running(self) -> None:
        """Start the sender loop again if it is gone: cancelled in the event loop's last pass
        (``asyncio.run`` cancels every task when ``main()`` ends) while a task being cancelled
        with it closes the producer, whose flush needs the loop (the close's stop() ends it)."""
        if not self.tasks.running("sender"):
            self.start()

    async def stop(self) -> None:
        """Stop the loop and every request task (undecided batches are failed by the owner)."""
        self.outcomes.closing = True
        await self.tasks.stop()
        # Requests still out or queued: nobody will hear their answers (a late one is ignored).
        for sink in self._sinks.values():
            sink.clear()

    def _task_failed(self, key: Any, exc: BaseException) -> None:
        """A task ended without stop(): restart what others depend on, never let it vanish."""
        if self.closing:
            return
        if key == "sender":
            log.error("producer sender loop failed; restarting it", exc_info=exc)
            self.tasks.restart("sender", self._run)
        elif isinstance(key, tuple) and key[0] == "writer":
            self._sinks[key[1]].writer_failed(exc)
        else:
            # init-producer-id and add-partitions are started again by the next pass.
            log.error("producer task %s failed", key, exc_info=exc)
        self.wakeup.set()

    def _sink(self, node: int) -> BrokerSink:
        sink = self._sinks.get(node)
        if sink is None:
            sink = self._sinks[node] = BrokerSink(
                node,
                cluster=self.cluster,
                txn=self.txn,
                outcomes=self.outcomes,
                tasks=self.tasks,
                wakeup=self.wakeup,
                build_request=self.build_request,
                policy=self.policy,
            )
        return sink

    async def wait_add_partitions(self) -> None:
        """Wait until no AddPartitionsToTxn request is under way."""
        task = self._add_task
        if task is not None and not task.done():
            await asyncio.wait([task])

    # ---------------------------------------------------------------- the loop

    async def _run(self) -> None:
        wakeup = self.wakeup
        while True:
            wakeup.clear()
            timeout = self._run_once(time.monotonic())
            if wakeup.is_set():
                await asyncio.sleep(0)  # let producers append; then go round again
                continue
            if timeout is None:
                await wakeup.wait()
            else:
                # A timer handle, not asyncio.timeout: cheaper, and Python 3.10 has no timeout().
                timer = asyncio.get_running_loop().call_later(max(timeout, 0.0005), wakeup.set)
                try:
                    await wakeup.wait()
                finally:
                    timer.cancel()

    def _run_once(self, now: float) -> float | None:
        """One pass: housekeeping, then drain; returns seconds until something is due."""
        if self.accumulator.unlooked:
            self._look_up_topics()
        txn = self.txn
        failure = txn.queued_failure()
        if failure is not None:
            self.accumulator.abort_queued(failure)
            if txn.fatal is not None:
                return None
        if self.idempotent and not txn.has_producer_id:
            self._expire(now)
            # A transactional producer gets its new epoch from abort_transaction().
            if (
                not txn.transactional
                and not any(sink.in_flight for sink in self._sinks.values())
                and not self.tasks.running("init-producer-id")
            ):
                self.tasks.start("init-producer-id", self._init_producer_id())
            return self._next_expiry(now)
        if txn.transactional and txn.pending_partitions:
            if self._add_task is None or self._add_task.done():
                self._add_task = self.tasks.start("add-partitions", self._add_partitions())
        self._expire(now)
        return self._drain(now)

    def _expire(self, now: float) -> None:
        limit = self.delivery_timeout
        for queue in self.accumulator.batches.values():
            while queue and now - queue[0].created >= limit:
                batch = queue.popleft()
                unknown = (
                    ": sent before, the broker may or may not have written them"
                    if batch.attempts
                    else ""
                )
                exc = errors.KafkaTimeoutError(
                    f"{batch.count} records for {batch.topic}-{batch.partition} expired after "
                    f"{now - batch.created:.1f}s (delivery_timeout_ms) in {batch.attempts} attempts"
                    f"{unknown}"
                )
                self.outcomes.fail_batch(batch, exc)

    def _next_expiry(self, now: float) -> float | None:
        oldest = min(
            (queue[0].created for queue in self.accumulator.batches.values() if queue),
            default=None,
        )
        if oldest is None:
            return None
        return max(oldest + self.delivery_timeout - now, 0.0)

    def _route(self) -> bool:
        """Give each new queue, and after a metadata change every queue, to its leader's sink.

        Returns whether a queue with batches has no known leader (metadata is then refreshed).
        """
        accumulator = self.accumulator
        metadata = self.cluster.metadata
        if metadata is not self._routed_for:
            self._routed_for = metadata
            accumulator.fresh.clear()
            moving = list(accumulator.batches.values())
        elif accumulator.fresh or self._unrouted:
            moving = [*accumulator.fresh, *self._unrouted.values()]
            accumulator.fresh.clear()
        else:
            return False
        deserted: dict[int, TopicPartition] = {}  # stalled sinks that lost partitions in flight
        for cursor in moving:
            tp = cursor.tp
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader == cursor.leader and (leader is not None or tp in self._unrouted):
                continue
            if cursor.leader is not None:
                old = self._sinks[cursor.leader]
                del old.cursors[tp]
                if old.stalled and cursor.in_flight:
                    deserted.setdefault(old.node, tp)
            else:
                self._unrouted.pop(tp, None)
            cursor.leader = leader
            if leader is None:
                self._unrouted[tp] = cursor
            else:
                # The whole queue moves: batches, in-flight count, retry hold and sequences.
                self._sink(leader).cursors[tp] = cursor
        for node, tp in deserted.items():
            # Its requests would hold the partition until they time out: the new leader gets
            # the batches now (the Java client disconnects a node on its first request timeout).
            self._sinks[node].give_up_requests(
                f"stopped answering and no longer leads {tp.topic}-{tp.partition}"
            )
        unresolved = accumulator.unresolved
        # Queues of a topic being looked up wait for that lookup, not for a refresh of their own.
        return any(cursor and tp.topic not in unresolved for tp, cursor in self._unrouted.items())

    def _drain(self, now: float) -> float | None:
        """Each sink sends what is ready of its queues; seconds until something is due."""
        # A send waiting for buffer memory makes every batch ready (the Java client's
        # "exhausted"): only answers free memory, so none may wait out a linger first.
        force = self.flushing > 0 or self.closing or self.accumulator.waiting_for_memory > 0
        next_due: float | None = None
        if self._route():
            self.cluster.request_update()
            next_due = self.retry_backoff
        stall_due = self._watch_stalled_leaders(now)
        if stall_due is not None and (next_due is None or stall_due < next_due):
            next_due = stall_due
        for sink in self._sinks.values():
            due = sink.drain(now, force)
            if due is not None and (next_due is None or due < next_due):
                next_due = due
        # Expiry is checked again by the next pass that anything wakes.
        return next_due

    def _watch_stalled_leaders(self, now: float) -> float | None:
        """While a broker with work for it stopped answering, refresh metadata with backoff;
        seconds until the next refresh (None: every leader answers).

        The request timeout's own refresh may come before the controller fenced the broker, and
        still name it: without another look, its partitions would wait a whole further request
        timeout on it although the cluster has moved them.
        """
        for sink in self._sinks.values():  # a loop, not any(...): this runs every pass
            if sink.stalled and sink.has_work:
                break
        else:
            if self._next_stall_refresh is not None:
                self._next_stall_refresh = None
                self._stall_backoff.reset()
            return None
        due = self._next_stall_refresh
        if due is None:
            # The timeout that stalled it has just asked for a refresh: the next one after this.
            due = self._next_stall_refresh = now + self._stall_backoff.next_delay()
        elif now >= due:
            self.cluster.request_update()
            due = self._next_stall_refresh = now + self._stall_backoff.next_delay()
        return due - now

    def pump(self) -> None:
        """Handle answers already received, then drain and write what is ready, before returning.

        ``Producer.send`` calls this (and only it) when a batch fills up: otherwise answers are
        read, and requests go out, only when the event loop gets a turn, i.e. with 1,000
        concurrent senders after all of them have appended everything, while the broker idles.
        An answer read here only wakes the loop; the drain below sends what it freed.
        """
        for sink in self._sinks.values():
            if sink.flights:
                for connection in {flight.connection for flight in sink.flights}:
                    if connection is not None:
                        connection.receive_now()
        self._run_once(time.monotonic())

    # ---------------------------------------------------------------- topics not known yet

    def _look_up_topics(self) -> None:
        """Look up the topics that records were queued for before their metadata was known:
        one task each, started together, so that their first lookups share one request."""
        topics = self.accumulator.unlooked
        self.accumulator.unlooked = []
        deadline_ms = self.accumulator.max_block_ms
        for topic in topics:
            self.tasks.start(("lookup", topic), self._resolve_topic(topic, deadline_ms))

    async def _resolve_topic(self, topic: str, timeout_ms: int) -> None:
        """Wait (up to ``timeout_ms``, as ``send`` would) for ``topic``'s metadata; then its
        queued partitions join the transaction and are routed, or their records fail with the
        error ``send`` raises for them (an unknown topic, a partition it does not have)."""
        accumulator = self.accumulator
        count = 0
        failure: errors.KafkaError | None = None
        try:
            count = len((await self.cluster.wait_for_topic(topic, timeout_ms)).partitions)
        except errors.KafkaError as exc:
            failure = exc
        partitions = accumulator.unresolved.pop(topic, set())
        for partition in sorted(partitions):
            tp = TopicPartition(topic, partition)
            queue = accumulator.batches.get(tp)
            if not queue:
                continue
            if failure is None and partition < count:
                if self.txn.transactional:
                    self.txn.maybe_add_partition(tp)
                continue
            error = _partition_error(failure, topic, partition, count)
            while queue:
                self.outcomes.fail_batch(queue.popleft(), error)
        self.wakeup.set()

    # ---------------------------------------------------------------- identity / transactions

    async def _init_producer_id(self) -> None:
        try:
            # Until it succeeds, a pause between tries so a dead cluster is not hammered; the
            # task ends with the producer (Java's Sender re-enqueues InitProducerId likewise).
            await retry_until_stopped(
                self.txn.init_producer_id,
                should_retry=should_retry,
                backoff=self._init_backoff,
                what="InitProducerId",
                on_retry=lambda exc: log.warning("InitProducerId failed: %s; retrying", exc),
            )
            self._restart_sequences()
        except errors.KafkaError as exc:
            # Fenced, or e.g. not authorised to be idempotent: no batch can ever be sent.
            self.txn.set_fatal(exc)
        finally:
            self.wakeup.set()

    def _restart_sequences(self) -> None:
        """After a new epoch or producer id (nothing is in flight then): renumber what must be.

        The partitions whose cursor has ``resequence`` set start again at 0: their waiting
        batches lose their sequence numbers and take new ones as they are drained, i.e. in
        creation order (retries are queued before every younger batch).  Elsewhere a batch sent
        before keeps its old producer id, epoch and sequence until it is decided: it may be in the
        log already, and renumbered it would be written twice.  Such a partition sends one batch
        at a time until one of the new identity is acknowledged, so that no batch of the new epoch
        can be written before the old ones are resolved (the broker would then fence the old
        epoch).
        """
        cursors = self.accumulator.batches.values()
        for cursor in cursors:
            if not cursor or cursor[0].base_sequence < 0:
                continue  # retried batches come first: none here
            if cursor.resequence:
                for batch in cursor:
                    batch.base_sequence = -1
            else:
                cursor.confirmed = None
        for cursor in cursors:
            cursor.resequence = False

    async def _add_partitions(self) -> None:
        txn = self.txn
        try:
            refused = await txn.add_pending_partitions(self._add_backoff)
            if refused is not None:
                # The transaction can only be aborted: fail the records waiting to join it.
                for tp in txn.pending_partitions:
                    queue = self.accumulator.batches.get(tp)
                    if queue is not None:
                        for batch in queue:
                            batch.fail(refused)
                            self.accumulator.release(batch)
                        queue.clear()
                txn.pending_partitions.clear()
        finally:
            self.wakeup.set()


def _partition_error(
    failure: errors.KafkaError | None, topic: str, partition: int, count: int
) -> errors.KafkaError:
    """The error of records queued for ``partition`` of ``topic``: the lookup's ``failure``
    (the same type, naming the partition), or else the partition is not one of ``count``."""
    if failure is None:
        return errors.ConfigError(f"topic {topic!r} has {count} partitions; {partition} is not one")
    try:
        error = type(failure)(f"records for {topic}-{partition}: {failure}")
    except TypeError:  # an error class with a constructor of its own
        return failure
    error.__cause__ = failure
    return error
