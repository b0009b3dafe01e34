"""Helpers for the Apache Kafka tests: topics, producing and reading with confluent-kafka."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
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


# What librdkafka logs while a helper reads: enough to see connections, metadata, the offset
# lookup and every fetch, should a read come back short.
LIBRDKAFKA_DEBUG = "topic,metadata,fetch,broker,protocol"


class LibrdkafkaLog(logging.Handler):
    """A confluent-kafka ``logger`` keeping librdkafka's first lines, its last lines other than
    the steady fetch loop's (offset look-ups, metadata, errors) and the loop's last lines."""

    _FETCH_LOOP = ("Sent FetchRequest", "Received FetchResponse", "Fetch topic", "Fetch 1/")

    def __init__(self, head: int = 40, tail: int = 60, loop: int = 8) -> None:
        super().__init__(logging.DEBUG)
        self.head: list[str] = []
        self.tail: deque[str] = deque(maxlen=tail)
        self.loop: deque[str] = deque(maxlen=loop)
        self._head_size = head
        self.seen = 0
        # Not registered with ``logging``: one per consumer, gone with it.
        self.logger = logging.Logger(f"librdkafka-{id(self):x}", logging.DEBUG)
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        line = f"{time.strftime('%H:%M:%S')} {record.getMessage()}"
        self.seen += 1
        if len(self.head) < self._head_size:
            self.head.append(line)
        elif any(marker in line for marker in self._FETCH_LOOP):
            self.loop.append(line)
        else:
            self.tail.append(line)

    def render(self) -> str:
        kept = len(self.head) + len(self.tail) + len(self.loop)
        return "\n".join(
            [
                *self.head,
                f"  ... {self.seen - kept} of {self.seen} lines not kept; the last others:",
                *self.tail,
                "  the fetch loop's last lines:",
                *self.loop,
            ]
        )


def librdkafka_shortfall(
    consumer: Any, topic: str, partitions: int, got: int, wanted: int, log: LibrdkafkaLog
) -> str:
    """Why a librdkafka read came back short: each partition's log start and end offsets (as
    the broker answers now) and position, then librdkafka's debug log."""
    lines = [f"librdkafka read {got} messages of {topic}, {wanted} wanted"]
    deleted = False
    for partition in range(partitions):
        tp = ck.TopicPartition(topic, partition)
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            position = consumer.position([tp])[0].offset
        except ck.KafkaException as exc:
            lines.append(f"  p{partition}: offsets unavailable: {exc}")
            continue
        deleted = deleted or low > 0
        at = position if position >= 0 else "none (nothing read)"
        lines.append(f"  p{partition}: log start {low}, end {high}, position {at}")
    if deleted:
        lines.append(
            "  the log start moved past 0: records were deleted (DeleteRecords, or retention "
            "by record timestamp: KafkaCluster sets log.retention.ms=-1; a config= override "
            "or a topic's retention.ms brings it back)"
        )
    lines.append("librdkafka debug log:")
    lines.append(log.render())
    return "\n".join(lines)


def read_with_librdkafka(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    *,
    isolation_level: str = "read_committed",
    expected: int | None = None,
    at_least: int = 1,
    idle_s: float = 3.0,
    timeout_s: float = 30.0,
) -> list[Any]:
    """Every message confluent-kafka reads from the start of ``topic``: until ``expected``
    arrived, or ``idle_s`` of silence once ``at_least`` arrived (bounded by ``timeout_s``; a
    loaded machine can take seconds to the first one); blocking.

    Fewer than ``at_least`` (or ``expected``) messages fail with an AssertionError that shows
    the partitions' offsets and librdkafka's debug log.
    """
    log = LibrdkafkaLog()
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("rd-reader"),
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
            "enable.partition.eof": False,
            "debug": LIBRDKAFKA_DEBUG,
            "logger": log.logger,
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
            if len(messages) >= at_least and last is not None and time.monotonic() - last >= idle_s:
                break
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert not message.error(), message.error()
            messages.append(message)
            last = time.monotonic()
        wanted = max(at_least, expected or 0)
        if len(messages) < wanted:
            raise AssertionError(
                librdkafka_shortfall(consumer, topic, partitions, len(messages), wanted, log)
            )
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
