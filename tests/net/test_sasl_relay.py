"""The SASL relay, driven by hand with KafkaFraming and the client mechanisms.

The upstream is a stub broker that only answers ApiVersions (with a list that lacks the SASL
APIs), so a response without them proves the bytes went through the relay untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import struct
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import trustme
from sasl_relay import SaslRelay

from aiokafkawire.errors import (
    AuthenticationError,
    KafkaError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    error_for_code,
)
from aiokafkawire.net.connection import BrokerConnection, ConnectionConfig
from aiokafkawire.net.sasl import (
    OAuthBearerMechanism,
    OAuthBearerToken,
    SaslMechanism,
    create_mechanism,
)
from aiokafkawire.net.tls import create_ssl_context
from aiokafkawire.protocol.framing import KafkaFraming, decode_request_header, encode_response
from aiokafkawire.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from aiokafkawire.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
)
from aiokafkawire.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from aiokafkawire.protocol.messages.sasl_handshake import SaslHandshakeRequest

TIMEOUT = 5.0
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
TOKENS = {"eyJhbGciOiJub25lIn0.eyJzdWIiOiJjYXJvbCJ9.": "carol"}
GOOD_TOKEN = next(iter(TOKENS))
UPSTREAM_API_KEYS = {18: (0, 3), 3: (0, 12)}
STUB_CLUSTER_ID = "stub-cluster"
_SIZE = struct.Struct(">i")


# ---------------------------------------------------------------------------------------------
# Fixtures: a stub upstream broker and the relay in front of it
# ---------------------------------------------------------------------------------------------


class StubUpstream:
    """Answers ApiVersions and Metadata (naming :attr:`advertised` as the only broker).

    It reads only request headers: bodies do not matter for its fixed answers, and librdkafka's
    all-topics MetadataRequest v12 carries bytes past its body that a strict decoder refuses.
    """

    def __init__(self) -> None:
        self.requests: list[int] = []
        self.advertised = ("127.0.0.1", 0)
        self._connections: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()  # ends the connection's reads; no task cancellation needed
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=TIMEOUT)
        await asyncio.wait_for(self._server.wait_closed(), TIMEOUT)

    def _response_for(self, api_key: int) -> Any:
        if api_key == 18:
            return ApiVersionsResponse(
                api_keys=[
                    ApiVersion(api_key=key, min_version=low, max_version=high)
                    for key, (low, high) in UPSTREAM_API_KEYS.items()
                ]
            )
        if api_key == 3:
            host, port = self.advertised
            return MetadataResponse(
                brokers=[MetadataResponseBroker(node_id=1, host=host, port=port)],
                cluster_id=STUB_CLUSTER_ID,
                controller_id=1,
                topics=[],
            )
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self._writers.add(writer)
        try:
            while True:
                (size,) = _SIZE.unpack(await reader.readexactly(4))
                header, _ = decode_request_header(await reader.readexactly(size))
                self.requests.append(header.api_key)
                response = self._response_for(header.api_key)
                if response is None:
                    break
                writer.write(
                    encode_response(
                        header.correlation_id, header.api_key, header.api_version, response
                    )
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, KafkaError):
            pass
        finally:
            self._connections.discard(task)
            self._writers.discard(writer)
            writer.close()


@pytest.fixture
async def upstream() -> AsyncIterator[StubUpstream]:
    stub = StubUpstream()
    await stub.start()
    try:
        yield stub
    finally:
        await stub.stop()


@pytest.fixture
async def relay(upstream: StubUpstream) -> AsyncIterator[SaslRelay]:
    async with SaslRelay(
        ("127.0.0.1", upstream.port), users=USERS, tokens=TOKENS, io_timeout=TIMEOUT
    ) as front:
        yield front
    assert front.unexpected_errors == []


# ---------------------------------------------------------------------------------------------
# A hand-driven client
# ---------------------------------------------------------------------------------------------


class HandDrivenClient:
    """KafkaFraming over one asyncio connection, plus the SASL exchange loop."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.framing = KafkaFraming(client_id="sasl-relay-test")

    async def request(self, request: Any, version: int) -> Any:
        _, frame, _ = self.framing.send_request(request, version)
        self.writer.write(frame)
        await self.writer.drain()
        while True:
            data = await asyncio.wait_for(self.reader.read(65536), TIMEOUT)
            if not data:
                raise ConnectionResetError("the relay closed the connection")
            events = self.framing.receive_data(data)
            if events:
                return events[0].response

    async def raw_token(self, token: bytes) -> bytes:
        self.writer.write(_SIZE.pack(len(token)) + token)
        await self.writer.drain()
        (size,) = _SIZE.unpack(await asyncio.wait_for(self.reader.readexactly(4), TIMEOUT))
        return await asyncio.wait_for(self.reader.readexactly(size), TIMEOUT)

    async def authenticate(
        self, mechanism: SaslMechanism, handshake_version: int = 1, authenticate_version: int = 2
    ) -> None:
        handshake = await self.request(
            SaslHandshakeRequest(mechanism=mechanism.name), handshake_version
        )
        if handshake.error_code:
            raise error_for_code(handshake.error_code)(f"mechanisms: {handshake.mechanisms}")
        await mechanism.prepare()
        client_message: bytes | None = mechanism.start()
        for _ in range(10):  # no mechanism needs more than a few round trips
            if client_message is None:
                assert mechanism.complete
                return
            if handshake_version == 0:
                server_message = await self.raw_token(client_message)
            else:
                response = await self.request(
                    SaslAuthenticateRequest(auth_bytes=client_message), authenticate_version
                )
                if response.error_code:
                    raise error_for_code(response.error_code)(response.error_message)
                server_message = response.auth_bytes
            client_message = mechanism.step(server_message)
        raise AssertionError("SASL exchange did not finish")

    async def assert_closed_by_peer(self) -> None:
        assert await asyncio.wait_for(self.reader.read(1), TIMEOUT) == b""


@pytest.fixture
async def client(relay: SaslRelay) -> AsyncIterator[HandDrivenClient]:
    reader, writer = await asyncio.wait_for(asyncio.open_connection(*relay.address), TIMEOUT)
    try:
        yield HandDrivenClient(reader, writer)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await asyncio.wait_for(writer.wait_closed(), TIMEOUT)


def _constant_provider(token: OAuthBearerToken) -> Callable[[], OAuthBearerToken]:
    return lambda: token


def _versions(response: ApiVersionsResponse) -> dict[int, tuple[int, int]]:
    return {key.api_key: (key.min_version, key.max_version) for key in response.api_keys}


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


async def test_api_versions_is_relayed_with_sasl_apis_added(
    client: HandDrivenClient, upstream: StubUpstream
) -> None:
    response = await client.request(ApiVersionsRequest(), 3)
    assert _versions(response) == {**UPSTREAM_API_KEYS, 17: (0, 1), 36: (0, 2)}
    assert upstream.requests == [18]


@pytest.mark.parametrize("authenticate_version", [0, 1, 2])
@pytest.mark.parametrize(
    ("name", "principal"),
    [
        ("PLAIN", "alice"),
        ("SCRAM-SHA-256", "alice"),
        ("SCRAM-SHA-512", "bob"),
        ("OAUTHBEARER", "carol"),
    ],
)
async def test_authenticates_then_relays_raw_bytes(
    client: HandDrivenClient,
    relay: SaslRelay,
    upstream: StubUpstream,
    name: str,
    principal: str,
    authenticate_version: int,
) -> None:
    assert 36 in _versions(await client.request(ApiVersionsRequest(), 3))
    mechanism = create_mechanism(
        name, username=principal, password=USERS.get(principal), token_provider=lambda: GOOD_TOKEN
    )
    await client.authenticate(mechanism, authenticate_version=authenticate_version)
    assert mechanism.complete
    (record,) = relay.records
    assert record.principal == principal and record.error is None
    assert set(record.authenticate_versions) == {authenticate_version}

    # After authentication the upstream answers directly: its list has no SASL APIs.
    relayed = await client.request(ApiVersionsRequest(), 2)
    assert _versions(relayed) == UPSTREAM_API_KEYS
    assert upstream.requests == [18, 18]


@pytest.mark.parametrize("name", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_wrong_password_fails_with_error_58_and_closes(
    client: HandDrivenClient, relay: SaslRelay, name: str
) -> None:
    mechanism = create_mechanism(name, username="alice", password="bob-secret")
    with pytest.raises(SaslAuthenticationFailedError) as excinfo:
        await client.authenticate(mechanism)
    assert excinfo.value.code == 58 and isinstance(excinfo.value, AuthenticationError)
    assert excinfo.value.message and "bob-secret" not in str(excinfo.value)
    assert not mechanism.complete
    assert relay.records[0].principal is None and relay.records[0].error
    await client.assert_closed_by_peer()


async def test_unknown_user_fails(client: HandDrivenClient) -> None:
    with pytest.raises(SaslAuthenticationFailedError):
        await client.authenticate(create_mechanism("SCRAM-SHA-256", "mallory", "alice-secret"))
    await client.assert_closed_by_peer()


async def test_oauthbearer_invalid_token_gets_error_challenge_then_fails(
    client: HandDrivenClient,
) -> None:
    mechanism = OAuthBearerMechanism(lambda: "bm90LWEtdmFsaWQtdG9rZW4=")
    with pytest.raises(SaslAuthenticationFailedError, match="invalid_token"):
        await client.authenticate(mechanism)
    assert mechanism.server_error == {"status": "invalid_token"}
    await client.assert_closed_by_peer()


async def test_oauthbearer_extensions_reach_the_server(upstream: StubUpstream) -> None:
    async with SaslRelay(
        ("127.0.0.1", upstream.port),
        mechanisms=["OAUTHBEARER"],
        tokens=TOKENS,
        required_extensions={"logicalCluster": "lkc-1"},
        io_timeout=TIMEOUT,
    ) as relay:
        for extensions, succeeds in (({}, False), ({"logicalCluster": "lkc-1"}, True)):
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(*relay.address), TIMEOUT
            )
            try:
                client = HandDrivenClient(reader, writer)
                token = OAuthBearerToken(GOOD_TOKEN, extensions=extensions)
                mechanism = OAuthBearerMechanism(_constant_provider(token))
                if succeeds:
                    await client.authenticate(mechanism)
                else:
                    with pytest.raises(SaslAuthenticationFailedError, match="invalid_request"):
                        await client.authenticate(mechanism)
            finally:
                writer.close()
        assert [record.principal for record in relay.records] == [None, "carol"]
        assert relay.records[1].extensions == {"logicalCluster": "lkc-1"}


async def test_unsupported_mechanism_is_refused_with_the_enabled_list(
    upstream: StubUpstream,
) -> None:
    async with SaslRelay(
        ("127.0.0.1", upstream.port), mechanisms=["SCRAM-SHA-512"], users=USERS
    ) as relay:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(*relay.address), TIMEOUT)
        try:
            client = HandDrivenClient(reader, writer)
            response = await client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
            assert response.error_code == UnsupportedSaslMechanismError.code
            assert response.mechanisms == ["SCRAM-SHA-512"]
            await client.assert_closed_by_peer()
        finally:
            writer.close()


@pytest.mark.parametrize("name", ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"])
async def test_handshake_v0_uses_raw_tokens_then_relays(
    client: HandDrivenClient, relay: SaslRelay, name: str
) -> None:
    mechanism = create_mechanism(
        name, username="alice", password="alice-secret", token_provider=lambda: GOOD_TOKEN
    )
    await client.authenticate(mechanism, handshake_version=0)
    assert relay.records[0].handshake_version == 0 and relay.records[0].principal
    assert relay.records[0].authenticate_versions == []
    assert _versions(await client.request(ApiVersionsRequest(), 1)) == UPSTREAM_API_KEYS


async def test_handshake_v0_failure_just_closes(client: HandDrivenClient, relay: SaslRelay) -> None:
    with pytest.raises(asyncio.IncompleteReadError):
        await client.authenticate(create_mechanism("PLAIN", "alice", "wrong"), handshake_version=0)
    assert relay.records[0].error


async def test_other_requests_before_authentication_close_the_connection(
    client: HandDrivenClient, upstream: StubUpstream, relay: SaslRelay
) -> None:
    with pytest.raises(ConnectionResetError):
        await client.request(MetadataRequest(), 4)
    assert upstream.requests == []
    assert relay.records[0].error and "API key 3" in relay.records[0].error


async def test_authenticate_before_handshake_is_illegal_state(client: HandDrivenClient) -> None:
    response = await client.request(SaslAuthenticateRequest(auth_bytes=b"x"), 1)
    assert response.error_code == 34  # ILLEGAL_SASL_STATE
    await client.assert_closed_by_peer()


async def test_stop_ends_relayed_connections(upstream: StubUpstream) -> None:
    relay = SaslRelay(("127.0.0.1", upstream.port), users=USERS, io_timeout=TIMEOUT)
    await relay.start()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(*relay.address), TIMEOUT)
        client = HandDrivenClient(reader, writer)
        await client.authenticate(create_mechanism("PLAIN", "bob", "bob-secret"))
    finally:
        await relay.stop()
    try:
        await client.assert_closed_by_peer()
    finally:
        writer.close()


@pytest.mark.parametrize("name", ["SCRAM-SHA-512", "OAUTHBEARER"])
async def test_relays_to_a_real_broker(kafka_bootstrap: str, name: str) -> None:
    host, _, port = kafka_bootstrap.split(",")[0].rpartition(":")
    async with SaslRelay(
        (host, int(port)), users=USERS, tokens=TOKENS, io_timeout=TIMEOUT
    ) as relay:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(*relay.address), TIMEOUT)
        try:
            client = HandDrivenClient(reader, writer)
            # v2: librdkafka's mock cluster stops at v2, and its UNSUPPORTED_VERSION answer to v3
            # decodes neither as v0 nor as v3.
            negotiated = _versions(await client.request(ApiVersionsRequest(), 2))
            assert negotiated[17] == (0, 1) and negotiated[36] == (0, 2)
            assert 3 in negotiated  # Metadata, from the real broker's list
            mechanism = create_mechanism(
                name, username="bob", password="bob-secret", token_provider=lambda: GOOD_TOKEN
            )
            await client.authenticate(mechanism)
            metadata = await client.request(MetadataRequest(topics=None), 4)
            assert metadata.brokers, "the broker's own Metadata answer came back through the relay"
        finally:
            writer.close()


@pytest.mark.parametrize(
    ("name", "principal"),
    [
        ("PLAIN", "alice"),
        ("SCRAM-SHA-256", "alice"),
        ("SCRAM-SHA-512", "bob"),
        ("OAUTHBEARER", "carol"),
    ],
)
async def test_librdkafka_authenticates_through_the_relay(
    relay: SaslRelay, upstream: StubUpstream, name: str, principal: str
) -> None:
    """An independent client (librdkafka via confluent-kafka) against the relay's server side."""
    admin_module = pytest.importorskip("confluent_kafka.admin")
    upstream.advertised = relay.address  # so librdkafka never bypasses the relay
    config: dict[str, Any] = {
        "bootstrap.servers": f"{relay.host}:{relay.port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": name,
        "socket.timeout.ms": int(TIMEOUT * 1000),
    }
    if name == "OAUTHBEARER":
        config["oauth_cb"] = lambda _config: (GOOD_TOKEN, time.time() + 3600)
    else:
        config["sasl.username"] = principal
        config["sasl.password"] = USERS[principal]
    admin = admin_module.AdminClient(config)
    admin.poll(0)  # serves the oauth_cb token refresh
    metadata = await asyncio.to_thread(admin.list_topics, timeout=TIMEOUT)
    assert metadata.cluster_id == STUB_CLUSTER_ID
    assert relay.records[0].mechanism == name and relay.records[0].principal == principal
    assert relay.records[0].handshake_version == 1 and relay.records[0].authenticate_versions


# ---------------------------------------------------------------------------------------------
# The library's own BrokerConnection through the relay (SASL_PLAINTEXT and SASL_SSL)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "principal"),
    [
        ("PLAIN", "alice"),
        ("SCRAM-SHA-256", "alice"),
        ("SCRAM-SHA-512", "bob"),
        ("OAUTHBEARER", "carol"),
    ],
)
async def test_broker_connection_authenticates_through_the_relay(
    relay: SaslRelay, upstream: StubUpstream, name: str, principal: str
) -> None:
    upstream.advertised = relay.address
    config = ConnectionConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=name,
        sasl_username=principal,
        sasl_password=USERS.get(principal),
        sasl_oauth_token_provider=lambda: GOOD_TOKEN,
        request_timeout_ms=int(TIMEOUT * 1000),
        connect_timeout_ms=int(TIMEOUT * 1000),
    )
    connection = await BrokerConnection.open(*relay.address, config)
    try:
        metadata = await asyncio.wait_for(connection.send(MetadataRequest(topics=None)), TIMEOUT)
        assert metadata.cluster_id == STUB_CLUSTER_ID
    finally:
        connection.close()
        await asyncio.wait_for(connection.wait_closed(), TIMEOUT)
    assert relay.records[0].principal == principal


async def test_broker_connection_wrong_password_is_typed(relay: SaslRelay) -> None:
    config = ConnectionConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_username="alice",
        sasl_password="wrong-password",
        request_timeout_ms=int(TIMEOUT * 1000),
        connect_timeout_ms=int(TIMEOUT * 1000),
    )
    with pytest.raises(SaslAuthenticationFailedError) as excinfo:
        await BrokerConnection.open(*relay.address, config)
    assert "wrong-password" not in str(excinfo.value)


async def test_broker_connection_sasl_ssl(upstream: StubUpstream, tmp_path: Path) -> None:
    """SASL_SSL end to end: create_ssl_context + trustme certificates + SCRAM over TLS."""
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(server_context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    async with SaslRelay(
        ("127.0.0.1", upstream.port), users=USERS, io_timeout=TIMEOUT, ssl_context=server_context
    ) as relay:
        upstream.advertised = relay.address
        config = ConnectionConfig(
            security_protocol="SASL_SSL",
            ssl_context=create_ssl_context(cafile=str(ca_file)),
            sasl_mechanism="SCRAM-SHA-512",
            sasl_username="bob",
            sasl_password="bob-secret",
            request_timeout_ms=int(TIMEOUT * 1000),
            connect_timeout_ms=int(TIMEOUT * 1000),
        )
        connection = await BrokerConnection.open(*relay.address, config)
        try:
            metadata = await asyncio.wait_for(
                connection.send(MetadataRequest(topics=None)), TIMEOUT
            )
            assert metadata.brokers[0].port == relay.port
        finally:
            connection.close()
            await asyncio.wait_for(connection.wait_closed(), TIMEOUT)
        assert relay.records[0].principal == "bob"
        assert relay.unexpected_errors == []
