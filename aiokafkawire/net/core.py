"""What every part of a broker connection shares: its state, the receive path and the failure.

:class:`ConnectionCore` holds a connection's attributes (one object, so the per-request paths read
their own slots without hops), moves it along the lifecycle table
(:mod:`aiokafkawire.net.lifecycle`), turns received bytes into answers for the waiting requests,
and fails every waiter at once with a sticky error.  :class:`~aiokafkawire.net.connection.
BrokerConnection` adds opening and the send side.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from aiokafkawire import errors
from aiokafkawire.metrics import (
    LATENCY_MASK,
    BrokerStats,
    ConnectionEvent,
    RequestEvent,
    api_name,
)
from aiokafkawire.net.config import ConnectionConfig
from aiokafkawire.net.direct_reads import DirectReader
from aiokafkawire.net.direct_writes import DirectWriter
from aiokafkawire.net.handshake import SaslSession
from aiokafkawire.net.lifecycle import CONNECTION_LIFECYCLE, ConnectionState, LifecycleEvent
from aiokafkawire.net.slots import RequestSlots
from aiokafkawire.net.tls import tls_error
from aiokafkawire.net.versions import CLIENT_THROTTLES_SINCE, VersionPolicy, client_api_versions
from aiokafkawire.protocol import SUPPORTED_VERSIONS
from aiokafkawire.protocol.framing import FramePart, KafkaFraming

__all__ = ["ConnectionCore", "ResponseCallback", "Waiter"]

log = logging.getLogger("aiokafkawire.net")

# A part of a frame this large is written by itself where writelines() would join it.
_WRITE_ALONE = 32 * 1024

ResponseCallback = Callable[[Any, "BaseException | None"], None]
"""``callback(response, error)``: exactly one of them is set (both ``None`` for acks=0 produce)."""


class Waiter:
    """A request awaiting its response: a future to resolve, or a callback to call."""

    __slots__ = ("abandoned", "api_key", "callback", "correlation_id", "future", "sent_at", "timer")

    def __init__(
        self,
        future: asyncio.Future[Any] | None,
        api_key: int,
        callback: ResponseCallback | None = None,
        correlation_id: int = -1,
    ) -> None:
        self.future = future
        self.api_key = api_key
        self.callback = callback
        self.correlation_id = correlation_id
        self.sent_at = time.monotonic()
        self.timer: asyncio.TimerHandle | None = None  # callback waiters' request timeout
        self.abandoned = False

    @property
    def decided(self) -> bool:
        """Whether the requester has had its answer (response, error or timeout)."""
        if self.future is not None:
            return self.future.done()
        return self.callback is None

    def take_callback(self) -> ResponseCallback | None:
        """The callback, once: later calls give None; its timeout will not fire."""
        callback, self.callback = self.callback, None
        if callback is not None and self.timer is not None:
            self.timer.cancel()
        return callback


class ConnectionCore(asyncio.Protocol):
    """A broker connection's state, receive path and sticky failure (see the module).

    It is its transport's :class:`asyncio.Protocol` (``data_received``, ``connection_lost``,
    ``pause_writing``, ``resume_writing``): received bytes reach the receive path without an
    intermediate object.  The handshake drives it through the public methods listed in
    :class:`~aiokafkawire.net.handshake.HandshakeChannel`, never through private members.
    """

    def __init__(
        self,
        host: str,
        port: int,
        config: ConnectionConfig | None = None,
        *,
        node_id: int | None = None,
        purpose: str = "default",
        cluster_id: str | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        # KIP-1242: the cluster the metadata says node_id belongs to (None: not checked).
        self.expected_cluster_id = cluster_id
        self.purpose = purpose
        self.config = config or ConnectionConfig()
        self.versions = VersionPolicy(
            client_api_versions(SUPPORTED_VERSIONS), self.config.api_version
        )
        self._framing = KafkaFraming(
            self.config.client_id, max_frame_size=self.config.max_frame_size
        )
        self._state = ConnectionState.NEW
        self._transport: asyncio.Transport | None = None
        self._by_correlation: dict[int, Waiter] = {}
        self._slots = RequestSlots(self.config.max_in_flight_requests_per_connection)
        self._abandoned = 0
        self._error: errors.KafkaError | None = None
        self._closed_future: asyncio.Future[None] | None = None
        self._write_buffer: list[FramePart] = []
        # Parts of _write_buffer that a frame references (a Produce request's record batches):
        # written as they are, never joined (see _flush).
        self._write_references = 0
        # The transport joins what writelines() is given (asyncio's selector transport before
        # Python 3.12): _flush writes large parts one by one instead.
        self._writelines_joins = True
        # Where it does (plain TCP, selector loop): every frame goes out with one sendmsg of
        # its parts, without the transport (see aiokafkawire.net.direct_writes).
        self._writer: DirectWriter | None = None
        self._flush_scheduled = False
        self._writable: asyncio.Event | None = None
        # SASL (with KIP-368 re-authentication); _diverted while a v0 exchange owns the bytes.
        self._sasl = self._new_sasl_session()
        self._diverted: Callable[[bytes], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # receive_now(): a duplicate of the socket for reads outside the event loop's turn,
        # made on first use, on plain TCP with a selector loop only (see receive_now).
        self._direct: DirectReader | None = None
        self._receiving = False  # inside data_received: no nested reads
        # Quota throttling (KIP-219): nothing is written before throttled_until (monotonic).
        self.throttled_until = 0.0
        metrics = self.config.metrics
        self._metrics = metrics
        self._hooks = bool(metrics is not None and metrics.hooks)
        self._stats: BrokerStats = (
            metrics.broker(host, port, node_id)
            if metrics is not None
            else BrokerStats(host, port, node_id)
        )

    def __repr__(self) -> str:
        return (
            f"<BrokerConnection node={self.node_id} {self.host}:{self.port} "
            f"purpose={self.purpose} {self._state.value}>"
        )

    def _new_sasl_session(self) -> SaslSession | None:
        """The SASL session (BrokerConnection makes one: the exchange sends through it)."""
        return None

    @property
    def state(self) -> ConnectionState:
        """Where the connection is in its lifecycle."""
        return self._state

    def enter(self, event: LifecycleEvent) -> None:
        """Move along the lifecycle table (an undeclared move raises InvalidTransitionError)."""
        self._state = CONNECTION_LIFECYCLE.next(self._state, event)

    def divert_received(self, receiver: Callable[[bytes], None] | None) -> None:
        """Hand received bytes to ``receiver`` as they are, instead of the Kafka framing
        (SASL v0 tokens travel without Kafka headers); ``None`` restores the framing."""
        self._diverted = receiver

    async def write_raw(self, data: bytes) -> None:
        """Write ``data`` as it is, without a Kafka header (SASL v0 tokens)."""
        await self._write(data)

    @property
    def reauthentications(self) -> int:
        """How many times this connection re-authenticated (KIP-368)."""
        return 0 if self._sasl is None else self._sasl.reauthentications

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    @property
    def closed(self) -> bool:
        """True once the connection has failed or been closed; it is never reused."""
        return self._error is not None

    @property
    def error(self) -> errors.KafkaError | None:
        """The sticky error that ended this connection, if any."""
        return self._error

    @property
    def in_flight(self) -> int:
        """Requests sent and awaiting a response (timed-out ones included)."""
        return len(self._by_correlation)

    @property
    def unanswered_timeouts(self) -> int:
        """Requests that timed out and whose answers have not come since (the broker may be
        frozen: still connected, answering nothing)."""
        return self._abandoned

    def awaits_answers(self) -> bool:
        """Whether a request in flight still has a requester waiting for its answer."""
        return any(not waiter.abandoned for waiter in self._by_correlation.values())

    def close(self, error: errors.KafkaError | None = None) -> None:
        """Close now; every waiter fails with ``error`` (default: ConnectionClosedError)."""
        self._fail(
            error or errors.ConnectionClosedError(f"connection to {self.host}:{self.port} closed")
        )

    async def wait_closed(self) -> None:
        """Wait until the transport is gone."""
        if self._closed_future is not None and self._transport is not None:
            await asyncio.shield(self._closed_future)

    @property
    def throttled(self) -> bool:
        """Whether the broker throttled this connection (KIP-219) and the time is not over."""
        return self.throttled_until > 0.0 and time.monotonic() < self.throttled_until

    async def _wait_throttle(self) -> None:
        """Sleep until the broker's throttle time is over (no request may go out before)."""
        while True:
            remaining = self.throttled_until - time.monotonic()
            if remaining <= 0:
                return
            await asyncio.sleep(remaining)

    def _throttled_by_broker(self, api_key: int, version: int, throttle_ms: int) -> None:
        """The one home of quota bookkeeping: count the time in the broker's stats and, from
        the versions where the client is to hold back (KIP-219), mute this connection."""
        self._stats.throttled(throttle_ms)
        if throttle_ms > 0 and version >= CLIENT_THROTTLES_SINCE.get(api_key, 0):
            until = time.monotonic() + throttle_ms / 1000
            if until > self.throttled_until:
                self.throttled_until = until
            log.debug("%r: throttled by the broker for %d ms (api %d)", self, throttle_ms, api_key)

    def _close_if_mid_frame(self) -> None:
        """After a request timeout: if the broker stopped in the middle of a frame, close.

        A late answer is normally worth its slot (see :meth:`_abandon`), but a broker that
        sent part of a frame and then nothing for a whole request timeout is broken or not a
        Kafka broker: whatever follows cannot be trusted, and keeping the connection would make
        every later request on it time out as well.
        """
        pending = self._framing.buffered
        if pending and self._error is None and self._diverted is None:
            self._fail(
                errors.KafkaTimeoutError(
                    f"{self.host}:{self.port} stopped in the middle of a response "
                    f"({pending} bytes of it received); closing the connection"
                )
            )

    def _abandon(self, waiter: Waiter) -> None:
        """The caller stopped waiting; the response slot stays taken until the answer arrives."""
        if waiter.abandoned or waiter.decided:
            return
        waiter.abandoned = True
        self._abandoned += 1
        if self._abandoned >= self.config.max_in_flight_requests_per_connection:
            # Every slot is held by a request nobody waits for: the broker is stuck.
            self._fail(
                errors.KafkaTimeoutError(
                    f"{self.host}:{self.port} stopped answering; closing the connection"
                )
            )

    async def _write(self, frame: bytes) -> None:
        if self._writable is not None and not self._writable.is_set():
            await self._writable.wait()
        if self._error is not None:
            raise self._error
        self._write_buffer.append(frame)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            assert self._loop is not None
            # Coalesce every frame written in this loop iteration into one socket write.
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        buffers = self._write_buffer
        if self._transport is None or self._error is not None or not buffers:
            buffers.clear()
            self._write_references = 0
            return
        writer = self._writer
        if writer is not None or self._write_references:
            # The frames are handed on as they are (parts referencing record batches): a new
            # list takes the next writes.
            self._write_buffer = []
            self._write_references = 0
            self._stats.bytes_sent += sum(map(len, buffers))
            if writer is not None:
                writer.write(buffers)
            else:
                self._write_parts(self._transport, buffers)
            return
        data = buffers[0] if len(buffers) == 1 else b"".join(buffers)
        buffers.clear()
        self._stats.bytes_sent += len(data)
        self._transport.write(data)

    def _write_parts(self, transport: asyncio.Transport, buffers: list[FramePart]) -> None:
        """Write frames that reference large buffers without joining them (no copy of a
        record batch on its way to the socket, unless the socket leaves part of it unsent)."""
        if not self._writelines_joins:
            transport.writelines(buffers)  # uvloop, TLS, asyncio 3.12+: scatter/gather
            return
        # Each large part is written by itself (as a memoryview: asyncio slices what the
        # socket did not take without copying it first); small ones are joined.
        small: list[FramePart] = []
        for part in buffers:
            if len(part) < _WRITE_ALONE:
                small.append(part)
                continue
            if small:
                transport.write(b"".join(small))
                small = []
            transport.write(memoryview(part))
        if small:
            transport.write(b"".join(small))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """asyncio: the transport is up; requests go out unbatched by Nagle."""
        writelines = getattr(type(transport), "writelines", None)
        self._writelines_joins = writelines in (None, asyncio.WriteTransport.writelines)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        """The receive path: bytes from the transport (or a direct read) become answers."""
        if self._diverted is not None:
            self._diverted(data)
            return
        stats = self._stats
        stats.bytes_received += len(data)
        try:
            events = self._framing.receive_data(data)
        except errors.KafkaError as exc:
            self._fail(exc)
            return
        if not events:
            return
        by_correlation = self._by_correlation
        self._receiving = True
        # One clock reading per chunk: the answers in it arrived together.
        now = time.monotonic()
        latencies = stats.latencies
        try:
            for event in events:
                waiter = by_correlation.pop(event.correlation_id, None)
                if waiter is None:
                    self._fail(
                        errors.ProtocolError(
                            f"response with unknown correlation id {event.correlation_id}"
                        )
                    )
                    return
                self._slots.release()
                response = event.response
                stats.responses += 1
                ring = latencies.get(waiter.api_key) or stats.latency(waiter.api_key)
                ring.samples[ring.count & LATENCY_MASK] = now - waiter.sent_at
                ring.count += 1
                if getattr(response, "throttle_time_ms", 0):
                    self._throttled_by_broker(
                        event.api_key, event.api_version, response.throttle_time_ms
                    )
                if self._hooks:
                    self._emit_request(waiter, now, None)
                if waiter.abandoned:
                    self._abandoned -= 1
                elif waiter.future is not None:
                    if not waiter.future.done():
                        waiter.future.set_result(event.response)
                elif (callback := waiter.take_callback()) is not None:
                    try:
                        callback(event.response, None)
                    except Exception:  # the requester's bug must not break the connection
                        log.exception("%r: response callback failed", self)
        finally:
            self._receiving = False

    def connection_lost(self, exc: Exception | None) -> None:
        """asyncio: the transport is gone; a connection still live fails with a typed error."""
        if self._error is None:
            message = f"connection to {self.host}:{self.port} lost"
            error: errors.KafkaError
            if isinstance(exc, ssl.SSLError):
                # TLS 1.3: a refused client certificate shows only after the handshake.
                error = tls_error(message, exc)
            else:
                if exc is not None:
                    message += f": {exc}"
                error = errors.KafkaConnectionError(message)
            if exc is not None:
                error.__cause__ = exc
            self._fail(error)
        self._transport_gone()

    def _transport_gone(self) -> None:
        if self._state is ConnectionState.CLOSING:
            self.enter(LifecycleEvent.TRANSPORT_GONE)
        if self._closed_future is not None and not self._closed_future.done():
            self._closed_future.set_result(None)

    def pause_writing(self) -> None:
        """asyncio: the transport's buffer is full; writers wait."""
        if self._writable is None:
            self._writable = asyncio.Event()
        self._writable.clear()

    def resume_writing(self) -> None:
        """asyncio: the transport's buffer drained; writers go on."""
        if self._writable is not None:
            self._writable.set()

    def _fail(self, error: errors.KafkaError) -> None:
        """Sticky failure: fail every waiter at once and drop the transport."""
        if self._error is not None:
            return
        self._error = error
        self.enter(LifecycleEvent.FAIL)
        if self._sasl is not None:
            self._sasl.connection_failed(error)
        waiters = list(self._by_correlation.values())
        self._by_correlation.clear()
        if self._direct is not None:
            self._direct.close()
            self._direct = None
        stats = self._stats
        if self in stats.connections:
            stats.connections.discard(self)
            stats.connections_closed += 1
            if self._hooks:
                self._emit_connection("on_disconnect", error)
        if waiters:
            self._fail_waiters(waiters, error)
        if self._writable is not None:
            self._writable.set()
        self._write_buffer.clear()
        self._write_references = 0
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._transport is not None:
            self._transport.abort()  # connection_lost follows, then the connection is CLOSED
        else:
            self._transport_gone()
        log.debug("%r closed: %s", self, error)

    def _fail_waiters(self, waiters: list[Waiter], error: errors.KafkaError) -> None:
        """Every request in flight fails with the sticky ``error``; their slots come free."""
        self._stats.request_errors += len(waiters)
        if self._hooks:
            now = time.monotonic()
            for waiter in waiters:
                self._emit_request(waiter, now, error)
        for waiter in waiters:
            self._slots.release()
            if waiter.future is not None:
                if not waiter.future.done():
                    waiter.future.set_exception(error)
                    # Retrieved here so an abandoned waiter never logs "exception never retrieved".
                    waiter.future.exception()
            elif (callback := waiter.take_callback()) is not None:
                # On the loop's next turn: _fail may run inside a requester's own bookkeeping.
                assert self._loop is not None
                self._loop.call_soon(callback, None, error)

    def _emit_connection(self, method: str, error: BaseException | None) -> None:
        assert self._metrics is not None
        self._metrics.emit(
            method, ConnectionEvent(self.node_id, self.host, self.port, self.purpose, error)
        )

    def _emit_request(self, waiter: Waiter, now: float, error: BaseException | None) -> None:
        assert self._metrics is not None
        self._metrics.emit(
            "on_request",
            RequestEvent(
                self.node_id,
                self.host,
                self.port,
                waiter.api_key,
                api_name(waiter.api_key),
                waiter.correlation_id,
                now - waiter.sent_at,
                error,
            ),
        )
