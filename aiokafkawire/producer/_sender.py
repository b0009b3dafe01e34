"""The sender loop: drains ready batches into one Produce request per broker and handles answers.

One supervised loop per producer decides what is ready (full, lingered long enough, flushed or
retrying after backoff), groups it by partition leader and sends one Produce request per broker,
at most ``max_in_flight_requests_per_connection`` at a time.  Ordering within a partition survives
retries: a retried batch goes back before every newer batch of its partition, and the partition is
not drained again until all its in-flight batches have come back.  Without idempotence a partition
has at most one batch in flight; with it, up to five, and sequence numbers let the broker drop
duplicates.

Each broker has a :class:`~aiokafkawire.producer._sink.BrokerSink` that writes its requests in
drain order.  A request's answer is handled by a callback inside the connection's receive path
(a :class:`~aiokafkawire.producer._sink.Flight`), not by a task that wakes up later: the
partition is free again, and its next full batch written, before anything else runs.
Together with ``BrokerConnection.receive_now`` this keeps the broker busy while thousands of
coroutines append records in one loop turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.metrics import BatchEvent, ClientMetrics, ProducerStats
from aiokafkawire.producer._accumulator import RecordAccumulator
from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.producer._sink import BrokerSink, Flight
from aiokafkawire.producer._txn import FENCING_ERRORS, TransactionManager, TxnState, fenced_error
from aiokafkawire.protocol.messages import ProduceRequest
from aiokafkawire.protocol.messages.produce import PartitionProduceData, TopicProduceData
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.producer")

PRODUCE_KEY = ProduceRequest.API_KEY
# Newest Produce version whose semantics we implement.  v12 is v11 outside transactions; inside one
# it adds the partition to the transaction (transactions v2, KIP-890 part 2), so a transactional
# producer sends it only under transactions v2 and at most v11 otherwise.  v13 names topics by id
# (KIP-516).
PRODUCE_MAX_VERSION = 13
PRODUCE_MAX_TRANSACTIONAL_VERSION = 11
PRODUCE_TRANSACTION_V2_VERSION = 12
PRODUCE_TOPIC_ID_VERSION = 13
# Produce versions able to carry each record format: v3+ requires magic 2.
_MAX_VERSION_FOR_MAGIC = {0: 1, 1: 2, 2: PRODUCE_MAX_VERSION}
IDEMPOTENT_MAX_IN_FLIGHT = 5
_SEQUENCE_ERRORS = (errors.OutOfOrderSequenceNumberError, errors.UnknownProducerIdError)
_SEQUENCE_MASK = 0x7FFFFFFF  # sequence numbers wrap around at 2**31


class Sender:  # long: drain, in-flight limits, answers, retries and sequences share state
    """Owns the sender loop and the Produce requests in flight of one producer."""

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
        self.stats = ProducerStats()
        self.metrics = metrics if metrics is not None and metrics.hooks else None
        self.cluster = cluster
        self.accumulator = accumulator
        self.txn = txn
        self.acks = acks
        self.idempotent = idempotent
        self.linger = linger_ms / 1000
        self.max_request_size = max_request_size
        self.max_in_flight = max_in_flight
        self.request_timeout_ms = request_timeout_ms
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.partition_limit = min(IDEMPOTENT_MAX_IN_FLIGHT, max_in_flight) if idempotent else 1
        self.wakeup = asyncio.Event()
        accumulator.connect_sender(self.wakeup, self.send_now)
        self.flushing = 0
        self.closing = False
        self.in_flight_by_tp: dict[TopicPartition, int] = {}
        self.in_flight_total = 0
        # Partitions with a batch waiting for retry: not drained until nothing is in flight.
        self.gated: set[TopicPartition] = set()
        # Per partition: producer id, epoch and the sequence after the furthest batch the leader
        # acknowledged of them (never moves back).  A leader with state for an id and epoch
        # writes their sequences only in order, so every batch of them below it is in the log.
        self.acked_next: dict[TopicPartition, tuple[int, int, int]] = {}
        # Per partition, the producer id of which the leader acknowledged a batch, i.e. holds
        # state.  A leader without state for a producer id accepts ANY sequence as its first
        # batch (Kafka's ProducerAppendInfo.checkSequence), so until then only one batch of the
        # partition may be on its way: a later one could overtake it (a cut connection, a
        # retriable error) and be written first.  Once it has state, the leader refuses
        # sequences out of order itself and pipelining is safe.
        self.confirmed: dict[TopicPartition, int] = {}
        # Partitions whose sequences the next epoch restarts (the broker lost our state there,
        # or a sent batch failed for good, leaving a hole): see _restart_sequences.
        self.resequence: set[TopicPartition] = set()
        # Transactions v2 bump the epoch at every EndTxn: sequences restart from 0.
        txn.on_new_epoch = self.acked_next.clear
        self._tasks = TaskSupervisor("producer-sender", self._task_failed)
        self._add_task: asyncio.Task[None] | None = None
        self._rotation = 0
        self._eager = False  # inside send_now(): answers read there do not start another one
        self._flights: set[Flight] = set()  # requests made and not yet answered
        self._sinks: dict[int, BrokerSink] = {}  # by broker node id

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Start the sender loop."""
        self._tasks.start("sender", self._run())

    async def stop(self) -> None:
        """Stop the loop and every request task (undecided batches are failed by the owner)."""
        self.closing = True
        await self._tasks.stop()
        # Requests still out or queued: nobody will hear their answers (a late one is ignored).
        for flight in list(self._flights):
            self._settle(flight)
        for sink in self._sinks.values():
            sink.clear()

    def _task_failed(self, key: Any, exc: BaseException) -> None:
        """A task ended without stop(): restart what others depend on, never let it vanish."""
        if self.closing:
            return
        if key == "sender":
            log.error("producer sender loop failed; restarting it", exc_info=exc)
            self._tasks.restart("sender", self._run)
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
                self.cluster,
                self._tasks,
                self._produce_request,
                max_in_flight=self.max_in_flight,
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
                and self.in_flight_total == 0
                and not self._tasks.running("init-producer-id")
            ):
                self._tasks.start("init-producer-id", self._init_producer_id())
            return self._next_expiry(now)
        if txn.transactional and txn.pending_partitions:
            if self._add_task is None or self._add_task.done():
                self._add_task = self._tasks.start("add-partitions", self._add_partitions())
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
                self._fail_batch(batch, exc)

    def _next_expiry(self, now: float) -> float | None:
        oldest = min(
            (queue[0].created for queue in self.accumulator.batches.values() if queue),
            default=None,
        )
        if oldest is None:
            return None
        return max(oldest + self.delivery_timeout - now, 0.0)

    def _drain(self, now: float) -> float | None:
        accumulator = self.accumulator
        metadata = self.cluster.metadata
        linger = self.linger
        force = self.flushing > 0 or self.closing
        next_due: float | None = None
        by_node: dict[int, list[ProducerBatch]] = {}
        need_metadata = False
        transactional = self.txn.transactional
        in_txn = self.txn.partitions_in_txn
        in_flight_by_tp = self.in_flight_by_tp
        gated = self.gated
        limit = self.partition_limit
        confirmed = self.confirmed
        producer_id = self.txn.producer_id
        for tp, queue in accumulator.batches.items():
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
            in_flight = in_flight_by_tp.get(tp, 0)
            if in_flight:
                # At the limit, behind a retry (sent once nothing is in flight), or the leader
                # may not know this producer yet (see ``confirmed``): wait for the answers.
                if in_flight >= limit or tp in gated or confirmed.get(tp) != producer_id:
                    continue
            elif tp in gated:
                gated.discard(tp)
            if transactional and tp not in in_txn:
                continue  # AddPartitionsToTxn first
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                need_metadata = True
                continue
            by_node.setdefault(leader, []).append(batch)
        if need_metadata:
            self.cluster.request_update()
            next_due = self.retry_backoff if next_due is None else min(next_due, self.retry_backoff)
        for node, ready in by_node.items():
            # Several requests when max_request_size cuts one short (large batches), as long
            # as the broker's in-flight limit allows.
            sink = self._sink(node)
            while ready and sink.has_room():
                ready = self._send_to(sink, ready)
        # Expiry is checked again by the next pass that anything wakes.
        return next_due

    def _send_to(self, sink: BrokerSink, ready: list[ProducerBatch]) -> list[ProducerBatch]:
        """Send one request with as many of ``ready`` as fit; returns the batches left over."""
        batches: list[ProducerBatch] = []
        size = 0
        txn = self.txn
        queues = self.accumulator.batches
        if len(ready) > 1:
            # Start at a different partition each time, so that when max_request_size cuts a
            # request short, the same partitions are not always the ones left behind.
            start = self._rotation % len(ready)
            self._rotation += 1
            ready = ready[start:] + ready[:start]
        left: list[ProducerBatch] = []
        for position, batch in enumerate(ready):
            estimate = batch.estimated_size()
            if batches and size + estimate > self.max_request_size:
                left = ready[position:]
                break
            size += estimate
            queues[batch.tp].popleft()
            batch.closed = True
            batch.in_flight = True
            if self.idempotent and batch.base_sequence < 0:
                # A retried batch keeps its producer id, epoch and sequence (it may be in the
                # log already): only a new batch, or one _restart_sequences cleared, takes some.
                sequence = txn.sequence_for(batch.tp, batch.count)
                batch.encode(txn.producer_id, txn.producer_epoch, sequence)
            self.in_flight_by_tp[batch.tp] = self.in_flight_by_tp.get(batch.tp, 0) + 1
            batches.append(batch)
        self.in_flight_total += 1
        flight = Flight(self, sink, batches)
        self._flights.add(flight)
        sink.submit(flight)
        return left

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
            for connection in {flight.connection for flight in self._flights}:
                if connection is not None:
                    connection.receive_now()
            self._run_once(time.monotonic())
        finally:
            self._eager = False

    def _answered(self, flight: Flight, response: Any, error: BaseException | None) -> None:
        """A Produce request's outcome: its answer, or why there is none."""
        if flight.done:
            return  # settled by stop() already
        batches = flight.batches
        try:
            if error is None:
                if response is None:  # acks=0: written is all we learn
                    for batch in batches:
                        self._succeeded(batch, -1, -1)
                else:
                    self._handle_response(batches, response, flight.topic_names)
            elif isinstance(error, errors.KafkaError):
                if isinstance(error, (errors.KafkaConnectionError, errors.KafkaTimeoutError)):
                    self.cluster.request_update()
                for batch in batches:
                    self._attempt_failed(batch, error)
            else:
                raise error
        except Exception as exc:  # a bug, not a broker problem: fail, never hang
            log.error("Produce request to broker %d failed unexpectedly", flight.node, exc_info=exc)
            for batch in batches:
                if batch.in_flight:
                    batch.in_flight = False
                    self._done_in_flight(batch)
                if not batch.done:
                    self._fail_batch(batch, exc)
        finally:
            self._settle(flight)
            self.wakeup.set()
        if not self.closing and self.txn.fatal is None:
            # The partitions just answered may have full batches waiting: send them now,
            # before the coroutines this answer woke up (maybe thousands) take their turn.
            self.send_now()

    def _settle(self, flight: Flight) -> None:
        """The request is over (answered, or abandoned while stopping): free its counts."""
        if flight.done:
            return
        flight.done = True
        self._flights.discard(flight)
        flight.sink.settled()
        self.in_flight_total -= 1
        for batch in flight.batches:
            if batch.in_flight:  # not answered (stopping): nothing will answer for it any more
                batch.in_flight = False
                self._done_in_flight(batch)

    def _produce_request(self, flight: Flight, connection: Any) -> tuple[ProduceRequest, int]:
        """The Produce request carrying the flight's batches (each counts one more attempt)."""
        node, batches = flight.node, flight.batches
        magic = batches[0].magic
        max_version = _MAX_VERSION_FOR_MAGIC[magic]
        min_version = 0
        if self.txn.transactional:
            if self.txn.transaction_v2:
                min_version = PRODUCE_TRANSACTION_V2_VERSION  # adds the partition (KIP-890)
            else:
                max_version = min(max_version, PRODUCE_MAX_TRANSACTIONAL_VERSION)
        version = connection.versions.version_for(
            PRODUCE_KEY, max_version=max_version, min_version=min_version
        )
        if magic == 2 and version < 3:
            raise errors.UnsupportedVersionForBrokerError(
                f"broker {node} speaks Produce v{version}, too old for record batch v2"
            )
        txn = self.txn
        by_topic: dict[str, list[PartitionProduceData]] = {}
        for batch in batches:
            if batch.payload is None:
                batch.encode(-1, -1, -1)
            by_topic.setdefault(batch.topic, []).append(
                PartitionProduceData(index=batch.partition, records=batch.payload)
            )
            batch.attempts += 1
        topic_ids: dict[str, uuid.UUID] = {}
        if version >= PRODUCE_TOPIC_ID_VERSION:
            topics = self.cluster.metadata.topics
            for name in by_topic:
                info = topics.get(name)
                if info is None or info.topic_id is None:
                    # A topic without a known id: name every topic, as v12 does.
                    version = PRODUCE_TOPIC_ID_VERSION - 1
                    topic_ids = {}
                    break
                topic_ids[name] = info.topic_id
        if topic_ids:
            topic_data = [
                TopicProduceData(topic_id=topic_ids[t], partition_data=p)
                for t, p in by_topic.items()
            ]
            flight.topic_names = {topic_id: name for name, topic_id in topic_ids.items()}
        else:
            topic_data = [TopicProduceData(name=t, partition_data=p) for t, p in by_topic.items()]
            flight.topic_names = {}
        request = ProduceRequest(
            transactional_id=txn.transactional_id,
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            topic_data=topic_data,
        )
        return request, version

    def _handle_response(
        self, batches: list[ProducerBatch], response: Any, topic_names: dict[uuid.UUID, str]
    ) -> None:
        results: dict[tuple[str, int], Any] = {}
        for topic in response.responses:
            # v13+ answers by topic id (the ids this request used), older versions by name.
            name = topic_names.get(topic.topic_id, topic.name) if topic_names else topic.name
            for part in topic.partition_responses:
                results[(name, part.index)] = part
        for batch in batches:
            part = results.get((batch.topic, batch.partition))
            if part is None:
                self._attempt_failed(
                    batch, errors.ProtocolError("the Produce response omits a partition")
                )
                continue
            code = part.error_code
            if code == 0 or code == errors.DuplicateSequenceNumberError.code:
                self._succeeded(batch, part.base_offset, part.log_append_time_ms)
            else:
                message = getattr(part, "error_message", None) or (
                    f"Produce to {batch.topic}-{batch.partition}"
                )
                error: errors.KafkaError = errors.error_for_code(code)(message)
                if code == errors.MessageTooLargeError.code:
                    error = _too_large(batch, error)
                self._attempt_failed(batch, error)

    # ---------------------------------------------------------------- outcomes

    def _done_in_flight(self, batch: ProducerBatch) -> None:
        count = self.in_flight_by_tp.get(batch.tp, 0) - 1
        if count > 0:
            self.in_flight_by_tp[batch.tp] = count
        else:
            self.in_flight_by_tp.pop(batch.tp, None)

    def _succeeded(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        batch.in_flight = False
        self._done_in_flight(batch)
        txn = self.txn
        if self.idempotent and batch.base_sequence >= 0:
            current = (
                batch.producer_id == txn.producer_id and batch.producer_epoch == txn.producer_epoch
            )
            self._note_acknowledged(batch, current)
            if current:
                self.confirmed[batch.tp] = batch.producer_id
        stats = self.stats
        stats.records += batch.count
        stats.batches += 1
        payload = batch.payload
        if payload is not None:
            stats.bytes += len(payload)
            stats.uncompressed_bytes += batch.raw_size
        if self.metrics is not None:
            self._emit_batch(batch, base_offset, None)
        batch.complete(base_offset, log_append_time)
        self.accumulator.release(batch)

    def _emit_batch(
        self, batch: ProducerBatch, base_offset: int, error: BaseException | None
    ) -> None:
        assert self.metrics is not None
        payload = batch.payload
        self.metrics.emit(
            "on_batch",
            BatchEvent(
                batch.topic,
                batch.partition,
                batch.count,
                len(payload) if payload is not None else 0,
                batch.raw_size,
                batch.attempts,
                time.monotonic() - batch.created,
                base_offset,
                error,
            ),
        )

    def _fail_batch(self, batch: ProducerBatch, exc: BaseException) -> None:
        self.stats.batch_errors += 1
        self.stats.records_failed += batch.count
        log.debug("%r failed for good: %s", batch, exc)
        if self.metrics is not None:
            self._emit_batch(batch, -1, exc)
        batch.fail(exc)
        self.accumulator.release(batch)
        txn = self.txn
        if txn.transactional:
            txn.set_abortable(exc)
        if self.idempotent and batch.base_sequence >= 0 and batch.attempts:
            # Its sequence numbers may or may not be in the log: only a new epoch resolves that.
            self.resequence.add(batch.tp)
            txn.request_bump(f"batch for {batch.topic}-{batch.partition} failed: {exc}")

    def _note_acknowledged(self, batch: ProducerBatch, current: bool) -> None:
        """Move ``acked_next`` of the batch's partition past it (a late or duplicate answer for
        an earlier batch leaves it where it is)."""
        end = (batch.base_sequence + batch.count) & _SEQUENCE_MASK
        known = self.acked_next.get(batch.tp)
        if known is not None and known[:2] == (batch.producer_id, batch.producer_epoch):
            if _sequence_at_or_before(end, known[2]):
                return
        elif known is not None and not current:
            return  # an older identity's answer: the current one's progress matters now
        self.acked_next[batch.tp] = (batch.producer_id, batch.producer_epoch, end)

    def _acknowledged_after(self, batch: ProducerBatch) -> bool:
        """Whether the leader acknowledged sequences after ``batch``'s, of its id and epoch."""
        known = self.acked_next.get(batch.tp)
        if known is None or batch.base_sequence < 0:
            return False
        if known[:2] != (batch.producer_id, batch.producer_epoch):
            return False
        end = (batch.base_sequence + batch.count) & _SEQUENCE_MASK
        return _sequence_at_or_before(end, known[2])

    def _attempt_failed(self, batch: ProducerBatch, exc: errors.KafkaError) -> None:
        if (
            self.idempotent
            and isinstance(exc, errors.OutOfOrderSequenceNumberError)
            and self._acknowledged_after(batch)
        ):
            # A batch the leader wrote while its answer was lost (a cut connection), then five
            # more after it before this retry: too old for its duplicate check, so refused as
            # out of order.  Later sequences were acknowledged, so it is in the log: delivered
            # (offset unknown).  A new epoch would write it a second time.
            log.debug("%r: in the log already (later sequences acknowledged)", batch)
            self._succeeded(batch, -1, -1)
            return
        batch.in_flight = False
        self._done_in_flight(batch)
        txn = self.txn
        tp = batch.tp
        if isinstance(exc, FENCING_ERRORS):
            fenced = fenced_error(exc)
            txn.set_fatal(fenced)
            batch.fail(fenced)
            self.accumulator.release(batch)
            return
        action = errors.action_of(exc)
        retriable = action.retriable
        if self.idempotent and isinstance(exc, _SEQUENCE_ERRORS):
            same_identity = (
                batch.producer_id == txn.producer_id and batch.producer_epoch == txn.producer_epoch
            )
            if same_identity and not self._earlier_batch_pending(batch):
                # The broker lost our state (or records): nothing earlier is pending, so waiting
                # will not help.  A new epoch restarts the sequences (KIP-360).
                self.resequence.add(tp)
                if txn.transactional:
                    self._fail_batch(batch, exc)
                    return
                txn.request_bump(f"{exc} on {tp.topic}-{tp.partition}")
            retriable = True  # an earlier batch failed, or the epoch changes: resend in order
        if action is errors.ErrorAction.REFRESH_METADATA:
            self.cluster.request_update()
        now = time.monotonic()
        if (
            retriable
            and not self.closing
            and now + self.retry_backoff - batch.created < self.delivery_timeout
        ):
            batch.retry_at = now + self.retry_backoff
            self.stats.retries += 1
            self.gated.add(tp)
            self.accumulator.reenqueue(batch)
            log.debug("retrying %r after %s", batch, exc)
            return
        self._fail_batch(batch, exc)

    def _earlier_batch_pending(self, batch: ProducerBatch) -> bool:
        """Whether a batch sent before ``batch`` to its partition is still undecided.

        If so, an OUT_OF_ORDER_SEQUENCE_NUMBER for ``batch`` only means that batch was not
        written yet; otherwise the broker really lost sequence numbers.
        """
        known = self.acked_next.get(batch.tp)
        identity = (batch.producer_id, batch.producer_epoch)
        if batch.base_sequence == (known[2] if known is not None and known[:2] == identity else 0):
            return False
        return any(
            other.tp == batch.tp
            and other.order < batch.order
            and other.producer_epoch == batch.producer_epoch
            and other.producer_id == batch.producer_id
            for other in self.accumulator.incomplete
        )

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

        The partitions in ``resequence`` start again at 0: their waiting batches lose their
        sequence numbers and take new ones as they are drained, i.e. in creation order (retries
        are queued before every younger batch).  Elsewhere a batch sent before keeps its old
        producer id, epoch and sequence until it is decided: it may be in the log already, and
        renumbered it would be written twice.  Such a partition sends one batch at a time until
        one of the new identity is acknowledged, so that no batch of the new epoch can be
        written before the old ones are resolved (the broker would then fence the old epoch).
        """
        for tp, queue in self.accumulator.batches.items():
            if not queue or queue[0].base_sequence < 0:
                continue  # retried batches come first: none here
            if tp in self.resequence:
                for batch in queue:
                    batch.base_sequence = -1
            else:
                self.confirmed.pop(tp, None)
        self.resequence.clear()

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


def _sequence_at_or_before(sequence: int, other: int) -> bool:
    """Whether ``sequence`` is ``other`` or comes before it (modulo the wrap at 2**31)."""
    return (other - sequence) & _SEQUENCE_MASK < 1 << 30


def _too_large(batch: ProducerBatch, cause: errors.KafkaError) -> errors.RecordTooLargeError:
    """MESSAGE_TOO_LARGE as the client's typed error (not retried: it would be refused again)."""
    size = len(batch.payload) if batch.payload is not None else 0
    error = errors.RecordTooLargeError(
        f"the broker refused a batch of {batch.count} record(s) ({size} bytes) for "
        f"{batch.topic}-{batch.partition}: larger than the topic's max.message.bytes "
        f"(MESSAGE_TOO_LARGE)"
    )
    error.__cause__ = cause
    return error
