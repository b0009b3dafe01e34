"""TLS end to end: the client speaks TLS to a TLS-terminating loopback relay in front of Tansu.

Tansu 0.6 cannot serve TLS itself (see aiokafkawire/testing/BROKERS.md), so the relay terminates
TLS with a certificate made by ``trustme`` and forwards plaintext; the broker advertises the relay's
address, so every connection the client makes (bootstrap and per-broker) goes through TLS.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator

import pytest

from aiokafkawire import errors
from aiokafkawire.admin import Admin, NewTopic
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.net.tls import create_ssl_context
from aiokafkawire.testing import TansuBroker

trustme = pytest.importorskip("trustme")


class TlsRelay:
    """Accepts TLS on 127.0.0.1 and pipes plaintext bytes to ``upstream``."""

    def __init__(self, server_context: ssl.SSLContext) -> None:
        self._context = server_context
        self.upstream: tuple[str, int] | None = None
        self.port = 0
        self.accepted = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self._context)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=2)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None and self.upstream is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, asyncio.CancelledError, ssl.SSLError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.close()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]


@pytest.fixture
def certificate_authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def tls_cluster(certificate_authority: trustme.CA) -> AsyncIterator[tuple[TlsRelay, str]]:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate_authority.issue_cert("127.0.0.1", "localhost").configure_cert(server_context)
    relay = TlsRelay(server_context)
    await relay.start()
    broker = TansuBroker(advertised_address=("127.0.0.1", relay.port))
    await broker.start_async()
    relay.upstream = ("127.0.0.1", broker.port)
    try:
        yield relay, f"127.0.0.1:{relay.port}"
    finally:
        await relay.stop()
        await broker.stop_async()


def client_context(ca: trustme.CA) -> ssl.SSLContext:
    with ca.cert_pem.tempfile() as path:
        return create_ssl_context(cafile=path)


async def test_cluster_and_admin_over_tls(tls_cluster, certificate_authority) -> None:
    relay, bootstrap = tls_cluster
    context = client_context(certificate_authority)
    async with Admin(
        bootstrap_servers=bootstrap, security_protocol="SSL", ssl_context=context
    ) as admin:
        created = await admin.create_topics([NewTopic("tls-topic", 2, 1)])
        assert created["tls-topic"].ok, created["tls-topic"].error
        assert "tls-topic" in await admin.list_topics()
        broker = next(iter(admin.cluster.metadata.brokers.values()))
        assert broker.port == relay.port  # the broker's own address is the TLS relay too
    assert relay.accepted >= 1


async def test_untrusted_certificate_is_a_prompt_typed_error(tls_cluster) -> None:
    _, bootstrap = tls_cluster
    other_ca = trustme.CA()
    config = ConnectionConfig(
        security_protocol="SSL", ssl_context=client_context(other_ca), connect_timeout_ms=3000
    )
    cluster = Cluster(bootstrap, config)
    started = time.monotonic()
    # A certificate problem is authentication, not connectivity: not retried at other brokers.
    with pytest.raises(errors.SslAuthenticationError, match="TLS"):
        await cluster.start()
    assert time.monotonic() - started < 5
    await cluster.close()


async def test_plaintext_client_against_tls_listener_fails_typed(tls_cluster) -> None:
    _, bootstrap = tls_cluster
    cluster = Cluster(bootstrap, ConnectionConfig(request_timeout_ms=2000, connect_timeout_ms=2000))
    with pytest.raises(errors.KafkaError):
        await cluster.start()
    await cluster.close()
