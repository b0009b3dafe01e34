"""A broker that answers garbage: typed errors, the connection replaced, no hang, bounded memory.

Hypothesis draws the garbage (truncated frames, wrong correlation ids, sizes above the limit or
negative, bodies cut short or flipped, random bytes, unsolicited frames) and whether the server
then closes or goes silent.  For each, the request must end in the typed error the garbage calls
for — promptly, or at the request timeout where only silence follows — the poisoned connection must
be closed, and the pool's next connection to the (now well-behaved) broker must work.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
import tracemalloc
from typing import Any

from fake_broker import api_versions_response
from garbage_broker import Garbage, GarbageBroker, echo_metadata, garbage_strategy
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from aiokafkawire import errors
from aiokafkawire.net.connection import BrokerConnection, ConnectionConfig
from aiokafkawire.net.pool import ConnectionPool
from aiokafkawire.protocol.framing import FrameSplitter, decode_request, encode_response
from aiokafkawire.protocol.messages import MetadataRequest
from aiokafkawire.protocol.messages.metadata import MetadataRequestTopic

MAX_FRAME = 64 * 1024
REQUEST_TIMEOUT_MS = 300
# Generous: prompt errors come in milliseconds; this only separates "at once" from "at timeout".
PROMPT = REQUEST_TIMEOUT_MS / 1000 * 0.8
HANG = 5.0  # far past every timeout in play: reaching it means the client hung
# asyncio's transports read up to 256 KiB per recv: a few such reads are in memory at a peak
# whatever the frames are.  The memory checks allow that much on top of the frames themselves.
READ_SLACK = 768 * 1024
STREAMED = 8 * 1024 * 1024  # what a streaming garbage broker tries to push: far above the bounds

GARBAGE_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=False,
)


def config() -> ConnectionConfig:
    return ConnectionConfig(
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        connect_timeout_ms=2_000,
        max_frame_size=MAX_FRAME,
        reconnect_backoff_ms=1,
        reconnect_backoff_max_ms=5,
    )


def ask(name: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequestTopic(name=name)])


async def wait_closed(connection: BrokerConnection, timeout: float = 2.0) -> None:
    with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
        await asyncio.wait_for(connection.wait_closed(), timeout)
    assert connection.closed, f"{connection!r} is still open after the garbage"


def check_outcome(script: Garbage, outcome: Any, elapsed: float) -> None:
    if isinstance(outcome, BaseException):
        assert isinstance(outcome, script.expect), f"{script}: {outcome!r}"
        assert isinstance(outcome, errors.KafkaError)
        assert str(outcome), f"{script}: an error without a message"
        if script.prompt:
            assert elapsed < PROMPT, f"{script}: {outcome!r} took {elapsed:.2f}s"
    else:
        # A flipped byte inside a name, say, still decodes: a response, just not the one sent.
        assert script.may_succeed, f"{script}: garbage accepted as {outcome!r}"
        assert len(outcome.topics) == 1


async def exercise_after_handshake(script: Garbage) -> None:
    async with GarbageBroker([script]) as broker:
        pool = ConnectionPool(config())
        try:
            connection = await asyncio.wait_for(pool.get("127.0.0.1", broker.port), HANG)
            started = time.monotonic()
            try:
                outcome: Any = await asyncio.wait_for(connection.send(ask("garbage")), HANG)
            except errors.KafkaError as exc:
                outcome = exc
            check_outcome(script, outcome, time.monotonic() - started)
            if not isinstance(outcome, BaseException) and not connection.closed:
                return  # garbage that decoded as an answer, and nothing after it
            await wait_closed(connection)
            # Replaced: the pool connects anew, and the broker now answers well.
            replacement = await asyncio.wait_for(pool.get("127.0.0.1", broker.port), HANG)
            assert replacement is not connection
            response = await asyncio.wait_for(replacement.send(ask("after")), HANG)
            assert response.topics[0].name == "after"
            assert broker.connections == 2
        finally:
            await pool.close()


# Always run, whatever hypothesis draws: the broker that stops mid-frame and goes silent.
STOPS_MID_FRAME = Garbage(
    "first 10 bytes of the answer",
    lambda cid, good: good[:10],
    "silent",
    (errors.KafkaTimeoutError,),
    prompt=False,
)


@GARBAGE_SETTINGS
@given(script=garbage_strategy(MAX_FRAME))
@example(script=STOPS_MID_FRAME)
def test_garbage_answers_are_typed_errors_and_the_connection_is_replaced(script: Garbage) -> None:
    asyncio.run(exercise_after_handshake(script))


async def exercise_handshake(script: Garbage) -> None:
    async with GarbageBroker([script], garble_handshake=True) as broker:
        pool = ConnectionPool(config())
        try:
            started = time.monotonic()
            try:
                connection = await asyncio.wait_for(pool.get("127.0.0.1", broker.port), HANG)
            except errors.KafkaError as exc:
                elapsed = time.monotonic() - started
                expected: tuple[type[errors.KafkaError], ...] = (
                    errors.ProtocolError,
                    errors.KafkaConnectionError,
                    errors.KafkaTimeoutError,
                )
                if script.may_succeed:
                    # Garbage that decodes as an ApiVersions answer carries a random error code.
                    expected += (errors.BrokerResponseError,)
                assert isinstance(exc, expected), f"{script}: {exc!r}"
                if script.prompt:
                    assert elapsed < PROMPT, f"{script}: {exc!r} took {elapsed:.2f}s"
            else:
                # Garbage that decoded as a valid ApiVersions answer (a flipped bit in a version
                # range, say): nothing to detect.  That connection's broker went silent after it.
                assert script.may_succeed, f"{script}: garbled handshake accepted"
                pool.discard(connection)
            connection = await asyncio.wait_for(pool.get("127.0.0.1", broker.port), HANG)
            response = await asyncio.wait_for(connection.send(ask("after")), HANG)
            assert response.topics[0].name == "after"
        finally:
            await pool.close()


@settings(GARBAGE_SETTINGS, max_examples=30)
@given(script=garbage_strategy(MAX_FRAME))
def test_a_garbled_handshake_fails_the_connect_with_a_typed_error(script: Garbage) -> None:
    asyncio.run(exercise_handshake(script))


# ------------------------------------------------------------------ memory


class Streamer:
    """After the handshake, answers with a frame header claiming ``size`` bytes, then streams."""

    def __init__(self, size: int, total: int) -> None:
        self.size = size
        self.total = total
        self.sent = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        splitter = FrameSplitter()
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                for body in splitter.feed(chunk):
                    header, _ = decode_request(body)
                    if header.api_key == 18:
                        writer.write(
                            encode_response(
                                header.correlation_id,
                                18,
                                header.api_version,
                                api_versions_response(),
                            )
                        )
                        continue
                    writer.write(struct.pack(">i", self.size))
                    block = b"\xab" * 65536
                    while self.sent < self.total and not writer.is_closing():
                        writer.write(block)
                        self.sent += len(block)
                        await writer.drain()
                    return
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


async def stream_at_client(size: int, total: int) -> tuple[Any, int, int]:
    streamer = Streamer(size, total)
    server = await asyncio.start_server(streamer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = await BrokerConnection.open("127.0.0.1", port, config())
    tracemalloc.start()
    try:
        try:
            outcome: Any = await asyncio.wait_for(
                connection.send(ask("big"), timeout_ms=3_000), HANG
            )
        except errors.KafkaError as exc:
            outcome = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        connection.close()
        server.close()
        await server.wait_closed()
    return outcome, peak, streamer.sent


@settings(max_examples=8, deadline=None)
@given(size=st.integers(MAX_FRAME + 1, 2**31 - 1))
def test_a_size_above_the_limit_is_refused_before_any_of_it_is_buffered(size: int) -> None:
    outcome, peak, _ = asyncio.run(stream_at_client(size, total=STREAMED))
    assert isinstance(outcome, errors.FrameTooLargeError), outcome
    assert str(size) in str(outcome)
    assert peak < READ_SLACK, f"peak {peak} bytes for a frame refused by its size"


@settings(max_examples=5, deadline=None)
@given(size=st.integers(MAX_FRAME // 2, MAX_FRAME))
def test_a_frame_under_the_limit_streaming_junk_costs_at_most_a_few_frames_of_memory(
    size: int,
) -> None:
    # The broker streams far more than one frame of junk: the client buffers the frame (it is
    # allowed), fails on its content, closes, and never holds more than a few frames' worth.
    outcome, peak, sent = asyncio.run(stream_at_client(size, total=STREAMED))
    assert isinstance(outcome, (errors.ProtocolError, errors.KafkaConnectionError)), outcome
    assert peak < 2 * MAX_FRAME + READ_SLACK, f"peak {peak} bytes, frames of {MAX_FRAME} at most"
    assert sent >= size  # the whole frame did arrive: the limit, not luck, bounded the memory


def test_echo_metadata_is_what_the_well_behaved_broker_answers() -> None:
    # The checks above compare against this answer's topic name.
    assert echo_metadata(ask("x")).topics[0].name == "x"
