"""Consumer API on a live broker: offsets lookups, resets, pause/resume, auto-commit, patterns."""

from __future__ import annotations

import time
import uuid

import pytest
from _consumer_helpers import Broker, consume_n, only_on, produce, produce_values, wait_until

from aiokafkawire import errors
from aiokafkawire.consumer import Consumer, OffsetAndMetadata
from aiokafkawire.structs import TopicPartition

BASE_TS = 1_700_000_000_000


async def test_offsets_lookups_and_seeks(broker: Broker) -> None:
    topic = broker.create_topic(1)
    tp = TopicPartition(topic, 0)
    for i in range(10):  # one batch each (Tansu miscounts batches with spread timestamps)
        produce(
            broker.bootstrap_servers,
            topic,
            [{"value": str(i).encode(), "timestamp": BASE_TS + 1000 * i}],
        )
    async with Consumer(bootstrap_servers=broker.bootstrap_servers) as consumer:
        assert await consumer.beginning_offsets([tp]) == {tp: 0}
        assert await consumer.end_offsets([tp]) == {tp: 10}
        if broker.kind not in ("mock", "tansu"):
            # The mock answers every timestamp lookup with -1, Tansu with offset 0.
            found = await consumer.offsets_for_times({tp: BASE_TS + 4500})
            assert found[tp] is not None and found[tp].offset == 5
            assert found[tp].timestamp == BASE_TS + 5000
            assert (await consumer.offsets_for_times({tp: BASE_TS + 10**6}))[tp] is None
        consumer.assign([tp])
        assert consumer.state == "manual"
        # auto_offset_reset defaults to latest.
        assert await consumer.position(tp) == 10
        await consumer.seek_to_beginning(tp)
        assert await consumer.position(tp) == 0
        consumer.seek(tp, 7)
        records = await consume_n(consumer, 3)
        assert [r.offset for r in records] == [7, 8, 9]
        assert consumer.highwater(tp) == 10
        await consumer.seek_to_end(tp)
        assert await consumer.position(tp) == 10
        with pytest.raises(errors.IllegalStateError):
            await consumer.commit()  # no group_id


async def test_out_of_range_reset_and_none_policy(broker: Broker) -> None:
    topic = broker.create_topic(1)
    tp = TopicPartition(topic, 0)
    produce_values(broker.bootstrap_servers, topic, 1, 5)
    # Tansu answers a fetch beyond the end with an empty long poll, not OFFSET_OUT_OF_RANGE.
    out_of_range = broker.kind != "tansu"
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest"
    ) as consumer:
        consumer.assign([tp])
        if out_of_range:
            consumer.seek(tp, 1000)  # beyond the end: reset to earliest
        records = await consume_n(consumer, 5)
        assert [r.offset for r in records] == list(range(5))
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="none"
    ) as consumer:
        consumer.assign([tp])
        with pytest.raises(errors.NoOffsetForPartitionError):
            for _ in range(50):
                await consumer.getmany(timeout_ms=100)
        if out_of_range:
            consumer.seek(tp, 1000)
            with pytest.raises(errors.OffsetOutOfRangeClientError):
                for _ in range(50):
                    await consumer.getmany(timeout_ms=100)
        consumer.seek(tp, 2)
        records = await consume_n(consumer, 3)
        assert [r.offset for r in records] == [2, 3, 4]


async def test_pause_resume_and_partition_filter(broker: Broker) -> None:
    topic = broker.create_topic(2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    produce_values(broker.bootstrap_servers, topic, 2, 40)
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    ) as consumer:
        consumer.assign([tp0, tp1])
        consumer.pause(tp1)
        assert consumer.paused() == {tp1}
        records = await consume_n(consumer, 20)
        assert {r.partition for r in records} == {0}
        assert not await consumer.getmany(timeout_ms=300)
        consumer.resume(tp1)
        only_one = await consumer.getmany(tp1, timeout_ms=5000)
        assert set(only_one) == {tp1}
        assert await consumer.position(tp0) == 20


async def test_group_commits_auto_commit_and_seek_to_committed(broker: Broker) -> None:
    topic = broker.create_topic(2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    tps = [TopicPartition(topic, p) for p in range(2)]
    produce_values(broker.bootstrap_servers, topic, 2, 40)
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        auto_offset_reset="earliest",
        auto_commit_interval_ms=200,
    ) as consumer:
        consumer.assign(tps)
        await consume_n(consumer, 40)
        # Auto-commit picks the positions up within an interval or two.
        deadline = time.monotonic() + 10
        while [await consumer.committed(tp) for tp in tps] != [20, 20]:
            assert time.monotonic() < deadline
            await consumer.getmany(timeout_ms=100)
        await consumer.commit({tps[0]: OffsetAndMetadata(5, "five"), tps[1]: 7})
        details = await consumer.committed_offsets(tps)
        assert details[tps[0]] is not None and details[tps[0]].offset == 5
        if broker.kind != "tansu":  # Tansu does not keep commit metadata
            assert details[tps[0]].metadata == "five"
        assert await consumer.seek_to_committed() == {tps[0]: 5, tps[1]: 7}
        assert await consumer.position(tps[0]) == 5
        metadata = consumer.group_metadata()
        assert metadata.group_id == group and metadata.generation_id == -1
    # A new consumer in the group starts from the committed offsets.
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers, group_id=group, enable_auto_commit=False
    ) as consumer:
        consumer.assign(tps)
        assert [await consumer.position(tp) for tp in tps] == [5, 7]


async def test_committed_offset_zero_with_a_leader_epoch_is_read_from(broker: Broker) -> None:
    # A committed offset carries the leader epoch it was read under (Apache Kafka keeps it), and
    # the next owner validates it with OffsetForLeaderEpoch before fetching (KIP-320); offset 0
    # is a position like any other (it was once taken for "no position" and never validated).
    topic = broker.create_topic(1)
    tp = TopicPartition(topic, 0)
    group = f"g-{uuid.uuid4().hex[:8]}"
    produce_values(broker.bootstrap_servers, topic, 1, 5)
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    ) as consumer:
        consumer.assign([tp])
        assert len(await consume_n(consumer, 5)) == 5  # the fetch connection is open now
        await consumer.commit({tp: OffsetAndMetadata(0, "", leader_epoch=0)})
        # Assigned anew (as after a rebalance): the position comes from the commit.
        consumer.assign([])
        consumer.assign([tp])
        records = await consume_n(consumer, 5, timeout=15)
        assert [r.value for r in records] == [b"%d" % i for i in range(5)]


@only_on("kafka")  # client logic: Tansu's slow joins made it 3x slower
async def test_pattern_subscription(broker: Broker) -> None:
    if broker.kind == "mock":
        pytest.skip("mock: multi-topic classic rebalances race (see test_group.MOCK_SYNC_RACE)")
    prefix = f"pat{uuid.uuid4().hex[:6]}"
    first = broker.create_topic(1, name=f"{prefix}-a")
    broker.create_topic(1, name=f"other{uuid.uuid4().hex[:6]}")
    produce_values(broker.bootstrap_servers, first, 1, 5)
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=200,
        metadata_max_age_ms=1000,
    ) as consumer:
        consumer.subscribe(pattern=rf"{prefix}-.*")
        await consumer.wait_for_assignment(timeout=20)
        assert consumer.assignment() == {TopicPartition(first, 0)}
        second = broker.create_topic(1, name=f"{prefix}-b")
        produce_values(broker.bootstrap_servers, second, 1, 5)
        await wait_until(lambda: TopicPartition(second, 0) in consumer.assignment(), 30)
        records = await consume_n(consumer, 10)
        assert {r.topic for r in records} == {first, second}
