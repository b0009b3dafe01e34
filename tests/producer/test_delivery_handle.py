"""DeliveryHandle on both paths: over the C base type (outside the cyclic GC), and pure Python.

With the extension built, ``DeliveryHandle`` subclasses ``_cproducer.HandleCore`` (the fields
and a C ``__await__`` for delivered records); the same expectations run with
``AIOKAFKAWIRE_PURE_PYTHON=1`` over the pure-Python base.  No broker: batches are resolved by
hand, so every outcome (pending, delivered, log append time, acks=0, failed) is reached exactly.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import pytest

from aiokafkawire import errors
from aiokafkawire.producer import RecordMetadata
from aiokafkawire.producer import _batch as batch_module
from aiokafkawire.producer._batch import DeliveryHandle, ProducerBatch
from aiokafkawire.structs import TopicPartition

_accelerator = batch_module._accelerator

needs_extension = pytest.mark.skipif(
    _accelerator is None, reason="the C handle type is not built or not in use"
)


def _batch_for(loop: asyncio.AbstractEventLoop, topic: str = "t", partition: int = 2) -> Any:
    return ProducerBatch(TopicPartition(topic, partition), None, 2, loop.create_future(), 0.0, 1, 0)


async def _outcomes(handle_type: Any) -> list[Any]:
    loop = asyncio.get_running_loop()
    seen: list[Any] = []
    delivered = _batch_for(loop)
    a, b = handle_type(delivered, 0, 111), handle_type(delivered, 7, 222)
    waiter = asyncio.ensure_future(_await(a))
    await asyncio.sleep(0)
    assert not waiter.done() and not a.done()
    delivered.complete(40, -1)
    seen += [await waiter, await b, await b, a.result(), a.done(), a.exception()]
    log_appended = _batch_for(loop)
    delivered_later = handle_type(log_appended, 3, 5)
    log_appended.complete(10, 999)
    seen.append(await delivered_later)
    fire_and_forget = _batch_for(loop)
    no_offset = handle_type(fire_and_forget, 4, 77)
    fire_and_forget.complete(-1, -1)
    seen.append(await no_offset)
    failed_batch = _batch_for(loop)
    failed = handle_type(failed_batch, 0, 1)
    failed_batch.fail(errors.NotLeaderOrFollowerError("gone"))
    with pytest.raises(errors.NotLeaderOrFollowerError, match="gone"):
        await failed
    seen.append(type(failed.exception()).__name__)
    called: list[Any] = []
    pending_batch = _batch_for(loop)
    pending = handle_type(pending_batch, 1, 2)
    pending.add_done_callback(called.append)
    pending_batch.complete(5, -1)
    await asyncio.sleep(0)
    seen.append(called == [pending])
    seen.append((pending.topic, pending.partition, repr(pending).split(" #")[0]))
    return seen


async def _await(handle: Any) -> Any:
    return await handle


async def test_the_active_handle_behaves_like_the_python_class() -> None:
    outcomes = await _outcomes(DeliveryHandle)
    assert outcomes[:3] == [
        RecordMetadata("t", 2, 40, 111),
        RecordMetadata("t", 2, 47, 222),
        RecordMetadata("t", 2, 47, 222),
    ]
    assert all(type(m) is RecordMetadata for m in outcomes[:3])
    assert outcomes[3:6] == [RecordMetadata("t", 2, 40, 111), True, None]
    assert outcomes[6] == RecordMetadata("t", 2, 13, 999)  # log append time wins
    assert outcomes[7] == RecordMetadata("t", 2, -1, 77)  # acks=0: no offset
    assert outcomes[8:] == [
        "NotLeaderOrFollowerError",
        True,
        ("t", 2, "<DeliveryHandle t-2"),
    ]


@needs_extension
async def test_handles_kept_alive_do_not_bring_collections_on() -> None:
    """A class statement gives instances a GC header, and allocating one counted toward the next
    collection even untracked: 1,000 tasks keeping 100 handles each ran a collection every 700
    records and full ones every ~100,000 (workload 6).  Compiled handles have no GC header."""
    assert not DeliveryHandle.__flags__ & (1 << 14)  # Py_TPFLAGS_HAVE_GC
    batch = _batch_for(asyncio.get_running_loop())
    gc.collect()
    collections_before = sum(stats["collections"] for stats in gc.get_stats())
    kept = [DeliveryHandle(batch, index, 1) for index in range(20_000)]
    assert sum(stats["collections"] for stats in gc.get_stats()) == collections_before
    assert not any(gc.is_tracked(handle) for handle in kept[:10])
    assert sys.getsizeof(kept[0]) == sys.getsizeof(_accelerator.HandleCore(batch, 0, 1))
    del kept
    with pytest.raises(TypeError):
        _accelerator.handles_outside_gc(int)  # not a handle class
    with pytest.raises(TypeError):
        _accelerator.handles_outside_gc(type("WithDict", (DeliveryHandle,), {}))  # adds a dict


@needs_extension
async def test_the_c_handle_is_outside_the_cyclic_gc_and_matches_the_pure_class() -> None:
    assert _accelerator is not None
    assert issubclass(DeliveryHandle, _accelerator.HandleCore)
    assert issubclass(ProducerBatch, _accelerator.BatchCore)
    loop = asyncio.get_running_loop()
    handle = DeliveryHandle(_batch_for(loop), 0, 1)
    assert not gc.is_tracked(handle)
    assert DeliveryHandle.__doc__ and "await handle" in DeliveryHandle.__doc__
    assert DeliveryHandle.__qualname__ == "DeliveryHandle"
    keywords = DeliveryHandle(batch=handle._batch, index=3, timestamp=4)
    assert (keywords._index, keywords._timestamp) == (3, 4)
    with pytest.raises(TypeError):
        DeliveryHandle(handle._batch, 0)
    with pytest.raises(TypeError):
        DeliveryHandle(object(), 0, 1)  # not a batch
    with pytest.raises(TypeError):
        _accelerator.set_metadata_type(dict)  # not a tuple type
    # References: awaiting many delivered handles leaks nothing.
    batch = _batch_for(loop)
    batch.complete(0, -1)
    handles = [DeliveryHandle(batch, i, 9) for i in range(100)]
    before = sys.getrefcount(batch)
    for h in handles:
        await h
    assert sys.getrefcount(batch) == before
    # The iterator protocol without `await` (what asyncio.wrap_future-like code may do).
    iterator = handles[5].__await__()
    with pytest.raises(StopIteration) as stop:
        next(iterator)
    assert stop.value.value == RecordMetadata("t", 2, 5, 9)
    with pytest.raises(StopIteration) as again:
        next(iterator)
    assert again.value.value is None
    # A pending handle's __await__ waits in C (no generator frame) on a future of its own.
    pending_batch = _batch_for(loop)
    pending = DeliveryHandle(pending_batch, 0, 1)
    waiting = pending.__await__()
    assert not hasattr(waiting, "gi_frame")
    own = next(waiting)  # what a task would wait on: not the batch's future
    assert own is pending_batch.waiters[0] and own is not pending_batch.future
    pending_batch.complete(3, -1)
    with pytest.raises(StopIteration) as woken:
        next(waiting)
    assert woken.value.value == RecordMetadata("t", 2, 3, 1)
    # A failed batch: the Python method raises its error; pending waits leak nothing either.
    failing = _batch_for(loop)
    waiters = [asyncio.ensure_future(_await(DeliveryHandle(failing, 0, 1))) for _ in range(50)]
    before = sys.getrefcount(failing)
    await asyncio.sleep(0)
    failing.fail(errors.KafkaConnectionError("cut"))
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(r, errors.KafkaConnectionError) for r in results)
    del results, waiters
    assert sys.getrefcount(failing) <= before


async def test_a_built_batch_takes_new_producer_fields_without_re_encoding() -> None:
    from aiokafkawire.protocol.records import RecordBatchBuilder, iter_batches

    loop = asyncio.get_running_loop()
    builder = RecordBatchBuilder(2, batch_size=1 << 16)
    for i in range(3):
        assert builder.append(1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i)
    batch = ProducerBatch(TopicPartition("t", 0), builder, 2, loop.create_future(), 0.0, 1, 0)
    batch.count = 3
    first = batch.encode(7, 1, 0)
    assert batch.encode(7, 1, 0) is first  # unchanged fields: the same bytes
    renumbered = batch.encode(7, 2, 40)
    assert len(renumbered) == len(first) and renumbered != first
    for payload, (pid, epoch, sequence) in ((first, (7, 1, 0)), (renumbered, (7, 2, 40))):
        [parsed] = list(iter_batches(payload, check_crcs=True))  # the CRC was recomputed
        assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (
            pid,
            epoch,
            sequence,
        )
        assert [r.value for r in parsed] == [b"v0", b"v1", b"v2"]


async def test_a_cancelled_waiter_leaves_the_batch_and_its_other_handles_alone() -> None:
    # Cancelling a task that awaits a pending handle (a request handler cancelled inside
    # send_and_wait, a wait_for timeout) used to cancel the batch's future itself: every other
    # record of the batch then raised CancelledError although it was delivered.
    loop = asyncio.get_running_loop()
    batch = _batch_for(loop)
    first, second, third = (DeliveryHandle(batch, i, 5) for i in range(3))
    cancelled = asyncio.ensure_future(_await(first))
    patient = asyncio.ensure_future(_await(second))
    await asyncio.sleep(0)
    cancelled.cancel()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(third, 0.001)
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert not batch.future.done() and not first.done()
    batch.complete(100, -1)
    assert await patient == RecordMetadata("t", 2, 101, 5)
    assert [await first, await third] == [
        RecordMetadata("t", 2, 100, 5),
        RecordMetadata("t", 2, 102, 5),
    ]
    assert batch.future.result() == (100, -1) and batch.waiters is None


async def test_every_waiter_of_a_pending_batch_wakes_with_its_own_outcome() -> None:
    loop = asyncio.get_running_loop()
    delivered, failed = _batch_for(loop), _batch_for(loop)
    handles = [DeliveryHandle(delivered, i, 7) for i in range(3)]
    doomed = DeliveryHandle(failed, 0, 7)
    # Two tasks on one handle, one on each other handle, three on the failing batch.
    waiters = [asyncio.ensure_future(_await(h)) for h in [handles[0], *handles]]
    losers = [asyncio.ensure_future(_await(doomed)) for _ in range(3)]
    await asyncio.sleep(0)
    assert len(delivered.waiters) == 4 and len(failed.waiters) == 3
    delivered.complete(10, 1234)
    failed.fail(errors.NotLeaderOrFollowerError("moved"))
    assert [await w for w in waiters] == [
        RecordMetadata("t", 2, 10, 1234),
        RecordMetadata("t", 2, 10, 1234),
        RecordMetadata("t", 2, 11, 1234),
        RecordMetadata("t", 2, 12, 1234),
    ]
    for loser in losers:
        with pytest.raises(errors.NotLeaderOrFollowerError, match="moved"):
            await loser
    with pytest.raises(errors.NotLeaderOrFollowerError):  # awaited again, after the failure
        await doomed


async def test_a_waiter_whose_handle_nobody_else_holds_is_still_woken() -> None:
    loop = asyncio.get_running_loop()
    batch = _batch_for(loop)
    waiter = asyncio.ensure_future(_await(DeliveryHandle(batch, 4, 1)))
    await asyncio.sleep(0)
    gc.collect()
    batch.complete(0, -1)
    assert await waiter == RecordMetadata("t", 2, 4, 1)


@needs_extension
async def test_the_c_handle_keeps_its_timestamp_as_an_exact_int() -> None:
    """The timestamp is an int object (shared by a millisecond's records and their metadata);
    an int subclass given to the constructor is stored as a plain int, too large a one is
    refused."""
    batch = _batch_for(asyncio.get_running_loop())
    stamp = 1_700_000_000_123
    handle = DeliveryHandle(batch, 0, stamp)
    assert handle._timestamp is stamp
    flag = DeliveryHandle(batch, 1, True)
    assert type(flag._timestamp) is int and flag._timestamp == 1
    with pytest.raises(OverflowError):
        DeliveryHandle(batch, 2, 1 << 70)
    with pytest.raises(TypeError):
        DeliveryHandle(batch, 2, "now")
    batch.complete(5, -1)
    metadata = await handle
    assert metadata == RecordMetadata("t", 2, 5, stamp) and metadata.timestamp is stamp
