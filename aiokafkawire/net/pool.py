"""Connections by broker and purpose, with coalesced connects and reconnect backoff.

Separate purposes get separate connections to the same broker, so a long-poll Fetch never delays a
Produce or a group Heartbeat queued behind it (head-of-line blocking).  The decisions here (which
connection to reuse, whether to wait for backoff) involve no I/O beyond awaiting the connect.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from aiokafkawire import errors
from aiokafkawire.net.config import ConnectionConfig, ReconnectBackoff
from aiokafkawire.net.connection import BrokerConnection

log = logging.getLogger("aiokafkawire.net")

PoolKey = tuple[str, int, str]


class ConnectionPool:
    """Hands out open :class:`BrokerConnection` objects keyed by (host, port, purpose)."""

    def __init__(self, config: ConnectionConfig) -> None:
        self.config = config
        self._connections: dict[PoolKey, BrokerConnection] = {}
        self._connecting: dict[PoolKey, asyncio.Future[BrokerConnection]] = {}
        self._backoff: dict[tuple[str, int], ReconnectBackoff] = {}
        # Addresses whose last connection was closed after a request timed out unanswered.
        self._silent: set[tuple[str, int]] = set()
        self._closed = False
        #: The cluster a connection to a known node must belong to (KIP-1242); None: no check.
        self.cluster_id: str | None = None

    def __repr__(self) -> str:
        return f"<ConnectionPool {len(self._connections)} connections>"

    def cached(self, host: str, port: int, purpose: str = "default") -> BrokerConnection | None:
        """An open connection, if one exists (no I/O)."""
        connection = self._connections.get((host, port, purpose))
        if connection is not None and connection.closed:
            del self._connections[(host, port, purpose)]
            if _went_silent(connection):
                self._silent.add((host, port))
            return None
        return connection

    def stopped_answering(self, host: str, port: int) -> bool:
        """Whether a request to this address timed out with no answer since (on a connection
        still open, or on one closed for it, until a new connection's handshake is answered).

        A frozen broker (paused, stuck in a long GC) keeps accepting connections and answers
        nothing: requests that any broker can answer are better asked of another one meanwhile.
        """
        if (host, port) in self._silent:
            return True
        return any(
            key[0] == host and key[1] == port and _went_silent(connection)
            for key, connection in self._connections.items()
        )

    async def get(
        self, host: str, port: int, *, node_id: int | None = None, purpose: str = "default"
    ) -> BrokerConnection:
        """Return an open connection, connecting (once, for all concurrent callers) if needed."""
        if self._closed:
            raise errors.ClientClosedError("the client is closed")
        connection = self.cached(host, port, purpose)
        if connection is not None:
            return connection
        key = (host, port, purpose)
        pending = self._connecting.get(key)
        if pending is None:
            # The connect is the pool's task, not the caller's: cancelling the caller that
            # happened to start it (a wait_for timing out) must not cancel it for the others.
            pending = asyncio.get_running_loop().create_task(
                self._connect(host, port, node_id, purpose), name=f"connect {host}:{port} {purpose}"
            )
            self._connecting[key] = pending
            pending.add_done_callback(functools.partial(self._connect_done, key))
        return await asyncio.shield(pending)

    def _connect_done(self, key: PoolKey, task: asyncio.Task[BrokerConnection]) -> None:
        if self._connecting.get(key) is task:
            del self._connecting[key]
        if not task.cancelled():
            task.exception()  # its waiters may all be gone: mark the outcome retrieved

    async def _connect(
        self, host: str, port: int, node_id: int | None, purpose: str
    ) -> BrokerConnection:
        backoff = self._backoff.get((host, port))
        if backoff is None:
            backoff = self._backoff[(host, port)] = ReconnectBackoff(
                self.config.reconnect_backoff_ms, self.config.reconnect_backoff_max_ms
            )
        try:
            delay = backoff.remaining()
            if delay > 0:
                await asyncio.sleep(delay)
            connection = await BrokerConnection.open(
                host,
                port,
                self.config,
                node_id=node_id,
                purpose=purpose,
                cluster_id=self.cluster_id if node_id is not None else None,
            )
        except asyncio.CancelledError:
            if self._closed:  # close() cancelled it: its waiters learn why
                raise errors.ClientClosedError("the client closed while connecting") from None
            raise
        except errors.KafkaConnectionError:
            backoff.failed()
            raise
        except errors.KafkaTimeoutError:
            backoff.failed()
            self._silent.add((host, port))  # connected, and the handshake got no answer
            raise
        backoff.succeeded()
        self._silent.discard((host, port))  # it answered the handshake
        if self._closed:
            connection.close()
            raise errors.ClientClosedError("the client closed while connecting")
        self._connections[(host, port, purpose)] = connection
        log.debug("connected %r", connection)
        return connection

    def discard(self, connection: BrokerConnection) -> None:
        """Forget (and close) a connection, e.g. after its broker left the cluster."""
        key = (connection.host, connection.port, connection.purpose)
        if self._connections.get(key) is connection:
            del self._connections[key]
        connection.close()

    def close_node(self, host: str, port: int) -> None:
        """Close every connection to one address."""
        for key in [k for k in self._connections if k[0] == host and k[1] == port]:
            self._connections.pop(key).close()

    def close_all(self) -> None:
        """Close every connection (the pool stays open: the next ``get`` connects anew)."""
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            connection.close()

    async def close(self) -> None:
        """Close every connection and wait (bounded) for the transports to go."""
        self._closed = True
        connecting = list(self._connecting.values())
        for task in connecting:
            task.cancel()
        if connecting:
            await asyncio.wait(connecting, timeout=2.0)
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            connection.close()
        if connections:
            await asyncio.wait(
                [asyncio.ensure_future(c.wait_closed()) for c in connections], timeout=2.0
            )


def _went_silent(connection: BrokerConnection) -> bool:
    """Whether a request on ``connection`` timed out unanswered (then maybe closed for it)."""
    return bool(connection.unanswered_timeouts) or isinstance(
        connection.error, errors.KafkaTimeoutError
    )
