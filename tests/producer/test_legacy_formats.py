"""Seed-era protocol: message set v0 (Produce v0/v1) and v1 (Produce v2) through the same API."""

from __future__ import annotations

import pytest
from _producer_helpers import fetch_raw_batches, read_back, unique_topic

from aiokafkawire import errors
from aiokafkawire.producer import Producer
from aiokafkawire.testing import MockCluster


@pytest.mark.parametrize(
    ("api_version", "magic", "compression"),
    # Uncompressed only: librdkafka's mock answers compressed legacy message sets with
    # UNSUPPORTED_VERSION (compressed v0/v1 sets are covered by the records package's tests).
    [("0.8.2", 0, None), ("0.9", 0, None), ("0.10", 1, None)],
)
async def test_pinned_old_release_writes_legacy_message_sets(
    mock_cluster: MockCluster, api_version: str, magic: int, compression: str | None
) -> None:
    topic = unique_topic(f"legacy{magic}")
    mock_cluster.create_topic(topic, partitions=2)
    count = 200
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        api_version=api_version,
        acks=1,
        compression=compression,
        batch_size=2048,
    ) as producer:
        assert producer.record_format == magic
        assert not producer.idempotent  # idempotence needs record batch v2
        with pytest.raises(errors.EncodeError):
            await producer.send(topic, b"x", headers=[("h", b"v")])
        handles = [
            await producer.send(
                topic,
                None if i % 10 == 3 else b"value-%d" % i,
                b"key-%d" % i if i % 4 else None,
                partition=i % 2,
                timestamp=1_600_000_000_000 + i,
            )
            for i in range(count)
        ]
        metadata = [await h for h in handles]
    by_partition = {0: [m.offset for m in metadata[0::2]], 1: [m.offset for m in metadata[1::2]]}
    assert by_partition == {0: list(range(100)), 1: list(range(100))}

    raw = await fetch_raw_batches(mock_cluster.bootstrap_servers, topic, 0)
    assert raw and {batch.magic for batch in raw} == {magic}

    read = await read_back(mock_cluster.bootstrap_servers, topic, count)
    assert len(read) == count
    got = {(r.partition, r.offset): r for r in read}
    for i, m in enumerate(metadata):
        record = got[(m.partition, m.offset)]
        assert record.key == (b"key-%d" % i if i % 4 else None)
        assert record.value == (None if i % 10 == 3 else b"value-%d" % i)
        if magic == 1:
            assert record.timestamp == 1_600_000_000_000 + i


async def test_explicit_idempotence_with_an_old_release_is_refused(
    mock_cluster: MockCluster,
) -> None:
    producer = Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        api_version="0.10",
        enable_idempotence=True,
    )
    with pytest.raises(errors.ConfigError, match="Produce v3"):
        await producer.start()
    await producer.close()
