"""Fault injection on the librdkafka mock cluster: the consumer keeps delivering, skips nothing."""

from __future__ import annotations

import time

from _consumer_helpers import produce

from aiokafkawire import errors
from aiokafkawire.consumer import Consumer
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster

HEARTBEAT, OFFSET_COMMIT, FETCH = 12, 8, 1
PARTITIONS = 3


class _Checker:
    """Consumes with commits and checks every partition is read in order without gaps."""

    def __init__(self, consumer: Consumer, topic: str) -> None:
        self.consumer = consumer
        self.topic = topic
        self.next: dict[int, int] = dict.fromkeys(range(PARTITIONS), 0)
        self.values: list[bytes] = []
        self.redelivered = 0

    async def read(self, count: int, timeout: float = 25.0) -> None:
        deadline = time.monotonic() + timeout
        got = 0
        while got < count:
            assert time.monotonic() < deadline, f"only {got} of {count} records arrived"
            batches = await self.consumer.getmany(timeout_ms=200)
            for tp, records in batches.items():
                for record in records:
                    # Never a gap; a rebalance may re-deliver what was not committed yet.
                    assert record.offset <= self.next[tp.partition], (tp, record.offset)
                    if record.offset == self.next[tp.partition]:
                        self.next[tp.partition] = record.offset + 1
                        self.values.append(record.value)
                        got += 1
                    else:
                        self.redelivered += 1
            if batches:
                await self.consumer.commit()
        assert got == count


def _produce_stage(mock: MockCluster, topic: str, stage: int, count: int = 90) -> list[bytes]:
    values = [f"{stage}:{i}".encode() for i in range(count)]
    produce(
        mock.bootstrap_servers,
        topic,
        [{"value": v, "partition": i % PARTITIONS} for i, v in enumerate(values)],
    )
    return values


async def test_consumer_survives_coordinator_leader_and_broker_faults(mock: MockCluster) -> None:
    topic = f"faults-{time.monotonic_ns()}"
    group = f"g-{time.monotonic_ns()}"
    mock.create_topic(topic, PARTITIONS, 1)
    for partition in range(PARTITIONS):
        mock.set_partition_leader(topic, partition, partition + 1)
    mock.set_coordinator("group", group, 1)
    produced: list[bytes] = []
    async with Consumer(
        topic,
        bootstrap_servers=mock.bootstrap_servers,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=100,
        fetch_max_wait_ms=100,
        retry_backoff_ms=50,
        request_timeout_ms=5000,
        partition_assignment_strategy=["range"],
    ) as consumer:
        checker = _Checker(consumer, topic)
        await consumer.wait_for_assignment(timeout=20)
        produced += _produce_stage(mock, topic, 0)
        await checker.read(90)

        # The coordinator moves: commits and heartbeats find the new one.
        mock.set_coordinator("group", group, 3)
        produced += _produce_stage(mock, topic, 1)
        await checker.read(90)

        # A partition leader moves: its fetches follow (NOT_LEADER -> metadata refresh).
        mock.set_partition_leader(topic, 0, 2)
        produced += _produce_stage(mock, topic, 2)
        await checker.read(90)

        # A leader goes down and comes back.
        mock.broker_down(2)
        await consumer.getmany(timeout_ms=500)
        mock.broker_up(2)
        produced += _produce_stage(mock, topic, 3)
        await checker.read(90)

        # Injected errors in Heartbeat and OffsetCommit (rejoin, coordinator lookups, retries).
        mock.push_request_errors(
            HEARTBEAT, [errors.RebalanceInProgressError, errors.NotCoordinatorError]
        )
        mock.push_request_errors(
            OFFSET_COMMIT, [errors.NotCoordinatorError, errors.RebalanceInProgressError]
        )
        produced += _produce_stage(mock, topic, 4)
        await checker.read(90)

        # Fetch errors: stale metadata, then an out-of-band error on the whole request.
        mock.push_request_errors(FETCH, [errors.NotLeaderOrFollowerError, -195])
        produced += _produce_stage(mock, topic, 5)
        await checker.read(90)

        assert sorted(checker.values) == sorted(produced)
        assert len(checker.values) == len(set(checker.values))
        committed = {
            p: await consumer.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)
        }
        assert committed == checker.next
        assert consumer.state == "stable"


async def test_manual_assignment_follows_leader_moves(mock: MockCluster) -> None:
    topic = f"moves-{time.monotonic_ns()}"
    mock.create_topic(topic, 1, 1)
    mock.set_partition_leader(topic, 0, 1)
    tp = TopicPartition(topic, 0)
    async with Consumer(
        bootstrap_servers=mock.bootstrap_servers,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        retry_backoff_ms=50,
    ) as consumer:
        consumer.assign([tp])
        offsets: list[int] = []

        async def read_until(total: int) -> None:
            deadline = time.monotonic() + 20
            while len(offsets) < total:
                assert time.monotonic() < deadline, f"{len(offsets)} of {total}"
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    offsets.extend(r.offset for r in records)

        for round_number, leader in enumerate((2, 3, 1, 2)):
            produce(mock.bootstrap_servers, topic, [{"value": b"x"} for _ in range(20)])
            await read_until(20 * (round_number + 1))
            mock.set_partition_leader(topic, 0, leader)
        assert offsets == list(range(80))


async def test_fetches_follow_the_preferred_read_replica(mock: MockCluster) -> None:
    """KIP-392: the leader names a follower; records are then fetched from it."""
    topic = f"follower-{time.monotonic_ns()}"
    mock.create_topic(topic, 1, 3)
    mock.set_partition_leader(topic, 0, 1)
    mock.set_partition_follower(topic, 0, 2)
    produce(mock.bootstrap_servers, topic, [{"value": str(i).encode()} for i in range(30)])
    mock.start_request_tracking()
    tp = TopicPartition(topic, 0)
    async with Consumer(
        bootstrap_servers=mock.bootstrap_servers,
        auto_offset_reset="earliest",
        client_rack="rack-b",
        fetch_max_wait_ms=100,
    ) as consumer:
        consumer.assign([tp])
        offsets: list[int] = []
        deadline = time.monotonic() + 20
        while len(offsets) < 30:
            assert time.monotonic() < deadline, offsets
            for records in (await consumer.getmany(timeout_ms=200)).values():
                offsets.extend(r.offset for r in records)
        assert offsets == list(range(30))
    fetch_brokers = {r.broker_id for r in mock.requests() if r.api_key == FETCH}
    assert 2 in fetch_brokers
