"""One asyncio connection to one broker, multiplexing pipelined requests by correlation id.

The receive path is an :class:`asyncio.Protocol` feeding bytes straight into the sans-I/O
:class:`~aiokafkawire.protocol.framing.KafkaFraming`; each response resolves the future of the
request with the same correlation id, or calls the callback it was submitted with (no task hop,
see :meth:`BrokerConnection.try_submit`).  A connection error is sticky: it fails every waiter at
once with a retriable :class:`~aiokafkawire.errors.KafkaConnectionError` and the connection is done;
the pool (:mod:`aiokafkawire.net.pool`) makes a new one, with backoff.
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
from aiokafkawire._waits import timeout_after
from aiokafkawire.metrics import (
    LATENCY_MASK,
    BrokerStats,
    ConnectionEvent,
    RequestEvent,
    api_name,
)
from aiokafkawire.net.config import SECURITY_PROTOCOLS, ConnectionConfig, ReconnectBackoff
from aiokafkawire.net.direct_reads import DirectReader
from aiokafkawire.net.handshake import SaslSession, negotiate_versions, reauthenticating
from aiokafkawire.net.lifecycle import CONNECTION_LIFECYCLE, ConnectionState, LifecycleEvent
from aiokafkawire.net.slots import RequestSlots
from aiokafkawire.net.tls import tls_error
from aiokafkawire.net.versions import CLIENT_THROTTLES_SINCE, VersionPolicy, client_api_versions
from aiokafkawire.protocol import SUPPORTED_VERSIONS
from aiokafkawire.protocol.framing import KafkaFraming

__all__ = [
    "SECURITY_PROTOCOLS",
    "BrokerConnection",
    "ConnectionConfig",
    "ConnectionState",
    "ReconnectBackoff",
    "ResponseCallback",
]

log = logging.getLogger("aiokafkawire.net")

_READY = ConnectionState.READY
_REAUTHENTICATING = ConnectionState.REAUTHENTICATING

ResponseCallback = Callable[[Any, "BaseException | None"], None]
"""``callback(response, error)``: exactly one of them is set (both ``None`` for acks=0 produce)."""


class _Waiter:
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


class _StreamProtocol(asyncio.Protocol):
    """Lean receive path: bytes go to the connection without intermediate buffering."""

    def __init__(self, connection: BrokerConnection) -> None:
        self._connection = connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self._connection._data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connection._connection_lost(exc)

    def pause_writing(self) -> None:
        self._connection._pause_writing()

    def resume_writing(self) -> None:
        self._connection._resume_writing()


class BrokerConnection:  # ~450 lines: the request pipeline's state stays in one object's slots
    """A connection to one broker.

    Create with :meth:`open` (connects, negotiates versions through ApiVersions, authenticates).
    :meth:`send` pipelines up to ``max_in_flight_requests_per_connection`` requests.  Its
    lifecycle is the table in :mod:`aiokafkawire.net.lifecycle` (:attr:`state`); the handshake
    lives in :mod:`aiokafkawire.net.handshake`, the request slots in :mod:`aiokafkawire.net.slots`.
    """

    def __init__(
        self,
        host: str,
        port: int,
        config: ConnectionConfig | None = None,
        *,
        node_id: int | None = None,
        purpose: str = "default",
    ) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
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
        self._by_correlation: dict[int, _Waiter] = {}
        self._slots = RequestSlots(self.config.max_in_flight_requests_per_connection)
        self._abandoned = 0
        self._error: errors.KafkaError | None = None
        self._closed_future: asyncio.Future[None] | None = None
        self._write_buffer: list[bytes] = []
        self._flush_scheduled = False
        self._writable: asyncio.Event | None = None
        # SASL (with KIP-368 re-authentication); _raw_mode while a v0 exchange owns the bytes.
        self._sasl = SaslSession(self) if self.config.uses_sasl else None
        self._raw_mode = False
        self._loop: asyncio.AbstractEventLoop | None = None
        # receive_now(): a duplicate of the socket for reads outside the event loop's turn,
        # made on first use, on plain TCP with a selector loop only (see receive_now).
        self._direct: DirectReader | None = None
        self._receiving = False  # inside _data_received: no nested reads
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

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        config: ConnectionConfig | None = None,
        *,
        node_id: int | None = None,
        purpose: str = "default",
    ) -> BrokerConnection:
        """Connect, negotiate API versions and authenticate; raises a typed error on failure."""
        connection = cls(host, port, config, node_id=node_id, purpose=purpose)
        try:
            await connection._connect()
        except BaseException:
            connection.close()
            raise
        return connection

    @property
    def state(self) -> ConnectionState:
        """Where the connection is in its lifecycle."""
        return self._state

    def _enter(self, event: LifecycleEvent) -> None:
        """Move along the lifecycle table (an undeclared move raises InvalidTransitionError)."""
        self._state = CONNECTION_LIFECYCLE.next(self._state, event)

    @property
    def reauthentications(self) -> int:
        """How many times this connection re-authenticated (KIP-368)."""
        return 0 if self._sasl is None else self._sasl.reauthentications

    async def _connect(self) -> None:
        self._enter(LifecycleEvent.CONNECT)
        self._loop = asyncio.get_running_loop()
        self._closed_future = self._loop.create_future()
        transport = await self._open_transport()
        if self._error is not None:  # lost while connecting
            transport.abort()
            raise self._error
        self._transport = transport
        self._enter(LifecycleEvent.CONNECTED)
        await negotiate_versions(self)
        if self._sasl is not None:
            self._raise_if_failed()
            self._enter(LifecycleEvent.AUTHENTICATE)
            await self._sasl.authenticate()
        self._raise_if_failed()
        self._enter(LifecycleEvent.HANDSHAKE_DONE)
        stats = self._stats
        stats.connections_opened += 1
        stats.connections.add(self)
        log.debug("%r ready", self)
        if self._hooks:
            self._emit_connection("on_connect", None)

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    async def _open_transport(self) -> asyncio.Transport:
        """TCP (and TLS) connect, with typed errors; remembers whether direct reads are safe."""
        assert self._loop is not None
        timeout = self.config.connect_timeout_ms / 1000
        tls = self.config.ssl_context if self.config.uses_tls else None
        try:
            async with timeout_after(timeout):
                transport, _ = await self._loop.create_connection(
                    lambda: _StreamProtocol(self),
                    self.host,
                    self.port,
                    ssl=tls,
                    server_hostname=self.host if tls is not None else None,
                )
        except (TimeoutError, asyncio.TimeoutError):
            raise errors.KafkaConnectionError(
                f"connecting to {self.host}:{self.port} timed out after {timeout:.1f}s"
            ) from None
        except ssl.SSLError as exc:
            raise tls_error(f"TLS handshake with {self.host}:{self.port} failed", exc) from exc
        except OSError as exc:
            raise errors.KafkaConnectionError(
                f"cannot connect to {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        # Reading the socket directly is only safe when the transport reads it the same way:
        # plain TCP on a selector loop (a proactor or TLS transport owns the bytes it reads).
        if tls is None and isinstance(self._loop, asyncio.selector_events.BaseSelectorEventLoop):
            self._direct = DirectReader(self)
        # No isinstance check: uvloop's stream transports are not asyncio.Transport subclasses.
        return transport

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

    # ---------------------------------------------------------------- requests

    async def send(
        self,
        request: Any,
        version: int | None = None,
        *,
        timeout_ms: float | None = None,
    ) -> Any:
        """Send ``request`` and return its decoded response (``None`` for acks=0 produce).

        ``version`` defaults to the newest version both sides support.  ``timeout_ms`` defaults to
        ``request_timeout_ms``; a long-poll Fetch should add its ``max_wait_ms``.
        """
        if self._error is not None:
            raise self._error
        if version is None:
            version = self.versions.version_for(request.API_KEY)
        timeout = self._timeout_seconds(timeout_ms)
        deadline = time.monotonic() + timeout
        await self._wait_throttle()
        if self._state is _REAUTHENTICATING and not reauthenticating.get():
            assert self._sasl is not None
            await self._sasl.wait_reauthenticated(timeout)
        await self._slots.acquire(max(deadline - time.monotonic(), 0.0), self)
        if self._error is not None:
            self._slots.release()
            raise self._error
        try:
            correlation_id, frame, expects_response = self._framing.send_request(request, version)
        except BaseException:
            self._slots.release()
            raise
        if not expects_response:
            self._slots.release()
            self._stats.requests += 1
            await self._write(frame)
            return None
        assert self._loop is not None
        self._stats.requests += 1
        waiter = _Waiter(self._loop.create_future(), request.API_KEY, None, correlation_id)
        self._by_correlation[correlation_id] = waiter
        await self._write(frame)
        return await self._response(waiter, deadline, timeout, request, version)

    def try_submit(
        self,
        request: Any,
        version: int,
        callback: ResponseCallback,
        *,
        timeout_ms: float | None = None,
    ) -> bool:
        """Put ``request`` on the wire now, if that needs no waiting; False (nothing done) if not.

        Succeeds when a request slot is free and the socket takes data: the frame is written
        before this returns.  ``callback(response, error)`` gets the outcome: it runs inside
        the receive path as soon as the answer is read (no task wakes up in between), or with
        the connection's sticky error, or with a :class:`~aiokafkawire.errors.KafkaTimeoutError`
        after ``timeout_ms`` (default ``request_timeout_ms``).  It never runs inside this call:
        an acks=0 produce, which gets no answer, has ``callback(None, None)`` on the loop's
        next turn.  A producer calls this with a batch that just filled up, so the broker works
        on it while the application keeps appending.
        """
        if self._state is not _READY:
            if self._error is not None:
                raise self._error
            return False  # re-authenticating
        if (
            self._slots.free == 0
            or (self._writable is not None and not self._writable.is_set())
            or self.throttled
        ):
            return False
        self._slots.free -= 1  # RequestSlots.take_now, inlined: this is the producer's hot path
        self._register(request, version, callback, self._timeout_seconds(timeout_ms))
        self._flush()  # with whatever earlier frames of this iteration wait for their flush
        return True

    async def submit(
        self,
        request: Any,
        version: int,
        callback: ResponseCallback,
        *,
        timeout_ms: float | None = None,
    ) -> None:
        """Wait for a free slot, write ``request``; its outcome goes to ``callback``.

        As :meth:`try_submit`, except that this waits (up to the request timeout) for a slot
        and for the socket to take data.  It raises, with nothing sent, if the connection has
        failed or no slot frees up in time; once it returns, ``callback`` will be called.
        """
        if self._error is not None:
            raise self._error
        timeout = self._timeout_seconds(timeout_ms)
        await self._wait_throttle()
        if self._state is _REAUTHENTICATING:
            assert self._sasl is not None
            deadline = time.monotonic() + timeout
            await self._sasl.wait_reauthenticated(timeout)
            timeout = max(deadline - time.monotonic(), 0.0)
        await self._slots.acquire(timeout, self)
        if self._writable is not None and not self._writable.is_set():
            try:
                await self._writable.wait()
            except BaseException:
                self._slots.release()
                raise
        if self._error is not None:
            self._slots.release()
            raise self._error
        self._register(request, version, callback, timeout)
        self._flush()

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

    def _timeout_seconds(self, timeout_ms: float | None) -> float:
        """A request's timeout in seconds: ``timeout_ms``, or the configured request timeout."""
        return (self.config.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000

    def _no_response_error(
        self, request: Any, version: int, timeout: float, correlation_id: int = -1
    ) -> errors.KafkaTimeoutError:
        self._stats.request_errors += 1
        log.debug(
            "%r: %s v%d (correlation id %d) got no response within %.1fs",
            self,
            api_name(request.API_KEY),
            version,
            correlation_id,
            timeout,
        )
        return errors.KafkaTimeoutError(
            f"{type(request).__name__} v{version} to {self.host}:{self.port} got no "
            f"response within {timeout:.1f}s"
        )

    def _register(
        self, request: Any, version: int, callback: ResponseCallback, timeout: float
    ) -> None:
        """Frame ``request`` into the write buffer and register its callback (slot held)."""
        try:
            correlation_id, frame, expects_response = self._framing.send_request(request, version)
        except BaseException:
            self._slots.release()
            raise
        self._write_buffer.append(frame)
        loop = self._loop
        assert loop is not None
        self._stats.requests += 1
        if not expects_response:
            self._slots.release()
            loop.call_soon(callback, None, None)
            return
        waiter = _Waiter(None, request.API_KEY, callback, correlation_id)
        waiter.timer = loop.call_later(
            timeout, self._callback_timed_out, waiter, request, version, timeout
        )
        self._by_correlation[correlation_id] = waiter

    def _callback_timed_out(
        self, waiter: _Waiter, request: Any, version: int, timeout: float
    ) -> None:
        if waiter.callback is None:
            return
        self._abandon(waiter)
        callback = waiter.take_callback()
        assert callback is not None
        self._close_if_mid_frame()
        callback(None, self._no_response_error(request, version, timeout, waiter.correlation_id))

    def _close_if_mid_frame(self) -> None:
        """After a request timeout: if the broker stopped in the middle of a frame, close.

        A late answer is normally worth its slot (see :meth:`_abandon`), but a broker that
        sent part of a frame and then nothing for a whole request timeout is broken or not a
        Kafka broker: whatever follows cannot be trusted, and keeping the connection would make
        every later request on it time out as well.
        """
        pending = self._framing.buffered
        if pending and self._error is None and not self._raw_mode:
            self._fail(
                errors.KafkaTimeoutError(
                    f"{self.host}:{self.port} stopped in the middle of a response "
                    f"({pending} bytes of it received); closing the connection"
                )
            )

    def receive_now(self) -> bool:
        """Read and handle the answers the broker has already sent, without waiting for the loop.

        The event loop reads a socket only between turns; a task that appends thousands of
        records without yielding (or thousands of tasks that each do) keeps answers unread in
        the socket buffer meanwhile.  This reads them at once: futures resolve and callbacks
        run before it returns.  Only on plain TCP with a selector event loop, where the
        transport reads the socket the same way (elsewhere: nothing, the loop reads as usual);
        never from inside a callback of this connection.  Returns whether bytes were read.
        """
        direct = self._direct
        if direct is None or self._receiving or self._error is not None:
            return False
        if not self._by_correlation:
            return False
        return direct.read()

    async def _response(
        self, waiter: _Waiter, deadline: float, timeout: float, request: Any, version: int
    ) -> Any:
        future = waiter.future
        assert future is not None
        remaining = max(deadline - time.monotonic(), 0.0)
        try:
            async with timeout_after(remaining):
                return await asyncio.shield(future)
        except (TimeoutError, asyncio.TimeoutError):
            self._abandon(waiter)
            if not future.done():
                self._close_if_mid_frame()
            if future.done() and not future.cancelled():
                exc = future.exception()
                if exc is not None:
                    raise exc from None
                return future.result()
            raise self._no_response_error(
                request, version, timeout, waiter.correlation_id
            ) from None
        except asyncio.CancelledError:
            self._abandon(waiter)
            raise

    def _abandon(self, waiter: _Waiter) -> None:
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
        if self._transport is None or self._error is not None or not self._write_buffer:
            self._write_buffer.clear()
            return
        data = (
            self._write_buffer[0] if len(self._write_buffer) == 1 else b"".join(self._write_buffer)
        )
        self._write_buffer.clear()
        self._stats.bytes_sent += len(data)
        self._transport.write(data)

    # ---------------------------------------------------------------- receive path

    def _data_received(self, data: bytes) -> None:
        if self._raw_mode:
            assert self._sasl is not None
            self._sasl.raw_data_received(data)
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

    def _connection_lost(self, exc: Exception | None) -> None:
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
            self._enter(LifecycleEvent.TRANSPORT_GONE)
        if self._closed_future is not None and not self._closed_future.done():
            self._closed_future.set_result(None)

    def _pause_writing(self) -> None:
        if self._writable is None:
            self._writable = asyncio.Event()
        self._writable.clear()

    def _resume_writing(self) -> None:
        if self._writable is not None:
            self._writable.set()

    def _fail(self, error: errors.KafkaError) -> None:
        """Sticky failure: fail every waiter at once and drop the transport."""
        if self._error is not None:
            return
        self._error = error
        self._enter(LifecycleEvent.FAIL)
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
        if self._transport is not None:
            self._transport.abort()  # connection_lost follows, then the connection is CLOSED
        else:
            self._transport_gone()
        log.debug("%r closed: %s", self, error)

    def _fail_waiters(self, waiters: list[_Waiter], error: errors.KafkaError) -> None:
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

    def _emit_request(self, waiter: _Waiter, now: float, error: BaseException | None) -> None:
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
