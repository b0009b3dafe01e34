"""A scripted broker answering Metadata, and a ``Cluster`` bootstrapped from it (cluster tests)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fake_broker import FakeBroker

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.net.config import ConnectionConfig
from aiokafkawire.protocol.messages import MetadataRequest, MetadataResponse
from aiokafkawire.protocol.messages.metadata import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

# Far longer than any wait of these tests: a request timing out would show as a wait this long.
CONFIG = ConnectionConfig(connect_timeout_ms=5000, request_timeout_ms=5000)


class MetadataScript:
    """Answers Metadata for every topic asked about (one partition each), as scripted: each
    answer after ``delay_s``; the next ``fail_next`` answers carry a top-level error; topics in
    ``unknown`` are answered UNKNOWN_TOPIC_OR_PARTITION."""

    def __init__(self) -> None:
        self.port = 0
        self.asked: list[list[str]] = []  # the topics of each Metadata request
        self.delay_s = 0.0
        self.fail_next = 0
        self.unknown: set[str] = set()
        self.arrived = asyncio.Event()  # set at each Metadata request, before its delay

    async def __call__(self, header: Any, request: Any) -> Any:
        assert isinstance(request, MetadataRequest)
        names = [t.name for t in request.topics or []]
        self.asked.append(names)
        self.arrived.set()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        code = 0
        if self.fail_next:
            self.fail_next -= 1
            code = errors.ClusterAuthorizationFailedError.code
        partition = MetadataResponsePartition(
            partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1]
        )
        return MetadataResponse(
            error_code=code,
            brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=self.port)],
            cluster_id="fake",
            controller_id=1,
            topics=[
                MetadataResponseTopic(name=n, error_code=errors.UnknownTopicOrPartitionError.code)
                if n in self.unknown
                else MetadataResponseTopic(name=n, partitions=[partition])
                for n in names
            ],
        )


@contextlib.asynccontextmanager
async def scripted_cluster(
    retry_backoff_ms: int,
) -> AsyncIterator[tuple[MetadataScript, Cluster]]:
    """A ``Cluster`` with ``retry_backoff_ms``, bootstrapped from a fresh ``MetadataScript``."""
    script = MetadataScript()
    async with FakeBroker(script) as broker:
        script.port = broker.port
        servers = f"127.0.0.1:{broker.port}"
        async with Cluster(servers, CONFIG, retry_backoff_ms=retry_backoff_ms) as cluster:
            yield script, cluster
