"""``max_block_ms`` bounds a whole ``send``: its metadata wait and its memory waits share one
deadline (the Java client's ``remainingWaitMs``), instead of each wait starting its own clock.

The accumulator runs here with stand-ins for the cluster and the transaction manager, so that
the test decides when memory is freed and when a batch leaves, as the sender would.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest
from _producer_helpers import unique_topic

from aiokafkawire import Producer, errors
from aiokafkawire.producer._accumulator import RecordAccumulator
from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.producer.partitioner import DefaultPartitioner
from aiokafkawire.testing import MockCluster

MAX_BLOCK_MS = 400
VALUE = b"v" * 4500  # three fit in a first 16 KiB reservation, four in 20000 bytes
SIZE = len(VALUE) + 100  # about what Producer.send estimates for it


def _topic_info(partitions: int) -> Any:
    return SimpleNamespace(
        error_code=0,
        partitions=dict.fromkeys(range(partitions)),
        partition_ids=list(range(partitions)),
        available_partitions=list(range(partitions)),
    )


class _Cluster:
    """Metadata for ``known`` topics; any other topic appears after ``lookup_s`` seconds."""

    def __init__(self, known: list[str], lookup_s: float) -> None:
        self.metadata = SimpleNamespace(topics={topic: _topic_info(3) for topic in known})
        self.lookup_s = lookup_s
        self.metadata_listeners: list[Any] = []

    def request_topics(self, topics: Any) -> None:
        pass  # the lookup of a topic queued for by partition: the sender's, not waited for here

    async def wait_for_topic(self, topic: str, timeout_ms: int) -> Any:
        if self.lookup_s * 1000 >= timeout_ms:
            await asyncio.sleep(timeout_ms / 1000)
            raise errors.UnknownTopicError(f"topic {topic!r} is not available after 0.4s")
        await asyncio.sleep(self.lookup_s)
        info = self.metadata.topics[topic] = _topic_info(3)
        return info


def _accumulator(buffer_memory: int, batch_size: int, cluster: _Cluster) -> RecordAccumulator:
    accumulator = RecordAccumulator(
        batch_size=batch_size,
        buffer_memory=buffer_memory,
        compression_type=0,
        transactional=False,
        partitioner=DefaultPartitioner(),
        max_block_ms=MAX_BLOCK_MS,
    )
    txn: Any = SimpleNamespace(transactional=False)
    accumulator.start(cluster, txn, 2)  # type: ignore[arg-type]
    return accumulator


async def _append(accumulator: RecordAccumulator, topic: str, partition: int | None) -> Any:
    return await accumulator.append(topic, partition, 0, None, VALUE, None, SIZE)


def _send(accumulator: RecordAccumulator, batch: ProducerBatch) -> None:
    """What the sink does to a batch it drains: out of its queue, closed to appends."""
    queue = accumulator.batches[batch.tp]
    assert queue[0] is batch
    queue.popleft()
    batch.closed = True


@pytest.mark.parametrize("metadata", ["known", "unknown"])
async def test_waiting_to_grow_then_for_a_new_batch_shares_one_max_block_ms(metadata: str) -> None:
    """A send waits for memory to grow its open batch; the batch leaves meanwhile and an answer
    frees enough for the record but not for a new batch: its wait for a new batch gets only
    what is left of max_block_ms (it got a whole max_block_ms more before).  The same for a
    topic whose metadata is not known yet (records queued by partition, without waiting)."""
    known = ["t"] if metadata == "known" else []
    accumulator = _accumulator(3 * 16384 + 1000, 20000, _Cluster(known, 0))
    await _append(accumulator, "t", 1)  # partition 1: 16 KiB, in flight below
    for _ in range(3):
        await _append(accumulator, "t", 2)  # partition 2: 16 KiB, full
    for _ in range(3):
        await _append(accumulator, "t", 0)  # partition 0: 16 KiB, full; 1000 bytes left
    assert accumulator.available == 1000
    (first,) = accumulator.batches[("t", 1)]  # type: ignore[index]
    (waiting_batch,) = accumulator.batches[("t", 0)]  # type: ignore[index]
    _send(accumulator, first)
    started = time.monotonic()
    blocked = asyncio.ensure_future(_append(accumulator, "t", 0))
    await asyncio.sleep(0.35)
    assert not blocked.done() and waiting_batch.count == 3  # it waits to grow the batch
    # The batch it waits to grow leaves; an answer frees partition 1's 16 KiB, of which
    # partition 2's batch takes what it needs to grow to batch_size: enough is left for the
    # record (the waiting send wakes up), not for the new batch it now needs.
    _send(accumulator, waiting_batch)
    accumulator.release(first)
    await _append(accumulator, "t", 2)
    assert SIZE <= accumulator.available < accumulator.initial_reservation(SIZE)
    with pytest.raises(errors.BufferFullError, match=r"max_block_ms \(400 ms\)"):
        await blocked
    elapsed = time.monotonic() - started
    assert 0.35 <= elapsed < 0.7, elapsed


async def test_the_memory_wait_gets_what_the_metadata_wait_left() -> None:
    """A keyless send to a topic without metadata waits for it (0.3 s), then for memory: that
    wait has only the rest of max_block_ms."""
    accumulator = _accumulator(16384, 16384, _Cluster(["full"], 0.3))
    await _append(accumulator, "full", 0)  # takes the whole buffer; no answer frees it
    assert accumulator.available == 0
    started = time.monotonic()
    with pytest.raises(errors.BufferFullError, match=r"max_block_ms \(400 ms\)"):
        await _append(accumulator, "new", None)
    elapsed = time.monotonic() - started
    assert "new" in accumulator.partitions  # the metadata came: the memory wait raised
    assert 0.35 <= elapsed < 0.65, elapsed


async def test_a_metadata_wait_that_runs_out_says_max_block_ms() -> None:
    accumulator = _accumulator(16384, 16384, _Cluster([], 10))
    with pytest.raises(errors.UnknownTopicError, match=r"'new'.*max_block_ms \(400 ms\)"):
        await _append(accumulator, "new", None)


@pytest.mark.parametrize(
    ("call", "says"),
    [("send", r"max_block_ms \(400 ms\)"), ("partitions_for", r"not available after 0\.4s")],
)
async def test_a_topic_of_a_slow_broker_raises_after_max_block_ms(
    mock_cluster: MockCluster, call: str, says: str
) -> None:
    """End to end: the brokers answer metadata requests after 2.5 s; send() and partitions_for
    (as Java's ``partitionsFor``, bounded by ``max.block.ms``) give up at 0.4 s."""
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        max_block_ms=MAX_BLOCK_MS,
        request_timeout_ms=5000,
    ) as producer:
        mock_cluster.set_broker_rtt(-1, 2500)
        started = time.monotonic()
        try:
            with pytest.raises(errors.UnknownTopicError, match=says):
                if call == "send":
                    await producer.send(unique_topic("slow"), b"x")
                else:
                    await producer.partitions_for(unique_topic("slow"))
            elapsed = time.monotonic() - started
        finally:
            mock_cluster.set_broker_rtt(-1, 0)
        assert 0.35 <= elapsed < 0.7, elapsed
        await producer.close(0.5, flush=False)


async def test_a_send_that_never_waits_reads_no_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline is taken when a send first has to wait, not for every record."""
    accumulator = _accumulator(4 * 16384, 16384, _Cluster(["t"], 0))
    await _append(accumulator, "t", 0)
    reads: list[float] = []

    def clock() -> float:
        reads.append(0.0)
        return 0.0

    with monkeypatch.context() as patched:  # no event-loop turn inside: it never suspends
        patched.setattr(time, "monotonic", clock)
        await _append(accumulator, "t", 0)  # appends to the open batch
    assert reads == []
