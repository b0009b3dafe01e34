"""Helpers of the Spark tests: unique names and topics on the test broker."""

from __future__ import annotations

import asyncio
import uuid

from aiokafkawire.admin import Admin, NewTopic

__all__ = ["add_partitions", "create_topic", "unique"]


def unique(prefix: str) -> str:
    """A topic (or query) name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(
    bootstrap: str, partitions: int, prefix: str = "spark", configs: dict[str, str] | None = None
) -> str:
    """A new topic with ``partitions`` partitions; returns its name."""
    name = unique(prefix)

    async def create() -> None:
        async with Admin(bootstrap_servers=bootstrap) as admin:
            results = await admin.create_topics(
                [
                    NewTopic(
                        name, num_partitions=partitions, replication_factor=1, configs=configs or {}
                    )
                ]
            )
            assert results[name].ok, results[name]

    asyncio.run(create())
    return name


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    """Grow ``topic`` to ``total`` partitions."""

    async def grow() -> None:
        async with Admin(bootstrap_servers=bootstrap) as admin:
            results = await admin.create_partitions({topic: total})
            assert results[topic].ok, results[topic]

    asyncio.run(grow())
