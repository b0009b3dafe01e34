"""seek_to_committed() after an aborted transaction (issue 21), on Apache Kafka: a partition
with nothing committed yet goes back to where auto_offset_reset began reading it, so the first
transaction's input is processed again rather than skipped."""

from __future__ import annotations

import uuid

import pytest
from _consumer_helpers import consume_n, produce_values

from aiokafkawire import Admin, NewTopic, Producer, errors
from aiokafkawire.consumer import Consumer
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing.pytest_plugin import TEST_BROKERS_ENV_VAR, enabled_broker_kinds

pytestmark = pytest.mark.skipif(
    "kafka" not in enabled_broker_kinds(), reason=f"kafka not in ${TEST_BROKERS_ENV_VAR}"
)


async def _read_committed(bootstrap: str, tp: TopicPartition) -> list[bytes]:
    async with Consumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    ) as reader:
        reader.assign([tp])
        end = (await reader.end_offsets([tp]))[tp]
        out: list[bytes] = []
        while await reader.position(tp) < end:
            for records in (await reader.getmany(timeout_ms=500)).values():
                out.extend(r.value for r in records)
        return out


@pytest.mark.parametrize("reset", ["latest", "earliest"])
async def test_an_aborted_first_transaction_is_processed_again(
    kafka_cluster: KafkaCluster, reset: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    source, sink = f"in-{uuid.uuid4().hex[:8]}", f"out-{uuid.uuid4().hex[:8]}"
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(t, num_partitions=1) for t in (source, sink)])
    tp, out = TopicPartition(source, 0), TopicPartition(sink, 0)
    # Written before the consumer starts: "latest" starts after them, "earliest" at them.
    produce_values(bootstrap, source, 1, 3)
    first = 3 if reset == "latest" else 0
    async with (
        Consumer(
            bootstrap_servers=bootstrap,
            group_id=f"g-{uuid.uuid4().hex[:8]}",
            enable_auto_commit=False,
            isolation_level="read_committed",
            auto_offset_reset=reset,
        ) as consumer,
        Producer(
            bootstrap_servers=bootstrap, transactional_id=f"tx-{uuid.uuid4().hex[:8]}"
        ) as producer,
    ):
        consumer.assign([tp])
        assert await consumer.position(tp) == first
        produce_values(bootstrap, source, 1, 5)  # offsets 3..7: the input
        expected = list(range(first, 8))

        async def process() -> list[int]:
            records = await consume_n(consumer, len(expected))
            await producer.begin_transaction()
            for record in records:
                await producer.send(sink, b"out-" + record.value, partition=0)
            await producer.send_offsets_to_transaction(
                {tp: records[-1].offset + 1}, group_metadata=consumer.group_metadata()
            )
            return [r.offset for r in records]

        assert await process() == expected
        await producer.abort_transaction()
        # Nothing is committed yet: back to where reading began, not left at the end.
        assert await consumer.seek_to_committed(tp) == {tp: None}
        assert await consumer.position(tp) == first
        assert await process() == expected
        await producer.commit_transaction()
        assert await consumer.seek_to_committed() == {tp: 8}
        assert await consumer.position(tp) == 8
    written = await _read_committed(bootstrap, out)
    assert written == [b"out-%d" % (i if i < 3 else i - 3) for i in expected]


async def test_with_reset_none_a_partition_without_commit_raises(
    kafka_cluster: KafkaCluster,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = f"none-{uuid.uuid4().hex[:8]}"
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, num_partitions=1)])
    tp = TopicPartition(topic, 0)
    async with Consumer(
        bootstrap_servers=bootstrap,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        enable_auto_commit=False,
        auto_offset_reset="none",
    ) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        with pytest.raises(errors.NoOffsetForPartitionError, match="auto_offset_reset='none'"):
            await consumer.seek_to_committed(tp)
        await consumer.commit({tp: 0})
        assert await consumer.seek_to_committed(tp) == {tp: 0}
