"""Producer API behaviour: configuration, lifecycle, back-pressure, limits, acks=0, flush, close."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from _producer_helpers import read_back, unique_topic
from busy_loop import block_loop, require_direct_reads

from aiokafkawire import errors
from aiokafkawire.producer import Producer, RecordMetadata
from aiokafkawire.producer._accumulator import RecordAccumulator
from aiokafkawire.producer._sink import BrokerSink
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster


@pytest.fixture
def topic(mock_cluster: MockCluster) -> str:
    name = unique_topic("api")
    mock_cluster.create_topic(name, partitions=3)
    return name


# ---------------------------------------------------------------- configuration


def test_idempotence_requires_acks_all_and_says_so() -> None:
    with pytest.raises(errors.ConfigError, match="requires acks='all'"):
        Producer(acks=1, enable_idempotence=True)
    with pytest.raises(errors.ConfigError, match="requires acks='all'"):
        Producer(acks=0, transactional_id="tx")
    # Left at its default, idempotence simply follows acks.
    assert Producer(acks=1).idempotent is False
    assert Producer().idempotent is True


@pytest.mark.parametrize(
    "options",
    [
        {"compression": "brotli"},
        {"acks": 2},
        {"batch_size": 0},
        {"no_such_option": 1},
        {"enable_idempotence": True, "max_in_flight_requests_per_connection": 6},
        {"transactional_id": "tx", "enable_idempotence": False},
        {"delivery_timeout_ms": 1000, "request_timeout_ms": 30_000},
    ],
)
def test_invalid_configuration_is_refused(options: dict[str, Any]) -> None:
    with pytest.raises(errors.ConfigError):
        Producer(**options)


async def test_send_before_start_and_after_close(mock_cluster: MockCluster, topic: str) -> None:
    producer = Producer(bootstrap_servers=mock_cluster.bootstrap_servers)
    with pytest.raises(errors.IllegalStateError):
        await producer.send(topic, b"x")
    await producer.start()
    await producer.send_and_wait(topic, b"x")
    await producer.close()
    with pytest.raises(errors.ClientClosedError):
        await producer.send(topic, b"x")
    await producer.close()  # idempotent


# ---------------------------------------------------------------- sending


def _running_tasks(before: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """Tasks started since ``before`` that have not finished."""
    return [task for task in asyncio.all_tasks() - before if not task.done()]


async def test_a_failed_start_stops_everything_it_started(
    mock_cluster: MockCluster, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever step fails (here the last one, after the sender loop started), start() stops
    the loop and the cluster before raising; a later start() begins afresh."""
    before = asyncio.all_tasks()
    producer = Producer(bootstrap_servers=mock_cluster.bootstrap_servers)

    def broken(*args: Any) -> Any:
        raise RuntimeError("no fast path today")

    monkeypatch.setattr(RecordAccumulator, "fast_path", broken)
    with pytest.raises(RuntimeError, match="no fast path today"):
        await producer.start()
    assert _running_tasks(before) == []
    assert producer._sender is None and producer._cluster is None
    monkeypatch.undo()
    async with producer:
        assert (await producer.send_and_wait(topic, b"after", partition=0)).offset >= 0


async def test_a_start_that_cannot_get_a_producer_id_leaves_nothing_running(
    mock_cluster: MockCluster,
) -> None:
    before = asyncio.all_tasks()
    init_producer_id, coordinator_load_in_progress = 22, 14
    mock_cluster.push_request_errors(init_producer_id, [coordinator_load_in_progress] * 1000)
    try:
        producer = Producer(
            bootstrap_servers=mock_cluster.bootstrap_servers,
            transactional_id=unique_topic("txn"),
            max_block_ms=300,
            retry_backoff_ms=10,
        )
        with pytest.raises(errors.KafkaTimeoutError, match="InitProducerId"):
            await producer.start()
        assert _running_tasks(before) == []
        # Cancelled while it retries: the same.
        producer = Producer(
            bootstrap_servers=mock_cluster.bootstrap_servers,
            transactional_id=unique_topic("txn"),
            max_block_ms=10_000,
            retry_backoff_ms=10,
        )
        with pytest.raises((TimeoutError, asyncio.TimeoutError)):
            await asyncio.wait_for(producer.start(), 0.3)
        assert _running_tasks(before) == []
    finally:
        mock_cluster.clear_request_errors(init_producer_id)


async def test_send_and_wait_does_not_linger(mock_cluster: MockCluster, topic: str) -> None:
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, linger_ms=30_000
    ) as producer:
        started = time.monotonic()
        metadata = await producer.send_and_wait(topic, b"v", b"k", timestamp=1234567)
        assert time.monotonic() - started < 5
    assert isinstance(metadata, RecordMetadata)
    assert metadata.topic == topic and metadata.offset == 0


async def test_flush_and_close_deliver_lingering_records(
    mock_cluster: MockCluster, topic: str
) -> None:
    producer = Producer(bootstrap_servers=mock_cluster.bootstrap_servers, linger_ms=60_000)
    await producer.start()
    try:
        first = [await producer.send(topic, b"a%d" % i, partition=0) for i in range(10)]
        assert not any(h.done() for h in first)
        await producer.flush(timeout=10)
        assert [h.result().offset for h in first] == list(range(10))
        second = [await producer.send(topic, b"b%d" % i, partition=1) for i in range(10)]
    finally:
        await producer.close()  # flushes by default
    assert [h.result().offset for h in second] == list(range(10))


async def test_close_without_flush_fails_pending_records(
    mock_cluster: MockCluster, topic: str
) -> None:
    producer = Producer(bootstrap_servers=mock_cluster.bootstrap_servers, linger_ms=60_000)
    await producer.start()
    handle = await producer.send(topic, b"never sent")
    await producer.close(flush=False)
    with pytest.raises(errors.ClientClosedError):
        await handle


async def test_acks_zero_never_waits_and_reports_offset_minus_one(
    mock_cluster: MockCluster, topic: str
) -> None:
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers, acks=0) as producer:
        assert not producer.idempotent
        handles = [await producer.send(topic, b"%d" % i, partition=2) for i in range(100)]
        results = [await h for h in handles]
    assert {m.offset for m in results} == {-1}
    read = await read_back(mock_cluster.bootstrap_servers, topic, 100)
    assert [int(r.value) for r in read] == list(range(100))  # type: ignore[arg-type]


async def test_serializers_partitions_for_and_explicit_partition(
    mock_cluster: MockCluster, topic: str
) -> None:
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        key_serializer=lambda k: k.encode(),
        value_serializer=lambda v: repr(v).encode(),
    ) as producer:
        assert await producer.partitions_for(topic) == [0, 1, 2]
        metadata = await producer.send_and_wait(topic, {"a": 1}, "key", partition=1)
        assert metadata.partition == 1
        with pytest.raises(errors.ConfigError):
            await producer.send(topic, {}, "k", partition=3)
    read = await read_back(mock_cluster.bootstrap_servers, topic, 1)
    assert (read[0].key, read[0].value) == (b"key", b"{'a': 1}")


async def test_unknown_topic_fails_after_max_block_ms(mock_cluster: MockCluster) -> None:
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, max_block_ms=300
    ) as producer:
        started = time.monotonic()
        with pytest.raises(errors.UnknownTopicError):
            await producer.send(unique_topic("missing"), b"x")
        assert time.monotonic() - started < 5


# ---------------------------------------------------------------- limits and back-pressure


async def test_oversized_record_fails_at_send(mock_cluster: MockCluster, topic: str) -> None:
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, max_request_size=10_000
    ) as producer:
        with pytest.raises(errors.RecordTooLargeError):
            await producer.send(topic, b"x" * 10_001)
        with pytest.raises(errors.RecordTooLargeError):
            await producer.send(topic, b"x", headers=[("h", b"y" * 10_000)])
        # A record that fits still goes through, larger than batch_size or not.
        metadata = await producer.send_and_wait(topic, b"x" * 9_000)
        assert metadata.offset == 0


async def test_broker_message_too_large_is_a_typed_error_without_retries(
    mock_cluster: MockCluster, topic: str
) -> None:
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        await producer.partitions_for(topic)
        mock_cluster.push_request_errors(0, [errors.MessageTooLargeError.code])
        handle = await producer.send(topic, b"refused", partition=0)
        with pytest.raises(errors.RecordTooLargeError, match=r"max\.message\.bytes") as info:
            await handle
        assert isinstance(info.value.__cause__, errors.MessageTooLargeError)
        assert handle._batch.attempts == 1
        assert (await producer.send_and_wait(topic, b"next", partition=0)).offset == 0


@pytest.mark.parametrize("batch_size", [16 * 1024, 1_000_000])
async def test_full_buffer_blocks_then_raises_buffer_full(
    mock_cluster: MockCluster, batch_size: int
) -> None:
    """A send waiting for memory for a new batch (16 KiB batches) or to grow the open one (1 MB
    batches, which grow into the free memory) raises BufferFullError after max_block_ms."""
    topic = unique_topic("bp")
    mock_cluster.create_topic(topic, partitions=1)
    buffer_memory = 64 * 1024
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        acks=1,
        buffer_memory=buffer_memory,
        batch_size=batch_size,
        max_block_ms=400,
        linger_ms=0,
        request_timeout_ms=20_000,
        delivery_timeout_ms=60_000,
    ) as producer:
        await producer.send_and_wait(topic, b"warm-up")
        mock_cluster.set_broker_rtt(-1, 30_000)  # the broker stops answering in time
        handles = []
        blocked_for = 0.0
        with pytest.raises(errors.BufferFullError):
            for _ in range(10_000):  # bounded: far more than the buffer holds
                started = time.monotonic()
                try:
                    handles.append(await producer.send(topic, b"v" * 1000))
                finally:
                    blocked_for = time.monotonic() - started
                assert producer.buffered_bytes <= buffer_memory
        assert 0.35 <= blocked_for < 5, blocked_for
        assert producer.buffered_bytes <= buffer_memory
        assert 0 < len(handles) < 100
        mock_cluster.set_broker_rtt(-1, 0)
        await producer.close(timeout=0.2)
    assert all(h.done() for h in handles)


async def test_batches_grow_their_reservation_as_records_arrive(
    mock_cluster: MockCluster, topic: str
) -> None:
    """A large batch_size costs only what the batches hold; a batch grows while memory is free."""
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        acks=1,
        batch_size=1_000_000,
        buffer_memory=200_000,
        linger_ms=60_000,  # nothing leaves before flush: the reservations stay visible
    ) as producer:
        # One small record per partition reserves a first slice each, not batch_size each.
        for partition in range(3):
            await producer.send(topic, b"x", partition=partition)
        assert producer.buffered_bytes == 3 * 16384
        # Partition 0's batch doubles its reservation as it fills, from the free memory.
        handles = [await producer.send(topic, b"v" * 1000, partition=0) for _ in range(100)]
        queue = producer._accumulator.batches[TopicPartition(topic, 0)]
        assert len(queue) == 1 and queue[0].count == 101
        assert queue[0].reserved == 131072  # 16 KiB -> 32 -> 64 -> 128 KiB: ~100 KB of records
        assert producer.buffered_bytes == 2 * 16384 + 131072
        # Doubling again would exceed buffer_memory: the batch takes what is free instead.  Once
        # nothing is, the send waits for memory rather than closing the batch early; a waiting
        # send makes every batch ready (the Java client's "exhausted"), so the batch leaves at
        # once despite the linger, and the record opens a new batch with the memory it freed.
        first = queue[0]
        more = [await producer.send(topic, b"v" * 1000, partition=0) for _ in range(80)]
        assert first.closed and not first.full
        assert first.reserved in (0, 200_000 - 2 * 16384)  # all that was free (0: released)
        assert 141 < first.count < 181  # well past the old cut at 128 KiB: no early close
        assert queue[-1] is not first and queue[-1].count == 181 - first.count
        assert producer.buffered_bytes <= 200_000
        await producer.flush()
        offsets = [(await h).offset for h in handles + more]
        assert offsets == list(range(1, 181))
        assert producer.buffered_bytes == 0


async def test_close_wakes_a_send_blocked_on_the_buffer(
    mock_cluster: MockCluster, topic: str
) -> None:
    producer = Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        buffer_memory=2 * 16384,
        batch_size=16384,
        linger_ms=60_000,
        max_block_ms=60_000,
        request_timeout_ms=60_000,
    )
    await producer.start()
    try:
        held = [await producer.send(topic, b"x", partition=p) for p in (0, 1)]
        assert producer.buffered_bytes == 2 * 16384
        # The waiting send makes the two batches leave at once (the buffer is "exhausted"), but
        # no answer comes to free their memory.
        mock_cluster.set_broker_rtt(-1, 30_000)
        blocked = asyncio.ensure_future(producer.send(topic, b"y", partition=2))
        for _ in range(20):  # let it run up to the point where it waits for memory
            await asyncio.sleep(0)
        assert not blocked.done()
    finally:
        started = time.monotonic()
        await producer.close(0.3, flush=False)
        # The timeout bounds the whole close: the terminating telemetry push, which no answer
        # ends either, took its own 5 s before.
        assert time.monotonic() - started < 3
    with pytest.raises(errors.ClientClosedError):
        await blocked
    for handle in held:
        with pytest.raises(errors.ClientClosedError):
            await handle


# ---------------------------------------------------------------- request shaping


async def test_one_produce_request_per_broker_up_to_max_request_size(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("shape")
    mock_cluster.create_topic(topic, partitions=6)
    for partition in range(6):
        mock_cluster.set_partition_leader(topic, partition, 1 if partition < 4 else 2)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, linger_ms=60_000
    ) as producer:
        await producer.partitions_for(topic)
        mock_cluster.start_request_tracking()
        for partition in range(6):
            await producer.send(topic, b"x" * 100, partition=partition)
        await producer.flush(timeout=10)
        produce = [r for r in mock_cluster.requests() if r.api_key == 0]
        # Four partitions on broker 1 in one request, two on broker 2 in another.
        assert sorted(r.broker_id for r in produce) == [1, 2]

    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        linger_ms=60_000,
        max_request_size=2500,
    ) as producer:
        mock_cluster.clear_requests()
        for partition in range(4):  # broker 1 only; each batch ~1 KB
            await producer.send(topic, b"y" * 1000, partition=partition)
        await producer.flush(timeout=10)
        produce = [r for r in mock_cluster.requests() if r.api_key == 0]
        assert [r.broker_id for r in produce] == [1, 1]


async def test_requests_cut_by_max_request_size_go_out_together(mock_cluster: MockCluster) -> None:
    """Large batches need a request each: one drain pass sends them all (up to max in flight)."""
    topic = unique_topic("cut")
    mock_cluster.create_topic(topic, partitions=4)
    for partition in range(4):
        mock_cluster.set_partition_leader(topic, partition, 1)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        acks=1,
        linger_ms=60_000,
        max_request_size=1500,  # one ~1 KB batch per request
    ) as producer:
        await producer.send_and_wait(topic, b"warm-up", partition=0)
        handles = [await producer.send(topic, b"y" * 1000, partition=p) for p in range(4)]
        mock_cluster.set_broker_rtt(1, 400)
        started = time.monotonic()
        await producer.flush(timeout=10)
        # One after another (a request per round trip) would take 4 x 400 ms.
        assert time.monotonic() - started < 1.2
        assert [(await h).partition for h in handles] == [0, 1, 2, 3]
        mock_cluster.set_broker_rtt(1, 0)


async def test_a_batch_that_fills_up_is_written_from_inside_send(
    mock_cluster: MockCluster, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """send() writes a full batch itself (no event-loop turn needed), answers send the next."""
    written_now: list[bool] = []
    write_now = BrokerSink._write_now

    def spy(self: BrokerSink, flight: Any) -> Any:
        prepared = write_now(self, flight)
        written_now.append(flight.connection is not None)
        return prepared

    monkeypatch.setattr(BrokerSink, "_write_now", spy)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        acks=1,
        batch_size=2048,
        linger_ms=60_000,
    ) as producer:
        await producer.send_and_wait(topic, b"opens the produce connection", partition=0)
        written_now.clear()
        handles = [await producer.send(topic, b"v" * 100, partition=0) for _ in range(200)]
        assert written_now and all(written_now)  # every full batch went out from send()
        await producer.flush(timeout=10)
        assert [(await h).offset for h in handles] == list(range(1, 201))


async def test_uniform_sticky_moves_keyed_records_on_when_a_batch_fills(
    mock_cluster: MockCluster, topic: str
) -> None:
    # UniformStickyPartitioner ignores keys, so full batches must move keyed records on too.
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        partitioner="uniform_sticky",
        batch_size=512,
        linger_ms=50,
    ) as producer:
        handles = [await producer.send(topic, b"v" * 100, key=b"same-key") for _ in range(60)]
        metadata = [await h for h in handles]
    assert len({m.partition for m in metadata}) > 1


async def test_a_full_batch_reads_the_answers_already_there(
    mock_cluster: MockCluster, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers that arrived while the loop was busy are handled inside send(), at once."""
    require_direct_reads()
    answered: list[bool] = []  # per answer: did the event loop turn before it was handled?
    turned: list[bool] = []
    handled = BrokerSink.answered

    def spy(self: BrokerSink, flight: Any, response: Any, error: BaseException | None) -> None:
        answered.append(bool(turned))
        handled(self, flight, response, error)

    monkeypatch.setattr(BrokerSink, "answered", spy)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, acks=1, batch_size=2048, linger_ms=60_000
    ) as producer:
        await producer.partitions_for(topic)  # the produce connection is open from here on
        first = [await producer.send(topic, b"v" * 100, partition=0) for _ in range(25)]
        assert not first[0].done()  # its batch was written from inside send(), not answered
        block_loop(0.5)  # the broker answers; only a direct read can see it now
        asyncio.get_running_loop().call_soon(turned.append, True)
        answered.clear()
        # The next batch to fill reads that answer before the loop turns (and before the
        # sleep(0) that send() then takes).
        more = [await producer.send(topic, b"v" * 100, partition=0) for _ in range(20)]
        assert answered and answered[0] is False
        assert first[0].done()
        await producer.flush(timeout=10)
        offsets = [(await h).offset for h in first + more]
    assert offsets == list(range(45))


async def test_partitions_for_connects_the_leaders_and_tolerates_a_dead_one(
    mock_cluster: MockCluster, topic: str
) -> None:
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers, acks=1) as producer:
        cluster = producer._cluster
        assert cluster is not None
        await producer.partitions_for(topic)
        leaders = {cluster.metadata.leader_for(topic, p) for p in range(3)}
        for node in leaders:
            assert node is not None
            broker = cluster.metadata.brokers[node]
            connection = cluster.pool.cached(broker.host, broker.port, "produce")
            assert connection is not None and not connection.closed
    # A leader that cannot be reached: partitions_for answers anyway, promptly.
    other = unique_topic("deadleader")
    mock_cluster.create_topic(other, partitions=1)
    mock_cluster.set_partition_leader(other, 0, 3)
    mock_cluster.broker_down(3)
    try:
        async with Producer(
            bootstrap_servers=mock_cluster.bootstrap_servers, acks=1, max_block_ms=3000
        ) as producer:
            started = time.monotonic()
            assert await producer.partitions_for(other) == [0]
            assert time.monotonic() - started < 3.5
    finally:
        mock_cluster.broker_up(3)


async def test_a_failed_writer_is_restarted_by_its_key(
    mock_cluster: MockCluster, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker's writer task that dies is restarted (key ("writer", node)), its queue kept."""
    write_queued = BrokerSink._write_queued
    failures: list[Any] = []

    async def fails_once(self: BrokerSink) -> None:
        if not failures:
            failures.append(self.writer_key)
            raise RuntimeError("writer bug")
        await write_queued(self)

    monkeypatch.setattr(BrokerSink, "_write_queued", fails_once)
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers, acks=1) as producer:
        # No produce connection is open yet: the request waits in the sink's queue.
        metadata = await asyncio.wait_for(
            producer.send_and_wait(topic, b"v", partition=0), timeout=10
        )
    assert metadata.offset == 0
    assert len(failures) == 1 and failures[0][0] == "writer"
