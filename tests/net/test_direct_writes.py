"""DirectWriter: a connection's frames written with sendmsg of their parts, on a socket pair.

The writer's socket is wrapped in a spy recording every buffer handed to ``sendmsg``, so the
tests see that parts go out as they are (the caller's objects, or views of them: never a
copy), in order, across partial writes, and that a broken socket fails the connection once.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from aiokafkawire import errors
from aiokafkawire.net.direct_writes import DirectWriter


class SendSpy:
    """Stands in for the writer's duplicate socket, recording what sendmsg was given."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.given: list[Any] = []
        self.calls = 0

    def sendmsg(self, buffers: list[Any]) -> int:
        self.calls += 1
        self.given.extend(buffers)
        return self.sock.sendmsg(buffers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)

    def only_originals(self, originals: list[Any]) -> bool:
        """Whether every buffer handed over is one of ``originals`` or a view of one."""
        ids = {id(o) for o in originals}
        return all(
            id(b) in ids or (isinstance(b, memoryview) and id(b.obj) in ids) for b in self.given
        )


class Connection:
    """The writer's connection: flow control and the failure, recorded."""

    host = "127.0.0.1"
    port = 9092

    def __init__(self) -> None:
        self.events: list[str] = []
        self.errors: list[errors.KafkaError | None] = []
        self.failed = asyncio.Event()

    def pause_writing(self) -> None:
        self.events.append("pause")

    def resume_writing(self) -> None:
        self.events.append("resume")

    def close(self, error: errors.KafkaError | None = None) -> None:
        self.errors.append(error)
        self.failed.set()


class Transport:
    """The transport whose socket the writer duplicates (asyncio's default limits)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return 16 * 1024, 64 * 1024


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    # Small buffers: a few hundred KiB fill the socket, so writes are partial.
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 * 1024)
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    ours.setblocking(False)
    theirs.setblocking(False)
    yield ours, theirs
    ours.close()
    theirs.close()


def writer_for(sock: socket.socket, connection: Connection) -> tuple[DirectWriter, SendSpy]:
    writer = DirectWriter.for_transport(
        Transport(sock),  # type: ignore[arg-type]
        connection,
        asyncio.get_running_loop(),
    )
    assert writer is not None
    spy = SendSpy(writer._socket)  # type: ignore[arg-type]
    writer._socket = spy  # type: ignore[assignment]
    return writer, spy


async def read_all(sock: socket.socket, size: int, timeout: float = 5.0) -> bytes:
    loop = asyncio.get_running_loop()
    received = bytearray()
    async with asyncio.timeout(timeout):
        while len(received) < size:
            chunk = await loop.sock_recv(sock, 1024 * 1024)
            assert chunk, "the writer's side closed early"
            received += chunk
    return bytes(received)


async def test_parts_go_out_in_one_sendmsg_as_they_are(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    connection = Connection()
    writer, spy = writer_for(ours, connection)
    batch = bytearray(os.urandom(4000))
    parts: list[Any] = [b"head", memoryview(batch).toreadonly(), b"", b"tail"]
    writer.write(parts)
    assert spy.calls == 1 and writer.pending_bytes == 0
    assert await read_all(theirs, 4008) == b"head" + bytes(batch) + b"tail"
    assert spy.only_originals(parts)
    assert connection.events == [] and connection.errors == []
    writer.close()


async def test_partial_writes_keep_order_across_frames_without_copies(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """The socket takes part of the first frame: the rest (the same objects, sliced as views)
    and a later frame wait, writers are paused above the high-water mark and resumed once the
    queue drained, and the peer receives every byte once, in order."""
    ours, theirs = pair
    connection = Connection()
    writer, spy = writer_for(ours, connection)
    first: list[Any] = [b"F1", os.urandom(300_000), b"-", os.urandom(200_000)]
    second: list[Any] = [b"F2", os.urandom(250_000)]
    writer.write(first)
    assert 0 < writer.pending_bytes < sum(map(len, first)), "expected a partial write"
    assert connection.events == ["pause"]
    calls = spy.calls
    writer.write(second)  # queued behind the rest of the first frame: not tried now
    assert spy.calls == calls
    expected = b"".join(first) + b"".join(second)
    assert await read_all(theirs, len(expected)) == expected
    await asyncio.sleep(0)  # the writability callback that sent the last bytes has returned
    assert writer.pending_bytes == 0 and not writer._watching
    assert connection.events == ["pause", "resume"]
    assert spy.only_originals(first + second)
    assert connection.errors == []
    writer.close()


async def test_more_parts_than_iov_max_are_written_in_order(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    writer, spy = writer_for(ours, Connection())
    parts = [i.to_bytes(2, "big") for i in range(3000)]
    writer.write(parts)
    assert await read_all(theirs, 6000) == b"".join(parts)
    assert spy.calls >= 3  # at most 1,024 buffers per call
    writer.close()


async def test_a_broken_socket_fails_the_connection_once_with_a_typed_error(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """The peer goes away with a frame half written: the connection fails with
    KafkaConnectionError (once), the rest of the frame is dropped, nothing is watched."""
    ours, theirs = pair
    connection = Connection()
    writer, _ = writer_for(ours, connection)
    writer.write([os.urandom(600_000)])
    assert writer.pending_bytes > 0 and writer._watching
    theirs.close()
    async with asyncio.timeout(5):
        await connection.failed.wait()
    (error,) = connection.errors
    assert isinstance(error, errors.KafkaConnectionError)
    assert "lost while writing" in str(error)
    assert isinstance(error.__cause__, OSError)
    assert writer.pending_bytes == 0 and not writer._watching
    writer.write([b"later"])  # after the failure: dropped, no second error
    assert connection.errors == [error]
