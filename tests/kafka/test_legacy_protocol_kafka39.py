"""The seed-era protocol on a real broker: Apache Kafka 3.9 (the last line that serves it).

``api_version="0.8.2"`` and ``"0.10"`` produce message sets v0/v1 (Produce v0-v2), uncompressed
and compressed, and fetch them back (Fetch v0-v2): the broker stores record batches v2 and
converts down for old fetchers, compressed sets as nested wrapper messages (magic 0: inner
offsets absolute; magic 1: relative, the wrapper holding the last inner offset). Offsets are
committed and read with the old OffsetCommit/OffsetFetch versions. A current consumer reads what
the old producer wrote.
"""

from __future__ import annotations

import pytest
from _kafka_helpers import create_topic, read_all, requires, unique

from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer import Consumer, OffsetAndMetadata
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.producer import Producer
from aiokafkawire.protocol.messages import FetchRequest
from aiokafkawire.protocol.messages.fetch import FetchPartition, FetchTopic
from aiokafkawire.protocol.records import CompressionType, iter_batches
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster

pytestmark = requires("kafka39")

FETCH, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, PRODUCE = 1, 2, 8, 9, 0
COUNT = 60
BASE_TS = 1_600_000_000_000

CASES = [
    ("0.8.2", 0, None),
    ("0.8.2", 0, "gzip"),
    ("0.8.2", 0, "snappy"),
    ("0.10", 1, None),
    ("0.10", 1, "gzip"),
    ("0.10", 1, "snappy"),
    ("0.10", 1, "lz4"),
]


def _value(i: int) -> bytes | None:
    return None if i % 10 == 3 else b"value-%d-" % i * (1 + i % 5)


def _key(i: int) -> bytes | None:
    return b"key-%d" % i if i % 4 else None


async def _fetch_raw(bootstrap: str, tp: TopicPartition, version: int) -> list[object]:
    """The top-level messages of a Fetch at ``version`` from offset 0, as the broker sends them."""
    cluster = Cluster(bootstrap, ConnectionConfig(api_version="0.10"))
    await cluster.start()
    try:
        await cluster.wait_for_topic(tp.topic)
        leader = cluster.metadata.leader_for(tp.topic, tp.partition)
        assert leader is not None
        connection = await cluster.connection(leader)
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=10,
            min_bytes=1,
            topics=[
                FetchTopic(
                    topic=tp.topic,
                    partitions=[
                        FetchPartition(
                            partition=tp.partition, fetch_offset=0, partition_max_bytes=10_000_000
                        )
                    ],
                )
            ],
        )
        response = await connection.send(request, version)
        (data,) = response.responses[0].partitions
        assert data.error_code == 0
        return list(iter_batches(data.records or b""))
    finally:
        await cluster.close()


@pytest.mark.parametrize(("api_version", "magic", "compression"), CASES)
async def test_old_release_produces_and_fetches_message_sets(
    kafka_cluster_39: KafkaCluster, api_version: str, magic: int, compression: str | None
) -> None:
    bootstrap = kafka_cluster_39.bootstrap_servers
    topic = await create_topic(bootstrap, f"legacy{magic}", 1)
    tp = TopicPartition(topic, 0)
    async with Producer(
        bootstrap_servers=bootstrap,
        api_version=api_version,
        acks=1,
        compression=compression,
        linger_ms=20,
        batch_size=4096,
    ) as producer:
        assert producer.record_format == magic
        connection = await producer._cluster.any_connection()  # type: ignore[union-attr]
        assert connection.versions.version_for(PRODUCE) == (0 if magic == 0 else 2)
        handles = [
            await producer.send(topic, _value(i), _key(i), partition=0, timestamp=BASE_TS + i)
            for i in range(COUNT)
        ]
        assert [(await h).offset for h in handles] == list(range(COUNT))

    # The old fetch: down-converted message sets of our magic; compressed ones nested.
    fetch_version = 0 if magic == 0 else 2
    top_level = await _fetch_raw(bootstrap, tp, fetch_version)
    assert {batch.magic for batch in top_level} == {magic}  # type: ignore[attr-defined]
    codecs = {batch.compression_type for batch in top_level}  # type: ignore[attr-defined]
    if compression is None:
        assert codecs == {CompressionType.NONE}
        assert len(top_level) == COUNT  # one message per record
    else:
        assert codecs == {CompressionType[compression.upper()]}
        assert len(top_level) < COUNT  # wrappers holding several inner messages
    inner = [record for batch in top_level for record in batch.records()]  # type: ignore[attr-defined]
    assert [r.offset for r in inner] == list(range(COUNT))
    assert [(r.key, r.value) for r in inner] == [(_key(i), _value(i)) for i in range(COUNT)]

    # The old consumer reads them, commits with the old OffsetCommit, reads the commit back.
    group = unique("legacy")
    async with Consumer(
        bootstrap_servers=bootstrap,
        api_version=api_version,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    ) as old:
        old.assign([tp])
        records = []
        for _ in range(100):
            for part in (await old.getmany(timeout_ms=200)).values():
                records.extend(part)
            if len(records) >= COUNT:
                break
        assert [(r.offset, r.key, r.value) for r in records] == [
            (i, _key(i), _value(i)) for i in range(COUNT)
        ]
        if magic == 1:
            assert [r.timestamp for r in records] == [BASE_TS + i for i in range(COUNT)]
        await old.commit({tp: OffsetAndMetadata(COUNT - 5, "old")})
        assert await old.committed(tp) == COUNT - 5
        connection = await old._parts.cluster.any_connection()  # type: ignore[union-attr]
        versions = {
            key: connection.versions.version_for(key)
            for key in (FETCH, OFFSET_COMMIT, OFFSET_FETCH)
        }
        if api_version == "0.8.2":
            assert versions == {FETCH: 0, OFFSET_COMMIT: 1, OFFSET_FETCH: 1}

    # A current consumer reads the same records exactly, and the old client's commit.
    current = await read_all(bootstrap, [tp], expected=COUNT)
    assert [(r.offset, r.key, r.value) for r in current] == [
        (i, _key(i), _value(i)) for i in range(COUNT)
    ]
    if magic == 1:
        assert [r.timestamp for r in current] == [BASE_TS + i for i in range(COUNT)]
    async with Consumer(bootstrap_servers=bootstrap, group_id=group) as new:
        details = await new.committed_offsets([tp])
    assert details[tp] is not None and (details[tp].offset, details[tp].metadata) == (
        COUNT - 5,
        "old",
    )
