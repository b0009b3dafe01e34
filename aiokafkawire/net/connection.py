"""One asyncio connection to one broker, multiplexing pipelined requests by correlation id.

The receive path is an :class:`asyncio.Protocol` feeding bytes straight into the sans-I/O
:class:`~aiokafkawire.protocol.framing.KafkaFraming`; each response resolves the future of the
request with the same correlation id.  A connection error is sticky: it fails every waiter at once
with a retriable :class:`~aiokafkawire.errors.KafkaConnectionError` and the connection is done; the
pool (:mod:`aiokafkawire.net.pool`) makes a new one, with backoff.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire.net.credentials import Secret
from aiokafkawire.net.sasl import SUPPORTED_MECHANISMS, create_mechanism
from aiokafkawire.net.tls import create_ssl_context
from aiokafkawire.net.versions import API_VERSIONS_KEY, ApiVersionCap, VersionPolicy
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
    """A request awaiting its response."""

    __slots__ = ("abandoned", "api_key", "future")

    def __init__(self, future: asyncio.Future[Any], api_key: int) -> None:
        self.future = future
        self.api_key = api_key
        self.abandoned = False


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
        self.versions = VersionPolicy(SUPPORTED_VERSIONS, self.config.api_version)
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
            raise errors.KafkaConnectionError(
                f"TLS handshake with {self.host}:{self.port} failed: {exc.reason or exc}"
            ) from exc
        except OSError as exc:
            raise errors.KafkaConnectionError(
                f"cannot connect to {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        if self._error is not None:  # lost while connecting
            raise self._error
        await self._negotiate_versions()
        if self.config.uses_sasl:
            await self._authenticate()

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
        timeout = (self.config.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        deadline = time.monotonic() + timeout
        try:
            async with _timeout(timeout):
                await self._slots.acquire()
        except (TimeoutError, asyncio.TimeoutError):
            raise errors.KafkaTimeoutError(
                f"no free request slot on {self!r} within {timeout:.1f}s"
            ) from None
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
            await self._write(frame)
            return None
        assert self._loop is not None
        waiter = _Waiter(self._loop.create_future(), request.API_KEY)
        self._by_correlation[correlation_id] = waiter
        await self._write(frame)
        return await self._response(waiter, deadline, timeout, request, version)

    def try_send_now(
        self, request: Any, version: int, *, timeout_ms: float | None = None
    ) -> Coroutine[Any, Any, Any] | None:
        """Put ``request`` on the wire now, if that needs no waiting; None (nothing done) if not.

        Succeeds when a request slot is free and the socket takes data: the frame is written
        before this returns, and the coroutine returned gives the response exactly as
        :meth:`send` would (``None`` for acks=0 produce).  A producer calls this from inside
        ``send()`` with a batch that just filled up, so the broker works on it while the
        application keeps appending, instead of after the event loop's next turn.
        """
        if self._error is not None:
            raise self._error
        if (
            self._transport is None
            or self._slots.locked()
            or (self._writable is not None and not self._writable.is_set())
        ):
            return None
        _acquire_now(self._slots)
        timeout = (self.config.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        deadline = time.monotonic() + timeout
        try:
            correlation_id, frame, expects_response = self._framing.send_request(request, version)
        except BaseException:
            self._slots.release()
            raise
        self._write_buffer.append(frame)
        if not expects_response:
            self._slots.release()
            self._flush()
            return _no_response()
        assert self._loop is not None
        waiter = _Waiter(self._loop.create_future(), request.API_KEY)
        self._by_correlation[correlation_id] = waiter
        self._flush()  # with whatever earlier frames of this iteration wait for their flush
        return self._response(waiter, deadline, timeout, request, version)

    async def _response(
        self, waiter: _Waiter, deadline: float, timeout: float, request: Any, version: int
    ) -> Any:
        remaining = max(deadline - time.monotonic(), 0.0)
        try:
            async with _timeout(remaining):
                return await asyncio.shield(waiter.future)
        except (TimeoutError, asyncio.TimeoutError):
            self._abandon(waiter)
            if waiter.future.done() and not waiter.future.cancelled():
                exc = waiter.future.exception()
                if exc is not None:
                    raise exc from None
                return waiter.future.result()
            raise errors.KafkaTimeoutError(
                f"{type(request).__name__} v{version} to {self.host}:{self.port} got no "
                f"response within {timeout:.1f}s"
            ) from None
        except asyncio.CancelledError:
            self._abandon(waiter)
            raise

    def _abandon(self, waiter: _Waiter) -> None:
        """The caller stopped waiting; the response slot stays taken until the answer arrives."""
        if waiter.abandoned or waiter.future.done():
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
        self._transport.write(data)

    # ---------------------------------------------------------------- receive path

    def _data_received(self, data: bytes) -> None:
        if self._raw_mode:
            self._raw_data_received(data)
            return
        try:
            events = self._framing.receive_data(data)
        except errors.KafkaError as exc:
            self._fail(exc)
            return
        by_correlation = self._by_correlation
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
            if waiter.abandoned:
                self._abandoned -= 1
            elif not waiter.future.done():
                waiter.future.set_result(event.response)

    def _connection_lost(self, exc: Exception | None) -> None:
        if self._error is None:
            message = f"connection to {self.host}:{self.port} lost"
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
        waiters = list(self._by_correlation.values())
        self._by_correlation.clear()
        for waiter in waiters:
            self._slots.release()
            if not waiter.future.done():
                waiter.future.set_exception(error)
                # Retrieved here so an abandoned waiter never logs "exception never retrieved".
                waiter.future.exception()
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

    # ---------------------------------------------------------------- handshake

    async def _negotiate_versions(self) -> None:
        policy = self.versions
        if not policy.sends_api_versions:
            policy.set_broker_versions(policy.pinned_broker_versions())
            return
        client_max = SUPPORTED_VERSIONS[API_VERSIONS_KEY][1]
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
        while token is not None:
            if use_frames:
                response = await self.send(SaslAuthenticateRequest(auth_bytes=token))
                if response.error_code:
                    raise errors.error_for_code(response.error_code)(
                        response.error_message or "SASL authentication failed"
                    )
                server_message = bytes(response.auth_bytes)
            else:
                server_message = await self._raw_exchange(token)
            token = mechanism.step(server_message)
        log.debug("%r authenticated with %s", self, mechanism.name)

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


async def _no_response() -> None:
    """What an acks=0 produce request's response coroutine gives."""


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
