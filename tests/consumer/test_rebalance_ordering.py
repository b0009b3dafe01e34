"""Rebalance ordering on Apache Kafka (issue 25), classic and KIP-848 groups.

The Java client's ConsumerRebalanceListener contract: ``onPartitionsAssigned`` runs after the
assignment and *before the consumer starts fetching* the new partitions, so a listener may seek
them; ``onPartitionsRevoked`` runs before the partitions are given up, and what it commits is
where the next owner starts. With coroutine listeners the member's own task calls the listener
while the user's task keeps polling (aiokafka gets this wrong: aio-libs/aiokafka#738), so the
partitions must be held meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

import pytest
from _consumer_helpers import produce_values, wait_until

from aiokafkawire import Admin, NewTopic, errors
from aiokafkawire.consumer import Consumer
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing.pytest_plugin import TEST_BROKERS_ENV_VAR, enabled_broker_kinds

pytestmark = pytest.mark.skipif(
    "kafka" not in enabled_broker_kinds(), reason=f"kafka not in ${TEST_BROKERS_ENV_VAR}"
)

PER_PARTITION = 1500
START_AT = 7  # where the first member's listener seeks each partition it is given


class _Member:
    """A consumer polling in its own task (as a user's loop), noting what it was handed."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.read: list[tuple[TopicPartition, int, float]] = []  # (tp, offset, when)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=50)
            now = time.monotonic()
            for tp, records in batches.items():
                self.read.extend((tp, r.offset, now) for r in records)
            await asyncio.sleep(0.02)  # slow enough that a rebalance finds work left

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class _SlowListener:
    """Awaits before seeking new partitions, and takes its time giving partitions up."""

    def __init__(self) -> None:
        self.consumer: Consumer | None = None
        self.revoking: list[tuple[set[TopicPartition], float, float]] = []
        self.assigned: list[set[TopicPartition]] = []
        self.first = True

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        assert self.consumer is not None
        self.assigned.append(set(assigned))
        if self.first:
            self.first = False
            # As a listener that looks positions up in a store of its own.
            await asyncio.sleep(1.0)
            for tp in assigned:
                self.consumer.seek(tp, START_AT)

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        began = time.monotonic()
        await asyncio.sleep(1.0)  # e.g. flushing state before the hand-over
        self.revoking.append((set(revoked), began, time.monotonic()))


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_listener_seeks_before_fetching_and_revocation_holds_partitions(
    kafka_cluster: KafkaCluster, protocol: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = f"order-{uuid.uuid4().hex[:10]}"
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    tps = {TopicPartition(topic, p) for p in range(2)}
    produce_values(bootstrap, topic, 2, 2 * PER_PARTITION)
    options: dict[str, Any] = dict(
        bootstrap_servers=bootstrap,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        group_protocol=protocol,
        auto_offset_reset="earliest",
        auto_commit_interval_ms=600_000,  # only the commit before a revocation counts here
        max_poll_records=5,
        fetch_max_wait_ms=100,
    )
    if protocol == "classic":
        options.update(session_timeout_ms=6000, heartbeat_interval_ms=300)
    listener = _SlowListener()
    async with Consumer(**options) as first:
        listener.consumer = first
        first.subscribe([topic], listener=listener)
        one = _Member(first)
        one.start()
        try:
            await wait_until(lambda: len(one.read) >= 50, 60)
            # Nothing was handed out before the listener's seek: the seek is where reading began.
            assert min(offset for _, offset, _ in one.read) == START_AT
            async with Consumer(**options) as second:
                second.subscribe([topic])
                two = _Member(second)
                two.start()
                try:
                    await wait_until(
                        lambda: len(first.assignment()) == 1 and len(second.assignment()) == 1,
                        60,
                    )
                    # What was revoked is the new owner's to commit.
                    (gone,) = tps - first.assignment()
                    with pytest.raises(errors.CommitFailedError, match="not assigned"):
                        await first.commit({gone: 1})
                    await wait_until(
                        lambda: len(one.read) + len(two.read) >= 2 * (PER_PARTITION - START_AT),
                        60,
                    )
                finally:
                    await two.stop()
        finally:
            await one.stop()
    assert listener.revoking, "the first member gave nothing up"
    # While on_partitions_revoked ran, nothing of those partitions was handed out.
    for revoked, began, ended in listener.revoking:
        during = [(tp, o) for tp, o, when in one.read if tp in revoked and began <= when <= ended]
        assert not during, f"handed out while being revoked: {during[:5]}"
    # The commit before the revocation is where the second member began: every record from the
    # seek on is read exactly once by the group.
    for tp in tps:
        offsets = sorted(o for t, o, _ in one.read + two.read if t == tp)
        assert offsets == list(range(START_AT, PER_PARTITION)), (
            tp,
            len(offsets),
            len(set(offsets)),
        )
