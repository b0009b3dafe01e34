"""KIP-848 (``group_protocol="consumer"``) on the mock cluster, which implements
ConsumerGroupHeartbeat (Tansu does not)."""

from __future__ import annotations

import time

from _consumer_helpers import consume_n, produce_values, wait_until

from aiokafkawire.consumer import Consumer
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster

CONSUMER_GROUP_HEARTBEAT = 68


async def test_broker_assigned_membership_split_leave_and_commit(mock: MockCluster) -> None:
    topic = f"kip848-{time.monotonic_ns()}"
    group = f"g-{time.monotonic_ns()}"
    mock.create_topic(topic, 4, 1)
    produce_values(mock.bootstrap_servers, topic, 4, 400)
    all_partitions = {TopicPartition(topic, p) for p in range(4)}
    mock.start_request_tracking()
    options = dict(
        bootstrap_servers=mock.bootstrap_servers,
        group_id=group,
        group_protocol="consumer",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    async with Consumer(topic, **options) as first:
        await first.wait_for_assignment(timeout=20)
        await wait_until(lambda: first.assignment() == all_partitions, 20)
        assert first.state == "stable"
        records = await consume_n(first, 400)
        assert sorted(int(r.value) for r in records) == list(range(400))
        await first.commit()
        metadata = first.group_metadata()
        assert metadata.group_id == group and metadata.generation_id > 0
        async with Consumer(topic, **options) as second:
            await wait_until(
                lambda: len(first.assignment()) == 2 and len(second.assignment()) == 2, 30
            )
            assert not first.assignment() & second.assignment()
            # Nothing new to read for the second: the first member's commits hold.
            assert not await second.getmany(timeout_ms=300)
            for tp in second.assignment():
                assert await second.committed(tp) == 100
        # The second left (epoch -1): everything comes back to the first.
        await wait_until(lambda: first.assignment() == all_partitions, 30)
    assert CONSUMER_GROUP_HEARTBEAT in {r.api_key for r in mock.requests()}
    assert 11 not in {r.api_key for r in mock.requests()}  # no JoinGroup
