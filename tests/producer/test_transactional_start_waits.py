"""A transactional producer's start waits up to ``max_block_ms`` for its coordinator.

A fresh Kafka cluster creates ``__transaction_state`` on first use and answers FindCoordinator
with COORDINATOR_NOT_AVAILABLE until it is created and loaded; on a loaded 3-node cluster that
took longer than twice the request timeout (the rolling-restart fault test's services failed to
start). Java's initTransactions waits ``max.block.ms``. A scripted broker plays the cluster.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from fake_broker import FakeBroker

from aiokafkawire import Producer, errors
from aiokafkawire.protocol.messages import (
    FindCoordinatorResponse,
    InitProducerIdResponse,
    MetadataResponse,
)
from aiokafkawire.protocol.messages import find_coordinator as m_find
from aiokafkawire.protocol.messages import metadata as m_metadata

REQUEST_TIMEOUT_MS = 500
UNAVAILABLE_SECONDS = 2.5  # more than twice the request timeout


def cluster_without_a_coordinator_at_first(inits: list[Any]) -> FakeBroker:
    """FindCoordinator answers COORDINATOR_NOT_AVAILABLE for the first UNAVAILABLE_SECONDS."""
    broker: FakeBroker
    ready_at = time.monotonic() + UNAVAILABLE_SECONDS

    async def handler(header: Any, request: Any) -> Any:
        if header.api_key == 3:
            return MetadataResponse(
                brokers=[
                    m_metadata.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=broker.port)
                ],
                cluster_id="fake",
                controller_id=1,
                topics=[],
            )
        if header.api_key == 10:
            unavailable = time.monotonic() < ready_at
            return FindCoordinatorResponse(
                coordinators=[
                    m_find.Coordinator(
                        key="t",
                        node_id=-1 if unavailable else 1,
                        host="" if unavailable else "127.0.0.1",
                        port=-1 if unavailable else broker.port,
                        error_code=errors.CoordinatorNotAvailableError.code if unavailable else 0,
                    )
                ]
            )
        if header.api_key == 22:
            inits.append(request)
            return InitProducerIdResponse(producer_id=7, producer_epoch=0)
        raise AssertionError(f"unexpected request {request!r}")

    broker = FakeBroker(handler)
    return broker


async def test_start_waits_for_the_transaction_coordinator_up_to_max_block_ms() -> None:
    inits: list[Any] = []
    async with cluster_without_a_coordinator_at_first(inits) as broker:
        producer = Producer(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            transactional_id="t",
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            retry_backoff_ms=50,
            max_block_ms=20_000,
        )
        started = time.monotonic()
        await producer.start()
        try:
            assert time.monotonic() - started >= UNAVAILABLE_SECONDS * 0.9
            assert len(inits) == 1
        finally:
            await producer.close()


async def test_start_gives_up_after_max_block_ms() -> None:
    async with cluster_without_a_coordinator_at_first([]) as broker:
        producer = Producer(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            transactional_id="t",
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            retry_backoff_ms=50,
            max_block_ms=1_000,
        )
        started = time.monotonic()
        with pytest.raises(errors.KafkaTimeoutError):
            await producer.start()
        await producer.close()
        assert time.monotonic() - started < UNAVAILABLE_SECONDS
