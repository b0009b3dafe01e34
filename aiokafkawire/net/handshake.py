"""A connection's handshake: ApiVersions negotiation, SASL, and KIP-368 re-authentication.

These run over the connection's own request pipeline (:meth:`BrokerConnection.send`) while it is
NEGOTIATING, AUTHENTICATING or REAUTHENTICATING (see :mod:`aiokafkawire.net.lifecycle`); nothing
here is on the per-request hot path.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import struct
import time
from collections.abc import Callable
from typing import Any, Protocol

from aiokafkawire import errors
from aiokafkawire._waits import timeout_after
from aiokafkawire.net.config import ConnectionConfig
from aiokafkawire.net.lifecycle import ConnectionState, LifecycleEvent
from aiokafkawire.net.sasl import create_mechanism
from aiokafkawire.net.versions import VersionPolicy
from aiokafkawire.protocol.messages import (
    ApiVersionsRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)

log = logging.getLogger("aiokafkawire.net")

_INT32 = struct.Struct(">i")

# Set inside a connection's re-authentication task: its own requests pass the gate.
reauthenticating: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "aiokafkawire_reauthenticating", default=False
)


class HandshakeChannel(Protocol):
    """The connection as the handshake sees it: the whole interface between the two.

    The handshake (ApiVersions, SASL, re-authentication) drives a connection only through these
    public members, as httpcore drives h11: requests through :meth:`send`, lifecycle moves
    through :meth:`enter`, failure through :meth:`close`, SASL v0 frames through
    :meth:`write_raw` and :meth:`divert_received`.
    """

    host: str
    port: int
    config: ConnectionConfig
    versions: VersionPolicy
    node_id: int | None
    expected_cluster_id: str | None

    @property
    def state(self) -> ConnectionState: ...

    @property
    def closed(self) -> bool: ...

    @property
    def error(self) -> errors.KafkaError | None: ...

    async def send(
        self, request: Any, version: int | None = None, *, timeout_ms: float | None = None
    ) -> Any: ...

    def awaits_answers(self) -> bool: ...

    def enter(self, event: LifecycleEvent) -> None: ...

    def close(self, error: errors.KafkaError | None = None) -> None: ...

    async def write_raw(self, data: bytes) -> None: ...

    def divert_received(self, receiver: Callable[[bytes], None] | None) -> None: ...


async def negotiate_versions(connection: HandshakeChannel) -> None:
    """ApiVersions: record the broker's version ranges in ``connection.versions``."""
    policy = connection.versions
    if not policy.sends_api_versions:
        policy.set_broker_versions(policy.pinned_broker_versions())
        return
    client_max = policy.client_versions[ApiVersionsRequest.API_KEY][1]
    if policy.release is not None and policy.release < (2, 4, 0):
        client_max = min(client_max, 2)
    response = await _api_versions(connection, client_max)
    if response.error_code == errors.UnsupportedVersionError.code:
        # The broker answers an ApiVersions it cannot parse with its own range of ApiVersions.
        broker_range = {k.api_key: k.max_version for k in response.api_keys}
        retry = min(broker_range.get(ApiVersionsRequest.API_KEY, 0), client_max)
        response = await _api_versions(connection, retry)
    if response.error_code == errors.RebootstrapRequiredError.code:
        raise _misrouted(connection)
    errors.raise_for_code(response.error_code, "ApiVersions failed")
    policy.set_broker_versions(
        {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    )
    policy.finalized_features = {
        f.name: f.max_version_level for f in response.finalized_features or ()
    }


async def _api_versions(connection: HandshakeChannel, version: int) -> Any:
    request = ApiVersionsRequest(
        client_software_name=connection.config.client_software_name,
        client_software_version=connection.config.client_software_version,
    )
    identity = _expected_identity(connection)
    if version >= 5 and identity is not None:
        # KIP-1242: the broker refuses (REBOOTSTRAP_REQUIRED) unless it is this node of this
        # cluster; a broker older than 4.4 does not check.
        request.cluster_id, request.node_id = identity
    return await connection.send(request, version)


def _expected_identity(connection: HandshakeChannel) -> tuple[str, int] | None:
    """The (cluster id, node id) the metadata promised for this address, when both are known
    (not for a bootstrap address, nor before the first metadata)."""
    node_id = connection.node_id
    cluster_id = connection.expected_cluster_id
    if cluster_id is None or node_id is None or node_id < 0:
        return None
    return cluster_id, node_id


def _misrouted(connection: HandshakeChannel) -> errors.MisroutedConnectionError:
    """The broker refused the identity sent in ApiVersions (or, without one, asked for a
    rebootstrap): this address leads elsewhere than the metadata says."""
    identity = _expected_identity(connection)
    promised = (
        f"broker {identity[1]} of cluster {identity[0]}"
        if identity is not None
        else "a broker of the expected cluster"
    )
    error = errors.MisroutedConnectionError(
        f"{connection.host}:{connection.port} is not {promised} (it refused ApiVersions with "
        "REBOOTSTRAP_REQUIRED, KIP-1242); the connection is closed and not used"
    )
    error.__cause__ = errors.RebootstrapRequiredError("ApiVersions")
    return error


class SaslSession:
    """One connection's SASL state: the exchange, the v0 raw frames, and re-authentication.

    Re-authentication (KIP-368) starts at 85-95% of the session the broker granted.  Past the
    session's end the broker closes the connection at the next request, so the client
    re-authenticates ahead of it, on the same connection: new requests wait at :attr:`gate`,
    the ones in flight are answered first, then SaslHandshake and SaslAuthenticate run again (a
    token provider is asked for a fresh token).  Jitter keeps a client's many connections from
    re-authenticating at the same moment.
    """

    __slots__ = (
        "_connection",
        "_raw_buffer",
        "_raw_waiter",
        "_task",
        "_timer",
        "gate",
        "reauthentications",
    )

    def __init__(self, connection: HandshakeChannel) -> None:
        self._connection = connection
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        #: Resolved when a re-authentication ends; None while none runs.
        self.gate: asyncio.Future[None] | None = None
        self.reauthentications = 0
        self._raw_buffer = bytearray()
        self._raw_waiter: asyncio.Future[bytes] | None = None

    async def authenticate(self) -> None:
        """Run one SASL exchange (SaslHandshake, then tokens until the mechanism is done)."""
        connection = self._connection
        config = connection.config
        assert config.sasl_mechanism is not None
        mechanism = create_mechanism(
            config.sasl_mechanism,
            username=config.sasl_username,
            password=config.sasl_password,
            token_provider=config.sasl_oauth_token_provider,
        )
        await mechanism.prepare()
        versions = connection.versions
        handshake_version = versions.version_for(SaslHandshakeRequest.API_KEY)
        handshake = await connection.send(
            SaslHandshakeRequest(mechanism=mechanism.name), handshake_version
        )
        if handshake.error_code:
            raise errors.error_for_code(handshake.error_code)(
                f"broker refused SASL mechanism {mechanism.name}; "
                f"it offers {list(handshake.mechanisms)}"
            )
        use_frames = handshake_version >= 1 and versions.supports(SaslAuthenticateRequest.API_KEY)
        token: bytes | None = mechanism.start()
        lifetime_ms = 0
        while token is not None:
            if use_frames:
                response = await connection.send(SaslAuthenticateRequest(auth_bytes=token))
                if response.error_code:
                    raise errors.error_for_code(response.error_code)(
                        response.error_message or "SASL authentication failed"
                    )
                server_message = bytes(response.auth_bytes)
                lifetime_ms = getattr(response, "session_lifetime_ms", 0) or 0
            else:
                server_message = await self._raw_exchange(token)
            token = mechanism.step(server_message)
        log.debug("%r authenticated with %s", connection, mechanism.name)
        if lifetime_ms > 0:
            loop = asyncio.get_running_loop()
            delay = lifetime_ms / 1000 * random.uniform(0.85, 0.95)
            self._timer = loop.call_later(delay, self._start_reauthentication)

    # ---------------------------------------------------------------- re-authentication

    def _start_reauthentication(self) -> None:
        self._timer = None
        connection = self._connection
        if connection.state is not ConnectionState.READY:
            return  # closing: nothing to renew
        connection.enter(LifecycleEvent.REAUTHENTICATE)
        loop = asyncio.get_running_loop()
        self.gate = loop.create_future()
        self._task = loop.create_task(
            self._reauthenticate(), name=f"reauthenticate {connection.host}:{connection.port}"
        )

    async def _reauthenticate(self) -> None:
        connection = self._connection
        gate = self.gate
        assert gate is not None
        token = reauthenticating.set(True)
        try:
            # The broker must see the handshake after every request already sent was answered.
            deadline = time.monotonic() + connection.config.request_timeout_ms / 1000
            while connection.awaits_answers():
                if connection.closed:
                    return
                if time.monotonic() > deadline:
                    raise errors.KafkaTimeoutError("requests in flight did not finish")
                await asyncio.sleep(0.005)
            await self.authenticate()
            self.reauthentications += 1
            log.debug("%r re-authenticated", connection)
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
            connection.close(error)
        finally:
            reauthenticating.reset(token)
            if connection.state is ConnectionState.REAUTHENTICATING:
                connection.enter(LifecycleEvent.HANDSHAKE_DONE)
            self.gate = None
            if not gate.done():
                gate.set_result(None)
            self._task = None

    async def wait_reauthenticated(self, timeout: float) -> None:
        """Wait (up to ``timeout`` seconds) until a running re-authentication ends."""
        gate = self.gate
        if gate is None:
            return
        connection = self._connection
        try:
            async with timeout_after(timeout):
                await asyncio.shield(gate)
        except (TimeoutError, asyncio.TimeoutError):
            raise errors.KafkaTimeoutError(
                f"{connection.host}:{connection.port} did not finish re-authenticating "
                f"within {timeout:.1f}s"
            ) from None
        if connection.error is not None:
            raise connection.error

    # ---------------------------------------------------------------- SASL v0 frames

    async def _raw_exchange(self, token: bytes) -> bytes:
        """SASL v0: tokens travel as bare size-prefixed frames without Kafka headers."""
        connection = self._connection
        waiter = self._raw_waiter = asyncio.get_running_loop().create_future()
        connection.divert_received(self.raw_data_received)
        await connection.write_raw(_INT32.pack(len(token)) + token)
        try:
            async with timeout_after(connection.config.request_timeout_ms / 1000):
                return await waiter
        except (TimeoutError, asyncio.TimeoutError):
            connection.close(errors.AuthenticationError("SASL exchange timed out"))
            raise connection.error from None  # type: ignore[misc]
        finally:
            connection.divert_received(None)
            self._raw_waiter = None

    def raw_data_received(self, data: bytes) -> None:
        """Bytes that arrived while a v0 exchange waits for the broker's token."""
        self._raw_buffer += data
        if len(self._raw_buffer) < 4:
            return
        (size,) = _INT32.unpack_from(self._raw_buffer)
        if size < 0 or size > self._connection.config.max_frame_size:
            self._connection.close(errors.AuthenticationError("malformed SASL frame from broker"))
            return
        if len(self._raw_buffer) < 4 + size:
            return
        payload = bytes(self._raw_buffer[4 : 4 + size])
        del self._raw_buffer[: 4 + size]
        if self._raw_waiter is not None and not self._raw_waiter.done():
            self._raw_waiter.set_result(payload)

    # ---------------------------------------------------------------- failure

    def connection_failed(self, error: errors.KafkaError) -> None:
        """The connection failed: stop re-authenticating and fail a pending v0 exchange."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None and self._task is not _current_task():
            self._task.cancel()
        if self.gate is not None and not self.gate.done():
            self.gate.set_result(None)  # waiters then see the error
        if self._raw_waiter is not None and not self._raw_waiter.done():
            self._raw_waiter.set_exception(error)
            self._raw_waiter.exception()


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop (closing from outside the loop)
        return None
