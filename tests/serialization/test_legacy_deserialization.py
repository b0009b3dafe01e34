"""A failing plain deserializer on a legacy (magic 0/1) message set raises
RecordDeserializationError at the record's position, as on a v2 batch (issue 22).  The mock
refuses to store legacy sets, so the fetcher's decoder reads them directly."""

from __future__ import annotations

import pytest

from aiokafkawire.consumer.fetch import FetchConfig
from aiokafkawire.consumer.fetch.decode import RecordDecoder, scan
from aiokafkawire.protocol.records import (
    CompressionType,
    DefaultRecordBatchBuilder,
    LegacyRecordBatchBuilder,
)
from aiokafkawire.serialization import MessageField, RecordDeserializationError
from aiokafkawire.structs import TopicPartition

TP = TopicPartition("t", 0)
VALUES = [b"0", b"1", b"bad", b"3"]


def message_set(magic: int, codec: int) -> bytes:
    """Offsets 0-1 in one batch, 2-3 in a second (so a failure lands mid-response)."""
    payload = b""
    for base in (0, 2):
        if magic == 2:
            v2 = DefaultRecordBatchBuilder(base_offset=base, compression_type=codec)
            for i in range(2):
                v2.append(1_600_000_000_000, b"k%d" % (base + i), VALUES[base + i])
            payload += v2.build()
            continue
        builder = LegacyRecordBatchBuilder(
            magic=magic, compression_type=codec, batch_size=1 << 20, base_offset=base
        )
        for i in range(2):
            assert builder.append(1_600_000_000_000, b"k%d" % (base + i), VALUES[base + i])
        payload += builder.build()
    return payload


@pytest.mark.parametrize(
    ("magic", "codec"),
    [
        (0, CompressionType.NONE),
        (0, CompressionType.GZIP),
        (1, CompressionType.NONE),
        (1, CompressionType.LZ4),
        (2, CompressionType.NONE),  # the reference: v2 batches already behaved so
    ],
)
def test_a_failing_deserializer_stops_at_the_record(magic: int, codec: int) -> None:
    payload = message_set(magic, codec)
    decoder = RecordDecoder(FetchConfig(value_deserializer=int))
    # The records before the failing one, and its offset as the next to fetch.
    records, next_offset, _ = decoder.decode(TP, scan(payload, 0), 0, None)
    assert [r.value for r in records] == [0, 1]
    assert next_offset == 2
    # Fetched again from there: the error, typed, at the record.
    with pytest.raises(RecordDeserializationError) as caught:
        decoder.decode(TP, scan(payload, 2), 2, None)
    error = caught.value
    assert (error.topic, error.partition, error.offset) == ("t", 0, 2)
    assert (error.field, error.key, error.value) == (MessageField.VALUE, b"k2", b"bad")
    assert isinstance(error.__cause__, ValueError)
    # Skipped (the position moved past it): the rest is delivered.
    records, next_offset, _ = decoder.decode(TP, scan(payload, 3), 3, None)
    assert [r.value for r in records] == [3]
    assert next_offset == 4


def test_a_failing_key_deserializer_names_the_key() -> None:
    payload = message_set(1, CompressionType.NONE)

    def no_k1(key: bytes | None) -> str:
        if key == b"k1":
            raise KeyError(key)
        return (key or b"").decode()

    decoder = RecordDecoder(FetchConfig(key_deserializer=no_k1))
    records, next_offset, _ = decoder.decode(TP, scan(payload, 0), 0, None)
    assert ([r.key for r in records], next_offset) == (["k0"], 1)
    with pytest.raises(RecordDeserializationError) as caught:
        decoder.decode(TP, scan(payload, 1), 1, None)
    assert (caught.value.offset, caught.value.field) == (1, MessageField.KEY)
    assert (caught.value.key, caught.value.value) == (b"k1", b"1")
    assert isinstance(caught.value.__cause__, KeyError)
