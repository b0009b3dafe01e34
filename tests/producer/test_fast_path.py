"""The accumulator's compiled common case (``_cproducer.Appender``) against its Python path.

Each scenario runs once with the fast path and once without it, on two topics of the same
shape, with a fake clock: the batches' bytes, the handles, the metadata, and the errors must be
the same.  Where the extension is built, the fast path is also tested over the pure-Python
record builder (it is used whatever builder the batch holds).  With ``AIOKAFKAWIRE_PURE_PYTHON=1``
only the Python path runs (the compiled batch and handle types are off too).
"""

from __future__ import annotations

import asyncio
import gc
import random
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _producer_helpers import unique_topic

import aiokafkawire.producer._accumulator as accumulator_module
import aiokafkawire.producer.producer as producer_module
from aiokafkawire import errors
from aiokafkawire.producer import Producer
from aiokafkawire.producer._batch import DeliveryHandle, ProducerBatch
from aiokafkawire.producer.partitioner import DefaultPartitioner, partition_for_key
from aiokafkawire.protocol.records import _pure as pure_records
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster

_accelerator = accumulator_module._accelerator
Appender = None if _accelerator is None else _accelerator.Appender

needs_extension = pytest.mark.skipif(
    Appender is None, reason="_cproducer is not built or pure Python is forced"
)
PARTITIONS = 3


class FakeClock:
    """``time.time`` stand-in: one value per send, moved on by the test."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def tick(self) -> None:
        self.now += 0.0013


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(producer_module, "_wall_clock", fake)
    return fake


@pytest.fixture
def payloads(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[int, bytes]]]:
    """Every batch's bytes as encoded for a Produce request, by topic."""
    seen: dict[str, list[tuple[int, bytes]]] = {}
    encode = ProducerBatch.encode

    def recording_encode(batch: ProducerBatch, *args: Any) -> bytes:
        payload = encode(batch, *args)
        seen.setdefault(batch.topic, []).append((batch.partition, payload))
        return payload

    monkeypatch.setattr(ProducerBatch, "encode", recording_encode)
    return seen


def _topic(mock_cluster: MockCluster) -> str:
    name = unique_topic("fast")
    mock_cluster.create_topic(name, partitions=PARTITIONS)
    return name


def _producer(mock_cluster: MockCluster, **options: Any) -> Producer:
    settings: dict[str, Any] = {
        "bootstrap_servers": mock_cluster.bootstrap_servers,
        "acks": 1,
        "linger_ms": 60_000,  # batches leave when full or flushed: the same batches each run
        "batch_size": 600,
        # Seeded: keyless records take the same sticky partitions in every run.
        "partitioner": DefaultPartitioner(rng=random.Random(42)),
    }
    settings.update(options)
    return Producer(**settings)


async def _start(producer: Producer, fast: bool | str) -> None:
    """Start ``producer`` with the fast path as asked: True, False, or "pure-builder"."""
    if fast == "pure-builder":
        # The batches hold the pure-Python builder: the fast path calls its append method.
        producer._accumulator.builder_type = pure_records.RecordBatchBuilder
    await producer.start()
    if not fast:
        producer._fast_append = None
    else:
        assert producer._fast_append is not None


def _modes() -> Iterator[Any]:
    yield pytest.param(True, marks=needs_extension, id="fast")
    yield pytest.param("pure-builder", marks=needs_extension, id="fast-over-any-builder")


def _records() -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    """(value, key, options) of a varied workload; the fast path takes most of them."""
    for i in range(400):
        key: Any = b"key-%d" % (i % 23)
        value: Any = b"v%d-" % i + b"x" * (i % 70)
        options: dict[str, Any] = {}
        if i % 13 == 0:
            value = None  # a tombstone
        if i % 5 == 0:
            key = None  # the sticky partition
        if i % 31 == 0:
            key = bytearray(b"k%d" % i)  # not bytes: the Python path
        if i % 37 == 0:
            options["headers"] = [("h", b"1"), ("n", None)]
        if i % 41 == 0:
            options["partition"] = i % PARTITIONS
        if i % 43 == 0:
            options["timestamp"] = 1_600_000_000_000 + i
        if i % 47 == 0:
            value = memoryview(b"mv" * 10)
        yield value, key, options


async def _scenario(
    producer: Producer, topic: str, clock: FakeClock
) -> tuple[list[tuple[str, int, str]], list[tuple[int, int, int]]]:
    handles = []
    for value, key, options in _records():
        handle = await producer.send(topic, value, key, **options)
        handles.append(handle)
        clock.tick()
    # (Whether a handle is done yet depends on the network's timing: its repr without that.)
    described = [
        (type(h).__name__, h.partition, repr(h).replace(topic, "T").rsplit(" ", 1)[0])
        for h in handles
    ]
    await producer.flush()
    assert producer.buffered_bytes == 0
    metadata = []
    for handle in handles:
        assert handle.done() and handle.exception() is None
        result = await handle
        assert result == handle.result() and result.topic == topic == handle.topic
        metadata.append((result.partition, result.offset, result.timestamp))
    return described, metadata


@pytest.mark.parametrize("fast", list(_modes()))
async def test_same_batches_handles_and_metadata(
    mock_cluster: MockCluster,
    clock: FakeClock,
    payloads: dict[str, list[tuple[int, bytes]]],
    fast: bool | str,
) -> None:
    results = []
    topics = []
    for use_fast in (False, fast):
        clock.now = 1_700_000_000.0
        topic = _topic(mock_cluster)
        topics.append(topic)
        async with _producer(mock_cluster) as producer:
            await producer.partitions_for(topic)
            await _start(producer, use_fast)
            calls = _count_fast_calls(producer)
            results.append(await _scenario(producer, topic, clock))
            if use_fast:
                assert calls["handles"] > 250  # most records took the fast path
    assert results[0] == results[1]
    python_batches, fast_batches = (payloads[t] for t in topics)
    assert len(python_batches) > 10  # batches filled up and moved on, in both runs
    for partition in range(PARTITIONS):  # the same batches, in the same order, per partition
        assert [b for p, b in python_batches if p == partition] == [
            b for p, b in fast_batches if p == partition
        ]


def _count_fast_calls(producer: Producer) -> dict[str, int]:
    calls = {"handles": 0, "python": 0}
    fast_send = producer._fast_append
    if fast_send is None:
        return calls

    def counting(*args: Any) -> DeliveryHandle | None:
        assert fast_send is not None
        handle = fast_send(*args)
        calls["handles" if handle is not None else "python"] += 1
        return handle

    producer._fast_append = counting
    return calls


@pytest.mark.parametrize("fast", [False, *_modes()])
async def test_same_errors(mock_cluster: MockCluster, fast: bool | str) -> None:
    topic = _topic(mock_cluster)
    producer = _producer(mock_cluster, max_request_size=2_000)
    with pytest.raises(errors.IllegalStateError):
        await producer.send(topic, b"x", b"k")
    await _start(producer, fast)
    await producer.send(topic, b"first", b"k")  # the partition has an open batch
    with pytest.raises(errors.RecordTooLargeError, match="max_request_size"):
        await producer.send(topic, b"x" * 2_000, b"k")
    with pytest.raises(errors.ConfigError, match="partitions"):
        await producer.send(topic, b"x", b"k", partition=PARTITIONS)
    handle = await producer.send(topic, b"after", b"k")
    await producer.flush()
    assert (await handle).offset == 1
    txn = producer._txn
    assert txn is not None
    await producer.send(topic, b"open", b"k")  # open batches, keyed and sticky
    await producer.send(topic, b"open")
    await producer.send(topic, b"open")
    txn.set_fatal(errors.ProducerFencedClientError("fenced"))  # the fast path hears of it
    for key in (b"k", None):
        with pytest.raises(errors.ProducerFencedClientError):
            await producer.send(topic, b"x", key)
    await producer.close()
    with pytest.raises(errors.ClientClosedError):
        await producer.send(topic, b"x", b"k")
    assert producer._fast_append is None


@pytest.mark.parametrize("fast", [False, *_modes()])
async def test_new_metadata_reaches_the_fast_path(
    mock_cluster: MockCluster, fast: bool | str
) -> None:
    """A topic recreated with more partitions: keyed records follow the new partition count
    at once (the fast path's pushed partition table is dropped with the old metadata)."""
    topic = _topic(mock_cluster)
    key = next(k for k in (b"k%d" % i for i in range(100)) if partition_for_key(k, 6) >= 3)
    async with _producer(mock_cluster) as producer:
        await _start(producer, fast)
        calls = _count_fast_calls(producer)
        for _ in range(3):
            handle = await producer.send(topic, b"v", key)
        assert handle.partition == partition_for_key(key, PARTITIONS)
        # (The batch stays open: linger_ms is long.)
        mock_cluster.delete_topic(topic)
        mock_cluster.create_topic(topic, partitions=6)
        cluster = producer._cluster
        assert cluster is not None
        await cluster.refresh_metadata([topic])
        assert len(cluster.metadata.topics[topic].partitions) == 6
        handles = [await producer.send(topic, b"v", key) for _ in range(3)]
        assert [h.partition for h in handles] == [partition_for_key(key, 6)] * 3
        if fast:
            assert calls["handles"] >= 3  # the fast path took records before and after
        await producer.flush()


@needs_extension
@pytest.mark.parametrize("fast", [True, "pure-builder"])
async def test_fast_send_declines_before_any_side_effect(
    mock_cluster: MockCluster, clock: FakeClock, fast: bool | str
) -> None:
    topic = _topic(mock_cluster)
    async with _producer(mock_cluster, batch_size=200) as producer:
        await _start(producer, fast)
        fast_send = producer._fast_append
        assert fast_send is not None
        appender: Any = fast_send.__self__  # type: ignore[attr-defined]
        key = b"some-key"

        def attempt(value: Any = b"v", key: Any = key, *extra: Any) -> DeliveryHandle | None:
            assert fast_send is not None
            return fast_send(topic, value, key, *(extra or (None, None, None)))

        await producer.partitions_for(topic)
        assert attempt() is None  # the partition cache is not filled yet
        first = await producer.send(topic, b"v", key)
        batch = first._batch
        assert (batch.count, first._index) == (1, 0)

        handle = attempt()
        assert type(handle) is DeliveryHandle
        assert handle._batch is batch and handle._index == 1
        assert handle._timestamp == int(clock.now * 1000)
        assert handle.topic == topic and handle.partition == first.partition
        assert repr(handle) == f"<DeliveryHandle {topic}-{first.partition} #1 pending>"
        assert batch.count == 2

        declined: list[tuple[Any, ...]] = [
            (None, key),  # a tombstone is fine, but:
            (b"v", None),  # no key, and no sticky partition chosen yet
            (b"v", bytearray(key)),
            (bytearray(b"v"), key),
            (b"v", key, 0, None, None),
            (b"v", key, None, 5, None),
            (b"v", key, None, None, []),
            (b"x" * 2_000_000, key),  # too large: the Python path raises
            (b"x" * 300, key),  # does not fit the batch: the Python path opens the next
        ]
        count = batch.count
        for args in declined[1:]:
            assert attempt(*args) is None, args
            assert batch.count == count and not batch.full
        assert attempt(*declined[0]) is not None
        keyless = await producer.send(topic, b"v")  # the partitioner chooses a sticky partition
        handle = attempt(b"v", None)
        assert handle is not None and handle.partition == keyless.partition
        # Only what the accumulator pushed counts: a sticky partition out of range (a shrunk
        # topic) declines, the partitioner chooses again.
        appender.set_sticky(topic, PARTITIONS)
        assert attempt(b"v", None) is None
        appender.set_sticky(topic, keyless.partition)
        assert attempt(b"v", None) is not None

        count = batch.count
        # New metadata: the lanes are dropped; the Python path pushes the topic's again.
        cluster = producer._cluster
        assert cluster is not None
        await cluster.refresh_metadata([topic])
        assert attempt() is None and batch.count == count
        await producer.send(topic, b"v", key)
        assert attempt() is not None
        batch.closed = True  # drained: the batch's own C field
        assert attempt() is None and batch.count == count + 2
        batch.closed = False
        appender.enabled = False  # what the accumulator's close() does
        assert attempt() is None
        appender.enabled = True
        assert attempt() is not None
        txn = producer._txn
        assert txn is not None
        txn.set_fatal(errors.ProducerFencedClientError("fenced"))
        assert attempt() is None and attempt(b"v", None) is None
        assert not appender.enabled


@needs_extension
async def test_appender_errors_and_references(mock_cluster: MockCluster) -> None:
    assert Appender is not None
    with pytest.raises(TypeError):
        Appender()
    topic = _topic(mock_cluster)

    class NotAHandle:
        pass

    async with _producer(mock_cluster, batch_size=100_000) as producer:
        base: dict[str, Any] = {
            "keyed": partition_for_key,
            "clock": producer_module._wall_clock,
            "handle_type": DeliveryHandle,
            "max_record_size": producer._max_record_size,
            "overhead": producer_module._RECORD_OVERHEAD,
        }
        for bad in ({"handle_type": NotAHandle}, {"keyed": 3}, {"clock": None}):
            with pytest.raises(TypeError):
                Appender(**{**base, **bad})
        uninitialized = Appender.__new__(Appender)
        with pytest.raises(RuntimeError, match="not initialized"):
            uninitialized.append(topic, b"v", b"k", None, None, None)
        fast = Appender(**base)
        with pytest.raises(TypeError):
            fast.append(topic, b"v", b"k")
        pushes: list[tuple[Any, tuple[Any, ...]]] = [
            (fast.add_topic, (topic, "3")),
            (fast.add_topic, (3, 3)),
            (fast.set_open, (object(),)),
            (fast.set_sticky, (topic,)),
        ]
        for push, args in pushes:
            with pytest.raises(TypeError):
                push(*args)
        with pytest.raises(ValueError):
            fast.add_topic(topic, -1)
        await producer.partitions_for(topic)
        first = await producer.send(topic, b"v", b"k")  # opens the partition's batch

        def boom(key: bytes, count: int) -> int:
            raise ZeroDivisionError("from the partitioner")

        failing = Appender(**{**base, "keyed": boom})
        failing.add_topic(topic, PARTITIONS)
        with pytest.raises(ZeroDivisionError, match="from the partitioner"):
            failing.append(topic, b"v", b"k", None, None, None)

        fast.add_topic(topic, PARTITIONS)
        assert fast.append(topic, b"v", b"k", None, None, None) is None  # no open batch
        fast.set_open(first._batch)
        # With the real clock (time.time), the C code reads the system clock itself.
        assert base["clock"] is time.time
        for _ in range(1000):
            earliest = int(time.time() * 1000)
            handle = fast.append(topic, b"v", b"k", None, None, None)
            if handle is None:  # the batch must grow first: the Python path does that
                handle = await producer.send(topic, b"v", b"k")
                fast.set_open(handle._batch)
            latest = int(time.time() * 1000)
            assert handle is not None and earliest <= handle._timestamp <= latest
        del handle

        value = b"a value that is not shared with anything else %d" % id(producer)
        before = sys.getrefcount(value)
        await producer.flush()  # the next records go to a new batch, with room for them all
        fast.set_open((await producer.send(topic, b"v", b"k"))._batch)
        handles = [fast.append(topic, value, b"k", None, None, None) for _ in range(100)]
        assert all(type(h) is DeliveryHandle for h in handles)
        assert sys.getrefcount(value) == before  # the builder copies, keeps no reference
        del handles
        fast.forget()
        assert fast.append(topic, b"v", b"k", None, None, None) is None
        gc.collect()
        producer._fast_append = None
    del fast, failing
    gc.collect()


@needs_extension
async def test_appender_uses_only_what_was_pushed() -> None:
    """The appender's state is what the accumulator pushed, nothing it reads by itself."""
    assert Appender is not None
    topic = "pushed"
    fast = Appender(
        keyed=partition_for_key,
        clock=lambda: 1_700_000_000.0,
        handle_type=DeliveryHandle,
        max_record_size=1_000_000,
        overhead=producer_module._RECORD_OVERHEAD,
    )
    loop = asyncio.get_running_loop()

    def batch(partition: int) -> ProducerBatch:
        builder = accumulator_module.RecordBatchBuilder(2, batch_size=10_000)
        tp = TopicPartition(topic, partition)
        return ProducerBatch(tp, builder, 2, loop.create_future(), 0.0, partition, 10_000)

    def append(key: bytes | None) -> DeliveryHandle | None:
        return fast.append(topic, b"v", key, None, None, None)

    key = next(k for k in (b"k%d" % i for i in range(100)) if partition_for_key(k, 5) >= 3)
    assert append(key) is None and append(None) is None  # no lane
    fast.add_topic(topic, 3)
    batches = [batch(p) for p in range(5)]
    fast.set_open(batches[4])  # not a partition of the lane: ignored
    assert append(key) is None and append(None) is None  # no open batch, no sticky one
    for b in batches:
        fast.set_open(b)
    handle = append(key)
    assert handle is not None and handle.partition == partition_for_key(key, 3)
    assert append(None) is None
    fast.set_sticky(topic, 2)
    handle = append(None)
    assert (
        handle is not None
        and handle._batch is batches[2]
        and batches[2].count == 2 - (partition_for_key(key, 3) != 2)
    )
    for gone in (None, 3, -1, True):
        fast.set_sticky(topic, gone)
        assert append(None) is None
    fast.add_topic(topic, 5)  # new metadata: 5 partitions, nothing open yet
    assert append(key) is None
    fast.set_open(batches[partition_for_key(key, 5)])
    handle = append(key)
    assert handle is not None and handle.partition == partition_for_key(key, 5) >= 3
    batches[partition_for_key(key, 5)].builder = None  # failed or built: declines
    assert append(key) is None
    fast.forget()
    fast.set_sticky(topic, 1)  # no lane: ignored
    fast.set_open(batches[1])
    assert append(None) is None
    fast.add_topic(topic, 3)
    fast.set_open(batches[1])
    fast.set_sticky(topic, 1)
    assert append(None) is not None
    fast.enabled = False
    assert append(None) is None


def test_the_c_append_reads_no_python_attribute() -> None:
    """``_cproducer.c`` looks up attributes only to load (``time.time``, the records API) and
    for the builder's ``append`` method, the handle's ``_await_pending`` and ``result`` and the
    batch's ``add_waiter`` (a pending handle's wait); ``SendMethod`` reads the producer's
    ``_fast_append``, forwards ``throw``/``close`` to the wrapped coroutine and every other
    attribute to the wrapped function (its ``__doc__`` included); by a literal name it calls
    only ``__await__`` (the awaitable protocol, for a waiter type without the C slot)."""
    source = (Path(accumulator_module.__file__).parent / "_cproducer.c").read_text()
    lookups = re.findall(r"PyObject_GetAttr\w*\(([\w\[\]>-]+), (\"?\w+)", source)
    assert lookups == [
        ("time_module", '"time'),
        ("args[0]", "str_fast_append"),
        ("self->inner", "str_throw"),
        ("self->func", "name"),
        ("self->func", '"__doc__'),
        ("records", "CRECORDS_API_ATTRIBUTE"),
    ]
    by_literal = re.findall(r'PyObject_\w*Method\w*\(\s*\w+,\s*"(\w+)"', source)
    assert by_literal == ["__await__"]
    interned = re.findall(r'PyUnicode_InternFromString\("(\w+)"\)', source)
    assert interned == [
        "append",
        "_await_pending",
        "add_waiter",
        "result",
        "_fast_append",
        "throw",
        "close",
    ]


@pytest.mark.parametrize("fast", [False, *_modes()])
async def test_handle_callbacks_and_failures(mock_cluster: MockCluster, fast: bool | str) -> None:
    topic = _topic(mock_cluster)
    producer = _producer(mock_cluster)
    await _start(producer, fast)
    handle = await producer.send(topic, b"v", b"k")
    seen: list[DeliveryHandle] = []
    handle.add_done_callback(seen.append)
    assert not handle.done()
    with pytest.raises(asyncio.InvalidStateError):
        handle.result()
    await producer.close(flush=False)
    for _ in range(3):
        await asyncio.sleep(0)  # done callbacks run from the event loop
    assert seen == [handle] and handle.done()
    assert isinstance(handle.exception(), errors.ClientClosedError)
    with pytest.raises(errors.ClientClosedError):
        await handle


@pytest.mark.parametrize("partitioner", ["round_robin", "uniform_sticky", lambda k, a, v: a[0]])
async def test_only_the_default_partitioner_without_serializers_takes_the_fast_path(
    mock_cluster: MockCluster, partitioner: Any
) -> None:
    topic = _topic(mock_cluster)
    async with _producer(mock_cluster, partitioner=partitioner) as producer:
        assert producer._fast_append is None
        await producer.send(topic, b"v", b"k")
    async with _producer(mock_cluster, value_serializer=bytes) as producer:
        assert producer._fast_append is None
        handle = await producer.send(topic, b"v", b"k")
        assert handle.partition == partition_for_key(b"k", PARTITIONS)
    async with _producer(mock_cluster) as producer:
        assert (producer._fast_append is None) is (Appender is None)


@needs_extension
async def test_a_transactional_producer_appends_in_c_only_inside_a_transaction(
    mock_cluster: MockCluster,
) -> None:
    """The compiled append serves transactional producers too, and only while a transaction is
    open: before ``begin_transaction``, after a commit, after a fatal error, ``send`` raises as
    the Python path does (the appender follows the transaction's state, pushed to it)."""
    topic = _topic(mock_cluster)
    producer = _producer(
        mock_cluster, acks="all", transactional_id=unique_topic("fast-txn"), batch_size=100_000
    )
    await producer.start()
    try:
        assert producer._fast_append is not None
        python_appends = 0
        python_append = producer._accumulator.append

        async def counted(*args: Any) -> DeliveryHandle:
            nonlocal python_appends
            python_appends += 1
            return await python_append(*args)

        producer._accumulator.append = counted  # type: ignore[method-assign]
        with pytest.raises(errors.IllegalStateError, match="begin_transaction"):
            await producer.send(topic, b"x", b"k")
        await producer.partitions_for(topic)  # metadata known: no refresh resets the lanes
        for round_ in range(2):
            await producer.begin_transaction()
            before = python_appends
            handles = [await producer.send(topic, b"v%d" % i, b"k") for i in range(5)]
            # The first opens the partition's batch (Python: it joins the transaction), the
            # others go into it in C.
            assert python_appends == before + 1
            await producer.commit_transaction()
            offsets = [(await h).offset for h in handles]
            assert offsets == list(range(offsets[0], offsets[0] + 5))  # one batch, in order
            with pytest.raises(errors.IllegalStateError, match="begin_transaction"):
                await producer.send(topic, b"after commit %d" % round_, b"k")
        txn = producer._txn
        assert txn is not None
        await producer.begin_transaction()
        await producer.send(topic, b"open", b"k")  # an open batch the C path could append to
        txn.set_abortable(errors.KafkaError("a batch of this transaction failed"))
        with pytest.raises(errors.IllegalStateError, match="must be aborted"):
            await producer.send(topic, b"x", b"k")
        await producer.abort_transaction()
        await producer.begin_transaction()
        await producer.send(topic, b"open", b"k")
        txn.set_fatal(errors.ProducerFencedClientError("fenced"))  # type: ignore[union-attr]
        with pytest.raises(errors.ProducerFencedClientError):
            await producer.send(topic, b"x", b"k")
    finally:
        await producer.close()


@needs_extension
async def test_the_records_of_one_millisecond_share_their_timestamp_object(
    mock_cluster: MockCluster, clock: FakeClock
) -> None:
    """The appender makes one int per millisecond, not one per record."""
    topic = _topic(mock_cluster)
    producer = _producer(mock_cluster)
    await _start(producer, True)
    try:
        for value in (b"a", b"a2"):  # open the batch and the lane: the Python path
            await producer.send(topic, value, b"k")
        first = await producer.send(topic, b"b", b"k")
        second = await producer.send(topic, b"c", b"k")
        clock.tick()
        third = await producer.send(topic, b"d", b"k")
        assert first._timestamp is second._timestamp
        assert third._timestamp == first._timestamp + 1
    finally:
        await producer.close(flush=False)


def test_the_producer_keeps_the_fast_append_in_a_slot() -> None:
    """The compiled send reads ``_fast_append`` per record: a member, not a dict lookup (the
    instances keep a ``__dict__`` and weak references)."""
    import weakref

    assert type(Producer.__dict__["_fast_append"]).__name__ == "member_descriptor"
    producer = Producer(bootstrap_servers="127.0.0.1:9")
    assert weakref.ref(producer)() is producer and isinstance(vars(producer), dict)
