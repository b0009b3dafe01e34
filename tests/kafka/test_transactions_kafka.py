"""Transactions on Apache Kafka: the broker's aborted-transaction lists, fencing, and a
consume-transform-produce loop that commits its input offsets inside the transaction.

Tansu and librdkafka's mock accept the transactional APIs but do not hide aborted records, so
read_committed is only really exercised here.
"""

from __future__ import annotations

import asyncio

import pytest
from _kafka_helpers import ck, create_topic, read_all, read_with_librdkafka, requires, unique

from aiokafkawire import errors
from aiokafkawire.consumer import Consumer
from aiokafkawire.producer import Producer
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster

pytestmark = requires("kafka")


async def _our_transactions(bootstrap: str, topic: str) -> None:
    """committed c0 c1 | aborted a0 a1 | committed c2 | aborted a2 | an open-then-committed c3,
    on two partitions: every fetch crosses aborted-transaction ranges."""
    async with Producer(bootstrap_servers=bootstrap, transactional_id=unique("ours")) as producer:
        for value, commit in [
            (b"c0", True),
            (b"a0", False),
            (b"c1", True),
            (b"a1", False),
            (b"c2", True),
        ]:
            await producer.begin_transaction()
            for partition in (0, 1):
                await producer.send(topic, value + b"-%d" % partition, partition=partition)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.flush()  # written to the log before the abort marker
                await producer.abort_transaction()


def _librdkafka_transactions(bootstrap: str, topic: str) -> None:
    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": unique("theirs"), "linger.ms": 5}
    )
    producer.init_transactions(30)
    for value, commit in [(b"c0", True), (b"a0", False), (b"c1", True), (b"a1", False)]:
        producer.begin_transaction()
        for partition in (0, 1):
            producer.produce(topic, value + b"-%d" % partition, partition=partition)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


async def test_librdkafka_reads_our_transactions_read_committed(
    kafka_cluster: KafkaCluster,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "txn-ours", 2)
    await _our_transactions(bootstrap, topic)
    committed = await asyncio.to_thread(read_with_librdkafka, bootstrap, topic, 2)
    by_partition = {p: [m.value() for m in committed if m.partition() == p] for p in (0, 1)}
    assert by_partition == {p: [b"c0-%d" % p, b"c1-%d" % p, b"c2-%d" % p] for p in (0, 1)}
    everything = await asyncio.to_thread(
        read_with_librdkafka, bootstrap, topic, 2, isolation_level="read_uncommitted"
    )
    assert len(everything) == 10  # the aborted records are in the log, markers are not records


async def test_we_read_librdkafka_transactions_read_committed(kafka_cluster: KafkaCluster) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "txn-theirs", 2)
    await asyncio.to_thread(_librdkafka_transactions, bootstrap, topic)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    committed = await read_all(bootstrap, tps, isolation_level="read_committed")
    by_partition = {p: [r.value for r in committed if r.partition == p] for p in (0, 1)}
    assert by_partition == {p: [b"c0-%d" % p, b"c1-%d" % p] for p in (0, 1)}
    uncommitted = await read_all(bootstrap, tps, isolation_level="read_uncommitted")
    assert sorted(r.value for r in uncommitted) == sorted(
        v + b"-%d" % p for v in (b"c0", b"a0", b"c1", b"a1") for p in (0, 1)
    )
    # Offsets skip the markers: 4 records and 4 markers per partition.
    async with Consumer(bootstrap_servers=bootstrap) as consumer:
        assert await consumer.end_offsets(tps) == {tp: 8 for tp in tps}


async def test_second_producer_fences_the_first_and_its_open_transaction_is_aborted(
    kafka_cluster: KafkaCluster,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "txn-fence", 1)
    transactional_id = unique("fenced")
    first = Producer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    await first.start()
    try:
        await first.begin_transaction()
        await first.send_and_wait(topic, b"zombie", partition=0)
        # The new incarnation's InitProducerId bumps the epoch and aborts the open transaction.
        async with Producer(
            bootstrap_servers=bootstrap, transactional_id=transactional_id
        ) as second:
            with pytest.raises(
                (errors.ProducerFencedClientError, errors.IllegalStateError)
            ) as info:
                await first.commit_transaction()
            fenced = info.value
            if isinstance(fenced, errors.IllegalStateError):
                assert isinstance(fenced.__cause__, errors.ProducerFencedClientError)
            async with second.transaction():
                await second.send(topic, b"successor", partition=0)
    finally:
        await first.close()
    read = await read_all(bootstrap, [TopicPartition(topic, 0)], isolation_level="read_committed")
    assert [r.value for r in read] == [b"successor"]


async def test_consume_transform_produce_holds_each_input_once_after_an_abort_and_retry(
    kafka_cluster: KafkaCluster,
) -> None:
    """Read a batch, write its transformation and commit the input offsets in one transaction;
    the first attempt of every third batch aborts (a simulated failure), and the retry starts
    again from the committed offsets. The output (read_committed) holds each input once."""
    bootstrap = kafka_cluster.bootstrap_servers
    source = await create_topic(bootstrap, "ctp-in", 2)
    sink = await create_topic(bootstrap, "ctp-out", 2)
    group = unique("ctp")
    count = 300
    async with Producer(bootstrap_servers=bootstrap) as feeder:
        for i in range(count):
            await feeder.send(source, b"%d" % i, partition=i % 2)
        await feeder.flush()

    aborts = 0
    async with (
        Consumer(
            source,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            max_poll_records=40,
            fetch_max_wait_ms=100,
        ) as consumer,
        Producer(bootstrap_servers=bootstrap, transactional_id=unique("ctp")) as producer,
    ):
        await consumer.wait_for_assignment(timeout=30)
        done = 0
        batches = 0
        for _ in range(200):  # bounded
            if done >= count:
                break
            fetched = await consumer.getmany(timeout_ms=500)
            records = [r for part in fetched.values() for r in part]
            if not records:
                continue
            batches += 1
            await producer.begin_transaction()
            for record in records:
                await producer.send(sink, b"out-" + record.value, partition=record.partition)
            offsets = {tp: part[-1].offset + 1 for tp, part in fetched.items() if part}
            await producer.send_offsets_to_transaction(
                offsets, group_metadata=consumer.group_metadata()
            )
            if batches % 3 == 1:
                await producer.flush()  # the aborted output really reaches the log
                await producer.abort_transaction()
                aborts += 1
                # Back to where the last commit left off (the beginning before the first).
                for tp, offset in (await consumer.seek_to_committed()).items():
                    if offset is None:
                        await consumer.seek_to_beginning(tp)
                continue
            await producer.commit_transaction()
            done += len(records)
        assert done == count
    assert aborts >= 2
    sinks = [TopicPartition(sink, p) for p in (0, 1)]
    output = await read_all(bootstrap, sinks, isolation_level="read_committed")
    assert sorted(int(r.value[4:]) for r in output) == list(range(count))
    everything = await read_all(bootstrap, sinks, isolation_level="read_uncommitted")
    assert len(everything) > count  # the aborted attempts are in the log, hidden above
    async with Consumer(bootstrap_servers=bootstrap, group_id=group) as check:
        committed = {
            tp: await check.committed(tp)
            for tp in (TopicPartition(source, 0), TopicPartition(source, 1))
        }
    assert committed == {
        TopicPartition(source, 0): count // 2,
        TopicPartition(source, 1): count // 2,
    }
