"""Seed-era protocol: ``api_version="0.8.2"`` speaks Fetch v0, ListOffsets v0, OffsetCommit and
OffsetFetch v0-1, and reads legacy message sets (magic 0/1, compressed wrappers) next to v2
batches."""

from __future__ import annotations

import time

from _consumer_helpers import produce

from aiokafkawire.consumer import Consumer, OffsetAndMetadata
from aiokafkawire.consumer.fetch import FetchConfig
from aiokafkawire.consumer.fetch.decode import RecordDecoder, scan
from aiokafkawire.protocol.records import (
    CompressionType,
    DefaultRecordBatchBuilder,
    LegacyRecordBatchBuilder,
)
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster

FETCH, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH = 1, 2, 8, 9


async def test_api_version_0_8_2_end_to_end(mock: MockCluster) -> None:
    topic = f"legacy-{time.monotonic_ns()}"
    group = f"g-{time.monotonic_ns()}"
    mock.create_topic(topic, 1, 1)
    expected = [f"v2-{i}".encode() for i in range(12)]
    produce(mock.bootstrap_servers, topic, [{"value": v} for v in expected])
    mock.start_request_tracking()  # only our consumer's requests from here on
    tp = TopicPartition(topic, 0)
    async with Consumer(
        bootstrap_servers=mock.bootstrap_servers,
        api_version="0.8.2",
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    ) as consumer:
        consumer.assign([tp])
        records = []
        deadline = time.monotonic() + 20
        while len(records) < len(expected):
            assert time.monotonic() < deadline, records
            for part in (await consumer.getmany(timeout_ms=200)).values():
                records.extend(part)
        assert [r.value for r in records] == expected
        assert [r.offset for r in records] == list(range(len(expected)))
        assert await consumer.end_offsets([tp]) == {tp: len(expected)}
        assert await consumer.beginning_offsets([tp]) == {tp: 0}
        # Commit (OffsetCommit v1 with Kafka storage) and read it back (OffsetFetch v1).
        await consumer.commit({tp: OffsetAndMetadata(7, "seven")})
        assert await consumer.committed(tp) == 7
        connection = await consumer._parts.cluster.any_connection()  # type: ignore[union-attr]
        chosen = {key: connection.versions.version_for(key) for key in (1, 2, 8, 9)}
        assert chosen == {FETCH: 0, LIST_OFFSETS: 0, OFFSET_COMMIT: 1, OFFSET_FETCH: 1}
        consumer.seek(tp, 3)
        again = await consumer.getone()
        assert (again.offset, again.value) == (3, b"v2-3")
    seen = {request.api_key for request in mock.requests()}
    assert {FETCH, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH} <= seen
    assert 18 not in seen  # ApiVersions does not exist in 0.8.2


def test_legacy_message_sets_and_compressed_wrappers_decode() -> None:
    """Magic 0/1 sets (the mock refuses to store them) decoded by the fetcher's one-pass reader,
    mixed with a v2 batch in one response; inner messages before the fetch offset are skipped."""
    legacy = [
        (0, CompressionType.NONE, [b"m0-a", b"m0-b"]),
        (0, CompressionType.GZIP, [b"m0z-a", b"m0z-b", b"m0z-c"]),
        (1, CompressionType.NONE, [b"m1-a"]),
        (1, CompressionType.SNAPPY, [b"m1s-a", b"m1s-b"]),
        (1, CompressionType.LZ4, [b"m1l-a", b"m1l-b"]),
    ]
    payload = b""
    offset = 0
    for magic, codec, values in legacy:
        builder = LegacyRecordBatchBuilder(
            magic=magic, compression_type=codec, batch_size=1 << 20, base_offset=offset
        )
        for i, value in enumerate(values):
            assert builder.append(1_600_000_000_000 + offset + i, f"k{i}".encode(), value)
        payload += builder.build()
        offset += len(values)
    v2 = DefaultRecordBatchBuilder(base_offset=offset, compression_type=CompressionType.ZSTD)
    v2.append(1_700_000_000_000, b"k", b"v2", [("h", b"1")])
    payload += v2.build()
    expected = [v for _, _, values in legacy for v in values] + [b"v2"]
    tp = TopicPartition("t", 0)
    decoder = RecordDecoder(FetchConfig())
    records, next_offset, _epoch = decoder.decode(tp, scan(payload, 0), 0, None)
    assert [r.value for r in records] == expected
    assert [r.offset for r in records] == list(range(len(expected)))
    assert next_offset == len(expected)
    assert [r.timestamp_type for r in records[:5]] == [-1] * 5  # magic 0 has no timestamps
    assert records[5].timestamp == 1_600_000_000_005
    assert all(r.leader_epoch is None for r in records[:-1])
    assert records[-1].headers == (("h", b"1"),)
    # From offset 3 (inside the gzip wrapper holding offsets 2-4): earlier messages skipped.
    records, _, _ = decoder.decode(tp, scan(payload, 3), 3, None)
    assert [r.offset for r in records] == list(range(3, len(expected)))
    # A truncated trailing batch is ignored; the next fetch starts after the last whole one.
    records, next_offset, _ = decoder.decode(tp, scan(payload[:-10], 0), 0, None)
    assert next_offset == len(expected) - 1
