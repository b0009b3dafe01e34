"""ConnectionPool: one connect shared by its waiters, and what cancelling one of them must not do.

A connect is shared by every caller that asks for the same (host, port, purpose) while it is under
way.  The caller that happened to start it may be cancelled (a ``partitions_for()`` inside
``wait_for``, a request whose owner gave up): the others must still get their connection.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from fake_broker import FakeBroker, api_versions_response

from aiokafkawire import Producer, errors
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.net.pool import ConnectionPool
from aiokafkawire.protocol.messages import MetadataResponse, ProduceResponse
from aiokafkawire.protocol.messages.metadata import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from aiokafkawire.protocol.messages.produce import PartitionProduceResponse, TopicProduceResponse


class SlowHandshakes:
    """A broker handler whose ApiVersions answers take ``delay`` seconds after the first ``fast``.

    The client sends ApiVersions first on every connection, so this makes connects slow while
    keeping the bootstrap connection quick.  Metadata names this broker as node 0, the leader of
    every partition asked for; Produce answers succeed with increasing offsets.
    """

    def __init__(self, delay: float, fast: int = 0) -> None:
        self.delay = delay
        self.fast = fast
        self.port = 0
        self.handshakes = 0
        self._offsets = itertools.count()

    async def __call__(self, header: Any, request: Any) -> Any:
        if header.api_key == 18:
            self.handshakes += 1
            if self.handshakes > self.fast:
                await asyncio.sleep(self.delay)
            return api_versions_response()
        if header.api_key == 3:
            return MetadataResponse(
                brokers=[MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.port)],
                cluster_id="fake",
                controller_id=0,
                topics=[
                    MetadataResponseTopic(
                        error_code=0,
                        name=topic.name,
                        partitions=[
                            MetadataResponsePartition(
                                error_code=0,
                                partition_index=0,
                                leader_id=0,
                                leader_epoch=0,
                                replica_nodes=[0],
                                isr_nodes=[0],
                            )
                        ],
                    )
                    for topic in request.topics or []
                ],
            )
        if header.api_key == 0:
            return ProduceResponse(
                responses=[
                    TopicProduceResponse(
                        name=topic.name,
                        partition_responses=[
                            PartitionProduceResponse(
                                index=part.index, error_code=0, base_offset=next(self._offsets)
                            )
                            for part in topic.partition_data
                        ],
                    )
                    for topic in request.topic_data
                ],
            )
        raise AssertionError(f"unexpected request {request!r}")


async def serve(handler: SlowHandshakes) -> FakeBroker:
    broker = FakeBroker(handler)
    broker.custom_api_versions = True  # type: ignore[attr-defined]
    await broker.__aenter__()
    handler.port = broker.port
    return broker


async def test_cancelling_the_waiter_that_started_a_connect_leaves_the_others_connected() -> None:
    handler = SlowHandshakes(delay=0.3)
    broker = await serve(handler)
    pool = ConnectionPool(ConnectionConfig())
    try:
        starter = asyncio.ensure_future(asyncio.wait_for(pool.get("127.0.0.1", broker.port), 0.05))
        await asyncio.sleep(0.01)  # the starter's connect is under way
        joiner = asyncio.ensure_future(pool.get("127.0.0.1", broker.port))
        with pytest.raises((TimeoutError, asyncio.TimeoutError)):
            await starter
        connection = await asyncio.wait_for(joiner, 5)
        assert not connection.closed
        assert await pool.get("127.0.0.1", broker.port) is connection
        assert broker.connections == 1  # one connect, shared
    finally:
        await pool.close()
        await broker.close()


async def test_a_connect_nobody_waits_for_any_more_still_lands_in_the_pool() -> None:
    handler = SlowHandshakes(delay=0.2)
    broker = await serve(handler)
    pool = ConnectionPool(ConnectionConfig())
    try:
        with pytest.raises((TimeoutError, asyncio.TimeoutError)):
            await asyncio.wait_for(pool.get("127.0.0.1", broker.port), 0.02)
        # The next caller joins the connect already under way instead of starting another.
        connection = await asyncio.wait_for(pool.get("127.0.0.1", broker.port), 5)
        assert not connection.closed
        assert broker.connections == 1
    finally:
        await pool.close()
        await broker.close()


async def test_a_failed_shared_connect_fails_every_waiter_with_the_typed_error() -> None:
    pool = ConnectionPool(ConnectionConfig())
    # Nothing listens on this port once the probe server is gone.
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    try:
        outcomes = await asyncio.gather(
            *(pool.get("127.0.0.1", port) for _ in range(3)), return_exceptions=True
        )
        assert all(isinstance(o, errors.KafkaConnectionError) for o in outcomes), outcomes
    finally:
        await pool.close()


async def test_closing_the_pool_ends_a_connect_under_way_with_a_typed_error() -> None:
    handler = SlowHandshakes(delay=5.0)
    broker = await serve(handler)
    pool = ConnectionPool(ConnectionConfig())
    try:
        waiter = asyncio.ensure_future(pool.get("127.0.0.1", broker.port))
        await asyncio.sleep(0.05)
        await asyncio.wait_for(pool.close(), 3)
        with pytest.raises(errors.ClientClosedError):
            await asyncio.wait_for(waiter, 3)
    finally:
        await pool.close()
        await broker.close()


async def test_partitions_for_timing_out_does_not_stall_the_producer_sharing_its_connect() -> None:
    # partitions_for() starts the produce connection to the leader and gives up after
    # max_block_ms; the sender's writer, queued behind that same connect, must still deliver.
    # The metadata comes quickly over the bootstrap connection (no telemetry request, which
    # this handler does not answer, drops it), so partitions_for has time to start that connect.
    handler = SlowHandshakes(delay=0.6, fast=1)  # the bootstrap connection is quick
    broker = await serve(handler)
    producer = Producer(
        bootstrap_servers=f"127.0.0.1:{broker.port}",
        acks=1,
        enable_idempotence=False,
        enable_metrics_push=False,
        linger_ms=0,
        max_block_ms=200,
        request_timeout_ms=2_000,
        delivery_timeout_ms=5_000,
    )
    try:
        await producer.start()
        warming = asyncio.ensure_future(producer.partitions_for("orders"))
        await asyncio.sleep(0.05)  # its connect to the leader is under way
        handle = await producer.send("orders", b"value", partition=0)
        assert await asyncio.wait_for(warming, 5) == [0]  # gave up waiting, no error
        metadata = await asyncio.wait_for(handle, 4)
        assert metadata.partition == 0 and metadata.offset == 0
        assert broker.connections == 2  # bootstrap, then one produce connect for both
    finally:
        await asyncio.wait_for(producer.close(), 10)
        await broker.close()


async def test_a_writer_cancelled_from_outside_is_restarted_and_its_queued_requests_delivered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Whatever cancels the producer's writer task other than the producer itself (here: its
    # connect raising CancelledError once, as a cancelled shared future would), the requests it
    # had queued must still go out: the writer is restarted, not silently gone.
    handler = SlowHandshakes(delay=0.05, fast=1)
    broker = await serve(handler)
    producer = Producer(
        bootstrap_servers=f"127.0.0.1:{broker.port}",
        acks=1,
        enable_idempotence=False,
        linger_ms=0,
        request_timeout_ms=2_000,
        delivery_timeout_ms=5_000,
    )
    try:
        await producer.start()
        cluster = producer._cluster
        assert cluster is not None
        real_connection = cluster.connection
        cancelled_once: list[str] = []

        async def connection(node_id: int, purpose: str = "default") -> Any:
            if purpose == "produce" and not cancelled_once:
                cancelled_once.append(purpose)
                raise asyncio.CancelledError
            return await real_connection(node_id, purpose=purpose)

        monkeypatch.setattr(cluster, "connection", connection)
        handle = await producer.send("orders", b"value", partition=0)
        metadata = await asyncio.wait_for(handle, 4)
        assert cancelled_once and metadata.offset == 0
    finally:
        await asyncio.wait_for(producer.close(), 10)
        await broker.close()
