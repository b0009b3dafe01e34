"""BrokerConnection against a scripted in-process broker: pipelining, timeouts, sticky errors."""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from busy_loop import block_loop, require_direct_reads
from fake_broker import CLOSE, SILENT, FakeBroker, ThreadedFakeBroker, api_versions_response

from aiokafkawire import errors
from aiokafkawire.net.connection import BrokerConnection, ConnectionConfig, ReconnectBackoff
from aiokafkawire.protocol.messages import (
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from aiokafkawire.protocol.messages.metadata import MetadataRequestTopic, MetadataResponseTopic
from aiokafkawire.protocol.messages.produce import PartitionProduceData, TopicProduceData


def echo_metadata(request: Any) -> MetadataResponse:
    """A Metadata answer naming the topics that were asked for (so answers can be matched)."""
    return MetadataResponse(
        brokers=[],
        topics=[MetadataResponseTopic(name=t.name, partitions=[]) for t in request.topics or []],
    )


def ask(name: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequestTopic(name=name)])


async def echo(header: Any, request: Any) -> Any:
    """A broker handler answering every Metadata request with the topics it named."""
    return echo_metadata(request)


@contextlib.asynccontextmanager
async def connected(
    port: int, config: ConnectionConfig | None = None
) -> AsyncIterator[tuple[BrokerConnection, int]]:
    """An open connection to 127.0.0.1:``port`` and its Metadata version; closed on exit."""
    connection = await BrokerConnection.open("127.0.0.1", port, config)
    try:
        yield connection, connection.versions.version_for(MetadataRequest.API_KEY)
    finally:
        connection.close()


def read_while_blocked(
    connection: BrokerConnection, done: Callable[[], bool], timeout: float = 2.0
) -> None:
    """With the event loop blocked, read only through ``receive_now`` until ``done()``."""
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        block_loop(0.005)
        connection.receive_now()


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


class Outcomes:
    """A response callback that records what it was given, and when."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, BaseException | None]] = []
        self.arrived = asyncio.Event()

    def __call__(self, response: Any, error: BaseException | None) -> None:
        self.seen.append((response, error))
        self.arrived.set()

    def names(self) -> list[str]:
        return [r.topics[0].name if r is not None else repr(e) for r, e in self.seen]

    async def wait(self, count: int, timeout: float = 2.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.seen) < count:
                self.arrived.clear()
                await self.arrived.wait()


async def test_try_submit_writes_before_returning_or_does_nothing() -> None:
    async def handler(header: Any, request: Any) -> Any:
        if header.api_key != MetadataRequest.API_KEY or request.topics[0].name.startswith("hold"):
            return SILENT  # acks=0 produce gets no answer; "hold" requests keep their slots
        return echo_metadata(request)

    config = ConnectionConfig(max_in_flight_requests_per_connection=2, request_timeout_ms=2000)
    async with FakeBroker(handler) as broker:
        async with connected(broker.port, config) as (connection, version):
            outcomes = Outcomes()
            assert connection.try_submit(ask("now"), version, outcomes)
            assert connection.in_flight == 1  # written and registered before any await
            await outcomes.wait(1)
            assert outcomes.names() == ["now"] and connection.in_flight == 0
            # Acks=0 produce: written; the callback hears (None, None), but never inside the call.
            produced = Outcomes()
            assert connection.try_submit(ProduceRequest(acks=0, timeout_ms=1000), 3, produced)
            assert produced.seen == [] and connection.in_flight == 0
            await produced.wait(1)
            assert produced.seen == [(None, None)]
            # With every slot taken, nothing happens: the caller sends the usual way.
            held = Outcomes()
            assert connection.try_submit(ask("hold-0"), version, held)
            assert connection.try_submit(ask("hold-1"), version, held)
            assert not connection.try_submit(ask("full"), version, held)
            assert connection.in_flight == 2
            await broker.wait_for_requests(5)  # ApiVersions, "now", produce, 2 held
            assert [t.name for h, r in broker.requests if h.api_key == 3 for t in r.topics] == [
                "now",
                "hold-0",
                "hold-1",
            ]
            # A broken connection gives each callback its sticky error, on the loop's next turn.
            broker.drop_clients()
            await held.wait(2)
            assert all(isinstance(e, errors.KafkaConnectionError) for _, e in held.seen)
            with pytest.raises(errors.KafkaConnectionError):
                connection.try_submit(ask("after"), version, held)
            with pytest.raises(errors.KafkaConnectionError):
                await connection.submit(ask("after"), version, held)
            assert len(held.seen) == 2


async def test_submit_waits_for_a_slot_and_timeouts_reach_the_callback() -> None:
    async def handler(header: Any, request: Any) -> Any:
        if request.topics[0].name == "slow":
            await asyncio.sleep(0.5)  # answers after the client gave up on it
        return echo_metadata(request)  # in order: "behind" is answered right after "slow"

    config = ConnectionConfig(max_in_flight_requests_per_connection=2, request_timeout_ms=5000)
    async with FakeBroker(handler) as broker:
        async with connected(broker.port, config) as (connection, version):
            outcomes = Outcomes()
            started = time.monotonic()
            assert connection.try_submit(ask("slow"), version, outcomes, timeout_ms=150)
            assert connection.try_submit(ask("behind"), version, outcomes)
            # Both slots are taken: submit waits until the slow answer frees one.
            queued = asyncio.ensure_future(connection.submit(ask("next"), version, outcomes))
            await outcomes.wait(1)
            assert 0.1 < time.monotonic() - started < 0.45
            (response, error), *_ = outcomes.seen
            assert response is None and isinstance(error, errors.KafkaTimeoutError)
            assert "no response within 0.1s" in str(error)
            await asyncio.sleep(0.1)
            assert not queued.done()  # the timed-out request keeps its slot until answered
            await asyncio.wait_for(queued, 2)
            await outcomes.wait(3)
            assert outcomes.names()[1:] == ["behind", "next"]  # the late "slow" answer dropped
            assert len(outcomes.seen) == 3 and connection.in_flight == 0


async def test_a_timeout_that_takes_the_last_slot_closes_and_answers_once() -> None:
    async def handler(header: Any, request: Any) -> Any:
        return SILENT

    loop = asyncio.get_running_loop()
    loop_errors: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: loop_errors.append(context))
    config = ConnectionConfig(max_in_flight_requests_per_connection=1, request_timeout_ms=5000)
    try:
        async with FakeBroker(handler) as broker:
            async with connected(broker.port, config) as (connection, version):
                outcomes = Outcomes()
                assert connection.try_submit(ask("never"), version, outcomes, timeout_ms=50)
                await outcomes.wait(1)
                await asyncio.sleep(0.05)
                # Every slot is held by an abandoned request: the connection is closed, and
                # the callback hears that once (no error escapes the timer).
                assert connection.closed
                assert len(outcomes.seen) == 1
                assert isinstance(outcomes.seen[0][1], errors.KafkaTimeoutError)
    finally:
        loop.set_exception_handler(previous)
    assert loop_errors == []


async def test_receive_now_handles_answers_that_arrived_while_the_loop_was_busy() -> None:
    require_direct_reads()
    with ThreadedFakeBroker(echo) as broker:
        async with connected(broker.port) as (connection, version):
            outcomes = Outcomes()
            assert connection.try_submit(ask("a"), version, outcomes)
            assert connection.try_submit(ask("b"), version, outcomes)
            assert not connection.receive_now() or outcomes.seen  # too early is fine too
            # Block the event loop: only receive_now can read the answers now.
            read_while_blocked(connection, lambda: len(outcomes.seen) >= 2)
            assert outcomes.names() == ["a", "b"]
            assert connection.in_flight == 0
            assert not connection.receive_now()  # nothing in flight: no read at all


async def test_receive_now_and_the_event_loop_read_one_stream_in_order() -> None:
    with ThreadedFakeBroker(echo) as broker:
        async with connected(broker.port) as (connection, version):
            outcomes = Outcomes()
            names = [f"t{i}" for i in range(300)]
            for i, name in enumerate(names):
                await connection.submit(ask(name), version, outcomes)
                if i % 3 == 0:
                    block_loop(0.0005)
                    connection.receive_now()  # reads a part of the stream ...
                elif i % 3 == 1:
                    await asyncio.sleep(0)  # ... the transport reads the next part
            await outcomes.wait(len(names))
            assert outcomes.names() == names


async def test_receive_now_does_not_nest_inside_a_callback() -> None:
    require_direct_reads()
    with ThreadedFakeBroker(echo) as broker:
        async with connected(broker.port) as (connection, version):
            order: list[str] = []
            nested: list[bool] = []

            def callback(response: Any, error: BaseException | None) -> None:
                name = response.topics[0].name
                order.append(f"{name}:start")
                nested.append(connection.receive_now())  # would hand over the next answer
                order.append(f"{name}:end")

            for name in ("x", "y", "z"):
                assert connection.try_submit(ask(name), version, callback)
            read_while_blocked(connection, lambda: len(order) >= 6)
            assert order == ["x:start", "x:end", "y:start", "y:end", "z:start", "z:end"]
            assert nested == [False, False, False]


async def test_receive_now_after_the_broker_vanished_leaves_the_loss_to_the_transport() -> None:
    async def handler(header: Any, request: Any) -> Any:
        return SILENT

    with ThreadedFakeBroker(handler) as broker:
        async with connected(broker.port) as (connection, version):
            outcomes = Outcomes()
            assert connection.try_submit(ask("lost"), version, outcomes)
            broker.drop_clients()
            block_loop(0.05)
            connection.receive_now()  # end of stream (or a reset): no answer to hand out
            assert outcomes.seen == []
            await outcomes.wait(1)
            (response, error), *_ = outcomes.seen
            assert response is None and isinstance(error, errors.KafkaConnectionError)
            assert connection.closed


async def test_receive_now_reads_nothing_over_tls() -> None:
    """TLS bytes belong to the transport's TLS object: reading the socket would corrupt them."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)

    with ThreadedFakeBroker(echo, ssl_context=server_context) as broker:
        config = ConnectionConfig(security_protocol="SSL", ssl_context=client_context)
        async with connected(broker.port, config) as (connection, version):
            outcomes = Outcomes()
            assert connection.try_submit(ask("tls"), version, outcomes)
            block_loop(0.2)  # the answer is in the socket by now
            assert not connection.receive_now()
            assert outcomes.seen == []
            await outcomes.wait(1)  # the transport reads and decrypts it
            assert outcomes.names() == ["tls"]


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


class WriteSpy:
    """A transport stand-in recording what the connection writes, passing it all on."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.written: list[Any] = []

    def write(self, data: Any) -> None:
        self.written.append(data)
        self.transport.write(data)

    def writelines(self, buffers: list[Any]) -> None:
        self.written.extend(buffers)
        self.transport.writelines(buffers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)

    def held(self, buffer: bytes) -> bool:
        """Whether ``buffer`` itself (not a copy) was handed to the transport."""
        return any(
            data is buffer or (isinstance(data, memoryview) and data.obj is buffer)
            for data in self.written
        )


class SendSpy(WriteSpy):
    """The direct writer's socket stand-in: what sendmsg was given, passed on."""

    def sendmsg(self, buffers: list[Any]) -> int:
        self.written.extend(buffers)
        return int(self.transport.sendmsg(buffers))


def spy_on_writes(connection: BrokerConnection) -> WriteSpy:
    """Record the buffers the connection writes: to its socket with sendmsg where it writes
    directly (plain TCP, asyncio's selector loop before 3.12), else to its transport."""
    writer = connection._writer
    if writer is not None:
        assert writer._socket is not None
        spy: WriteSpy = SendSpy(writer._socket)
        writer._socket = spy  # type: ignore[assignment]
        return spy
    spy = WriteSpy(connection._transport)
    connection._transport = spy  # type: ignore[assignment]
    return spy


def writes_directly() -> bool:
    """Whether plain TCP connections write with sendmsg here (DirectWriter)."""
    loop = asyncio.get_running_loop()
    writelines = getattr(asyncio.selector_events._SelectorSocketTransport, "writelines", None)
    return isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop) and writelines in (
        None,
        asyncio.WriteTransport.writelines,
    )


def produce(*batches: bytes) -> ProduceRequest:
    return ProduceRequest(
        acks=1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name="t",
                partition_data=[
                    PartitionProduceData(index=i, records=b) for i, b in enumerate(batches)
                ],
            )
        ],
    )


async def test_large_batches_are_written_uncopied_through_back_pressure() -> None:
    """Record batches reach the transport as they are (not joined into a frame), and a
    broker that stops reading mid-request (the socket full, the transport paused) still gets
    every frame whole and in order once it reads again."""
    release = asyncio.Event()

    async def handler(header: Any, request: Any) -> Any:
        await release.wait()  # not reading meanwhile: the client's writes back up
        return ProduceResponse(responses=[])

    first = [bytes([i]) * (256 * 1024) for i in range(2)]
    second = [os.urandom(1024 * 1024) for _ in range(8)]
    async with FakeBroker(handler) as broker:
        async with connected(broker.port) as (connection, _):
            spy = spy_on_writes(connection)
            outcomes = Outcomes()
            assert connection.try_submit(produce(*first), 9, outcomes)
            await broker.wait_for_requests(2)  # ApiVersions, then the first Produce
            await connection.submit(produce(*second), 9, outcomes)
            assert connection._writable is not None  # the transport paused us
            release.set()
            await outcomes.wait(2, timeout=10)
            assert [error for _, error in outcomes.seen] == [None, None]
            produced = [r for h, r in broker.requests if h.api_key == ProduceRequest.API_KEY]
            assert [[p.records for p in r.topic_data[0].partition_data] for r in produced] == [
                first,
                second,
            ]
            assert all(spy.held(batch) for batch in first + second)
            if writes_directly():
                assert connection._writer is not None and connection._writer.sends > 0


async def test_connection_dying_mid_write_fails_the_requests_and_later_writes() -> None:
    """The broker drops the connection while a large frame is half written: every request
    on it gets the connection error, and the rest of the frame goes nowhere."""

    async def handler(header: Any, request: Any) -> Any:
        return CLOSE

    async with FakeBroker(handler) as broker:
        async with connected(broker.port) as (connection, _):
            outcomes = Outcomes()
            big = [os.urandom(1024 * 1024) for _ in range(8)]
            assert connection.try_submit(produce(b"x" * 40_000), 9, outcomes)
            written = 1 + connection.try_submit(produce(*big), 9, outcomes)  # if a slot is free
            await outcomes.wait(written, timeout=5)
            assert len(outcomes.seen) == written
            assert all(isinstance(e, errors.KafkaConnectionError) for _, e in outcomes.seen)
            assert connection.closed
            with pytest.raises(errors.KafkaConnectionError):
                connection.try_submit(produce(*big), 9, outcomes)


async def test_broker_hanging_up_with_frames_queued_fails_each_request_once() -> None:
    """The broker stops reading with a large frame half written and more queued behind it,
    then drops the connection: every request gets KafkaConnectionError exactly once, the
    queued bytes are dropped, and the connection takes nothing more."""
    hang_up = asyncio.Event()

    async def handler(header: Any, request: Any) -> Any:
        await hang_up.wait()  # not reading meanwhile: the client's writes back up
        return CLOSE

    async with FakeBroker(handler) as broker:
        async with connected(broker.port) as (connection, _):
            outcomes = Outcomes()
            assert connection.try_submit(produce(b"x" * 40_000), 9, outcomes)
            await broker.wait_for_requests(2)  # ApiVersions, then the first Produce
            big = [os.urandom(1024 * 1024) for _ in range(8)]
            await connection.submit(produce(*big), 9, outcomes)
            writer = connection._writer
            if writes_directly():
                assert writer is not None and writer.pending_bytes > 0
            hang_up.set()
            await outcomes.wait(2, timeout=10)
            await asyncio.sleep(0.05)  # nothing else arrives
            assert len(outcomes.seen) == 2
            assert all(isinstance(e, errors.KafkaConnectionError) for _, e in outcomes.seen)
            assert connection.closed and connection._writer is None
            if writer is not None:
                assert writer.pending_bytes == 0
            with pytest.raises(errors.KafkaConnectionError):
                connection.try_submit(produce(b"y"), 9, outcomes)


async def test_large_batches_over_tls_are_written_as_parts_and_arrive_whole() -> None:
    """Over TLS the transport's writelines takes the parts as they are (no join)."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)

    async def handler(header: Any, request: Any) -> Any:
        return ProduceResponse(responses=[])

    batches = [os.urandom(100_000) for _ in range(3)]
    async with FakeBroker(handler, ssl_context=server_context) as broker:
        config = ConnectionConfig(security_protocol="SSL", ssl_context=client_context)
        async with connected(broker.port, config) as (connection, _):
            assert connection._writer is None  # TLS: the transport writes
            spy = WriteSpy(connection._transport)
            connection._transport = spy  # type: ignore[assignment]
            outcomes = Outcomes()
            assert connection.try_submit(produce(*batches), 9, outcomes)
            await outcomes.wait(1, timeout=10)
            assert outcomes.seen[0][1] is None
            assert all(spy.held(batch) for batch in batches)
            (produced,) = [r for h, r in broker.requests if h.api_key == ProduceRequest.API_KEY]
            assert [p.records for p in produced.topic_data[0].partition_data] == batches
