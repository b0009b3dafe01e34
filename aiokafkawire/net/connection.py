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
import ssl
import time
from typing import Any

from aiokafkawire import errors
from aiokafkawire._waits import timeout_after
from aiokafkawire.metrics import api_name
from aiokafkawire.net.config import SECURITY_PROTOCOLS, ConnectionConfig, ReconnectBackoff
from aiokafkawire.net.core import ConnectionCore, ResponseCallback, Waiter
from aiokafkawire.net.direct_reads import DirectReader
from aiokafkawire.net.direct_writes import DirectWriter
from aiokafkawire.net.handshake import SaslSession, negotiate_versions, reauthenticating
from aiokafkawire.net.lifecycle import ConnectionState, LifecycleEvent
from aiokafkawire.net.tls import tls_error

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


class BrokerConnection(ConnectionCore):
    """A connection to one broker.

    Create with :meth:`open` (connects, negotiates versions through ApiVersions, authenticates).
    :meth:`send` pipelines up to ``max_in_flight_requests_per_connection`` requests.  Its
    lifecycle is the table in :mod:`aiokafkawire.net.lifecycle` (:attr:`state`); its state and
    receive path are in :mod:`aiokafkawire.net.core`, the handshake in
    :mod:`aiokafkawire.net.handshake`, the request slots in :mod:`aiokafkawire.net.slots`.
    """

    def _new_sasl_session(self) -> SaslSession | None:
        return SaslSession(self) if self.config.uses_sasl else None

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        config: ConnectionConfig | None = None,
        *,
        node_id: int | None = None,
        purpose: str = "default",
        cluster_id: str | None = None,
    ) -> BrokerConnection:
        """Connect, negotiate API versions and authenticate; raises a typed error on failure.

        With ``cluster_id`` and a ``node_id``, ApiVersions v5 asks the broker to confirm that
        it is that node of that cluster (KIP-1242); one that is not refuses, and this raises
        :class:`~aiokafkawire.errors.MisroutedConnectionError` with the connection closed.
        """
        connection = cls(
            host, port, config, node_id=node_id, purpose=purpose, cluster_id=cluster_id
        )
        try:
            await connection._connect()
        except BaseException as exc:
            connection.close(exc if isinstance(exc, errors.KafkaError) else None)
            raise
        return connection

    async def _connect(self) -> None:
        self.enter(LifecycleEvent.CONNECT)
        self._loop = asyncio.get_running_loop()
        self._closed_future = self._loop.create_future()
        transport = await self._open_transport()
        if self._error is not None:  # lost while connecting
            transport.abort()
            raise self._error
        self._transport = transport
        self.enter(LifecycleEvent.CONNECTED)
        await negotiate_versions(self)
        if self._sasl is not None:
            self._raise_if_failed()
            self.enter(LifecycleEvent.AUTHENTICATE)
            await self._sasl.authenticate()
        self._raise_if_failed()
        self.enter(LifecycleEvent.HANDSHAKE_DONE)
        stats = self._stats
        stats.connections_opened += 1
        stats.connections.add(self)
        log.debug("%r ready", self)
        if self._hooks:
            self._emit_connection("on_connect", None)

    async def _open_transport(self) -> asyncio.Transport:
        """TCP (and TLS) connect, with typed errors; remembers whether direct reads are safe."""
        assert self._loop is not None
        timeout = self.config.connect_timeout_ms / 1000
        tls = self.config.ssl_context if self.config.uses_tls else None
        try:
            async with timeout_after(timeout):
                transport, _ = await self._loop.create_connection(
                    lambda: self,
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
            self._direct = DirectReader(transport, self)
            if self._writelines_joins:  # asyncio before 3.12: its writelines joins the parts
                self._writer = DirectWriter.for_transport(transport, self, self._loop)
        # No isinstance check: uvloop's stream transports are not asyncio.Transport subclasses.
        return transport

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
        waiter = Waiter(self._loop.create_future(), request.API_KEY, None, correlation_id)
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
            correlation_id, frame, expects_response = self._framing.send_request_parts(
                request, version
            )
        except BaseException:
            self._slots.release()
            raise
        if len(frame) == 1:
            self._write_buffer.append(frame[0])
        else:  # record batches referenced, not copied: _flush writes them as they are
            self._write_buffer += frame
            self._write_references += 1
        loop = self._loop
        assert loop is not None
        self._stats.requests += 1
        if not expects_response:
            self._slots.release()
            loop.call_soon(callback, None, None)
            return
        waiter = Waiter(None, request.API_KEY, callback, correlation_id)
        waiter.timer = loop.call_later(
            timeout, self._callback_timed_out, waiter, request, version, timeout
        )
        self._by_correlation[correlation_id] = waiter

    def _callback_timed_out(
        self, waiter: Waiter, request: Any, version: int, timeout: float
    ) -> None:
        if waiter.callback is None:
            return
        self._abandon(waiter)
        callback = waiter.take_callback()
        if callback is None:
            return  # the last free slot: _abandon closed the connection, which told the callback
        self._close_if_mid_frame()
        callback(None, self._no_response_error(request, version, timeout, waiter.correlation_id))

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
        self, waiter: Waiter, deadline: float, timeout: float, request: Any, version: int
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
