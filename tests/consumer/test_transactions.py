"""read_committed: records of aborted transactions are never delivered; markers are skipped."""

from __future__ import annotations

import time
import uuid

import pytest
from _consumer_helpers import Broker, consume_n

from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer import Consumer
from aiokafkawire.consumer.fetch import FetchConfig
from aiokafkawire.consumer.fetch.decode import RecordDecoder, scan
from aiokafkawire.protocol.messages import FetchRequest
from aiokafkawire.protocol.messages.fetch import AbortedTransaction, FetchPartition, FetchTopic
from aiokafkawire.protocol.records import iter_batches
from aiokafkawire.structs import TopicPartition


def _transactional_writes(bootstrap: str, topic: str) -> tuple[list[bytes], list[bytes]]:
    """Committed and aborted transactions interleaved with plain writes, on 2 partitions."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"tx-{uuid.uuid4().hex[:8]}",
            "linger.ms": 1,
        }
    )
    producer.init_transactions(20)
    committed: list[bytes] = []
    aborted: list[bytes] = []
    for round_number in range(4):
        producer.begin_transaction()
        values = [f"c{round_number}-{i}".encode() for i in range(10)]
        for i, value in enumerate(values):
            producer.produce(topic, value=value, partition=i % 2)
        producer.commit_transaction(20)
        committed += values
        producer.begin_transaction()
        values = [f"a{round_number}-{i}".encode() for i in range(10)]
        for i, value in enumerate(values):
            producer.produce(topic, value=value, partition=i % 2)
        producer.flush(20)
        producer.abort_transaction(20)
        aborted += values
    return committed, aborted


async def _raw_partition_data(bootstrap: str, topic: str, partition: int) -> tuple[bytes, int]:
    """The partition's log as the broker returns it to a read_uncommitted Fetch, and the HW."""
    async with Cluster(bootstrap) as cluster:
        await cluster.wait_for_topic(topic)
        leader = cluster.metadata.leader_for(topic, partition)
        assert leader is not None
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=10_000_000,
            topics=[
                FetchTopic(
                    topic=topic,
                    partitions=[
                        FetchPartition(
                            partition=partition, fetch_offset=0, partition_max_bytes=5_000_000
                        )
                    ],
                )
            ],
        )
        response = await cluster.send(leader, request, 11)
        data = response.responses[0].partitions[0]
        return bytes(data.records or b""), data.high_watermark


def _aborted_list(raw: bytes) -> list[AbortedTransaction]:
    """Ground truth from the test's own values: the first offset of every aborted transaction."""
    aborted = []
    previous_was_aborted = False
    for batch in iter_batches(raw):
        if batch.is_control:
            previous_was_aborted = False
            continue
        first = batch.records()[0]
        is_aborted = first.value is not None and first.value.startswith(b"a")
        if is_aborted and not previous_was_aborted:
            aborted.append(
                AbortedTransaction(producer_id=batch.producer_id, first_offset=first.offset)
            )
        previous_was_aborted = is_aborted
    return aborted


async def test_read_committed_drops_aborted_confluent_transactions(broker: Broker) -> None:
    """The filter over a real log written by confluent-kafka's transactional producer.

    Neither embedded broker lists aborted transactions in Fetch responses (Tansu sends an empty
    list, the mock none), so the list a Kafka broker would send is rebuilt here from the test's
    own values and fed with the broker's bytes to the fetcher's decoder.
    """
    if broker.kind == "mock":
        pytest.skip("the mock cluster does not keep transaction markers in the log")
    topic = broker.create_topic(2)
    committed, aborted = _transactional_writes(broker.bootstrap_servers, topic)
    for partition in range(2):
        raw, high_watermark = await _raw_partition_data(broker.bootstrap_servers, topic, partition)
        aborted_list = _aborted_list(raw)
        assert len(aborted_list) == 4
        tp = TopicPartition(topic, partition)
        for isolation, expected in (
            ("read_committed", committed[partition::2]),
            ("read_uncommitted", _interleave(committed[partition::2], aborted[partition::2])),
        ):
            decoder = RecordDecoder(FetchConfig(isolation_level=isolation))
            records, next_offset, _epoch = decoder.decode(tp, scan(raw, 0), 0, aborted_list)
            assert sorted(r.value for r in records) == sorted(expected)
            # Control records are never delivered; the position moves past the last marker.
            assert next_offset == high_watermark
        # Starting inside the log: only records at or after the fetch offset.
        records, _, _ = RecordDecoder(FetchConfig(isolation_level="read_committed")).decode(
            tp, scan(raw, 7), 7, aborted_list
        )
        assert all(r.offset >= 7 for r in records)


def _interleave(committed: list[bytes], aborted: list[bytes]) -> list[bytes]:
    return committed + aborted


async def test_consumer_skips_transaction_markers(broker: Broker) -> None:
    if broker.kind == "mock":
        pytest.skip("the mock cluster does not keep transaction markers in the log")
    topic = broker.create_topic(2)
    committed, aborted = _transactional_writes(broker.bootstrap_servers, topic)
    tps = [TopicPartition(topic, p) for p in range(2)]
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        isolation_level="read_uncommitted",
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    ) as consumer:
        consumer.assign(tps)
        records = await consume_n(consumer, len(committed) + len(aborted), timeout=20)
        assert sorted(r.value for r in records) == sorted(committed + aborted)
        # Past everything, markers included: the positions reach the end and nothing more comes.
        ends = await consumer.end_offsets(tps)
        deadline = time.monotonic() + 10
        while [await consumer.position(tp) for tp in tps] != [ends[tp] for tp in tps]:
            assert time.monotonic() < deadline
            assert not await consumer.getmany(timeout_ms=100)
