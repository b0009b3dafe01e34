"""One broker's side of the sender: the partitions it leads and its Produce requests."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.producer._outcomes import BatchOutcomes
from aiokafkawire.producer._partition import PartitionCursor
from aiokafkawire.producer._txn import TransactionManager
from aiokafkawire.protocol.messages import ProduceRequest
from aiokafkawire.structs import TopicPartition

__all__ = ["BrokerSink", "Flight", "SinkPolicy"]

log = logging.getLogger("aiokafkawire.producer")

_Prepared = tuple[Any, ProduceRequest, int]  # connection, request, version: built, not written
# (node, batches, connection) -> (request, version, topic id -> name of the topics it names by id)
RequestBuilder = Callable[
    [int, list[ProducerBatch], Any], tuple[ProduceRequest, int, dict[uuid.UUID, str]]
]


@dataclass(frozen=True)
class SinkPolicy:
    """What every sink of a producer drains by (the producer's options)."""

    idempotent: bool
    linger: float  # seconds a batch that is not full may wait for more records
    partition_limit: int  # batches of one partition in flight (1 without idempotence)
    max_in_flight: int  # requests to one broker in flight
    max_request_size: int
    request_timeout_ms: int


class Flight:
    """One Produce request on its way, from the drain that made it until its answer."""

    __slots__ = ("batches", "connection", "done", "sink", "topic_names")

    def __init__(self, sink: BrokerSink, batches: list[ProducerBatch]) -> None:
        self.sink = sink
        self.batches = batches
        self.connection: Any = None  # set once written
        self.done = False
        # Topic id -> name of the topics a v13+ request names by id (its answer does too).
        self.topic_names: dict[uuid.UUID, str] = {}

    @property
    def node(self) -> int:
        """The broker the request goes to."""
        return self.sink.node

    def __call__(self, response: Any, error: BaseException | None) -> None:
        """The connection's response callback (also called with the error of a failed write)."""
        self.sink.answered(self, response, error)


# A request waiting to be written: its flight, the request if built, an error met building it.
_Unwritten = tuple[Flight, "_Prepared | None", "Exception | None"]


class BrokerSink:
    """One broker: the queues of the partitions it leads, its requests in flight and unwritten.

    Only the sink drains its queues (:meth:`drain`); the sender only decides which sink owns a
    queue (the partition's leader's).  An answer is handled in the connection's receive path,
    and only wakes the sender for the next drain (as franz-go's ``maybeDrain``): nothing is
    drained or written from inside a receive callback.
    """

    def __init__(
        self,
        node: int,
        *,
        cluster: Cluster,
        txn: TransactionManager,
        outcomes: BatchOutcomes,
        tasks: TaskSupervisor,
        wakeup: asyncio.Event,
        build_request: RequestBuilder,
        policy: SinkPolicy,
    ) -> None:
        self.node = node
        self.cursors: dict[TopicPartition, PartitionCursor] = {}  # the partitions it leads
        self.flights: set[Flight] = set()  # requests made and not yet answered
        self.in_flight = 0  # requests made and not yet answered (written or queued)
        self._cluster = cluster
        self._txn = txn
        self._outcomes = outcomes
        self._tasks = tasks
        self._wakeup = wakeup
        self._build_request = build_request
        self._policy = policy
        self._rotation = 0
        self._unwritten: deque[_Unwritten] = deque()
        self._writer: asyncio.Task[Any] | None = None
        # A request timed out and nothing answered since: the broker may be frozen (paused,
        # stuck), still connected and still named leader until the controller fences it.
        self.stalled = False

    @property
    def writer_key(self) -> tuple[str, int]:
        """The supervisor key of this sink's writer task."""
        return ("writer", self.node)

    def drain(self, now: float, force: bool) -> float | None:  # long: the per-batch hot loop
        """Send what is ready of this sink's queues; seconds until one is due (None: none).

        Ready: full, lingered ``linger``, ``force`` (flush or close) or a retry whose backoff
        is over; and allowed: under the partition's in-flight limit, not behind a retry, and
        (transactions) added to the transaction.
        """
        policy = self._policy
        linger = policy.linger
        limit = policy.partition_limit
        txn = self._txn
        transactional = txn.transactional
        in_txn = txn.partitions_in_txn
        producer_id = txn.producer_id
        next_due: float | None = None
        ready: list[PartitionCursor] = []
        for cursor in self.cursors.values():
            if not cursor:
                continue
            batch = cursor[0]
            if batch.retry_at > now:
                due = batch.retry_at - now
                next_due = due if next_due is None else min(next_due, due)
                continue
            if not (batch.full or batch.closed or force or len(cursor) > 1):
                due = batch.created + linger - now
                if due > 0:
                    next_due = due if next_due is None else min(next_due, due)
                    continue
            if cursor.in_flight:
                # At the limit, behind a retry (sent once nothing is in flight), or the leader
                # may not know this producer yet (see ``confirmed``): wait for the answers.
                if cursor.in_flight >= limit or cursor.gated or cursor.confirmed != producer_id:
                    continue
            elif cursor.gated:
                cursor.gated = False
            if transactional and cursor.tp not in in_txn:
                continue  # AddPartitionsToTxn first
            ready.append(cursor)
        # Several requests when max_request_size cuts one short (large batches), as long as the
        # broker's in-flight limit allows.
        while ready and self.in_flight < policy.max_in_flight:
            ready = self._send(ready)
        return next_due

    def _send(self, ready: list[PartitionCursor]) -> list[PartitionCursor]:
        """Send one request with the first batch of as many of ``ready`` as fit; the rest."""
        txn = self._txn
        idempotent = self._policy.idempotent
        max_request_size = self._policy.max_request_size
        if len(ready) > 1:
            # Start at a different partition each time, so that when max_request_size cuts a
            # request short, the same partitions are not always the ones left behind.
            start = self._rotation % len(ready)
            self._rotation += 1
            ready = ready[start:] + ready[:start]
        batches: list[ProducerBatch] = []
        size = 0
        left: list[PartitionCursor] = []
        for position, cursor in enumerate(ready):
            batch = cursor[0]
            estimate = batch.estimated_size()
            if batches and size + estimate > max_request_size:
                left = ready[position:]
                break
            size += estimate
            cursor.popleft()
            batch.closed = True
            batch.in_flight = True
            if idempotent and batch.base_sequence < 0:
                # A retried batch keeps its producer id, epoch and sequence (it may be in the
                # log already): only a new batch, or one _restart_sequences cleared, takes some.
                producer_id, epoch = txn.producer_id, txn.producer_epoch
                sequence = cursor.take_sequences(producer_id, epoch, batch.count)
                batch.encode(producer_id, epoch, sequence)
            cursor.in_flight += 1
            batches.append(batch)
        flight = Flight(self, batches)
        self.flights.add(flight)
        self.submit(flight)
        return left

    def answered(self, flight: Flight, response: Any, error: BaseException | None) -> None:
        """A Produce request's outcome: its answer, or why there is none."""
        if flight.done:
            return  # settled by stop() already
        # First: the sender's next pass is then scheduled before the coroutines that this
        # answer's deliveries wake, and sends what the answered partitions have waiting.
        self._wakeup.set()
        batches = flight.batches
        outcomes = self._outcomes
        if error is None:
            self.stalled = False
        elif isinstance(error, errors.KafkaTimeoutError):
            self.stalled = True
        try:
            if error is None:
                if response is None:  # acks=0: written is all we learn
                    for batch in batches:
                        outcomes.succeeded(batch, -1, -1)
                else:
                    outcomes.handle_response(batches, response, flight.topic_names)
            elif isinstance(error, errors.KafkaError):
                self._cluster.request_update()  # no answer at all: the leader may have moved
                for batch in batches:
                    outcomes.attempt_failed(batch, error)
            else:
                raise error
        except Exception as exc:  # a bug, not a broker problem: fail, never hang
            log.error("Produce request to broker %d failed unexpectedly", self.node, exc_info=exc)
            for batch in batches:
                if batch.in_flight:
                    outcomes.returned(batch)
                if not batch.done:
                    outcomes.fail_batch(batch, exc)
        finally:
            self.settle(flight)

    @property
    def has_work(self) -> bool:
        """Whether requests are out or batches wait for this broker."""
        return self.in_flight > 0 or any(self.cursors.values())

    def give_up_requests(self, reason: str) -> None:
        """Fail every request out or queued to this (stalled) broker now, as if its connection
        was lost: their batches are retried, each from its partition's current leader.

        For partitions whose leadership moved away from a broker that stopped answering: their
        batches would otherwise wait out a whole request timeout (or a connection setup to the
        frozen broker) before the new leader may have them.  As after any lost connection, an
        idempotent batch keeps its sequence numbers: the new leader never writes it twice.
        """
        error = errors.KafkaConnectionError(f"broker {self.node} {reason}")
        for connection in {flight.connection for flight in self.flights}:
            if connection is not None:
                connection.close(error)  # its callbacks fail the written requests
        writer = self._writer
        if writer is not None:
            # Never written (it waits for a connection or a slot): cancelled, nothing is sent.
            self._tasks.cancel(writer)
            self._writer = None
        unwritten = list(self._unwritten)
        self._unwritten.clear()
        for flight, _prepared, _failure in unwritten:
            flight(None, error)

    def settle(self, flight: Flight) -> None:
        """The request is over (answered, or abandoned while stopping): free its counts."""
        if flight.done:
            return
        flight.done = True
        self.flights.discard(flight)
        self.in_flight -= 1
        for batch in flight.batches:
            if batch.in_flight:  # not answered (stopping): nothing will answer for it any more
                self._outcomes.returned(batch)

    def submit(self, flight: Flight) -> None:
        """Write ``flight``'s request now if possible, else queue it for the writer task."""
        self.in_flight += 1
        prepared: _Prepared | None = None
        failure: Exception | None = None
        if not self._unwritten:
            try:
                prepared = self._write_now(flight)
            except Exception as exc:  # handled by the writer, in its turn
                failure = exc
            if flight.connection is not None:
                return  # written: the answer comes to the flight
        self._unwritten.append((flight, prepared, failure))
        if self._writer is None or self._writer.done():
            self._writer = self._tasks.start(self.writer_key, self._write_queued())

    def writer_failed(self, exc: BaseException) -> None:
        """The writer task died: restart it (with backoff) while requests wait for it.

        Queued requests have no timer of their own: without a writer they would wait forever.
        The restarted writer takes the queue up where it stopped.
        """
        log.error("producer writer for broker %d failed; restarting it", self.node, exc_info=exc)
        self._writer = None
        if self._unwritten:
            self._writer = self._tasks.restart(self.writer_key, self._write_queued)

    def clear(self) -> None:
        """Settle every request and forget the queued ones (the sender is stopping)."""
        for flight in list(self.flights):
            self.settle(flight)
        self._unwritten.clear()
        self._writer = None

    def _write_now(self, flight: Flight) -> _Prepared | None:
        """Write ``flight``'s request if its connection is open and has a free slot.

        Sets ``flight.connection`` when written; otherwise returns the request (if the
        connection is open, so that it could be built) for the writer to send.
        """
        broker = self._cluster.metadata.brokers.get(self.node)
        if broker is None:
            return None
        connection = self._cluster.pool.cached(broker.host, broker.port, "produce")
        if connection is None:
            return None
        request, version, flight.topic_names = self._build_request(
            self.node, flight.batches, connection
        )
        timeout_ms = self._policy.request_timeout_ms
        if connection.try_submit(request, version, flight, timeout_ms=timeout_ms):
            flight.connection = connection
            return None
        return connection, request, version  # no free slot: the writer waits for one

    async def _write_queued(self) -> None:
        """Write the queued requests, in order, as the connection and its slots allow."""
        queue = self._unwritten
        while queue:
            flight, prepared, failure = queue[0]
            error: Exception | None = None
            try:
                if failure is not None:
                    raise failure
                if prepared is None:
                    connection = await self._cluster.connection(self.node, purpose="produce")
                    request, version, flight.topic_names = self._build_request(
                        self.node, flight.batches, connection
                    )
                else:
                    connection, request, version = prepared
                await connection.submit(
                    request, version, flight, timeout_ms=self._policy.request_timeout_ms
                )
                flight.connection = connection
            except asyncio.CancelledError:
                raise  # stopping: the sender settles the queued flights
            except Exception as exc:
                error = exc
            queue.popleft()  # only now may a later request be written directly
            if error is not None:
                flight(None, error)
