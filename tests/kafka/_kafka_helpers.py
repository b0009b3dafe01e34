"""Helpers for the Apache Kafka tests: topics, producing and reading with confluent-kafka."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from aiokafkawire import Admin, NewTopic
from aiokafkawire.consumer import Consumer, ConsumerRecord
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing.pytest_plugin import TEST_BROKERS_ENV_VAR, enabled_broker_kinds

ck = pytest.importorskip("confluent_kafka")


def requires(kind: str) -> pytest.MarkDecorator:
    """Skip the module unless broker ``kind`` ("kafka" or "kafka39") is enabled."""
    return pytest.mark.skipif(
        kind not in enabled_broker_kinds(), reason=f"{kind} not in ${TEST_BROKERS_ENV_VAR}"
    )


def unique(prefix: str) -> str:
    """A topic, group or transactional id no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def create_topic(
    bootstrap: str,
    prefix: str,
    partitions: int = 1,
    configs: Mapping[str, str] | None = None,
) -> str:
    """A fresh topic with ``partitions`` partitions and topic ``configs``."""
    topic = unique(prefix)
    async with Admin(bootstrap_servers=bootstrap) as admin:
        created = await admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, configs=dict(configs or {}))]
        )
        assert created[topic].error is None, created[topic].error
    return topic


def read_with_librdkafka(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    *,
    isolation_level: str = "read_committed",
    expected: int | None = None,
    idle_s: float = 3.0,
    timeout_s: float = 30.0,
) -> list[Any]:
    """Every message confluent-kafka reads from the start of ``topic``: until ``expected``
    arrived, or ``idle_s`` of silence after the first message (bounded by ``timeout_s``; a
    loaded machine can take seconds to the first one); blocking."""
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("rd-reader"),
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
            "enable.partition.eof": False,
        }
    )
    try:
        consumer.assign(
            [ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)]
        )
        messages: list[Any] = []
        deadline = time.monotonic() + timeout_s
        last: float | None = None
        while time.monotonic() < deadline:
            if expected is not None and len(messages) >= expected:
                break
            if last is not None and time.monotonic() - last >= idle_s:
                break
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert not message.error(), message.error()
            messages.append(message)
            last = time.monotonic()
        return messages
    finally:
        consumer.close()


async def read_all(
    bootstrap: str,
    partitions: list[TopicPartition],
    *,
    expected: int | None = None,
    idle_s: float = 2.0,
    timeout_s: float = 30.0,
    **config: Any,
) -> list[ConsumerRecord]:
    """Every record our consumer reads from the beginning of ``partitions``: until ``expected``
    arrived, or ``idle_s`` without a record after the first (bounded by ``timeout_s``)."""
    records: list[ConsumerRecord] = []
    async with Consumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=100, **config) as consumer:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        deadline = time.monotonic() + timeout_s
        last: float | None = None
        while time.monotonic() < deadline:
            if expected is not None and len(records) >= expected:
                break
            if last is not None and time.monotonic() - last >= idle_s:
                break
            batch = await consumer.getmany(timeout_ms=200)
            for part in batch.values():
                records.extend(part)
                last = time.monotonic()
    return records


async def eventually(
    predicate: Callable[[], bool],
    timeout: float = 30.0,
    what: str = "",
    state: Callable[[], object] | None = None,
) -> None:
    """Wait (bounded) for ``predicate``; fails the test on timeout, showing ``state()``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            shown = f"; state: {state()!r}" if state is not None else ""
            raise AssertionError(f"timed out waiting for {what or predicate}{shown}")
        await asyncio.sleep(0.05)
