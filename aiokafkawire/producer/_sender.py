"""The sender loop: decides what is ready and hands it to the sink of each partition's leader.

One supervised loop per producer decides what is ready (full, lingered long enough, flushed or
retrying after backoff), groups it by partition leader and gives each leader's
:class:`~aiokafkawire.producer._sink.BrokerSink` its batches to send, at most
``max_in_flight_requests_per_connection`` requests at a time.  Ordering within a partition
survives retries: a retried batch goes back before every newer batch of its partition, and the
partition is not drained again until all its in-flight batches have come back.  Without
idempotence a partition has at most one batch in flight; with it, up to five, and sequence
numbers let the broker drop duplicates.

Each partition's send state is a :class:`~aiokafkawire.producer._partition.PartitionCursor`,
owned by the sink of its current leader: when a metadata refresh names another leader, the
drain moves the cursor to that broker's sink whole (in-flight count, retry hold, sequences).
A request's answer is handled inside the connection's receive path by its sink
(:meth:`BrokerSink.answered`); :class:`~aiokafkawire.producer._outcomes.BatchOutcomes` decides
each batch's fate.  Together with ``BrokerConnection.receive_now`` this keeps the broker busy while
thousands of coroutines append records in one loop turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.metrics import ClientMetrics, ProducerStats
from aiokafkawire.producer._accumulator import RecordAccumulator
from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.producer._outcomes import BatchOutcomes
from aiokafkawire.producer._partition import PartitionCursor
from aiokafkawire.producer._request import PRODUCE_KEY, ProduceRequestBuilder
from aiokafkawire.producer._sink import BrokerSink
from aiokafkawire.producer._txn import TransactionManager, TxnState
from aiokafkawire.structs import TopicPartition

__all__ = ["PRODUCE_KEY", "Sender"]

log = logging.getLogger("aiokafkawire.producer")

IDEMPOTENT_MAX_IN_FLIGHT = 5


class Sender:
    """The sender loop of one producer: readiness, leaders, metadata, expiry, producer ids."""

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
        metrics: ClientMetrics | None = None,
    ) -> None:
        self.metrics = metrics if metrics is not None and metrics.hooks else None
        self.cluster = cluster
        self.accumulator = accumulator
        self.txn = txn
        self.idempotent = idempotent
        self.linger = linger_ms / 1000
        self.max_request_size = max_request_size
        self.max_in_flight = max_in_flight
        self.retry_backoff = retry_backoff_ms / 1000
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.partition_limit = min(IDEMPOTENT_MAX_IN_FLIGHT, max_in_flight) if idempotent else 1
        self.wakeup = asyncio.Event()
        accumulator.connect_sender(self.wakeup, self.send_now)
        self.flushing = 0
        # Every partition's cursor, whichever sink owns it now (the one of its last leader).
        self.cursors: dict[TopicPartition, PartitionCursor] = {}
        self.outcomes = BatchOutcomes(
            cluster,
            accumulator,
            txn,
            self.cursors,
            idempotent=idempotent,
            retry_backoff=self.retry_backoff,
            delivery_timeout=self.delivery_timeout,
            metrics=self.metrics,
        )
        self.build_request = ProduceRequestBuilder(
            cluster, txn, acks=acks, request_timeout_ms=request_timeout_ms
        )
        self.request_timeout_ms = request_timeout_ms
        # Transactions v2 bump the epoch at every EndTxn: sequences restart from 0.
        txn.on_new_epoch = self._forget_acknowledged
        self.tasks = TaskSupervisor("producer-sender", self._task_failed)
        self._add_task: asyncio.Task[None] | None = None
        self._eager = False  # inside send_now(): answers read there do not start another one
        self._sinks: dict[int, BrokerSink] = {}  # by broker node id

    @property
    def stats(self) -> ProducerStats:
        """What the producer sent, failed and retried so far."""
        return self.outcomes.stats

    @property
    def closing(self) -> bool:
        """Whether the producer is closing (everything queued is sent, nothing retried)."""
        return self.outcomes.closing

    def _forget_acknowledged(self) -> None:
        for cursor in self.cursors.values():
            cursor.acked_next = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Start the sender loop."""
        self.tasks.start("sender", self._run())

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
                self,
                self.build_request,
                max_in_flight=self.max_in_flight,
                max_request_size=self.max_request_size,
                request_timeout_ms=self.request_timeout_ms,
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
        txn = self.txn
        if txn.fatal is not None:
            self.accumulator.abort_queued(txn.fatal)
            return None
        if txn.transactional and txn.state == TxnState.ABORTABLE_ERROR:
            # Nothing more of this transaction can commit: do not make commit wait for it.
            self.accumulator.abort_queued(
                errors.IllegalStateError(f"the transaction must be aborted: {txn.abortable}")
            )
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
        accumulator = self.accumulator
        for queue in accumulator.batches.values():
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

    def _drain(self, now: float) -> float | None:  # long: the per-record hot loop, inlined
        """Send what is ready through the sinks of the partitions' leaders; seconds until due."""
        metadata = self.cluster.metadata
        linger = self.linger
        force = self.flushing > 0 or self.closing
        next_due: float | None = None
        by_sink: dict[BrokerSink, list[ProducerBatch]] = {}
        need_metadata = False
        transactional = self.txn.transactional
        in_txn = self.txn.partitions_in_txn
        cursors = self.cursors
        limit = self.partition_limit
        producer_id = self.txn.producer_id
        for tp, queue in self.accumulator.batches.items():
            if not queue:
                continue
            batch = queue[0]
            if batch.retry_at > now:
                due = batch.retry_at - now
                next_due = due if next_due is None else min(next_due, due)
                continue
            if not (batch.full or batch.closed or force or len(queue) > 1):
                due = batch.created + linger - now
                if due > 0:
                    next_due = due if next_due is None else min(next_due, due)
                    continue
            cursor = cursors.get(tp)
            if cursor is None:
                cursor = cursors[tp] = PartitionCursor(tp)
            elif cursor.in_flight:
                # At the limit, behind a retry (sent once nothing is in flight), or the leader
                # may not know this producer yet (see ``confirmed``): wait for the answers.
                if cursor.in_flight >= limit or cursor.gated or cursor.confirmed != producer_id:
                    continue
            elif cursor.gated:
                cursor.gated = False
            if transactional and tp not in in_txn:
                continue  # AddPartitionsToTxn first
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                need_metadata = True
                continue
            sink = cursor.sink
            if sink is None or sink.node != leader:
                sink = self._sink(leader)
                cursor.move_to(sink)  # a new leader: its sink takes the partition's state
            ready = by_sink.get(sink)
            if ready is None:
                by_sink[sink] = [batch]
            else:
                ready.append(batch)
        if need_metadata:
            self.cluster.request_update()
            next_due = self.retry_backoff if next_due is None else min(next_due, self.retry_backoff)
        for sink, ready in by_sink.items():
            # Several requests when max_request_size cuts one short (large batches), as long
            # as the broker's in-flight limit allows.
            while ready and sink.has_room():
                ready = sink.send(ready)
        # Expiry is checked again by the next pass that anything wakes.
        return next_due

    def send_now(self) -> None:
        """Handle answers already received, then drain and write what is ready, before returning.

        ``send()`` calls this when a batch fills up, and every answer calls it.  Otherwise
        answers are read, and requests go out, only when the event loop gets a turn: with
        1,000 concurrent senders, that is after all of them have appended everything, and the
        broker idles meanwhile.  A request that cannot be written at once (no open connection,
        no free slot) waits in its broker's queue for the writer task.
        """
        if self._eager:
            return  # an answer read by the outer call: it drains when the reads are done
        self._eager = True
        try:
            for sink in self._sinks.values():
                if sink.flights:
                    for connection in {flight.connection for flight in sink.flights}:
                        if connection is not None:
                            connection.receive_now()
            self._run_once(time.monotonic())
        finally:
            self._eager = False

    # ---------------------------------------------------------------- identity / transactions

    async def _init_producer_id(self) -> None:
        try:
            await self.txn.init_producer_id()
            self._restart_sequences()
        except errors.ProducerFencedClientError as exc:
            self.txn.set_fatal(exc)
        except errors.KafkaError as exc:
            if not (exc.retriable or isinstance(exc, errors.KafkaConnectionError)):
                # E.g. not authorised to be idempotent: no batch can ever be sent.
                self.txn.set_fatal(exc)
                return
            # Retried by the next pass, after a pause so a dead cluster is not hammered.
            log.warning("InitProducerId failed: %s", exc)
            await asyncio.sleep(self.retry_backoff)
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
        cursors = self.cursors
        for tp, queue in self.accumulator.batches.items():
            if not queue or queue[0].base_sequence < 0:
                continue  # retried batches come first: none here
            cursor = cursors.get(tp)
            if cursor is None:
                continue
            if cursor.resequence:
                for batch in queue:
                    batch.base_sequence = -1
            else:
                cursor.confirmed = None
        for cursor in cursors.values():
            cursor.resequence = False

    async def _add_partitions(self) -> None:
        txn = self.txn
        try:
            await txn.add_partitions(set(txn.pending_partitions))
        except errors.ProducerFencedClientError as exc:
            txn.set_fatal(exc)
        except (
            errors.ConcurrentTransactionsError,
            errors.KafkaConnectionError,
            errors.KafkaTimeoutError,
        ) as exc:
            log.debug("AddPartitionsToTxn: %s; retrying", exc)
            await asyncio.sleep(min(self.retry_backoff, 0.02))
        except errors.KafkaError as exc:
            # The transaction can only be aborted: fail the batches waiting for these partitions.
            for tp in list(txn.pending_partitions):
                for batch in self.accumulator.batches.get(tp, ()):
                    batch.fail(exc)
                    self.accumulator.release(batch)
                queue = self.accumulator.batches.get(tp)
                if queue is not None:
                    queue.clear()
            txn.pending_partitions.clear()
        finally:
            self.wakeup.set()
