"""Spare batch buffers: a done batch's buffer reused by a growing batch (the accumulator's
SPARE_BUFFERS), bounded, never while anything still holds a view of it."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from _producer_helpers import read_back, unique_topic

import aiokafkawire.producer._accumulator as accumulator_module
from aiokafkawire.producer import Producer
from aiokafkawire.protocol import records
from aiokafkawire.protocol.records import DefaultRecordBatchBuilder, iter_batches, reclaim_buffer
from aiokafkawire.protocol.records import _pure as pure_records
from aiokafkawire.testing import MockCluster

ACCELERATED = records._impl is not pure_records
needs_accelerator = pytest.mark.skipif(not ACCELERATED, reason="spares need the C records code")


def value_of(i: int, size: int = 10_240) -> bytes:
    """A distinct value for record ``i``: a corrupted reuse shows as the wrong bytes."""
    return (hashlib.sha256(b"%d" % i).digest() * (size // 32 + 1))[: size - (i % 5) * 97]


def test_the_pure_records_code_keeps_no_spares() -> None:
    # Its appends would give a spare's capacity back: it declines instead of pretending.
    assert pure_records.reclaim_buffer(bytearray(1 << 20)) is False
    builder = pure_records.DefaultRecordBatchBuilder(2, batch_size=1 << 20)
    assert builder.move_to(bytearray(1 << 20)) is False


@needs_accelerator
def test_a_buffer_is_reclaimed_only_when_no_view_of_it_is_alive() -> None:
    buffer = bytearray(b"x" * (1 << 20))
    view = memoryview(buffer)[100:200]  # a write still queued holds a slice like this
    assert reclaim_buffer(buffer) is False
    assert len(buffer) == 1 << 20 and buffer[:1] == b"x"
    del view
    capacity = buffer.__alloc__()
    assert reclaim_buffer(buffer) is True
    assert len(buffer) == 0 and buffer.__alloc__() == capacity
    assert reclaim_buffer(b"bytes") is False  # type: ignore[arg-type]


@needs_accelerator
def test_a_batch_moved_into_a_spare_keeps_its_bytes_and_grows_in_place() -> None:
    spare = bytearray(1 << 20)
    assert reclaim_buffer(spare)
    capacity = spare.__alloc__()
    moved = DefaultRecordBatchBuilder(2, batch_size=16_384)
    plain = DefaultRecordBatchBuilder(2, batch_size=1 << 20)
    for i in range(3):
        assert moved.append(1_700_000_000_000 + i, b"k%d" % i, value_of(i, 5_000))
        assert plain.append(1_700_000_000_000 + i, b"k%d" % i, value_of(i, 5_000))
    assert not moved.move_to(bytearray(10))  # no more room than its own: declined
    assert moved.move_to(spare)
    moved.batch_size = 1 << 20
    for i in range(3, 150):
        assert moved.append(1_700_000_000_000 + i, b"k%d" % i, value_of(i, 5_000))
        assert plain.append(1_700_000_000_000 + i, b"k%d" % i, value_of(i, 5_000))
        # Below half its allocation bytearray would shrink: the spare keeps its capacity.
        assert spare.__alloc__() == capacity
    built = moved.build()
    assert built == plain.build()
    (batch,) = iter_batches(built)
    assert [r.value for r in batch] == [value_of(i, 5_000) for i in range(150)]
    assert not moved.move_to(bytearray(1 << 21))  # built: declined


@needs_accelerator
@pytest.mark.parametrize("compression", [None, "lz4"])
async def test_large_batches_reuse_done_buffers_and_deliver_intact(
    mock_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch, compression: str | None
) -> None:
    # Uncompressed, a batch's payload is a view of its buffer (reused once no view is left);
    # compressed, the records' buffer is no part of the payload (reused once the batch is done).
    moves: list[int] = []
    move_to = DefaultRecordBatchBuilder.move_to

    def counting_move_to(builder: Any, buffer: bytearray) -> bool:
        moved = bool(move_to(builder, buffer))
        if moved:
            moves.append(buffer.__alloc__())
        return moved

    monkeypatch.setattr(DefaultRecordBatchBuilder, "move_to", counting_move_to)
    topic = unique_topic("spares")
    mock_cluster.create_topic(topic, partitions=2)
    count = 400
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        linger_ms=5,
        batch_size=300_000,
        compression=compression,
    ) as producer:
        handles = []
        for i in range(count):
            handles.append(await producer.send(topic, value_of(i), key=b"%d" % i))
            if i % 100 == 99:
                await producer.flush()  # batches complete while later ones grow
        await producer.flush()
        accumulator = producer._accumulator
        assert moves, "no growing batch took a spare"
        assert all(m >= accumulator_module.SPARE_MIN_CAPACITY for m in moves)
        assert 0 < len(accumulator._spares) <= accumulator_module.SPARE_BUFFERS
        assert producer.buffered_bytes == 0
        for handle in handles:
            await handle
    assert accumulator._spares == [] and accumulator.spare_bytes == 0  # freed on close
    read = await read_back(mock_cluster.bootstrap_servers, topic, count)
    assert len(read) == count
    for record in read:
        assert record.key is not None and record.value == value_of(int(record.key))


@needs_accelerator
async def test_idle_spares_stay_within_an_eighth_of_buffer_memory(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("spares-bound")
    mock_cluster.create_topic(topic, partitions=1)
    # 300 kB batches: an eighth of 2.5 MB holds one spare, not two.
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        linger_ms=5,
        batch_size=300_000,
        buffer_memory=2_500_000,
    ) as producer:
        for i in range(150):
            await producer.send(topic, value_of(i), partition=0)
            if i % 50 == 49:
                await producer.flush()
        await producer.flush()
        accumulator = producer._accumulator
        assert len(accumulator._spares) == 1
        assert accumulator.spare_bytes == accumulator._spares[0].__alloc__() <= 2_500_000 // 8
        # Not charged to the budget: every byte of it is free for new batches.
        assert accumulator.available == accumulator.buffer_memory
