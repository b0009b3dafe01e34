"""Rebootstrap (KIP-899) end to end: every known broker is gone, and the bootstrap address (a
loopback TCP relay the test controls, as a load balancer or a DNS name would be) now leads to
replacement brokers: Apache Kafka 4.4 in place of a Tansu broker that was stopped."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.testing import BrokerUnavailableError, TansuBroker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]  # a Kafka JVM may start here

CONFIG = ConnectionConfig(connect_timeout_ms=3000, request_timeout_ms=10_000)


class Relay:
    """Forwards each connection to ``target``; :meth:`switch` points new connections elsewhere
    and drops the ones in place (a load balancer failing over)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.accepted = 0
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> str:
        assert self._server is not None
        return f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> Relay:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        self.drop()
        await asyncio.wait_for(self._server.wait_closed(), 5)

    def switch(self, target: tuple[str, int]) -> None:
        self.target = target
        self.drop()

    def drop(self) -> None:
        for task in list(self._pipes):
            task.cancel()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        task = asyncio.current_task()
        assert task is not None
        self._pipes.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            self._pipes.discard(task)
            return
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (asyncio.CancelledError, ConnectionError):
            pass
        finally:
            self._pipes.discard(task)
            for w in (writer, up_writer):
                w.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while chunk := await reader.read(65536):
        writer.write(chunk)
        await writer.drain()
    writer.transport.abort()  # one side ended: so does the other


async def test_every_known_broker_gone_recovers_through_the_bootstrap_address(
    kafka_cluster,
) -> None:
    old = TansuBroker()
    try:
        old.start()
    except BrokerUnavailableError as exc:
        pytest.skip(f"Tansu unavailable: {exc}")
    try:
        old_address = ("127.0.0.1", old.port)
        async with Relay(old_address) as relay:
            rebootstrap = Cluster(relay.address, CONFIG, retry_backoff_ms=50)
            none = Cluster(
                relay.address, CONFIG, retry_backoff_ms=50, metadata_recovery_strategy="none"
            )
            async with rebootstrap, none:
                for cluster in (rebootstrap, none):
                    assert [(b.host, b.port) for b in cluster.metadata.brokers.values()] == [
                        old_address
                    ]
                old_cluster_id = rebootstrap.metadata.cluster_id
                assert old_cluster_id != kafka_cluster.cluster_id
                # The old broker goes away; the bootstrap address now leads to the new cluster.
                old.stop()
                relay.switch(kafka_cluster.address(1))
                # strategy "none": the bootstrap address served the first metadata only.
                with pytest.raises(errors.NoBrokersAvailableError):
                    await none.refresh_metadata()
                assert none.metadata.cluster_id == old_cluster_id
                # strategy "rebootstrap" (the default): back to the bootstrap address.
                metadata = await rebootstrap.refresh_metadata()
                assert metadata.cluster_id == kafka_cluster.cluster_id
                assert rebootstrap.recovery.rebootstraps == 1
                brokers = [(b.host, b.port) for b in metadata.brokers.values()]
                assert brokers == [kafka_cluster.address(1)]
                # ... and it works there: a request to the new node 1.
                connection = await rebootstrap.connection(1)
                assert (connection.host, connection.port) == kafka_cluster.address(1)
                assert not connection.closed
    finally:
        with contextlib.suppress(Exception):
            old.stop()
