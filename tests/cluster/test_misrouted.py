"""Misrouted connections (KIP-1242) against Apache Kafka 4.4.

ApiVersions v5 carries the cluster id and node id the metadata promised for an address; a
broker that is another cluster's, or another node, refuses it (REBOOTSTRAP_REQUIRED).  The
client then closes the connection with :class:`~aiokafkawire.errors.MisroutedConnectionError`,
never uses it, and refreshes its metadata from the bootstrap addresses (a rebootstrap).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.cluster.metadata import BrokerInfo
from aiokafkawire.net.connection import BrokerConnection
from aiokafkawire.protocol.messages import ApiVersionsRequest, MetadataRequest
from aiokafkawire.testing import KafkaCluster

# A second Apache Kafka cluster may start in the first test (slow on a loaded machine).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def other_cluster(secured_cluster: KafkaCluster) -> KafkaCluster:
    """A second one-broker Apache Kafka 4.x cluster: its node 1 is not the first one's.

    The session's broker with an authorizer (``tests/conftest.py``), already running for the
    admin and CLI tests: its PLAINTEXT listener is what the client reaches by mistake here.
    """
    return secured_cluster


def _point_node_at(cluster: Cluster, node_id: int, host: str, port: int) -> None:
    """Make the client's metadata say that ``node_id`` is at ``host:port`` (a stale view)."""
    brokers = dict(cluster.metadata.brokers)
    brokers[node_id] = BrokerInfo(node_id, host, port)
    cluster.metadata = dataclasses.replace(cluster.metadata, brokers=brokers)
    cached = cluster.pool.cached(host, port)
    if cached is not None:
        cluster.pool.discard(cached)


def _watch_api_versions(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every ApiVersions request the client sends while the test runs."""
    sent: list[Any] = []
    original = BrokerConnection.send

    async def send(self: BrokerConnection, request: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(request, ApiVersionsRequest):
            sent.append(request)
        return await original(self, request, *args, **kwargs)

    monkeypatch.setattr(BrokerConnection, "send", send)
    return sent


async def test_a_node_address_that_leads_to_another_cluster_is_refused(
    kafka_cluster, other_cluster: KafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = other_cluster
    assert other.cluster_id != kafka_cluster.cluster_id
    other_host, other_port = other.address(1)
    sent = _watch_api_versions(monkeypatch)
    async with Cluster(kafka_cluster.bootstrap_servers) as cluster:
        assert cluster.metadata.cluster_id == kafka_cluster.cluster_id
        before = cluster.metadata.version
        # The address the metadata has for node 1 now leads to the other cluster's node 1.
        _point_node_at(cluster, 1, other_host, other_port)
        with pytest.raises(errors.MisroutedConnectionError) as caught:
            await cluster.connection(1)
        assert f"{other_host}:{other_port}" in str(caught.value)
        assert kafka_cluster.cluster_id in str(caught.value)
        assert isinstance(caught.value.__cause__, errors.RebootstrapRequiredError)
        assert any(r.cluster_id == kafka_cluster.cluster_id and r.node_id == 1 for r in sent), (
            "ApiVersions v5 did not carry the expected identity"
        )
        # Never used: nothing of the other cluster's is kept.
        assert cluster.pool.cached(other_host, other_port) is None
        # The metadata was refreshed (from the bootstrap address) and node 1 is right again.
        async with asyncio.timeout(30):
            while cluster.metadata.version == before or cluster.broker(1).port == other_port:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert (cluster.broker(1).host, cluster.broker(1).port) == kafka_cluster.address(1)
        # ... by a rebootstrap (the Java client's answer to a misrouted connection).
        assert cluster.recovery.rebootstraps == 1
        connection = await cluster.connection(1)
        response = await connection.send(MetadataRequest(topics=[]))
        assert response.cluster_id == kafka_cluster.cluster_id


async def test_a_node_address_that_leads_to_another_node_is_refused(kafka_cluster) -> None:
    host, port = kafka_cluster.address(1)
    async with Cluster(kafka_cluster.bootstrap_servers) as cluster:
        # Node 1 answers at this address; the metadata (stale) says node 7 is there too.
        _point_node_at(cluster, 7, host, port)
        with pytest.raises(errors.MisroutedConnectionError) as caught:
            await cluster.connection(7)
        assert "broker 7 of cluster" in str(caught.value)


async def test_the_identity_goes_only_to_known_nodes(kafka_cluster) -> None:
    """A bootstrap address (no node id) and a client without metadata send no identity, and
    a correct identity is accepted."""
    host, port = kafka_cluster.address(1)
    plain = await BrokerConnection.open(host, port)
    right = await BrokerConnection.open(host, port, node_id=1, cluster_id=kafka_cluster.cluster_id)
    try:
        assert not plain.closed and not right.closed
        assert right.versions.version_for(ApiVersionsRequest.API_KEY) >= 5
    finally:
        plain.close()
        right.close()
    with pytest.raises(errors.MisroutedConnectionError):
        await BrokerConnection.open(host, port, node_id=1, cluster_id="AAAAAAAAAAAAAAAAAAAAAA")
