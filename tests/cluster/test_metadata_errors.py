"""The Metadata response's top-level error code (v13+, KIP-1102), against scripted brokers."""

from __future__ import annotations

from typing import Any

import pytest
from fake_broker import FakeBroker

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.protocol.messages import MetadataResponse
from aiokafkawire.protocol.messages.metadata import MetadataResponseBroker


def metadata_answer(port: int, error_code: int = 0) -> MetadataResponse:
    return MetadataResponse(
        error_code=error_code,
        brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=port)],
        cluster_id="fake",
        controller_id=1,
        topics=[],
    )


async def test_rebootstrap_required_moves_on_to_the_next_bootstrap_address() -> None:
    async def refuses(header: Any, request: Any) -> Any:
        assert header.api_version == 13  # the newest version: the error exists from v13
        return metadata_answer(0, errors.RebootstrapRequiredError.code)

    async with FakeBroker(refuses) as first:

        async def answers(header: Any, request: Any) -> Any:
            return metadata_answer(second.port)

        async with FakeBroker(answers) as second:
            servers = f"127.0.0.1:{first.port},127.0.0.1:{second.port}"
            async with Cluster(servers, ConnectionConfig(connect_timeout_ms=2000)) as cluster:
                assert cluster.metadata.cluster_id == "fake"
                assert [b.port for b in cluster.metadata.brokers.values()] == [second.port]
            assert len(first.requests) == 2 and len(second.requests) == 2  # ApiVersions, Metadata


async def test_rebootstrap_required_from_every_broker_is_a_typed_error() -> None:
    async def refuses(header: Any, request: Any) -> Any:
        return metadata_answer(0, errors.RebootstrapRequiredError.code)

    async with FakeBroker(refuses) as broker:
        cluster = Cluster(f"127.0.0.1:{broker.port}", ConnectionConfig(connect_timeout_ms=2000))
        with pytest.raises(errors.NoBrokersAvailableError) as info:
            await cluster.start()
        await cluster.close()
        assert isinstance(info.value.__cause__, errors.RebootstrapRequiredError)


async def test_another_top_level_error_fails_the_request() -> None:
    async def refuses(header: Any, request: Any) -> Any:
        return metadata_answer(0, errors.ClusterAuthorizationFailedError.code)

    async with FakeBroker(refuses) as broker:
        cluster = Cluster(f"127.0.0.1:{broker.port}", ConnectionConfig(connect_timeout_ms=2000))
        with pytest.raises(errors.ClusterAuthorizationFailedError, match="metadata from"):
            await cluster.start()
        await cluster.close()
