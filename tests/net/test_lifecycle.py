"""The connection lifecycle: the declared table, and a real connection moving through it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_broker import FakeBroker

from aiokafkawire import errors
from aiokafkawire.net import connection as connection_module
from aiokafkawire.net.config import ConnectionConfig
from aiokafkawire.net.connection import BrokerConnection
from aiokafkawire.net.lifecycle import CONNECTION_LIFECYCLE, ConnectionState, LifecycleEvent
from aiokafkawire.protocol.messages import (
    MetadataRequest,
    MetadataResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

S = ConnectionState
E = LifecycleEvent
LIVE = [S.NEW, S.CONNECTING, S.NEGOTIATING, S.AUTHENTICATING, S.READY, S.REAUTHENTICATING]


def test_every_state_is_reachable_from_new_and_ends_closed() -> None:
    reached = {S.NEW}
    frontier = [S.NEW]
    while frontier:
        state = frontier.pop()
        for event in CONNECTION_LIFECYCLE.events_from(state):
            target = CONNECTION_LIFECYCLE.next(state, event)
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(S)
    assert CONNECTION_LIFECYCLE.events_from(S.CLOSED) == frozenset()  # the end


@pytest.mark.parametrize("state", LIVE)
def test_any_live_state_can_fail(state: ConnectionState) -> None:
    assert CONNECTION_LIFECYCLE.next(state, E.FAIL) is S.CLOSING


@pytest.mark.parametrize(
    ("state", "event"),
    [
        (S.READY, E.CONNECT),
        (S.NEW, E.HANDSHAKE_DONE),
        (S.CONNECTING, E.REAUTHENTICATE),
        (S.AUTHENTICATING, E.REAUTHENTICATE),  # re-authentication only once READY
        (S.CLOSING, E.FAIL),  # a failure is sticky: the first one wins
        (S.CLOSED, E.FAIL),
        (S.READY, E.TRANSPORT_GONE),  # the transport goes only after a failure or close
    ],
)
def test_undeclared_moves_raise_naming_state_and_event(
    state: ConnectionState, event: LifecycleEvent
) -> None:
    with pytest.raises(errors.IllegalStateError) as excinfo:
        CONNECTION_LIFECYCLE.next(state, event)
    assert isinstance(excinfo.value, errors.InvalidTransitionError)
    assert state.name in str(excinfo.value) or state.value in str(excinfo.value)
    assert event.name in str(excinfo.value) or event.value in str(excinfo.value)


def test_a_connection_refuses_an_undeclared_move() -> None:
    connection = BrokerConnection("127.0.0.1", 1)
    with pytest.raises(errors.InvalidTransitionError):
        connection.enter(E.HANDSHAKE_DONE)
    assert connection.state is S.NEW  # unchanged


async def test_open_goes_through_negotiation_to_ready_and_close_ends_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[ConnectionState] = []
    negotiate = connection_module.negotiate_versions

    async def watched(connection: BrokerConnection) -> None:
        seen.append(connection.state)
        await negotiate(connection)

    monkeypatch.setattr(connection_module, "negotiate_versions", watched)

    async def handler(header: Any, request: Any) -> Any:
        return MetadataResponse(brokers=[], topics=[])

    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        assert seen == [S.NEGOTIATING]
        assert connection.state is S.READY and "ready" in repr(connection)
        await connection.send(MetadataRequest(topics=[]))
        connection.close()
        assert connection.state is S.CLOSING and connection.closed
        await asyncio.wait_for(connection.wait_closed(), 2)
        assert connection.state is S.CLOSED


async def test_a_broker_that_drops_the_connection_leaves_it_closed() -> None:
    async def handler(header: Any, request: Any) -> Any:
        return MetadataResponse(brokers=[], topics=[])

    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        broker.drop_clients()
        await asyncio.wait_for(connection.wait_closed(), 2)
        assert connection.state is S.CLOSED
        assert isinstance(connection.error, errors.KafkaConnectionError)


def test_closing_a_connection_never_opened_ends_closed() -> None:
    connection = BrokerConnection("127.0.0.1", 1)
    connection.close()
    assert connection.state is S.CLOSED
    assert isinstance(connection.error, errors.ConnectionClosedError)


async def test_a_failed_connect_ends_closed() -> None:
    config = ConnectionConfig(connect_timeout_ms=2000)
    connection = BrokerConnection("127.0.0.1", 1, config)  # nothing listens on port 1
    with pytest.raises(errors.KafkaConnectionError):
        try:
            await connection._connect()
        finally:
            connection.close()
    assert connection.state is S.CLOSED


PLAIN = ConnectionConfig(
    security_protocol="SASL_PLAINTEXT",
    sasl_mechanism="PLAIN",
    sasl_username="alice",
    sasl_password="secret",
)


class _SaslBroker:
    """Answers SASL/PLAIN with a short session lifetime, so the client re-authenticates."""

    def __init__(self, lifetime_ms: int) -> None:
        self.lifetime_ms = lifetime_ms
        self.connection: BrokerConnection | None = None
        self.states_at_handshake: list[ConnectionState] = []

    async def __call__(self, header: Any, request: Any) -> Any:
        if isinstance(request, SaslHandshakeRequest):
            if self.connection is not None:
                self.states_at_handshake.append(self.connection.state)
            return SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"])
        if isinstance(request, SaslAuthenticateRequest):
            return SaslAuthenticateResponse(
                error_code=0, auth_bytes=b"", session_lifetime_ms=self.lifetime_ms
            )
        return MetadataResponse(brokers=[], topics=[])


async def test_reauthentication_passes_through_its_state_and_back_to_ready() -> None:
    sasl_broker = _SaslBroker(lifetime_ms=300)
    async with FakeBroker(sasl_broker) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port, PLAIN)
        sasl_broker.connection = connection
        try:
            assert connection.state is S.READY and connection.reauthentications == 0
            for _ in range(200):
                if connection.reauthentications >= 2:
                    break
                await connection.send(MetadataRequest(topics=[]))  # waits at the gate if needed
                await asyncio.sleep(0.01)
            assert connection.reauthentications >= 2
            assert sasl_broker.states_at_handshake[:2] == [S.REAUTHENTICATING] * 2
            assert connection.state in (S.READY, S.REAUTHENTICATING)
            assert not connection.closed
        finally:
            connection.close()


async def test_a_failed_reauthentication_closes_the_connection() -> None:
    sasl_broker = _SaslBroker(lifetime_ms=200)
    async with FakeBroker(sasl_broker) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port, PLAIN)
        try:
            refuse = SaslAuthenticateResponse(error_code=58, error_message="expired")

            async def refusing(header: Any, request: Any) -> Any:
                if isinstance(request, SaslAuthenticateRequest):
                    return refuse
                return await sasl_broker(header, request)

            broker.handler = refusing
            await asyncio.wait_for(connection.wait_closed(), 3)
            assert connection.state is S.CLOSED
            assert isinstance(connection.error, errors.AuthenticationError)
        finally:
            connection.close()
