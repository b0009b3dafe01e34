"""A broker that answers garbage: scripted bytes instead of a well-formed response.

It completes the ApiVersions handshake properly (unless told to garble it too), then answers the
next requests with whatever a :class:`Garbage` script renders from the request's correlation id and
the well-formed answer it would have sent, and afterwards either closes the connection or stays
silent.  Once the script is used up it answers well again, so a test can check that the client's
next connection works.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fake_broker import api_versions_response

from aiokafkawire.protocol.framing import FrameSplitter, decode_request, encode_response
from aiokafkawire.protocol.messages import MetadataResponse
from aiokafkawire.protocol.messages.metadata import MetadataResponseTopic

_SIZE = struct.Struct(">i")

# render(correlation_id, well_formed_frame) -> the bytes sent instead
Render = Callable[[int, bytes], bytes]


@dataclass(frozen=True)
class Garbage:
    """One bad answer: a name for reports, its bytes, and what the server does afterwards.

    ``expect`` names the error types a correct client may raise for it (a garbled answer that
    happens to be a well-formed one is allowed only where ``may_succeed``); ``prompt`` says the
    error must come at once rather than at the request timeout.
    """

    kind: str
    render: Render
    then: str  # "close" or "silent"
    expect: tuple[type[BaseException], ...]
    prompt: bool
    may_succeed: bool = False

    def __repr__(self) -> str:
        return f"Garbage({self.kind}, then {self.then})"


def echo_metadata(request: Any) -> MetadataResponse:
    """The well-formed answer: a Metadata response naming the topics asked for."""
    return MetadataResponse(
        brokers=[],
        topics=[
            MetadataResponseTopic(name=t.name, partitions=[], error_code=0)
            for t in request.topics or []
        ],
    )


def frame(body: bytes) -> bytes:
    """A size-prefixed frame around ``body``."""
    return _SIZE.pack(len(body)) + body


class GarbageBroker:
    """Serves on 127.0.0.1; the first ``len(scripts)`` answers (after handshakes) are garbage."""

    def __init__(self, scripts: list[Garbage], *, garble_handshake: bool = False) -> None:
        self.scripts = list(scripts)
        self.garble_handshake = garble_handshake
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> GarbageBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop listening and drop every client connection."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        splitter = FrameSplitter()
        silent = False
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                for body in splitter.feed(chunk):
                    header, request = decode_request(body)
                    if silent:
                        continue
                    handshake = header.api_key == 18
                    answer = api_versions_response() if handshake else echo_metadata(request)
                    good = encode_response(
                        header.correlation_id, header.api_key, header.api_version, answer
                    )
                    if (handshake and not self.garble_handshake) or not self.scripts:
                        writer.write(good)
                        continue
                    script = self.scripts.pop(0)
                    writer.write(script.render(header.correlation_id, good))
                    await writer.drain()
                    if script.then == "close":
                        writer.transport.abort()
                        return
                    silent = True
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()


# ------------------------------------------------------------------ hypothesis strategies


def garbage_strategy(max_frame_size: int) -> Any:
    """Hypothesis strategy of :class:`Garbage` scripts for a client with ``max_frame_size``."""
    from hypothesis import strategies as st

    from aiokafkawire import errors

    protocol = (errors.ProtocolError,)
    lost = (errors.KafkaConnectionError, errors.ProtocolError)
    then = st.sampled_from(["close", "silent"])

    def cut(position: int) -> Render:
        # Keep 1..len-1 bytes of the well-formed frame.
        return lambda cid, good: good[: 1 + position % (len(good) - 1)]

    truncated = st.builds(
        lambda position, after: Garbage(
            "truncated frame",
            cut(position),
            after,
            lost if after == "close" else (errors.KafkaTimeoutError,),
            prompt=after == "close",
        ),
        st.integers(0, 10_000),
        then,
    )

    def with_correlation_id(wrong: int) -> Render:
        def render(cid: int, good: bytes) -> bytes:
            other = wrong if wrong != cid else cid ^ 0x40000000
            return good[:4] + _SIZE.pack(other) + good[8:]

        return render

    wrong_correlation = st.builds(
        lambda wrong, after: Garbage(
            "wrong correlation id", with_correlation_id(wrong), after, protocol, prompt=True
        ),
        st.integers(-(2**31), 2**31 - 1),
        then,
    )
    oversized = st.builds(
        lambda size, tail, after: Garbage(
            f"size {size} above the limit",
            lambda cid, good: _SIZE.pack(size) + tail,
            after,
            (errors.FrameTooLargeError,),
            prompt=True,
        ),
        st.integers(max_frame_size + 1, 2**31 - 1),
        st.binary(max_size=64),
        then,
    )
    negative = st.builds(
        lambda size, tail, after: Garbage(
            f"negative size {size}",
            lambda cid, good: _SIZE.pack(size) + tail,
            after,
            protocol,
            prompt=True,
        ),
        st.integers(-(2**31), -1),
        st.binary(max_size=64),
        then,
    )

    def short_body(position: int) -> Render:
        # A complete frame (its size matches) whose body stops early, after the correlation id.
        def render(cid: int, good: bytes) -> bytes:
            body = good[4:]
            keep = 4 + position % (len(body) - 4)
            return frame(body[:keep])

        return render

    cut_body = st.builds(
        lambda position, after: Garbage(
            "response body cut short", short_body(position), after, protocol, prompt=True
        ),
        st.integers(0, 10_000),
        then,
    )

    def flipped(position: int, mask: int) -> Render:
        def render(cid: int, good: bytes) -> bytes:
            data = bytearray(good)
            index = 8 + position % (len(good) - 8)  # after the size and correlation id
            data[index] ^= mask
            return bytes(data)

        return render

    bit_flip = st.builds(
        lambda position, mask, after: Garbage(
            "body byte flipped",
            flipped(position, mask),
            after,
            protocol,
            prompt=True,
            may_succeed=True,  # e.g. a flipped character of a topic name still decodes
        ),
        st.integers(0, 10_000),
        st.integers(1, 255),
        then,
    )

    def random_body(junk: bytes) -> Render:
        return lambda cid, good: frame(good[4:8] + junk)

    junk_body = st.builds(
        lambda junk, after: Garbage(
            "random body", random_body(junk), after, protocol, prompt=True, may_succeed=True
        ),
        st.binary(max_size=256),
        then,
    )
    random_bytes = st.builds(
        lambda junk, after: Garbage(
            "random bytes",
            lambda cid, good: junk,
            after,
            (errors.ProtocolError, errors.KafkaConnectionError, errors.KafkaTimeoutError),
            prompt=False,
            may_succeed=True,
        ),
        st.binary(min_size=1, max_size=512),
        then,
    )
    unsolicited = st.builds(
        lambda wrong, after: Garbage(
            "answer, then an unsolicited frame",
            lambda cid, good: good + frame(_SIZE.pack(wrong) + b"\x00" * 8),
            after,
            protocol,
            prompt=True,
            may_succeed=True,  # the answer may be read before the junk arrives
        ),
        st.integers(-(2**31), 2**31 - 1),
        then,
    )
    return st.one_of(
        truncated,
        wrong_correlation,
        oversized,
        negative,
        cut_body,
        bit_flip,
        junk_body,
        random_bytes,
        unsolicited,
    )
