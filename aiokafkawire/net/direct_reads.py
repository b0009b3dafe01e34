"""Reads of a connection's socket outside the event loop's turn (``BrokerConnection.receive_now``).

The event loop reads a socket only between turns; a task that appends thousands of records
without yielding (or thousands of tasks that each do) keeps answers unread in the socket buffer
meanwhile.  A :class:`DirectReader` reads them at once through a duplicate of the socket's
descriptor, and hands the bytes to the connection's receive path exactly as the transport would.

Only safe where the transport reads the socket the same way: plain TCP on a selector loop.  Over
TLS the bytes belong to the TLS object; on a proactor loop a read is always pending.  Measured in
``docs/DESIGN.md`` ("Asyncio layers"): it roughly doubles produce throughput (workload 1).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Protocol

from aiokafkawire import errors

__all__ = ["DirectReader", "ReceivePath", "duplicate_socket"]


def duplicate_socket(transport: asyncio.BaseTransport) -> socket.socket | None:
    """A non-blocking duplicate of ``transport``'s socket descriptor (the direct reader's and
    writer's own), or None: no socket (TLS, a proactor loop) or no descriptor left."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return None
    try:
        duplicate: socket.socket = sock.dup()
        duplicate.setblocking(False)  # the file description is non-blocking already
    except (AttributeError, OSError):
        return None
    return duplicate


# Bytes asked of the socket per read (asyncio's transports read 256 KiB too).
_READ_SIZE = 256 * 1024
# At most this many reads per call: answers that keep streaming in wait for the loop.
_READS_MAX = 8


class ReceivePath(Protocol):
    """What a :class:`DirectReader` needs of its connection: where the bytes go, and the
    failure to report when the socket breaks (a connection's public interface)."""

    host: str
    port: int

    @property
    def closed(self) -> bool: ...

    def data_received(self, data: bytes) -> None: ...

    def close(self, error: errors.KafkaError | None = None) -> None: ...


class DirectReader:
    """One connection's duplicate socket, made on first use and closed with the connection."""

    __slots__ = ("_connection", "_socket", "_transport", "_unusable")

    def __init__(self, transport: asyncio.BaseTransport, connection: ReceivePath) -> None:
        self._transport = transport
        self._connection = connection
        self._socket: socket.socket | None = None
        self._unusable = False

    def read(self) -> bool:
        """Read what has arrived (up to a bound) into the receive path; whether bytes came."""
        connection = self._connection
        sock = self._socket
        if sock is None:
            if self._unusable:
                return False
            sock = self._socket = duplicate_socket(self._transport)
            if sock is None:
                self._unusable = True  # not possible on this transport: stop trying
                return False
        got = False
        for _ in range(_READS_MAX):
            try:
                data = sock.recv(_READ_SIZE)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                # The error the transport would meet: fail every waiter, as it would.
                error = errors.KafkaConnectionError(
                    f"connection to {connection.host}:{connection.port} lost: {exc.strerror or exc}"
                )
                error.__cause__ = exc
                connection.close(error)
                break
            if not data:
                break  # end of stream: the transport sees it too and reports it
            got = True
            connection.data_received(data)
            if len(data) < _READ_SIZE or connection.closed:
                break
        return got

    def close(self) -> None:
        """Close the duplicate (the transport keeps its own descriptor)."""
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()
