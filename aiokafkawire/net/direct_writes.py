"""Writes of a connection's frames with one ``sendmsg`` of all their parts (asyncio 3.11's gap).

A Produce frame is a list of parts: its header and the record batches it references
(:meth:`~aiokafkawire.protocol.framing.KafkaFraming.send_request_parts`).  Asyncio's selector
transport before Python 3.12 joins what ``writelines`` is given (a copy of every batch) and,
when the socket takes only part of a write, copies the rest into its own buffer.  A
:class:`DirectWriter` writes the parts as they are with ``socket.sendmsg`` (scatter/gather)
through a duplicate of the socket's descriptor: nothing is copied in user space.  What the
socket does not take stays queued as the same parts (a ``memoryview`` slice of the one it
took in part), and goes out, in order, when the socket is writable again (``add_writer`` on the
duplicate); everything written meanwhile queues behind it.  The queue's size pauses and resumes
the connection's writers as a transport's buffer would (its write buffer limits).

Only where the connection writes nothing through the transport at the same time (every write
goes through here from the first one) and where the transport writes the socket the same way:
plain TCP on asyncio's selector loop whose ``writelines`` joins (Python 3.11).  TLS, uvloop and
asyncio 3.12+ (whose ``writelines`` scatters) keep the transport.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections import deque
from collections.abc import Iterable
from typing import Protocol

from aiokafkawire import errors
from aiokafkawire.net.direct_reads import duplicate_socket
from aiokafkawire.protocol.framing import FramePart

__all__ = ["DirectWriter", "WritePath"]


def _iov_max() -> int:
    try:
        value = os.sysconf("SC_IOV_MAX")
    except (AttributeError, OSError, ValueError):
        value = -1
    return value if value > 0 else 16


# Buffers per sendmsg call (the kernel refuses more than IOV_MAX: 1024 on Linux).
_PARTS_MAX = min(_iov_max(), 1024)


class WritePath(Protocol):
    """What a :class:`DirectWriter` needs of its connection (its public interface): flow
    control for its writers, and the failure to report when the socket breaks."""

    host: str
    port: int

    def pause_writing(self) -> None: ...

    def resume_writing(self) -> None: ...

    def close(self, error: errors.KafkaError | None = None) -> None: ...


class DirectWriter:
    """One connection's sendmsg writes and their queue (see the module)."""

    __slots__ = (
        "_connection",
        "_high",
        "_loop",
        "_low",
        "_paused",
        "_pending",
        "_pending_bytes",
        "_socket",
        "_transport",
        "_watching",
        "sends",
    )

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        connection: WritePath,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._transport = transport
        self._connection = connection
        self._loop = loop
        self._socket: socket.socket | None = None
        self._pending: deque[FramePart] = deque()
        self._pending_bytes = 0
        self._watching = False
        self._paused = False
        self._low, self._high = transport.get_write_buffer_limits()
        self.sends = 0  # sendmsg calls made (for tests and figures)

    @classmethod
    def for_transport(
        cls,
        transport: asyncio.WriteTransport,
        connection: WritePath,
        loop: asyncio.AbstractEventLoop,
    ) -> DirectWriter | None:
        """A writer for ``transport``'s socket, or None where the transport must keep writing
        (no socket to duplicate, a descriptor limit reached)."""
        duplicate = duplicate_socket(transport)
        if duplicate is None:
            return None
        writer = cls(transport, connection, loop)
        writer._socket = duplicate
        return writer

    @property
    def pending_bytes(self) -> int:
        """Bytes written to this writer that the socket has not taken yet."""
        return self._pending_bytes

    def write(self, parts: Iterable[FramePart]) -> None:
        """Write ``parts`` in order, after anything still queued; never blocks, never copies.

        After :meth:`close` (the connection failed), nothing is written."""
        if self._socket is None:
            return
        pending = self._pending
        for part in parts:
            if len(part):
                pending.append(part)
                self._pending_bytes += len(part)
        if not self._watching:
            self._send()
        if self._pending_bytes > self._high and not self._paused:
            self._paused = True
            self._connection.pause_writing()

    def _send(self) -> None:
        """Hand the socket what it takes; watch for writability while parts remain."""
        sock = self._socket
        pending = self._pending
        while pending and sock is not None:
            parts = list(pending) if len(pending) <= _PARTS_MAX else pending_slice(pending)
            try:
                sent = sock.sendmsg(parts)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self._broken(exc)
                return
            self.sends += 1
            self._pending_bytes -= sent
            while sent:
                first = pending[0]
                size = len(first)
                if sent >= size:
                    pending.popleft()
                    sent -= size
                else:
                    view = first if type(first) is memoryview else memoryview(first)
                    pending[0] = view[sent:]  # the rest of this part, not a copy of it
                    sent = 0
            if pending and len(parts) < _PARTS_MAX:
                break  # the socket is full: wait until it is writable
        self._watch(bool(pending))
        if self._paused and self._pending_bytes <= self._low:
            self._paused = False
            self._connection.resume_writing()

    def _watch(self, wanted: bool) -> None:
        if wanted == self._watching or self._socket is None:
            return
        self._watching = wanted
        if wanted:
            self._loop.add_writer(self._socket.fileno(), self._send)
        else:
            self._loop.remove_writer(self._socket.fileno())

    def _broken(self, exc: OSError) -> None:
        """The error the transport would meet: fail the connection (every waiter) with it."""
        connection = self._connection
        error = errors.KafkaConnectionError(
            f"connection to {connection.host}:{connection.port} lost while writing: "
            f"{exc.strerror or exc}"
        )
        error.__cause__ = exc
        self.close()
        connection.close(error)

    def close(self) -> None:
        """Drop what is queued and close the duplicate (the transport keeps its descriptor)."""
        self._watch(False)
        self._pending.clear()
        self._pending_bytes = 0
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()


def pending_slice(pending: deque[FramePart]) -> list[FramePart]:
    """The first :data:`_PARTS_MAX` parts of ``pending`` (one sendmsg's worth)."""
    parts: list[FramePart] = []
    for part in pending:
        parts.append(part)
        if len(parts) == _PARTS_MAX:
            break
    return parts
