"""Consumer groups served by Apache Kafka's group coordinator: classic groups of three with each
assignor, checked through DescribeGroups; KIP-848 (``group_protocol="consumer"``) groups, alone
and mixed with librdkafka members, checked through ConsumerGroupDescribe."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _consumer_helpers import ConfluentMember, produce_values
from _kafka_helpers import create_topic, eventually, requires, unique

from aiokafkawire import Admin
from aiokafkawire.consumer import Consumer
from aiokafkawire.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster

pytestmark = requires("kafka")

CLASSIC = {
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 300,
    "auto_offset_reset": "earliest",
    "fetch_max_wait_ms": 100,
    "enable_auto_commit": False,
}


class _Member:
    """One of our consumers, consuming in a task; records what it read."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.read: list[tuple[str, int, int]] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            for tp, records in (await self.consumer.getmany(timeout_ms=100)).items():
                self.read.extend((tp.topic, tp.partition, r.offset) for r in records)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


@contextlib.asynccontextmanager
async def _group(
    bootstrap: str, topics: list[str], count: int, **options: Any
) -> AsyncIterator[list[_Member]]:
    async with contextlib.AsyncExitStack() as stack:
        members = []
        for _ in range(count):
            consumer = await stack.enter_async_context(
                Consumer(*topics, bootstrap_servers=bootstrap, **options)
            )
            member = _Member(consumer)
            member.start()
            stack.push_async_callback(member.stop)
            members.append(member)
        yield members


def _distinct_read(members: list[_Member]) -> int:
    # Without commits, a partition that moves during the first rebalances is read again from the
    # start by its new owner: count each record once.
    return len({record for member in members for record in member.read})


def _assignments(members: list[_Member]) -> list[set[TopicPartition]]:
    return [m.consumer.assignment() for m in members]


def _is_partition_of(
    assignments: list[set[TopicPartition]], everything: set[TopicPartition]
) -> bool:
    union: set[TopicPartition] = set()
    for part in assignments:
        if part & union:
            return False
        union |= part
    return union == everything


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])
async def test_classic_group_of_three(kafka_cluster: KafkaCluster, strategy: str) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    # Two topics of 3 partitions: range assigns per topic (each member one partition of each),
    # round robin over the sorted union (also 2 each, but interleaved).
    topics = [await create_topic(bootstrap, "grp", 3) for _ in range(2)]
    for topic in topics:
        await asyncio.to_thread(produce_values, bootstrap, topic, 3, 30)
    everything = {TopicPartition(t, p) for t in topics for p in range(3)}
    group = unique(f"g-{strategy}")
    async with _group(
        bootstrap,
        topics,
        3,
        group_id=group,
        partition_assignment_strategy=[strategy],
        **CLASSIC,
    ) as members:
        await eventually(
            lambda: (
                _is_partition_of(_assignments(members), everything)
                and all(len(a) == 2 for a in _assignments(members))
            ),
            60,
            "an even assignment",
        )
        if strategy == "range":
            for assigned in _assignments(members):
                assert {tp.topic for tp in assigned} == set(topics)
                assert len({tp.partition for tp in assigned}) == 1  # the same range in each
        await eventually(lambda: _distinct_read(members) == 60, 30, "every record")
        read = [r for m in members for r in m.read]
        assert len(set(read)) == 60
        async with Admin(bootstrap_servers=bootstrap) as admin:
            described = (await admin.describe_groups([group]))[group]
        assert described.error is None
        assert (described.state, described.protocol_type, described.protocol) == (
            "Stable",
            "consumer",
            strategy,
        )
        assert len(described.members) == 3
        by_member = {m.member_id: set(m.assigned_partitions) for m in described.members}
        ours = {m.consumer._parts.membership.member_id: m.consumer.assignment() for m in members}  # type: ignore[union-attr]
        assert by_member == ours
        before = _assignments(members)
        leaving = members.pop()
        await leaving.stop()
        await leaving.consumer.close()
        # Range splits each 3-partition topic 2 + 1 between two members: sizes 4 and 2.
        sizes = [2, 4] if strategy == "range" else [3, 3]
        await eventually(
            lambda: (
                _is_partition_of(_assignments(members), everything)
                and sorted(len(a) for a in _assignments(members)) == sizes
            ),
            60,
            "the leaver's partitions handed over",
            lambda: [(m.consumer.state, sorted(m.consumer.assignment())) for m in members],
        )
        if strategy in ("sticky", "cooperative-sticky"):
            for kept, now in zip(before, _assignments(members), strict=False):
                assert kept <= now  # sticky: survivors keep what they had


async def _describe_consumer_group(bootstrap: str, group: str) -> Any:
    async with Admin(bootstrap_servers=bootstrap) as admin:
        response = await admin.cluster.send_to_coordinator(
            group, ConsumerGroupDescribeRequest(group_ids=[group])
        )
    (described,) = response.groups
    assert described.error_code == 0, described.error_message
    return described


async def test_kip848_group_served_by_the_broker(kafka_cluster: KafkaCluster) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "kip848", 6)
    await asyncio.to_thread(produce_values, bootstrap, topic, 6, 120)
    everything = {TopicPartition(topic, p) for p in range(6)}
    group = unique("g-848")
    options = {
        "group_id": group,
        "group_protocol": "consumer",
        "auto_offset_reset": "earliest",
        "fetch_max_wait_ms": 100,
    }
    async with _group(bootstrap, [topic], 3, **options) as members:
        await eventually(
            lambda: (
                _is_partition_of(_assignments(members), everything)
                and all(len(a) == 2 for a in _assignments(members))
            ),
            60,
            "the broker's even assignment",
        )
        await eventually(lambda: _distinct_read(members) == 120, 30, "every record")
        described = await _describe_consumer_group(bootstrap, group)
        assert described.group_state == "Stable"
        assert described.assignor_name in ("uniform", "range")
        assert len(described.members) == 3
        reported = {
            m.member_id: {
                TopicPartition(t.topic_name, p)
                for t in m.assignment.topic_partitions
                for p in t.partitions
            }
            for m in described.members
        }
        assert sorted(map(sorted, reported.values())) == sorted(map(sorted, _assignments(members)))
        assert all(m.subscribed_topic_names == [topic] for m in described.members)
        leaving = members.pop()
        await leaving.stop()
        await leaving.consumer.close()
        await eventually(
            lambda: (
                _is_partition_of(_assignments(members), everything)
                and all(len(a) == 3 for a in _assignments(members))
            ),
            60,
            "the leaver's partitions handed over",
            lambda: [(m.consumer.state, sorted(m.consumer.assignment())) for m in members],
        )
        # Committed offsets of the KIP-848 group (auto-commit) are kept by the broker.
        for member in members:
            await member.consumer.commit()
        async with Admin(bootstrap_servers=bootstrap) as admin:
            committed = await admin.list_group_offsets(group, sorted(everything))
        assert sum(c.offset for c in committed.values() if c.offset >= 0) >= 80


async def test_kip848_group_mixed_with_librdkafka_members(kafka_cluster: KafkaCluster) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "kip848-mixed", 4)
    await asyncio.to_thread(produce_values, bootstrap, topic, 4, 80)
    everything = {TopicPartition(topic, p) for p in range(4)}
    group = unique("g-848-mixed")
    theirs = ConfluentMember(bootstrap, group, topic, **{"group.protocol": "consumer"})
    # librdkafka refuses the classic-only settings under the consumer protocol.
    theirs._config.pop("session.timeout.ms")
    theirs._config.pop("heartbeat.interval.ms")
    theirs.start()
    try:
        async with _group(
            bootstrap,
            [topic],
            1,
            group_id=group,
            group_protocol="consumer",
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
        ) as (ours,):
            await eventually(
                lambda: (
                    _is_partition_of([ours.consumer.assignment(), theirs.assignment], everything)
                    and len(ours.consumer.assignment()) == 2
                ),
                60,
                "the partitions split between us and librdkafka",
            )

            def read() -> set[tuple[int, int]]:  # a moved partition may be read twice
                return {(p, o) for _, p, o in ours.read} | set(theirs.records)

            await eventually(lambda: len(read()) == 80, 30, "every record", read)
            described = await _describe_consumer_group(bootstrap, group)
            assert len(described.members) == 2
            assert {m.client_id.startswith("rdkafka") for m in described.members} == {True, False}
    finally:
        theirs.stop()
        assert theirs.error is None, theirs.error
