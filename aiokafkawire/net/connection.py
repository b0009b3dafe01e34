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
import contextvars
import logging
import random
import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire.metrics import (
    LATENCY_MASK,
    BrokerStats,
    ClientMetrics,
    ConnectionEvent,
    RequestEvent,
    api_name,
)
from aiokafkawire.net.credentials import Secret
from aiokafkawire.net.sasl import SUPPORTED_MECHANISMS, create_mechanism
from aiokafkawire.net.tls import create_ssl_context
from aiokafkawire.net.versions import (
    API_VERSIONS_KEY,
    ApiVersionCap,
    VersionPolicy,
    client_api_versions,
)
from aiokafkawire.protocol import SUPPORTED_VERSIONS
from aiokafkawire.protocol.framing import KafkaFraming
from aiokafkawire.protocol.messages import (
    ApiVersionsRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)

log = logging.getLogger("aiokafkawire.net")

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
_INT32 = struct.Struct(">i")
# Bytes asked of the socket per read in receive_now() (asyncio's transports read 256 KiB too).
_DIRECT_READ_SIZE = 256 * 1024
# At most this many reads per receive_now(): answers that keep streaming in wait for the loop.
_DIRECT_READS_MAX = 8

# KIP-219: from these versions on, a broker answers a request that broke a quota at once, with
# throttle_time_ms, and mutes the connection for that long: the client must send nothing more
# to it until then.  Before them the broker delayed the answer itself.  APIs added after
# KIP-219 (Kafka 2.0) work the new way from their first version.
_CLIENT_THROTTLES_SINCE: dict[int, int] = {
    0: 6, 1: 8, 2: 3, 3: 6, 8: 4, 9: 4, 10: 2, 11: 3, 12: 2, 13: 2, 14: 2, 15: 2, 16: 2,
    18: 2, 19: 3, 20: 2, 21: 1, 22: 1, 23: 2, 24: 1, 25: 1, 26: 1, 28: 1, 29: 1, 30: 1,
    31: 1, 32: 2, 33: 1, 34: 1, 35: 1, 36: 1, 37: 1, 38: 1, 39: 1, 40: 1, 41: 1, 42: 1,
}  # fmt: skip

ResponseCallback = Callable[[Any, "BaseException | None"], None]
"""``callback(response, error)``: exactly one of them is set (both ``None`` for acks=0 produce)."""


@dataclass
class ConnectionConfig:
    """Settings shared by every connection of one client.  Secrets are kept out of ``repr``."""

    client_id: str | None = "aiokafkawire"
    request_timeout_ms: int = 30_000
    connect_timeout_ms: int = 10_000
    max_in_flight_requests_per_connection: int = 5
    max_frame_size: int = 100 * 1024 * 1024
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1_000
    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | Secret | None = field(default=None, repr=False)
    sasl_oauth_token_provider: Any = field(default=None, repr=False)
    api_version: ApiVersionCap = None
    client_software_name: str = "aiokafkawire"
    client_software_version: str = "0.1.0"
    # The client's counters and hooks (None: counted per connection, reported nowhere).
    metrics: ClientMetrics | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.security_protocol = self.security_protocol.upper()
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise errors.ConfigError(
                f"security_protocol must be one of {SECURITY_PROTOCOLS}, "
                f"got {self.security_protocol!r}"
            )
        if self.max_in_flight_requests_per_connection < 1:
            raise errors.ConfigError("max_in_flight_requests_per_connection must be >= 1")
        if self.security_protocol.startswith("SASL") and not self.sasl_mechanism:
            raise errors.ConfigError(f"{self.security_protocol} needs sasl_mechanism")
        if self.security_protocol in ("SSL", "SASL_SSL") and self.ssl_context is None:
            self.ssl_context = create_ssl_context()
        if isinstance(self.sasl_password, str):
            # Held as a Secret so no repr, log line or traceback can show it.
            self.sasl_password = Secret(self.sasl_password)
        if self.sasl_mechanism is not None:
            mechanism = self.sasl_mechanism.upper()
            if mechanism not in SUPPORTED_MECHANISMS:
                raise errors.ConfigError(
                    f"unsupported SASL mechanism {self.sasl_mechanism!r}; "
                    f"supported: {', '.join(SUPPORTED_MECHANISMS)}"
                )

    @property
    def uses_tls(self) -> bool:
        """Whether connections are wrapped in TLS."""
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        """Whether connections authenticate with SASL after connecting."""
        return self.security_protocol.startswith("SASL")


class ReconnectBackoff:
    """Exponential reconnect backoff with jitter, between ``base_ms`` and ``max_ms``."""

    __slots__ = ("_base", "_failures", "_max", "_next_allowed")

    def __init__(self, base_ms: int, max_ms: int) -> None:
        self._base = max(base_ms, 0) / 1000
        self._max = max(max_ms, base_ms) / 1000
        self._failures = 0
        self._next_allowed = 0.0

    def failed(self) -> float:
        """Record a failed attempt; returns the delay before the next one may start."""
        self._failures += 1
        delay = min(self._max, self._base * (2 ** min(self._failures - 1, 30)))
        delay *= random.uniform(0.8, 1.2)  # jitter spreads reconnect storms
        delay = min(delay, self._max)
        self._next_allowed = time.monotonic() + delay
        return delay

    def succeeded(self) -> None:
        """Reset after a successful connection."""
        self._failures = 0
        self._next_allowed = 0.0

    def remaining(self) -> float:
        """Seconds to wait before the next attempt is allowed (0 when allowed now)."""
        return max(0.0, self._next_allowed - time.monotonic())


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


class BrokerConnection:
    """A connection to one broker.

    Create with :meth:`open` (connects, negotiates versions through ApiVersions, authenticates).
    :meth:`send` pipelines up to ``max_in_flight_requests_per_connection`` requests.
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
        self._transport: asyncio.Transport | None = None
        self._waiters: deque[tuple[int, _Waiter]] = deque()
        self._by_correlation: dict[int, _Waiter] = {}
        self._slots = asyncio.Semaphore(self.config.max_in_flight_requests_per_connection)
        self._abandoned = 0
        self._error: errors.KafkaError | None = None
        self._closed_future: asyncio.Future[None] | None = None
        self._write_buffer: list[bytes] = []
        self._flush_scheduled = False
        self._writable: asyncio.Event | None = None
        self._raw_mode = False
        self._raw_buffer = bytearray()
        self._raw_waiter: asyncio.Future[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # receive_now(): a duplicate of the socket for reads outside the event loop's turn,
        # made on first use, on plain TCP with a selector loop only (see receive_now).
        self._direct_reads = False
        self._direct_socket: socket.socket | None = None
        self._receiving = False  # inside _data_received: no nested reads
        # Quota throttling (KIP-219): nothing is written before throttled_until (monotonic);
        # the time itself is counted in the broker's stats (throttle_time_ms_total, _max).
        self.throttled_until = 0.0
        metrics = self.config.metrics
        self._metrics = metrics
        self._hooks = bool(metrics is not None and metrics.hooks)
        self._stats: BrokerStats = (
            metrics.broker(host, port, node_id)
            if metrics is not None
            else BrokerStats(host, port, node_id)
        )
        # KIP-368 re-authentication: the timer that starts it, the task running it, and the
        # gate new requests wait at while it runs (None when open).
        self._reauth_timer: asyncio.TimerHandle | None = None
        self._reauth_task: asyncio.Task[None] | None = None
        self._reauth_gate: asyncio.Future[None] | None = None
        self.reauthentications = 0

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open" if self._transport else "new"
        return (
            f"<BrokerConnection node={self.node_id} {self.host}:{self.port} "
            f"purpose={self.purpose} {state}>"
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

    async def _connect(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._closed_future = self._loop.create_future()
        timeout = self.config.connect_timeout_ms / 1000
        tls = self.config.ssl_context if self.config.uses_tls else None
        try:
            async with _timeout(timeout):
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
            raise _tls_error(
                f"TLS handshake with {self.host}:{self.port} failed", exc
            ) from exc
        except OSError as exc:
            raise errors.KafkaConnectionError(
                f"cannot connect to {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        # No isinstance check: uvloop's stream transports are not asyncio.Transport subclasses.
        self._transport = transport
        # Reading the socket directly is only safe when the transport reads it the same way:
        # plain TCP on a selector loop (a proactor or TLS transport owns the bytes it reads).
        self._direct_reads = tls is None and isinstance(
            self._loop, asyncio.selector_events.BaseSelectorEventLoop
        )
        if self._error is not None:  # lost while connecting
            raise self._error
        await self._negotiate_versions()
        if self.config.uses_sasl:
            await self._authenticate()
        stats = self._stats
        stats.connections_opened += 1
        stats.connections.add(self)
        log.debug("%r ready", self)
        if self._hooks:
            self._emit_connection("on_connect", None)

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
        if self._reauth_gate is not None and not _reauthenticating.get():
            await self._wait_reauthenticated(timeout)
        await self._acquire_slot(max(deadline - time.monotonic(), 0.0))
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
        if self._error is not None:
            raise self._error
        if (
            self._transport is None
            or self._reauth_gate is not None
            or self._slots.locked()
            or (self._writable is not None and not self._writable.is_set())
            or self.throttled
        ):
            return False
        _acquire_now(self._slots)
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
        if self._reauth_gate is not None:
            deadline = time.monotonic() + timeout
            await self._wait_reauthenticated(timeout)
            timeout = max(deadline - time.monotonic(), 0.0)
        await self._acquire_slot(timeout)
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

    def _note_throttle(self, api_key: int, version: int, throttle_ms: int) -> None:
        if throttle_ms > 0 and version >= _CLIENT_THROTTLES_SINCE.get(api_key, 0):
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
        if callback is None:
            return  # the last free slot: _abandon closed the connection, which told the callback
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
        if not self._direct_reads or self._receiving or self._error is not None:
            return False
        if not self._by_correlation:
            return False
        sock = self._direct_socket
        if sock is None:
            sock = self._direct_socket = self._duplicate_socket()
            if sock is None:
                return False
        got = False
        for _ in range(_DIRECT_READS_MAX):
            try:
                data = sock.recv(_DIRECT_READ_SIZE)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                # The error the transport would meet: fail every waiter, as it would.
                error = errors.KafkaConnectionError(
                    f"connection to {self.host}:{self.port} lost: {exc.strerror or exc}"
                )
                error.__cause__ = exc
                self._fail(error)
                break
            if not data:
                break  # end of stream: the transport sees it too and reports it
            got = True
            self._data_received(data)
            if len(data) < _DIRECT_READ_SIZE or self._error is not None:
                break
        return got

    def _duplicate_socket(self) -> socket.socket | None:
        transport = self._transport
        sock = transport.get_extra_info("socket") if transport is not None else None
        if sock is None:
            self._direct_reads = False
            return None
        try:
            duplicate: socket.socket = sock.dup()
            duplicate.setblocking(False)  # the file description is non-blocking already
        except (AttributeError, OSError):
            self._direct_reads = False
            return None
        return duplicate

    def _close_direct_socket(self) -> None:
        sock, self._direct_socket = self._direct_socket, None
        self._direct_reads = False
        if sock is not None:
            sock.close()

    async def _acquire_slot(self, timeout: float) -> None:
        if not self._slots.locked():
            _acquire_now(self._slots)  # no timeout context needed: nothing to wait for
            return
        try:
            async with _timeout(timeout):
                await self._slots.acquire()
        except (TimeoutError, asyncio.TimeoutError):
            raise errors.KafkaTimeoutError(
                f"no free request slot on {self!r} within {timeout:.1f}s"
            ) from None

    async def _response(
        self, waiter: _Waiter, deadline: float, timeout: float, request: Any, version: int
    ) -> Any:
        future = waiter.future
        assert future is not None
        remaining = max(deadline - time.monotonic(), 0.0)
        try:
            async with _timeout(remaining):
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
            self._raw_data_received(data)
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
                    stats.throttled(response.throttle_time_ms)
                    self._note_throttle(event.api_key, event.api_version, response.throttle_time_ms)
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
                error = _tls_error(message, exc)
            else:
                if exc is not None:
                    message += f": {exc}"
                error = errors.KafkaConnectionError(message)
            if exc is not None:
                error.__cause__ = exc
            self._fail(error)
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
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        if self._reauth_task is not None and self._reauth_task is not _current_task():
            self._reauth_task.cancel()
        if self._reauth_gate is not None and not self._reauth_gate.done():
            self._reauth_gate.set_result(None)  # waiters then see the error
        waiters = list(self._by_correlation.values())
        self._by_correlation.clear()
        self._close_direct_socket()
        stats = self._stats
        if self in stats.connections:
            stats.connections.discard(self)
            stats.connections_closed += 1
            if self._hooks:
                self._emit_connection("on_disconnect", error)
        if waiters:
            stats.request_errors += len(waiters)
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
        if self._raw_waiter is not None and not self._raw_waiter.done():
            self._raw_waiter.set_exception(error)
            self._raw_waiter.exception()
        if self._writable is not None:
            self._writable.set()
        self._write_buffer.clear()
        if self._transport is not None:
            self._transport.abort()
        elif self._closed_future is not None and not self._closed_future.done():
            self._closed_future.set_result(None)
        log.debug("%r closed: %s", self, error)

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

    # ---------------------------------------------------------------- handshake

    async def _negotiate_versions(self) -> None:
        policy = self.versions
        if not policy.sends_api_versions:
            policy.set_broker_versions(policy.pinned_broker_versions())
            return
        client_max = policy.client_versions[API_VERSIONS_KEY][1]
        if policy.release is not None and policy.release < (2, 4, 0):
            client_max = min(client_max, 2)
        response = await self._api_versions(client_max)
        if response.error_code == errors.UnsupportedVersionError.code:
            # The broker answers an ApiVersions it cannot parse with its own range of ApiVersions.
            broker_range = {k.api_key: k.max_version for k in response.api_keys}
            retry = min(broker_range.get(API_VERSIONS_KEY, 0), client_max)
            response = await self._api_versions(retry)
        errors.raise_for_code(response.error_code, "ApiVersions failed")
        policy.set_broker_versions(
            {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        )
        policy.finalized_features = {
            f.name: f.max_version_level for f in response.finalized_features or ()
        }

    async def _api_versions(self, version: int) -> Any:
        request = ApiVersionsRequest(
            client_software_name=self.config.client_software_name,
            client_software_version=self.config.client_software_version,
        )
        return await self.send(request, version)

    async def _authenticate(self) -> None:
        config = self.config
        assert config.sasl_mechanism is not None
        mechanism = create_mechanism(
            config.sasl_mechanism,
            username=config.sasl_username,
            password=config.sasl_password,
            token_provider=config.sasl_oauth_token_provider,
        )
        await mechanism.prepare()
        handshake_version = self.versions.version_for(SASL_HANDSHAKE_KEY)
        handshake = await self.send(
            SaslHandshakeRequest(mechanism=mechanism.name), handshake_version
        )
        if handshake.error_code:
            raise errors.error_for_code(handshake.error_code)(
                f"broker refused SASL mechanism {mechanism.name}; "
                f"it offers {list(handshake.mechanisms)}"
            )
        use_frames = handshake_version >= 1 and self.versions.supports(SASL_AUTHENTICATE_KEY)
        token: bytes | None = mechanism.start()
        lifetime_ms = 0
        while token is not None:
            if use_frames:
                response = await self.send(SaslAuthenticateRequest(auth_bytes=token))
                if response.error_code:
                    raise errors.error_for_code(response.error_code)(
                        response.error_message or "SASL authentication failed"
                    )
                server_message = bytes(response.auth_bytes)
                lifetime_ms = getattr(response, "session_lifetime_ms", 0) or 0
            else:
                server_message = await self._raw_exchange(token)
            token = mechanism.step(server_message)
        log.debug("%r authenticated with %s", self, mechanism.name)
        if lifetime_ms > 0:
            self._schedule_reauthentication(lifetime_ms)

    # ---------------------------------------------------------------- re-authentication

    def _schedule_reauthentication(self, lifetime_ms: int) -> None:
        """Re-authenticate (KIP-368) at 85-95% of the session the broker granted.

        Past the session's end the broker closes the connection at the next request, so the
        client re-authenticates ahead of it, on the same connection: new requests wait at a
        gate, the ones in flight are answered first, then SaslHandshake and SaslAuthenticate
        run again (a token provider is asked for a fresh token).  Jitter keeps a client's many
        connections from re-authenticating at the same moment.
        """
        assert self._loop is not None
        delay = lifetime_ms / 1000 * random.uniform(0.85, 0.95)
        self._reauth_timer = self._loop.call_later(delay, self._start_reauthentication)

    def _start_reauthentication(self) -> None:
        self._reauth_timer = None
        if self._error is not None:
            return
        assert self._loop is not None
        self._reauth_gate = self._loop.create_future()
        self._reauth_task = self._loop.create_task(
            self._reauthenticate(), name=f"reauthenticate {self.host}:{self.port}"
        )

    async def _reauthenticate(self) -> None:
        gate = self._reauth_gate
        assert gate is not None
        token = _reauthenticating.set(True)
        try:
            # The broker must see the handshake after every request already sent was answered.
            deadline = time.monotonic() + self.config.request_timeout_ms / 1000
            while any(not w.abandoned for w in self._by_correlation.values()):
                if self._error is not None:
                    return
                if time.monotonic() > deadline:
                    raise errors.KafkaTimeoutError("requests in flight did not finish")
                await asyncio.sleep(0.005)
            await self._authenticate()
            self.reauthentications += 1
            log.debug("%r re-authenticated", self)
        except asyncio.CancelledError:
            raise  # closing
        except Exception as exc:
            # Without a valid session the broker will close the connection anyway.
            error = (
                exc
                if isinstance(exc, errors.AuthenticationError)
                else errors.AuthenticationError(f"re-authentication failed: {exc}")
            )
            if error is not exc:
                error.__cause__ = exc
            self._fail(error)
        finally:
            _reauthenticating.reset(token)
            self._reauth_gate = None
            if not gate.done():
                gate.set_result(None)
            self._reauth_task = None

    async def _wait_reauthenticated(self, timeout: float) -> None:
        gate = self._reauth_gate
        if gate is None:
            return
        try:
            async with _timeout(timeout):
                await asyncio.shield(gate)
        except (TimeoutError, asyncio.TimeoutError):
            raise errors.KafkaTimeoutError(
                f"{self.host}:{self.port} did not finish re-authenticating within {timeout:.1f}s"
            ) from None
        if self._error is not None:
            raise self._error

    async def _raw_exchange(self, token: bytes) -> bytes:
        """SASL v0: tokens travel as bare size-prefixed frames without Kafka headers."""
        assert self._loop is not None
        self._raw_mode = True
        self._raw_waiter = self._loop.create_future()
        await self._write(_INT32.pack(len(token)) + token)
        try:
            async with _timeout(self.config.request_timeout_ms / 1000):
                return await self._raw_waiter
        except (TimeoutError, asyncio.TimeoutError):
            self._fail(errors.AuthenticationError("SASL exchange timed out"))
            raise self._error from None  # type: ignore[misc]
        finally:
            self._raw_mode = False
            self._raw_waiter = None

    def _raw_data_received(self, data: bytes) -> None:
        self._raw_buffer += data
        if len(self._raw_buffer) < 4:
            return
        (size,) = _INT32.unpack_from(self._raw_buffer)
        if size < 0 or size > self.config.max_frame_size:
            self._fail(errors.AuthenticationError("malformed SASL frame from broker"))
            return
        if len(self._raw_buffer) < 4 + size:
            return
        payload = bytes(self._raw_buffer[4 : 4 + size])
        del self._raw_buffer[: 4 + size]
        if self._raw_waiter is not None and not self._raw_waiter.done():
            self._raw_waiter.set_result(payload)


# OpenSSL reasons that mean a certificate was refused, on either side: not retriable.
_CERTIFICATE_REASONS = (
    "CERTIFICATE_VERIFY_FAILED",
    "BAD_CERTIFICATE",
    "CERTIFICATE_REQUIRED",
    "UNKNOWN_CA",
    "CERTIFICATE_UNKNOWN",
    "UNSUPPORTED_CERTIFICATE",
    "CERTIFICATE_EXPIRED",
    "CERTIFICATE_REVOKED",
    "HANDSHAKE_FAILURE",
)


def _tls_error(context: str, exc: ssl.SSLError) -> errors.KafkaError:
    """A typed error for a TLS failure: certificates are authentication, the rest connection."""
    reason = exc.reason or ""
    detail = getattr(exc, "verify_message", None) or reason or str(exc)
    if isinstance(exc, ssl.SSLCertVerificationError) or any(
        name in reason for name in _CERTIFICATE_REASONS
    ):
        return errors.SslAuthenticationError(f"{context}: {detail}")
    return errors.KafkaConnectionError(f"{context}: {detail}")


# Set inside a connection's re-authentication task: its own requests pass the gate.
_reauthenticating: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "aiokafkawire_reauthenticating", default=False
)


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop (closing from outside the loop)
        return None


def _acquire_now(semaphore: asyncio.Semaphore) -> None:
    """Take a slot of ``semaphore`` without suspending; the caller saw ``not locked()``.

    ``Semaphore.acquire`` finishes without suspending when a slot is free, so its coroutine is
    run to completion here, synchronously.
    """
    acquire = semaphore.acquire()
    try:
        acquire.send(None)
    except StopIteration:
        return
    acquire.close()  # pragma: no cover - it suspended, though locked() said a slot was free
    raise RuntimeError("a request slot looked free but was not")


def _timeout(seconds: float) -> Any:
    """``asyncio.timeout`` on 3.11+, ``async_timeout.timeout`` before."""
    if hasattr(asyncio, "timeout"):
        return asyncio.timeout(seconds)
    import async_timeout  # pragma: no cover - Python 3.10

    return async_timeout.timeout(seconds)  # pragma: no cover
