"""Metadata recovery (KIP-899, KIP-1102, KIP-1242) against scripted brokers.

A bootstrap broker ``seed`` names a ``known`` broker in its metadata; the tests then make the
known broker fail in each way that calls for a rebootstrap and check that the client closes its
connections and asks the bootstrap address again on a new connection (a new connection is what
resolves the bootstrap name again), or, with ``metadata_recovery_strategy="none"``, that it never
goes back to the bootstrap address.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_broker import CLOSE, FakeBroker, api_versions_response

from aiokafkawire import errors
from aiokafkawire.client_config import CommonConfig
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.protocol.messages import ApiVersionsRequest, MetadataRequest, MetadataResponse
from aiokafkawire.protocol.messages.metadata import MetadataResponseBroker

CONFIG = ConnectionConfig(connect_timeout_ms=2000, request_timeout_ms=2000)


def metadata(port: int, *, cluster_id: str = "fake", error_code: int = 0) -> MetadataResponse:
    return MetadataResponse(
        error_code=error_code,
        brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=port)],
        cluster_id=cluster_id,
        controller_id=1,
        topics=[],
    )


def metadata_requests(broker: FakeBroker) -> int:
    return sum(isinstance(request, MetadataRequest) for _, request in broker.requests)


class Pair:
    """``seed`` (the bootstrap address) says the cluster is ``known``; ``known`` answers with
    ``known_answer`` (itself, by default)."""

    def __init__(self) -> None:
        self.known_answer: Any = None
        self.seed = FakeBroker(self._seed)
        self.known = FakeBroker(self._known)

    async def _seed(self, header: Any, request: Any) -> Any:
        return metadata(self.known.port)

    async def _known(self, header: Any, request: Any) -> Any:
        if self.known_answer is None:
            return metadata(self.known.port)
        return self.known_answer

    async def __aenter__(self) -> Pair:
        await self.seed.__aenter__()
        await self.known.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.known.close()
        await self.seed.close()


async def test_rebootstrap_required_from_a_known_broker_starts_over_from_the_bootstrap() -> None:
    async with Pair() as pair:
        async with Cluster(f"127.0.0.1:{pair.seed.port}", CONFIG) as cluster:
            assert [b.port for b in cluster.metadata.brokers.values()] == [pair.known.port]
            assert pair.seed.connections == 1
            pair.known_answer = metadata(0, error_code=errors.RebootstrapRequiredError.code)
            await cluster.refresh_metadata()
            assert cluster.recovery.rebootstraps == 1
            # The known broker was asked once more; then the bootstrap address, on a new
            # connection (the old one was closed with every other).
            assert metadata_requests(pair.known) == 1
            assert metadata_requests(pair.seed) == 2
            assert pair.seed.connections == 2
            pair.known_answer = None
            await cluster.refresh_metadata()
            assert metadata_requests(pair.known) == 2  # the known brokers are asked again
            assert cluster.recovery.rebootstraps == 1


async def test_no_known_broker_reachable_starts_over_from_the_bootstrap() -> None:
    async with Pair() as pair:
        async with Cluster(f"127.0.0.1:{pair.seed.port}", CONFIG, retry_backoff_ms=10) as cluster:
            pair.known_answer = CLOSE
            pair.known.drop_clients()
            await pair.known.close()
            metadata_now = await cluster.refresh_metadata()
            assert metadata_now.cluster_id == "fake"
            assert cluster.recovery.rebootstraps == 1
            assert metadata_requests(pair.seed) == 2
            assert pair.seed.connections == 2


async def test_with_strategy_none_the_bootstrap_serves_the_first_metadata_only() -> None:
    async with Pair() as pair:
        cluster = Cluster(
            f"127.0.0.1:{pair.seed.port}",
            CONFIG,
            retry_backoff_ms=10,
            metadata_recovery_strategy="none",
        )
        async with cluster:
            pair.known.drop_clients()
            await pair.known.close()
            with pytest.raises(errors.NoBrokersAvailableError) as caught:
                await cluster.refresh_metadata()
            assert f"127.0.0.1:{pair.known.port}" in str(caught.value)
            assert metadata_requests(pair.seed) == 1
            assert cluster.recovery.rebootstraps == 0


async def test_metadata_failing_for_the_trigger_time_starts_over_from_the_bootstrap() -> None:
    """A known broker that answers, but with an error, is given up after the trigger time."""
    async with Pair() as pair:
        cluster = Cluster(
            f"127.0.0.1:{pair.seed.port}",
            CONFIG,
            retry_backoff_ms=10,
            metadata_recovery_rebootstrap_trigger_ms=300,
        )
        async with cluster:
            pair.known_answer = metadata(0, error_code=errors.ClusterAuthorizationFailedError.code)
            with pytest.raises(errors.ClusterAuthorizationFailedError):
                await cluster.refresh_metadata()
            assert cluster.recovery.rebootstraps == 0  # not yet: the trigger time runs
            await asyncio.sleep(0.4)
            await cluster.refresh_metadata()
            assert cluster.recovery.rebootstraps == 1
            assert metadata_requests(pair.seed) == 2
            assert metadata_requests(pair.known) == 1  # not asked again once overdue


async def test_a_misrouted_connection_starts_over_from_the_bootstrap() -> None:
    """ApiVersions v5 to a known node carries the cluster id and node id; a broker that is
    not that node refuses (REBOOTSTRAP_REQUIRED): the connection is never used."""
    async with Pair() as pair:
        sent: list[Any] = []

        async def seed(header: Any, request: Any) -> Any:
            return metadata(pair.known.port, cluster_id="other")

        async def known(header: Any, request: Any) -> Any:
            if isinstance(request, ApiVersionsRequest):
                sent.append(request)
                answer = api_versions_response()
                if request.cluster_id is not None and request.cluster_id != "fake":
                    answer.error_code = errors.RebootstrapRequiredError.code
                return answer
            raise AssertionError(f"a misrouted connection was used: {request!r}")

        pair.seed.handler = seed
        pair.known.handler = known
        pair.known.custom_api_versions = True  # type: ignore[attr-defined]
        async with Cluster(f"127.0.0.1:{pair.seed.port}", CONFIG, retry_backoff_ms=10) as cluster:
            assert cluster.metadata.cluster_id == "other"
            with pytest.raises(errors.MisroutedConnectionError) as caught:
                await cluster.connection(1)
            assert "broker 1 of cluster other" in str(caught.value)
            assert (sent[-1].cluster_id, sent[-1].node_id) == ("other", 1)
            assert cluster.pool.cached("127.0.0.1", pair.known.port) is None
            await cluster.refresh_metadata()
            assert cluster.recovery.rebootstraps == 1
            assert metadata_requests(pair.seed) == 2
            assert pair.seed.connections == 2
            assert metadata_requests(pair.known) == 0


async def test_the_bootstrap_addresses_send_no_identity() -> None:
    async with Pair() as pair:
        async with Cluster(f"127.0.0.1:{pair.seed.port}", CONFIG) as cluster:
            await cluster.connection(1)
        to_seed = [r for _, r in pair.seed.requests if isinstance(r, ApiVersionsRequest)]
        to_known = [r for _, r in pair.known.requests if isinstance(r, ApiVersionsRequest)]
        assert [(r.cluster_id, r.node_id) for r in to_seed] == [(None, -1)]
        assert [(r.cluster_id, r.node_id) for r in to_known] == [("fake", 1)]


def test_the_options_are_validated() -> None:
    with pytest.raises(errors.ConfigError, match="metadata_recovery_strategy"):
        CommonConfig(metadata_recovery_strategy="sometimes")
    with pytest.raises(errors.ConfigError, match="metadata_recovery_rebootstrap_trigger_ms"):
        CommonConfig(metadata_recovery_rebootstrap_trigger_ms=0)
    with pytest.raises(errors.ConfigTypeError, match="metadata_recovery_strategy"):
        CommonConfig(metadata_recovery_strategy=None)  # type: ignore[arg-type]
    config = CommonConfig(metadata_recovery_strategy="none")
    cluster = config.build_cluster()
    assert not cluster.recovery.enabled
    assert CommonConfig().build_cluster().recovery.enabled  # rebootstrap by default
    assert CommonConfig().build_cluster().recovery.trigger == 300.0


async def test_no_identity_to_a_cluster_whose_broker_lacks_api_versions_v5() -> None:
    """KIP-1242 needs ApiVersions v5; a broker without it may not parse the fields (Tansu 0.6
    drops the connection), so a cluster that advertised less gets no identity."""
    async with Pair() as pair:
        pair.seed.versions = pair.known.versions = {ApiVersionsRequest.API_KEY: (0, 4)}
        async with Cluster(f"127.0.0.1:{pair.seed.port}", CONFIG) as cluster:
            assert cluster.pool.cluster_id is None
            await cluster.connection(1)
        to_known = [r for _, r in pair.known.requests if isinstance(r, ApiVersionsRequest)]
        assert to_known and all(r.cluster_id is None for r in to_known)
