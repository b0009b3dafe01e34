"""Offsets on Apache Kafka: timestamp lookups on CreateTime and LogAppendTime topics, end
offsets and the last stable offset, resets after OFFSET_OUT_OF_RANGE, commit metadata."""

from __future__ import annotations

import asyncio
import time

import pytest
from _kafka_helpers import ck, create_topic, requires, unique

from aiokafkawire import Admin, errors
from aiokafkawire.consumer import Consumer, OffsetAndMetadata
from aiokafkawire.producer import Producer
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster

pytestmark = requires("kafka")

BASE_TS = 1_700_000_000_000


async def test_offsets_for_times_on_a_create_time_topic(kafka_cluster: KafkaCluster) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(
        bootstrap, "create-time", 1, {"message.timestamp.type": "CreateTime"}
    )
    tp = TopicPartition(topic, 0)
    async with Producer(bootstrap_servers=bootstrap, linger_ms=0) as producer:
        for i in range(10):  # one batch each: the broker's time index sees every timestamp
            await producer.send_and_wait(
                topic, b"%d" % i, partition=0, timestamp=BASE_TS + 1000 * i
            )
    async with Consumer(bootstrap_servers=bootstrap) as consumer:
        found = await consumer.offsets_for_times({tp: BASE_TS + 3500})
        assert found[tp] is not None
        assert (found[tp].offset, found[tp].timestamp) == (4, BASE_TS + 4000)
        exact = await consumer.offsets_for_times({tp: BASE_TS})
        assert exact[tp] is not None and exact[tp].offset == 0
        assert (await consumer.offsets_for_times({tp: BASE_TS + 60_000}))[tp] is None
        assert await consumer.beginning_offsets([tp]) == {tp: 0}
        assert await consumer.end_offsets([tp]) == {tp: 10}


async def test_offsets_for_times_on_a_log_append_time_topic(kafka_cluster: KafkaCluster) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(
        bootstrap, "append-time", 1, {"message.timestamp.type": "LogAppendTime"}
    )
    tp = TopicPartition(topic, 0)
    written = []
    async with Producer(bootstrap_servers=bootstrap, linger_ms=0) as producer:
        for i in range(4):
            # The producer's own timestamp (long ago) is replaced by the broker's clock.
            written.append(
                await producer.send_and_wait(topic, b"%d" % i, partition=0, timestamp=BASE_TS)
            )
            await asyncio.sleep(0.02)
    now = int(time.time() * 1000)
    for metadata in written:
        assert now - 60_000 < metadata.timestamp <= now  # the handle reports LogAppendTime
    async with Consumer(bootstrap_servers=bootstrap) as consumer:
        found = await consumer.offsets_for_times({tp: written[2].timestamp})
        assert found[tp] is not None
        assert found[tp].timestamp == written[found[tp].offset].timestamp
        assert found[tp].offset <= 2
        assert (await consumer.offsets_for_times({tp: BASE_TS}))[tp].offset == 0  # type: ignore[union-attr]
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        records = []
        for _ in range(50):
            batch = await consumer.getmany(timeout_ms=200)
            records += batch.get(tp, [])
            if len(records) >= 4:
                break
    assert [r.timestamp for r in records] == [m.timestamp for m in written]
    assert all(r.timestamp_type == 1 for r in records)  # LOG_APPEND_TIME


async def test_last_stable_offset_stops_read_committed_at_an_open_transaction(
    kafka_cluster: KafkaCluster,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "lso", 1)
    tp = TopicPartition(topic, 0)
    async with Producer(bootstrap_servers=bootstrap) as plain:
        for i in range(3):
            await plain.send_and_wait(topic, b"before-%d" % i, partition=0)
    async with Producer(bootstrap_servers=bootstrap, transactional_id=unique("lso")) as txn:
        await txn.begin_transaction()
        await txn.send_and_wait(topic, b"open", partition=0)
        async with (
            Consumer(bootstrap_servers=bootstrap, isolation_level="read_committed") as committed,
            Consumer(bootstrap_servers=bootstrap, isolation_level="read_uncommitted") as everything,
        ):
            assert await committed.end_offsets([tp]) == {tp: 3}  # ListOffsets answers the LSO
            assert await everything.end_offsets([tp]) == {tp: 4}  # and the high watermark
            committed.assign([tp])
            await committed.seek_to_beginning(tp)
            values = []
            for _ in range(20):
                batch = await committed.getmany(timeout_ms=200)
                values += [r.value for r in batch.get(tp, [])]
            assert values == [b"before-0", b"before-1", b"before-2"]
            assert committed.last_stable_offset(tp) == 3
            assert committed.highwater(tp) == 4
            await txn.commit_transaction()
            for _ in range(50):
                batch = await committed.getmany(timeout_ms=200)
                values += [r.value for r in batch.get(tp, [])]
                if len(values) == 4:
                    break
            assert values[-1] == b"open"
            assert committed.last_stable_offset(tp) == 5  # the record and its commit marker


async def test_out_of_range_after_delete_records_resets_or_raises(
    kafka_cluster: KafkaCluster,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "range", 1)
    tp = TopicPartition(topic, 0)
    async with Producer(bootstrap_servers=bootstrap) as producer:
        for i in range(20):
            await producer.send(topic, b"%d" % i, partition=0)
        await producer.flush()
    async with Admin(bootstrap_servers=bootstrap) as admin:
        deleted = await admin.delete_records({tp: 10})
        assert deleted[tp] == (10, None)
    async with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        assert await consumer.beginning_offsets([tp]) == {tp: 10}
        consumer.assign([tp])
        consumer.seek(tp, 3)  # below the log start: OFFSET_OUT_OF_RANGE, reset to earliest
        first = None
        for _ in range(50):
            batch = await consumer.getmany(timeout_ms=200)
            if batch.get(tp):
                first = batch[tp][0]
                break
        assert first is not None and (first.offset, first.value) == (10, b"10")
    async with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="latest") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 500)  # past the end: reset to latest
        for _ in range(50):
            await consumer.getmany(timeout_ms=100)
            if await consumer.position(tp) == 20:
                break
        assert await consumer.position(tp) == 20
    async with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 3)
        with pytest.raises(errors.OffsetOutOfRangeClientError):
            for _ in range(50):
                await consumer.getmany(timeout_ms=200)


async def test_commit_metadata_round_trip_with_librdkafka(kafka_cluster: KafkaCluster) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await create_topic(bootstrap, "meta", 2)
    group = unique("meta")
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    # No auto-commit: a position resolved before close would be committed again on close with
    # empty metadata (as the Java client does), overwriting the metadata under test.
    async with Consumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    ) as ours:
        ours.assign(tps)
        await ours.commit({tps[0]: OffsetAndMetadata(0, "ours ✓"), tps[1]: (0, "")})

    def librdkafka_reads_and_commits() -> dict[int, tuple[int, str | None]]:
        theirs = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            seen = theirs.committed([ck.TopicPartition(topic, p) for p in (0, 1)], timeout=10)
            theirs.commit(
                offsets=[ck.TopicPartition(topic, 1, 0, metadata="theirs")], asynchronous=False
            )
            return {p.partition: (p.offset, p.metadata) for p in seen}
        finally:
            theirs.close()

    seen = await asyncio.to_thread(librdkafka_reads_and_commits)
    assert seen[0] == (0, "ours ✓")
    async with Consumer(bootstrap_servers=bootstrap, group_id=group) as ours:
        details = await ours.committed_offsets(tps)
    assert details[tps[0]] is not None and details[tps[0]].metadata == "ours ✓"
    # confluent-kafka 2.16 writes the metadata string with its C terminator: we read the
    # broker's bytes as they are.
    theirs = details[tps[1]]
    assert theirs is not None and (theirs.offset, theirs.metadata) == (0, "theirs\x00")
