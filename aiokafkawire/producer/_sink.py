"""One broker's side of the sender: its partitions' cursors and its Produce requests.

A :class:`BrokerSink` owns the :class:`~aiokafkawire.producer._partition.PartitionCursor` of every
partition this broker leads (the sender moves a cursor, whole, when the leader changes).  The sender
decides which batches are ready and gives each leader's sink its own; the sink packs them into
:class:`Flight` requests (:meth:`BrokerSink.send`: sequence numbers, in-flight counts) and hears
their answers (:meth:`BrokerSink.answered`), whose fate
:class:`~aiokafkawire.producer._outcomes.BatchOutcomes` decides.  A sink writes a request at once
when its connection is open, has a free slot and takes the bytes, and nothing of this broker waits
before it; otherwise the request joins the sink's queue, which one supervised writer task (key
``("writer", node)``) writes in order.  So requests to one broker leave in the order they were
drained whatever the event loop's scheduling: an idempotent partition's sequence numbers must reach
the broker in order.  (Relying on tasks waking in the order they went to sleep failed on uvloop.) A
request's answer goes to its flight's callback, inside the connection's receive path: the partition
is free again, and its next full batch written, before anything else runs.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiokafkawire import errors
from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.producer._partition import PartitionCursor
from aiokafkawire.protocol.messages import ProduceRequest
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from aiokafkawire.producer._sender import Sender

__all__ = ["BrokerSink", "Flight"]

log = logging.getLogger("aiokafkawire.producer")

_Prepared = tuple[Any, ProduceRequest, int]  # connection, request, version: built, not written
RequestBuilder = Callable[["Flight", Any], tuple[ProduceRequest, int]]


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
    """One broker: the cursors of the partitions it leads, its requests in flight and unwritten."""

    def __init__(
        self,
        node: int,
        sender: Sender,
        build_request: RequestBuilder,
        *,
        max_in_flight: int,
        max_request_size: int,
        request_timeout_ms: int,
    ) -> None:
        self.node = node
        self.cursors: dict[TopicPartition, PartitionCursor] = {}  # the partitions it leads
        self.flights: set[Flight] = set()  # requests made and not yet answered
        self.in_flight = 0  # requests made and not yet answered (written or queued)
        self._sender = sender
        self._cluster = sender.cluster
        self._tasks = sender.tasks
        self._outcomes = sender.outcomes
        self._build_request = build_request
        self._max_in_flight = max_in_flight
        self._max_request_size = max_request_size
        self._request_timeout_ms = request_timeout_ms
        self._rotation = 0
        self._unwritten: deque[_Unwritten] = deque()
        self._writer: asyncio.Task[Any] | None = None

    @property
    def writer_key(self) -> tuple[str, int]:
        """The supervisor key of this sink's writer task."""
        return ("writer", self.node)

    def has_room(self) -> bool:
        """Whether another request may be made (the broker's in-flight limit)."""
        return self.in_flight < self._max_in_flight

    def send(self, ready: list[ProducerBatch]) -> list[ProducerBatch]:
        """Send one request with as many of ``ready`` as fit; returns the batches left over.

        Every batch's partition cursor is this sink's (the sender moved it here).
        """
        sender = self._sender
        txn = sender.txn
        idempotent = sender.idempotent
        queues = sender.accumulator.batches
        cursors = self.cursors
        if len(ready) > 1:
            # Start at a different partition each time, so that when max_request_size cuts a
            # request short, the same partitions are not always the ones left behind.
            start = self._rotation % len(ready)
            self._rotation += 1
            ready = ready[start:] + ready[:start]
        batches: list[ProducerBatch] = []
        size = 0
        left: list[ProducerBatch] = []
        for position, batch in enumerate(ready):
            estimate = batch.estimated_size()
            if batches and size + estimate > self._max_request_size:
                left = ready[position:]
                break
            size += estimate
            queues[batch.tp].popleft()
            batch.closed = True
            batch.in_flight = True
            cursor = cursors[batch.tp]
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
        batches = flight.batches
        outcomes = self._outcomes
        sender = self._sender
        try:
            if error is None:
                if response is None:  # acks=0: written is all we learn
                    for batch in batches:
                        outcomes.succeeded(batch, -1, -1)
                else:
                    outcomes.handle_response(batches, response, flight.topic_names)
            elif isinstance(error, errors.KafkaError):
                if isinstance(error, (errors.KafkaConnectionError, errors.KafkaTimeoutError)):
                    self._cluster.request_update()
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
            sender.wakeup.set()
        if not outcomes.closing and sender.txn.fatal is None:
            # The partitions just answered may have full batches waiting: send them now,
            # before the coroutines this answer woke up (maybe thousands) take their turn.
            sender.send_now()

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
        request, version = self._build_request(flight, connection)
        if connection.try_submit(request, version, flight, timeout_ms=self._request_timeout_ms):
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
                    request, version = self._build_request(flight, connection)
                else:
                    connection, request, version = prepared
                await connection.submit(
                    request, version, flight, timeout_ms=self._request_timeout_ms
                )
                flight.connection = connection
            except asyncio.CancelledError:
                raise  # stopping: the sender settles the queued flights
            except Exception as exc:
                error = exc
            queue.popleft()  # only now may a later request be written directly
            if error is not None:
                flight(None, error)
