"""One broker's side of the sender: its Produce requests in flight and those waiting to be written.

The sender drains ready batches into :class:`Flight` requests and hands each to the sink of the
partition leader's broker (:meth:`BrokerSink.submit`).  A sink writes a request at once when its
connection is open, has a free slot and takes the bytes, and nothing of this broker waits before
it; otherwise the request joins the sink's queue, which one supervised writer task (key
``("writer", node)``) writes in order.  So requests to one broker leave in the order they were
drained whatever the event loop's scheduling: an idempotent partition's sequence numbers must
reach the broker in order.  (Relying on tasks waking in the order they went to sleep failed on
uvloop.)  A request's answer goes to its flight's callback, inside the connection's receive path.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.protocol.messages import ProduceRequest

if TYPE_CHECKING:
    from aiokafkawire.producer._sender import Sender

__all__ = ["BrokerSink", "Flight"]

log = logging.getLogger("aiokafkawire.producer")

_Prepared = tuple[Any, ProduceRequest, int]  # connection, request, version: built, not written
RequestBuilder = Callable[["Flight", Any], tuple[ProduceRequest, int]]


class Flight:
    """One Produce request on its way, from the drain that made it until its answer."""

    __slots__ = ("batches", "connection", "done", "sender", "sink", "topic_names")

    def __init__(self, sender: Sender, sink: BrokerSink, batches: list[ProducerBatch]) -> None:
        self.sender = sender
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
        self.sender._answered(self, response, error)


# A request waiting to be written: its flight, the request if built, an error met building it.
_Unwritten = tuple[Flight, "_Prepared | None", "Exception | None"]


class BrokerSink:
    """The Produce requests of one broker: how many are in flight, and the ones not written yet."""

    def __init__(
        self,
        node: int,
        cluster: Cluster,
        tasks: TaskSupervisor,
        build_request: RequestBuilder,
        *,
        max_in_flight: int,
        request_timeout_ms: int,
    ) -> None:
        self.node = node
        self.in_flight = 0  # requests made and not yet answered (written or queued)
        self._cluster = cluster
        self._tasks = tasks
        self._build_request = build_request
        self._max_in_flight = max_in_flight
        self._request_timeout_ms = request_timeout_ms
        self._unwritten: deque[_Unwritten] = deque()
        self._writer: asyncio.Task[Any] | None = None

    @property
    def writer_key(self) -> tuple[str, int]:
        """The supervisor key of this sink's writer task."""
        return ("writer", self.node)

    def has_room(self) -> bool:
        """Whether another request may be made (the broker's in-flight limit)."""
        return self.in_flight < self._max_in_flight

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

    def settled(self) -> None:
        """A request of this sink is over (answered, or abandoned while stopping)."""
        self.in_flight -= 1

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
        """Forget the queued requests (the sender is stopping and settles every flight)."""
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
