"""A loopback SASL front for tests: plays a broker's SASL side, then relays bytes upstream.

:class:`SaslRelay` listens on 127.0.0.1.  For each client connection it behaves like a Kafka
broker's SASL authenticator (SaslServerAuthenticator in Apache Kafka):

* ApiVersions (any number, before the handshake) is forwarded to the upstream broker and its
  answer returned with SaslHandshake (v0-1) and SaslAuthenticate (v0-2) added, so a client can
  negotiate SASL even when the upstream (e.g. a plaintext Tansu broker) has none;
* SaslHandshake v0 or v1 picks the mechanism (UNSUPPORTED_SASL_MECHANISM and close if it is not
  enabled); after v1 the tokens travel in SaslAuthenticate v0-2, after v0 as raw size-prefixed
  frames, as in Kafka;
* the SCRAM server side is scramp's; PLAIN and OAUTHBEARER are checked against the configured
  users and tokens;
* on failure it answers SASL_AUTHENTICATION_FAILED (58) with a message and closes (in v0 raw
  mode it just closes, as Kafka does); any other request before authentication closes the
  connection;
* after success every byte is relayed both ways between the client and the upstream broker;
* with a server ``ssl_context`` the client side is TLS (SASL_SSL).

Every connection is a task the relay owns; :meth:`SaslRelay.stop` cancels and awaits them all.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

import scramp

from aiokafkawire.errors import ProtocolError
from aiokafkawire.protocol.framing import KafkaFraming, decode_request, encode_response
from aiokafkawire.protocol.messages.api_versions import ApiVersion, ApiVersionsResponse
from aiokafkawire.protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from aiokafkawire.protocol.messages.sasl_handshake import (
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

__all__ = ["RelayRecord", "SaslRelay"]

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
SASL_API_VERSIONS = {SASL_HANDSHAKE: (0, 1), SASL_AUTHENTICATE: (0, 2)}
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58

ALL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_SIZE = struct.Struct(">i")
_MAX_PRE_AUTH_FRAME = 1024 * 1024  # Kafka also caps unauthenticated frames (to 512 KiB).
_RELAY_CHUNK = 64 * 1024


class AuthFailed(Exception):
    """The client failed authentication; the message goes into the error response."""


class _ServerExchange(Protocol):
    """Server half of one SASL exchange."""

    principal: str | None

    def respond(self, token: bytes) -> tuple[bytes, bool]:
        """Consume a client token; return (challenge, authenticated) or raise AuthFailed."""
        ...


class _PlainServer:
    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.principal: str | None = None

    def respond(self, token: bytes) -> tuple[bytes, bool]:
        try:
            authzid, username, password = token.decode("utf-8").split("\0")
        except ValueError:
            raise AuthFailed("Invalid SASL/PLAIN response: expected 3 tokens") from None
        if username not in self._users or self._users[username] != password:
            raise AuthFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthFailed("Authentication failed: Client requested an authorization id")
        self.principal = username
        return b"", True


class _ScramServer:
    def __init__(self, mechanism: str, credentials: Mapping[str, Any]) -> None:
        self._mechanism = mechanism
        self._credentials = credentials
        self._server = scramp.ScramMechanism(mechanism).make_server(self._lookup)
        self._first_done = False
        self.principal: str | None = None
        self._username: str | None = None

    def _lookup(self, username: str) -> Any:
        self._username = username
        try:
            return self._credentials[username]
        except KeyError:
            raise scramp.ScramException("unknown user", scramp.ServerError.UNKNOWN_USER) from None

    def _failed(self) -> AuthFailed:
        # Kafka's wording: the client only learns that the credentials were wrong.
        return AuthFailed(
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self._mechanism}"
        )

    def respond(self, token: bytes) -> tuple[bytes, bool]:
        try:
            if not self._first_done:
                self._first_done = True
                self._server.set_client_first(token.decode("utf-8"))
                return str(self._server.get_server_first()).encode(), False
            self._server.set_client_final(token.decode("utf-8"))
            server_final = str(self._server.get_server_final()).encode()
        except (scramp.ScramException, UnicodeDecodeError):
            raise self._failed() from None
        self.principal = self._username
        return server_final, True


class _OAuthBearerServer:
    def __init__(self, tokens: Mapping[str, str], required_extensions: Mapping[str, str]) -> None:
        self._tokens = tokens
        self._required_extensions = required_extensions
        self._error: str | None = None
        self.principal: str | None = None
        self.extensions: dict[str, str] = {}

    def respond(self, token: bytes) -> tuple[bytes, bool]:
        if self._error is not None:
            # RFC 7628: after an error challenge the client must answer a lone ^A.
            if token != b"\x01":
                raise AuthFailed("Invalid OAUTHBEARER response after an error challenge")
            raise AuthFailed(self._error)
        try:
            gs2_header, rest = token.decode("utf-8").split("\x01", 1)
        except ValueError:
            raise AuthFailed("Invalid OAUTHBEARER initial client response") from None
        if not (gs2_header.startswith("n,") and gs2_header.endswith(",")) or not rest.endswith(
            "\x01\x01"
        ):
            raise AuthFailed("Invalid OAUTHBEARER initial client response")
        pairs: dict[str, str] = {}
        for item in rest[:-2].split("\x01"):
            key, sep, value = item.partition("=")
            if not sep or key in pairs:
                raise AuthFailed("Invalid OAUTHBEARER key/value pair")
            pairs[key] = value
        auth = pairs.pop("auth", "")
        scheme, _, bearer = auth.partition(" ")
        self.extensions = pairs
        principal = self._tokens.get(bearer) if scheme.lower() == "bearer" else None
        missing = {
            key: value
            for key, value in self._required_extensions.items()
            if pairs.get(key) != value
        }
        if principal is None or missing:
            status = "invalid_token" if principal is None else "invalid_request"
            self._error = json.dumps({"status": status})
            return self._error.encode(), False
        self.principal = principal
        return b"", True


@dataclass
class RelayRecord:
    """What happened on one client connection (for assertions in tests)."""

    mechanism: str | None = None
    handshake_version: int | None = None
    authenticate_versions: list[int] = field(default_factory=list)
    principal: str | None = None
    error: str | None = None
    extensions: dict[str, str] = field(default_factory=dict)


class _Closed(Exception):
    """The connection must end (after whatever was already written)."""


class SaslRelay:
    """Loopback SASL front that relays to ``upstream`` after authenticating the client.

    ``users`` maps usernames to passwords for PLAIN and SCRAM (the SCRAM credentials are
    derived with scramp at ``scram_iterations``); ``tokens`` maps accepted OAUTHBEARER tokens to
    their principal; ``required_extensions`` must be sent with OAUTHBEARER tokens; with a server
    ``ssl_context`` clients connect over TLS (SASL_SSL), the upstream leg stays plaintext.
    Use it as an async context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        mechanisms: Iterable[str] = ALL_MECHANISMS,
        users: Mapping[str, str] | None = None,
        tokens: Mapping[str, str] | None = None,
        required_extensions: Mapping[str, str] | None = None,
        scram_iterations: int = 4096,
        io_timeout: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.upstream = upstream
        self.ssl_context = ssl_context
        self.mechanisms = tuple(mechanisms)
        unknown = set(self.mechanisms) - set(ALL_MECHANISMS)
        if unknown:
            raise ValueError(f"unsupported relay mechanisms {sorted(unknown)}")
        self._users = dict(users or {})
        self._tokens = dict(tokens or {})
        self._required_extensions = dict(required_extensions or {})
        self._scram_credentials: dict[str, dict[str, Any]] = {
            name: {
                user: scramp.ScramMechanism(name).make_auth_info(
                    password, iteration_count=scram_iterations
                )
                for user, password in self._users.items()
            }
            for name in ("SCRAM-SHA-256", "SCRAM-SHA-512")
            if name in self.mechanisms
        }
        self.io_timeout = io_timeout
        self.records: list[RelayRecord] = []
        self._server: asyncio.Server | None = None
        #: Exceptions a connection ended with that are not part of the protocol (relay bugs);
        #: tests should assert it stays empty.
        self.unexpected_errors: list[BaseException] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.host = "127.0.0.1"
        self.port = 0

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on an ephemeral loopback port (see :attr:`port`)."""
        self._server = await asyncio.start_server(
            self._on_connection, self.host, 0, ssl=self.ssl_context
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and end every client connection and relay."""
        if self._server is not None:
            self._server.close()
        # Closing the sockets ends each connection's reads, so its task finishes on its own.
        # (Cancelling a client_connected_cb task makes Python 3.11 log a spurious error.)
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = list(self._tasks)
        if tasks:
            _, still_running = await asyncio.wait(tasks, timeout=self.io_timeout)
            for task in still_running:
                task.cancel()
        if self._server is not None:
            await asyncio.wait_for(self._server.wait_closed(), self.io_timeout)
            self._server = None

    async def __aenter__(self) -> SaslRelay:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) clients connect to."""
        return self.host, self.port

    # -- one connection -----------------------------------------------------------------------

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        record = RelayRecord()
        self.records.append(record)
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            upstream = await self._authenticate(reader, writer, record)
            await self._pump_both_ways(reader, writer, *upstream)
        except (
            _Closed,
            ProtocolError,
            asyncio.IncompleteReadError,
            ConnectionError,
            asyncio.TimeoutError,
        ):
            pass  # the connection simply ends, as a broker's would
        except Exception as exc:
            self.unexpected_errors.append(exc)
        finally:
            self._tasks.discard(task)
            for stream_writer in (writer, upstream[1] if upstream else None):
                if stream_writer is not None:
                    self._writers.discard(stream_writer)
                    stream_writer.close()

    async def _open_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        streams = await asyncio.wait_for(asyncio.open_connection(*self.upstream), self.io_timeout)
        self._writers.add(streams[1])
        return streams

    async def _read_frame(self, reader: asyncio.StreamReader) -> bytes:
        header = await asyncio.wait_for(reader.readexactly(4), self.io_timeout)
        (size,) = _SIZE.unpack(header)
        if not 0 <= size <= _MAX_PRE_AUTH_FRAME:
            raise _Closed
        return await asyncio.wait_for(reader.readexactly(size), self.io_timeout)

    async def _send(self, writer: asyncio.StreamWriter, frame: bytes) -> None:
        writer.write(frame)
        await asyncio.wait_for(writer.drain(), self.io_timeout)

    async def _authenticate(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        record: RelayRecord,
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Run ApiVersions/SaslHandshake/SaslAuthenticate; return the open upstream streams."""
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                header, request = decode_request(await self._read_frame(reader))
                if header.api_key == API_VERSIONS:
                    if upstream is None:
                        upstream = await self._open_upstream()
                    response = await self._upstream_api_versions(
                        upstream, request, header.api_version, header.client_id
                    )
                    await self._send(
                        writer,
                        encode_response(
                            header.correlation_id, API_VERSIONS, header.api_version, response
                        ),
                    )
                elif header.api_key == SASL_HANDSHAKE:
                    assert isinstance(request, SaslHandshakeRequest)
                    exchange = self._handshake(request.mechanism, record, header.api_version)
                    ok = exchange is not None
                    await self._send(
                        writer,
                        encode_response(
                            header.correlation_id,
                            SASL_HANDSHAKE,
                            header.api_version,
                            SaslHandshakeResponse(
                                error_code=0 if ok else UNSUPPORTED_SASL_MECHANISM,
                                mechanisms=list(self.mechanisms),
                            ),
                        ),
                    )
                    if exchange is None:
                        raise _Closed
                    if header.api_version == 0:
                        await self._raw_exchange(reader, writer, exchange, record)
                    else:
                        await self._authenticate_exchange(reader, writer, exchange, record)
                    break
                elif header.api_key == SASL_AUTHENTICATE:
                    record.error = "SaslAuthenticate before SaslHandshake"
                    await self._send(
                        writer,
                        encode_response(
                            header.correlation_id,
                            SASL_AUTHENTICATE,
                            header.api_version,
                            SaslAuthenticateResponse(
                                error_code=ILLEGAL_SASL_STATE, error_message=record.error
                            ),
                        ),
                    )
                    raise _Closed
                else:
                    # Kafka: any other request during the SASL handshake is a state violation.
                    record.error = f"unexpected API key {header.api_key} before authentication"
                    raise _Closed
            if upstream is None:
                upstream = await self._open_upstream()
            return upstream
        except BaseException:
            if upstream is not None:
                self._writers.discard(upstream[1])
                upstream[1].close()
            raise

    def _handshake(
        self, mechanism: str, record: RelayRecord, version: int
    ) -> _ServerExchange | None:
        record.mechanism = mechanism
        record.handshake_version = version
        if mechanism not in self.mechanisms:
            record.error = f"unsupported mechanism {mechanism!r}"
            return None
        if mechanism == "PLAIN":
            return _PlainServer(self._users)
        if mechanism == "OAUTHBEARER":
            return _OAuthBearerServer(self._tokens, self._required_extensions)
        return _ScramServer(mechanism, self._scram_credentials[mechanism])

    async def _authenticate_exchange(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        exchange: _ServerExchange,
        record: RelayRecord,
    ) -> None:
        """SaslHandshake v1: tokens in SaslAuthenticate requests until success or failure."""
        while True:
            header, request = decode_request(await self._read_frame(reader))
            if header.api_key != SASL_AUTHENTICATE:
                record.error = f"unexpected API key {header.api_key} during SASL exchange"
                raise _Closed
            assert isinstance(request, SaslAuthenticateRequest)
            record.authenticate_versions.append(header.api_version)
            try:
                challenge, done = exchange.respond(request.auth_bytes)
            except AuthFailed as failure:
                record.error = str(failure)
                response = SaslAuthenticateResponse(
                    error_code=SASL_AUTHENTICATION_FAILED, error_message=str(failure)
                )
                await self._send(
                    writer,
                    encode_response(
                        header.correlation_id, SASL_AUTHENTICATE, header.api_version, response
                    ),
                )
                raise _Closed from None
            response = SaslAuthenticateResponse(
                error_code=0, error_message=None, auth_bytes=challenge
            )
            await self._send(
                writer,
                encode_response(
                    header.correlation_id, SASL_AUTHENTICATE, header.api_version, response
                ),
            )
            if done:
                self._succeeded(exchange, record)
                return

    async def _raw_exchange(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        exchange: _ServerExchange,
        record: RelayRecord,
    ) -> None:
        """SaslHandshake v0: tokens as bare size-prefixed frames; failure just closes."""
        while True:
            token = await self._read_frame(reader)
            try:
                challenge, done = exchange.respond(token)
            except AuthFailed as failure:
                record.error = str(failure)
                raise _Closed from None
            await self._send(writer, _SIZE.pack(len(challenge)) + challenge)
            if done:
                self._succeeded(exchange, record)
                return

    def _succeeded(self, exchange: _ServerExchange, record: RelayRecord) -> None:
        record.principal = exchange.principal
        if isinstance(exchange, _OAuthBearerServer):
            record.extensions = dict(exchange.extensions)

    async def _upstream_api_versions(
        self,
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        request: Any,
        version: int,
        client_id: str | None,
    ) -> ApiVersionsResponse:
        """Ask upstream, then advertise the SASL APIs this relay implements."""
        upstream_reader, upstream_writer = upstream
        framing = KafkaFraming(client_id=client_id)
        _, frame, _ = framing.send_request(request, version)
        await self._send(upstream_writer, frame)
        events: list[Any] = []
        while not events:
            header = await asyncio.wait_for(upstream_reader.readexactly(4), self.io_timeout)
            (size,) = _SIZE.unpack(header)
            body = await asyncio.wait_for(upstream_reader.readexactly(size), self.io_timeout)
            events = framing.receive_data(header + body)
        response = events[0].response
        assert isinstance(response, ApiVersionsResponse)
        if response.error_code == 0:
            kept = [key for key in response.api_keys if key.api_key not in SASL_API_VERSIONS]
            kept.extend(
                ApiVersion(api_key=api_key, min_version=low, max_version=high)
                for api_key, (low, high) in SASL_API_VERSIONS.items()
            )
            response.api_keys = sorted(kept, key=lambda key: key.api_key)
        return response

    async def _pump_both_ways(
        self,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
        upstream_reader: asyncio.StreamReader,
        upstream_writer: asyncio.StreamWriter,
    ) -> None:
        """Copy bytes in both directions until either side closes."""

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while data := await source.read(_RELAY_CHUNK):
                sink.write(data)
                await sink.drain()

        pumps = [
            asyncio.ensure_future(pump(client_reader, upstream_writer)),
            asyncio.ensure_future(pump(upstream_reader, client_writer)),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pumps:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
