"""BrokerConnection against a scripted in-process broker: pipelining, timeouts, sticky errors."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from fake_broker import CLOSE, SILENT, FakeBroker, api_versions_response

from aiokafkawire import errors
from aiokafkawire.net.connection import BrokerConnection, ConnectionConfig, ReconnectBackoff
from aiokafkawire.protocol.messages import (
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)
from aiokafkawire.protocol.messages.metadata import MetadataRequestTopic, MetadataResponseTopic


def echo_metadata(request: Any) -> MetadataResponse:
    """A Metadata answer naming the topics that were asked for (so answers can be matched)."""
    return MetadataResponse(
        brokers=[],
        topics=[MetadataResponseTopic(name=t.name, partitions=[]) for t in request.topics or []],
    )


def ask(name: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequestTopic(name=name)])


async def test_thousand_pipelined_requests_are_all_answered_in_order() -> None:
    async def handler(header: Any, request: Any) -> Any:
        await asyncio.sleep(0)
        return echo_metadata(request)

    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        try:
            names = [f"topic-{i}" for i in range(1000)]
            responses = await asyncio.gather(*(connection.send(ask(n)) for n in names))
            assert [r.topics[0].name for r in responses] == names
            assert connection.in_flight == 0
            metadata_requests = [h for h, _ in broker.requests if h.api_key == 3]
            assert len(metadata_requests) == 1000
            ids = [h.correlation_id for h in metadata_requests]
            assert len(set(ids)) == 1000
        finally:
            connection.close()


async def test_in_flight_limit_is_respected() -> None:
    seen_in_flight: list[int] = []
    release = asyncio.Event()
    pending: list[asyncio.Future[Any]] = []

    async def handler(header: Any, request: Any) -> Any:
        seen_in_flight.append(len(pending) + 1)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        pending.append(fut)
        if len(pending) == 3:
            release.set()
        return SILENT

    config = ConnectionConfig(max_in_flight_requests_per_connection=3, request_timeout_ms=2000)
    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port, config)
        try:
            tasks = [asyncio.ensure_future(connection.send(ask(f"t{i}"))) for i in range(5)]
            await asyncio.wait_for(release.wait(), 2)
            await asyncio.sleep(0.05)
            assert connection.in_flight == 3
            assert len([h for h, _ in broker.requests if h.api_key == 3]) == 3
        finally:
            connection.close()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, errors.ConnectionClosedError) for r in results)


async def test_broker_vanishing_fails_every_waiter_promptly() -> None:
    async def handler(header: Any, request: Any) -> Any:
        return SILENT

    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        tasks = [asyncio.ensure_future(connection.send(ask(f"t{i}"))) for i in range(5)]
        await broker.wait_for_requests(6)  # ApiVersions + 5
        started = time.monotonic()
        broker.drop_clients()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert time.monotonic() - started < 1.0
        assert all(isinstance(r, errors.KafkaConnectionError) for r in results), results
        assert all(r.retriable for r in results)  # type: ignore[union-attr]
        assert connection.closed
        with pytest.raises(errors.KafkaConnectionError):
            await connection.send(ask("after"))


async def test_timed_out_request_keeps_its_slot_and_the_late_answer_is_discarded() -> None:
    delays = {"slow": 0.4, "fast": 0.0}

    async def handler(header: Any, request: Any) -> Any:
        await asyncio.sleep(delays[request.topics[0].name])
        return echo_metadata(request)

    config = ConnectionConfig(request_timeout_ms=100)
    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port, config)
        try:
            with pytest.raises(errors.KafkaTimeoutError):
                await connection.send(ask("slow"))
            assert connection.in_flight == 1  # the slot is still taken
            # The broker answers in order, so this waits behind the late answer, then succeeds.
            response = await connection.send(ask("fast"), timeout_ms=2000)
            assert response.topics[0].name == "fast"
            assert connection.in_flight == 0
            assert not connection.closed
        finally:
            connection.close()


async def test_connection_closes_when_every_slot_is_held_by_timed_out_requests() -> None:
    async def handler(header: Any, request: Any) -> Any:
        return SILENT

    config = ConnectionConfig(request_timeout_ms=50, max_in_flight_requests_per_connection=2)
    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port, config)
        results = await asyncio.gather(
            connection.send(ask("a")), connection.send(ask("b")), return_exceptions=True
        )
        assert all(isinstance(r, errors.KafkaTimeoutError) for r in results)
        assert connection.closed


async def test_garbage_from_the_broker_is_a_protocol_error_for_every_waiter() -> None:
    async def handler(header: Any, request: Any) -> Any:
        return SILENT

    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        task = asyncio.ensure_future(connection.send(ask("x")))
        await broker.wait_for_requests(2)
        # Answer with a frame whose correlation id was never sent.
        writer = next(iter(broker._writers))
        writer.write(b"\x00\x00\x00\x08\x7f\xff\xff\xf0\x00\x00\x00\x00")
        with pytest.raises(errors.ProtocolError):
            await asyncio.wait_for(task, 2)
        assert connection.closed


async def test_acks_zero_produce_resolves_on_write() -> None:
    async def handler(header: Any, request: Any) -> Any:
        raise AssertionError("acks=0 produce must get no answer")

    async with FakeBroker(handler) as broker:
        broker.handler = None
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        try:
            request = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[])
            assert await connection.send(request, 3) is None
            assert connection.in_flight == 0
        finally:
            connection.close()


async def test_try_send_now_writes_before_returning_or_does_nothing() -> None:
    async def handler(header: Any, request: Any) -> Any:
        if header.api_key != MetadataRequest.API_KEY or request.topics[0].name.startswith("hold"):
            return SILENT  # acks=0 produce gets no answer; "hold" requests keep their slots
        return echo_metadata(request)

    config = ConnectionConfig(max_in_flight_requests_per_connection=2, request_timeout_ms=2000)
    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port, config)
        try:
            version = connection.versions.version_for(MetadataRequest.API_KEY)
            started = connection.try_send_now(ask("now"), version)
            assert started is not None
            assert connection.in_flight == 1  # written and registered before any await
            assert (await started).topics[0].name == "now"
            # Acks=0 produce: written, nothing to wait for.
            produce = connection.try_send_now(ProduceRequest(acks=0, timeout_ms=1000), 3)
            assert produce is not None and await produce is None
            # With every slot taken, nothing happens: the caller sends the usual way.
            held = [connection.try_send_now(ask(f"hold-{i}"), version) for i in range(2)]
            assert all(h is not None for h in held) and connection.in_flight == 2
            assert connection.try_send_now(ask("full"), version) is None
            assert connection.in_flight == 2
            await broker.wait_for_requests(5)  # ApiVersions, "now", produce, 2 held
            assert [t.name for h, r in broker.requests if h.api_key == 3 for t in r.topics] == [
                "now",
                "hold-0",
                "hold-1",
            ]
            # A broken connection raises its sticky error, as send() does.
            broker.drop_clients()
            for waiter in held:
                assert waiter is not None
                with pytest.raises(errors.KafkaConnectionError):
                    await waiter
            with pytest.raises(errors.KafkaConnectionError):
                connection.try_send_now(ask("after"), version)
        finally:
            connection.close()


async def test_refused_connection_is_a_prompt_typed_error() -> None:
    async with FakeBroker() as broker:
        port = broker.port
    started = time.monotonic()
    with pytest.raises(errors.KafkaConnectionError, match="cannot connect"):
        await BrokerConnection.open("127.0.0.1", port)
    assert time.monotonic() - started < 2


async def test_version_is_the_minimum_of_client_broker_and_cap() -> None:
    async with FakeBroker(versions={3: (0, 7)}) as broker:
        connection = await BrokerConnection.open(
            "127.0.0.1", broker.port, ConnectionConfig(api_version={3: 5})
        )
        try:
            assert connection.versions.version_for(3) == 5
        finally:
            connection.close()
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        try:
            assert connection.versions.version_for(3) == 7
        finally:
            connection.close()


async def test_pre_0_10_pin_sends_no_api_versions_and_uses_version_zero() -> None:
    async def handler(header: Any, request: Any) -> Any:
        return echo_metadata(request)

    async with FakeBroker(handler) as broker:
        connection = await BrokerConnection.open(
            "127.0.0.1", broker.port, ConnectionConfig(api_version="0.8.2")
        )
        try:
            await connection.send(ask("x"))
        finally:
            connection.close()
        assert [h.api_key for h, _ in broker.requests] == [3]
        assert broker.requests[0][0].api_version == 0


async def test_api_versions_falls_back_when_the_broker_refuses_the_version() -> None:
    async def answer(header: Any, request: Any) -> Any:
        # An older broker answers an ApiVersions version it does not know with error 35 and its
        # own range, and the client retries within that range.
        response = api_versions_response({18: (0, 2)})
        if header.api_key == 18 and header.api_version > 2:
            response.error_code = 35
        return response

    async with FakeBroker(answer) as broker:
        broker.custom_api_versions = True  # type: ignore[attr-defined]
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        try:
            assert connection.versions.version_for(18) == 2
            versions_sent = [h.api_version for h, _ in broker.requests if h.api_key == 18]
            assert versions_sent[0] > 2 and versions_sent[-1] == 2
        finally:
            connection.close()


async def test_connection_lost_while_handshaking_is_a_typed_error() -> None:
    async def handler(header: Any, request: Any) -> Any:
        return CLOSE

    async with FakeBroker(handler) as broker:
        broker.custom_api_versions = True  # type: ignore[attr-defined]
        with pytest.raises(errors.KafkaConnectionError):
            await BrokerConnection.open("127.0.0.1", broker.port)


def test_reconnect_backoff_grows_with_jitter_and_is_capped() -> None:
    backoff = ReconnectBackoff(50, 1000)
    delays = [backoff.failed() for _ in range(10)]
    assert 0.04 <= delays[0] <= 0.06
    assert delays[3] > delays[0]
    assert max(delays) <= 1.0
    assert backoff.remaining() > 0
    backoff.succeeded()
    assert backoff.remaining() == 0
