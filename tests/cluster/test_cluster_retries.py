"""Coordinator lookups and topic waits retry through the shared policy (``aiokafkawire._retry``),
against scripted brokers."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fake_broker import FakeBroker

from aiokafkawire import errors
from aiokafkawire.cluster import cluster as cluster_module
from aiokafkawire.cluster.cluster import COORDINATOR_ERRORS, Cluster
from aiokafkawire.net.config import ConnectionConfig
from aiokafkawire.protocol.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from aiokafkawire.protocol.messages.find_coordinator import Coordinator
from aiokafkawire.protocol.messages.metadata import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

CONFIG = ConnectionConfig(connect_timeout_ms=2000, request_timeout_ms=2000)


class ScriptedBroker:
    """Answers Metadata with itself as the only broker, and FindCoordinator as scripted."""

    def __init__(self, coordinator_codes: list[int], topic_after: int | None = None) -> None:
        self.port = 0
        self.coordinator_codes = coordinator_codes  # popped per FindCoordinator; then 0
        self.topic_after = topic_after  # the topic shows after this many Metadata requests
        self.metadata_requests = 0
        self.lookups: list[float] = []

    async def __call__(self, header: Any, request: Any) -> Any:
        if isinstance(request, FindCoordinatorRequest):
            self.lookups.append(time.monotonic())
            code = self.coordinator_codes.pop(0) if self.coordinator_codes else 0
            if header.api_version >= 4:  # one entry per key from v4 on
                entry = Coordinator(
                    key="g", node_id=1, host="127.0.0.1", port=self.port, error_code=code
                )
                return FindCoordinatorResponse(coordinators=[entry])
            return FindCoordinatorResponse(
                error_code=code, node_id=1, host="127.0.0.1", port=self.port
            )
        assert isinstance(request, MetadataRequest)
        self.metadata_requests += 1
        topics = []
        if self.topic_after is not None and self.metadata_requests > self.topic_after:
            partition = MetadataResponsePartition(
                partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1]
            )
            topics = [MetadataResponseTopic(name="t", partitions=[partition])]
        return MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=self.port)],
            cluster_id="fake",
            controller_id=1,
            topics=topics,
        )


def test_coordinator_errors_come_from_the_one_error_table() -> None:
    assert COORDINATOR_ERRORS is errors.COORDINATOR_ERRORS


async def test_coordinator_lookup_retries_coordinator_errors_then_caches() -> None:
    script = ScriptedBroker(
        [errors.CoordinatorNotAvailableError.code, errors.CoordinatorLoadInProgressError.code]
    )
    async with FakeBroker(script) as broker:
        script.port = broker.port
        async with Cluster(f"127.0.0.1:{broker.port}", CONFIG, retry_backoff_ms=20) as cluster:
            found = await cluster.coordinator("g")
            assert (found.node_id, found.port) == (1, broker.port)
            assert len(script.lookups) == 3
            assert await cluster.coordinator("g") is found  # cached: no fourth lookup
            assert len(script.lookups) == 3


async def test_coordinator_lookup_gives_up_with_the_last_error_at_its_deadline() -> None:
    script = ScriptedBroker([errors.NotCoordinatorError.code] * 1000)
    async with FakeBroker(script) as broker:
        script.port = broker.port
        async with Cluster(f"127.0.0.1:{broker.port}", CONFIG, retry_backoff_ms=20) as cluster:
            started = time.monotonic()
            with pytest.raises(errors.NotCoordinatorError):
                await cluster.coordinator("g", timeout_ms=300)
            assert time.monotonic() - started < 1.5
            assert len(script.lookups) >= 2  # retried before giving up


async def test_a_fatal_coordinator_error_is_not_retried() -> None:
    script = ScriptedBroker([errors.GroupAuthorizationFailedError.code])
    async with FakeBroker(script) as broker:
        script.port = broker.port
        async with Cluster(f"127.0.0.1:{broker.port}", CONFIG, retry_backoff_ms=20) as cluster:
            with pytest.raises(errors.GroupAuthorizationFailedError):
                await cluster.coordinator("g")
            assert len(script.lookups) == 1


async def test_wait_for_topic_refreshes_until_the_topic_shows() -> None:
    script = ScriptedBroker([], topic_after=3)
    async with FakeBroker(script) as broker:
        script.port = broker.port
        async with Cluster(f"127.0.0.1:{broker.port}", CONFIG, retry_backoff_ms=20) as cluster:
            info = await cluster.wait_for_topic("t", timeout_ms=3000)
            assert info.partition_ids == [0]
            assert script.metadata_requests == 4


async def test_wait_for_topic_gives_up_as_unknown_topic() -> None:
    script = ScriptedBroker([], topic_after=None)
    async with FakeBroker(script) as broker:
        script.port = broker.port
        async with Cluster(f"127.0.0.1:{broker.port}", CONFIG, retry_backoff_ms=20) as cluster:
            with pytest.raises(errors.UnknownTopicError, match=r"'t' is not available after 0\.2s"):
                await cluster.wait_for_topic("t", timeout_ms=200)
            assert script.metadata_requests >= 3  # bootstrap, then several tries


async def test_a_failed_periodic_refresh_task_is_restarted_by_its_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = ScriptedBroker([])
    async with FakeBroker(script) as broker:
        script.port = broker.port
        async with Cluster(f"127.0.0.1:{broker.port}", CONFIG) as cluster:
            restarted: list[object] = []
            monkeypatch.setattr(
                cluster._tasks, "restart", lambda key, factory: restarted.append(key)
            )
            cluster._task_failed(cluster_module._PERIODIC_REFRESH, RuntimeError("boom"))
            cluster._task_failed(cluster_module._REFRESH_REQUEST, RuntimeError("boom"))
            assert restarted == [cluster_module._PERIODIC_REFRESH]


async def test_a_malformed_metadata_answer_moves_on_to_the_next_broker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As the Java client's NetworkClient: an answer it cannot read closes that connection and
    # the metadata request goes to another broker (the error table's retriable_in_background);
    # an error no broker can fix (here: authentication) ends the refresh at once.
    first, second = ScriptedBroker([]), ScriptedBroker([])
    async with FakeBroker(first) as one, FakeBroker(second) as two:
        first.port, second.port = one.port, two.port
        bootstrap = f"127.0.0.1:{one.port},127.0.0.1:{two.port}"
        async with Cluster(bootstrap, CONFIG, retry_backoff_ms=20) as cluster:
            real_get = cluster.pool.get
            failures: list[BaseException] = [errors.ProtocolError("garbled")]
            asked: list[int] = []

            async def get(host: str, port: int, **kwargs: Any) -> Any:
                asked.append(port)
                if failures:
                    raise failures.pop(0)
                return await real_get(host, port, **kwargs)

            monkeypatch.setattr(cluster.pool, "get", get)
            monkeypatch.setattr(cluster, "_known_candidates", lambda: [], raising=False)
            await cluster.refresh_metadata()
            assert len(asked) >= 2 and asked[0] != asked[1], asked
            failures.append(errors.AuthenticationError("bad password"))
            asked.clear()
            with pytest.raises(errors.AuthenticationError):
                await cluster.refresh_metadata()
            assert len(asked) == 1
