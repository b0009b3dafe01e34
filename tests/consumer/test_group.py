"""Consumer groups: interop with librdkafka members, coverage through membership changes,
cooperative rebalancing, static membership, poll timeouts."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import pytest
from _consumer_helpers import Broker, ConfluentMember, only_on, produce_values, wait_until

from aiokafkawire.consumer import Consumer, ConsumerRebalanceListener
from aiokafkawire.structs import TopicPartition

FAST_GROUP = {
    "session_timeout_ms": 4000,
    "heartbeat_interval_ms": 200,
    "auto_offset_reset": "earliest",
    "fetch_max_wait_ms": 100,
}


# librdkafka's mock completes a classic rebalance as soon as the leader's SyncGroup arrives; a
# follower whose SyncGroup comes after it gets REBALANCE_IN_PROGRESS (a real broker hands it its
# assignment), in a response with a null assignment that the protocol forbids.  With several
# aiokafkawire members in one event loop the leader often wins that race, so the group livelocks.
# Such tests skip the mock (even with a librdkafka member, which usually syncs first).
MOCK_SYNC_RACE = "mock answers late followers' SyncGroup with a malformed REBALANCE_IN_PROGRESS"


def _not_on_mock(broker: Broker) -> None:
    if broker.kind == "mock":
        pytest.skip(MOCK_SYNC_RACE)


# Seen in 2 of 3 full-suite runs on 24 Nov 2026, never on Apache Kafka: while a fourth member
# joins, Tansu refuses a settled member's commit with ILLEGAL_GENERATION, so what that member
# processed since its last commit is processed again by the partition's next owner. Apache
# Kafka, the reference, runs the test.
TANSU_COMMIT_RACE = "Tansu sometimes refuses a settled member's commit during a join"


# Where a restarted static member takes its old place without any rebalance. Not Tansu 0.6: it
# counts a member's session from its last Heartbeat only (a JoinGroup or SyncGroup of the
# restarted instance does not renew it) and holds each static JoinGroup and SyncGroup 3 s, so
# the replaced member's session can run out before the new instance's first heartbeat, and the
# group rebalances (BROKERS.md, "static members").
STATIC_REJOIN_WITHOUT_REBALANCE = {"kafka"}


def _group() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


@only_on("kafka")  # client logic: Tansu's slow joins made it 3-6x slower
async def test_mixed_group_with_librdkafka_splits_and_resplits(broker: Broker) -> None:
    # The librdkafka member usually syncs first, but not always (seen once in a full-suite run).
    _not_on_mock(broker)
    topic = broker.create_topic(6)
    group = _group()
    all_partitions = {TopicPartition(topic, p) for p in range(6)}
    rd_config = {"partition.assignment.strategy": "range"}
    theirs = ConfluentMember(broker.bootstrap_servers, group, topic, **rd_config).start()
    try:
        async with Consumer(
            topic,
            bootstrap_servers=broker.bootstrap_servers,
            group_id=group,
            partition_assignment_strategy=["range"],
            **FAST_GROUP,
        ) as ours:

            def split_evenly() -> bool:
                mine, other = ours.assignment(), theirs.assignment
                return len(mine) == 3 and len(other) == 3 and mine | other == all_partitions

            await wait_until(split_evenly, 30)
            assert not ours.assignment() & theirs.assignment
            # librdkafka leaves: we get everything.
            theirs.stop()
            await wait_until(lambda: ours.assignment() == all_partitions, 30)
            # It comes back: the partitions are split again.
            theirs = ConfluentMember(broker.bootstrap_servers, group, topic, **rd_config).start()
            await wait_until(split_evenly, 30)
            assert not ours.assignment() & theirs.assignment
        # We leave (LeaveGroup on close): librdkafka gets everything.
        await wait_until(lambda: theirs.assignment == all_partitions, 30)
        assert theirs.error is None
    finally:
        theirs.stop()


class _CommitOnRevoke(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.consumer: Consumer | None = None
        self.revocations = 0

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revocations += 1
        assert self.consumer is not None
        offsets = {tp: await self.consumer.position(tp) for tp in revoked}
        await self.consumer.commit(offsets)


class _Member:
    """A group member consuming in a task; processing = recording (partition, offset)."""

    def __init__(self, name: str, bootstrap: str, topic: str, group: str, **options: Any):
        self.name = name
        self.listener = _CommitOnRevoke()
        self.consumer = Consumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            max_poll_records=50,
            **FAST_GROUP,
            **options,
        )
        self.topic = topic
        self.processed: list[tuple[int, int]] = []
        self.commits = True
        self.last_commit: dict[int, int] = {}
        self.task: asyncio.Task[None] | None = None

    async def start(self, listen: bool = True) -> None:
        await self.consumer.start()
        self.listener.consumer = self.consumer
        self.consumer.subscribe([self.topic], listener=self.listener if listen else None)
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=100)
            for tp, records in batches.items():
                self.processed.extend((tp.partition, r.offset) for r in records)
            if batches and self.commits:
                offsets = {tp: records[-1].offset + 1 for tp, records in batches.items()}
                await self.consumer.commit(offsets)
                for tp, offset in offsets.items():
                    self.last_commit[tp.partition] = offset

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
            assert self.task.cancelled() or self.task.exception() is None, self.task
        await self.consumer.close()


async def test_group_of_three_with_leave_and_join_processes_everything(broker: Broker) -> None:
    """6 partitions, 6,000 records (the issue's 60,000 scaled down: longer runs on the shared
    2-core CI machine let member evictions under load make the strict duplicate check flaky)."""
    _not_on_mock(broker)
    if broker.kind == "tansu":
        pytest.skip(TANSU_COMMIT_RACE)
    total = 6000
    topic = broker.create_topic(6)
    group = _group()
    produce_values(broker.bootstrap_servers, topic, 6, total)
    members = [_Member(n, broker.bootstrap_servers, topic, group) for n in "abc"]
    for member in members:
        await member.start(listen=member.name != "a")
    joiner = _Member("d", broker.bootstrap_servers, topic, group)
    try:
        leaver = members[0]
        await wait_until(
            lambda: len(leaver.processed) >= 300 or not leaver.consumer.assignment(), 30
        )
        # The leaver stops committing, processes a little more, then closes without committing.
        leaver.commits = False
        count = len(leaver.processed)
        await wait_until(lambda: len(leaver.processed) > count or len(_union(members)) >= total, 20)
        await leaver.stop()
        await joiner.start()
        everyone = [*members, joiner]
        await wait_until(lambda: len(_union(everyone)) >= total, 40)
    finally:
        for member in [*members[1:], joiner]:
            await member.stop()
    seen = _union(everyone)
    assert seen == {(i % 6, i // 6) for i in range(total)}
    counts: dict[tuple[int, int], int] = {}
    for member in everyone:
        for item in member.processed:
            counts[item] = counts.get(item, 0) + 1
    duplicates = {item for item, n in counts.items() if n > 1}
    for partition, offset in duplicates:
        # Only what the leaver processed after its last commit may be seen twice.
        assert (partition, offset) in set(leaver.processed)
        assert offset >= leaver.last_commit.get(partition, 0), (partition, offset)


def _union(members: list[_Member]) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    for member in members:
        out.update(member.processed)
    return out


class _Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.revoked: list[set[TopicPartition]] = []
        self.assigned: list[set[TopicPartition]] = []
        self.lost: list[set[TopicPartition]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked.append(set(revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.assigned.append(set(assigned))

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.lost.append(set(lost))


@only_on("kafka")  # client logic: Tansu's slow joins made it 3-6x slower
async def test_cooperative_sticky_keeps_consuming_partitions_that_do_not_move(
    broker: Broker,
) -> None:
    _not_on_mock(broker)
    topic = broker.create_topic(6)
    group = _group()
    options = dict(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        partition_assignment_strategy=["cooperative-sticky"],
        enable_auto_commit=False,
        **FAST_GROUP,
    )
    first_listener = _Recorder()
    async with Consumer(**options) as first:
        first.subscribe([topic], listener=first_listener)
        await first.wait_for_assignment(timeout=20)
        await wait_until(lambda: len(first.assignment()) == 6, 20)
        assert first.state == "stable"
        received: list[tuple[int, int]] = []
        stop = asyncio.Event()

        async def consume() -> None:
            while not stop.is_set():
                for tp, records in (await first.getmany(timeout_ms=50)).items():
                    received.extend((tp.partition, r.offset) for r in records)

        task = asyncio.create_task(consume())
        try:
            async with Consumer(**options) as second:
                second.subscribe([topic])
                await wait_until(lambda: len(second.assignment()) == 3, 30)
                await wait_until(lambda: len(first.assignment()) == 3, 10)
                kept = first.assignment()
                # Only the partitions that moved were revoked, never the ones kept.
                assert first_listener.revoked == [second.assignment()]
                assert not kept & second.assignment()
                assert not first_listener.lost
                # The kept partitions were consumed throughout: new records arrive at once.
                produce_values(broker.bootstrap_servers, topic, 6, 60)
                kept_ids = {tp.partition for tp in kept}
                await wait_until(lambda: sum(1 for p, _ in received if p in kept_ids) >= 30, 20)
        finally:
            stop.set()
            await task


async def test_static_member_restart_gets_same_partitions_without_rebalance(
    broker: Broker,
) -> None:
    _not_on_mock(broker)
    topic = broker.create_topic(4)
    group = _group()
    options = dict(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        partition_assignment_strategy=["range"],
        **{**FAST_GROUP, "session_timeout_ms": 12_000},
    )
    other_listener = _Recorder()
    async with Consumer(group_instance_id="static-b", **options) as other:
        other.subscribe([topic], listener=other_listener)
        first = Consumer(group_instance_id="static-a", **options)
        await first.start()
        try:
            first.subscribe([topic])
            await wait_until(
                lambda: len(first.assignment()) == 2 and len(other.assignment()) == 2, 30
            )
            before, others = first.assignment(), other.assignment()
            rebalances = (len(other_listener.revoked), len(other_listener.assigned))
        finally:
            await first.close()  # static: no LeaveGroup
        async with Consumer(group_instance_id="static-a", **options) as again:
            again.subscribe([topic])
            await again.wait_for_assignment(timeout=45)  # Tansu: 6-9 s, more under load
            assert again.assignment() == before
            if broker.kind in STATIC_REJOIN_WITHOUT_REBALANCE:
                # Stay a moment: the other member saw no rebalance at all.
                await asyncio.sleep(1.0)
                assert (len(other_listener.revoked), len(other_listener.assigned)) == rebalances
                assert other.state == "stable"
                assert other.assignment() == others
            else:
                # Tansu may expire the replaced member's session meanwhile and rebalance: the
                # static members still end up with the partitions they had (same member ids).
                await wait_until(
                    lambda: other.assignment() == others and again.assignment() == before, 45
                )


@only_on("kafka")  # client logic: Tansu's slow joins made it 3-6x slower
async def test_poll_timeout_leaves_and_rejoins(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    _not_on_mock(broker)
    topic = broker.create_topic(2)
    group = _group()
    options = dict(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        partition_assignment_strategy=["range"],
        **FAST_GROUP,
    )
    listener = _Recorder()
    async with Consumer(max_poll_interval_ms=1500, **options) as slow, Consumer(**options) as busy:
        slow.subscribe([topic], listener=listener)
        busy.subscribe([topic])

        async def poll_busy() -> None:
            while True:
                await busy.getmany(timeout_ms=100)

        poller = asyncio.create_task(poll_busy())
        try:
            start = time.monotonic()
            while not (len(slow.assignment()) == 1 and len(busy.assignment()) == 1):
                assert time.monotonic() - start < 30, "the group did not settle"
                await slow.getmany(timeout_ms=100)
            with caplog.at_level(logging.WARNING, logger="aiokafkawire.consumer.group"):
                # The slow consumer stops polling: it leaves, the busy one takes over.
                await wait_until(lambda: len(busy.assignment()) == 2, 30)
            assert any("max_poll_interval_ms" in r.getMessage() for r in caplog.records)
            assert slow.state == "unjoined"
            # Back to polling: partitions lost, then it rejoins and gets its share again.
            await slow.getmany(timeout_ms=100)
            assert not slow.assignment() or listener.revoked
            start = time.monotonic()
            while len(slow.assignment()) != 1 and time.monotonic() - start < 30:
                await slow.getmany(timeout_ms=100)
            assert len(slow.assignment()) == 1
            # Given up without a clean revocation (lost), unless a rebalance revoked it first.
            assert listener.lost or listener.revoked
        finally:
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
