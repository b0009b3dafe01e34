"""``DeliveryHandle.as_future``: record futures resolved by the batch's own completion pass.

No broker: batches are completed or failed by hand, so each outcome is reached exactly, and
"in the batch's pass" is checked as "done right after ``complete()``/``fail()`` returns, before
the event loop runs a callback".
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from aiokafkawire import errors
from aiokafkawire.producer import RecordMetadata
from aiokafkawire.producer._batch import DeliveryHandle, ProducerBatch
from aiokafkawire.structs import TopicPartition


def _batch_for(loop: asyncio.AbstractEventLoop) -> Any:
    return ProducerBatch(TopicPartition("t", 2), None, 2, loop.create_future(), 0.0, 1, 0)


def _ready_callbacks(loop: asyncio.AbstractEventLoop) -> int:
    # The loop's ready queue (BaseEventLoop; the uvloop test module does not run this file).
    return len(loop._ready)  # type: ignore[attr-defined]


async def test_futures_resolve_in_the_batch_pass_without_a_loop_callback_each() -> None:
    loop = asyncio.get_running_loop()
    batch = _batch_for(loop)
    handles = [DeliveryHandle(batch, i, 1000 + i) for i in range(50)]
    futures = [h.as_future() for h in handles]
    converted = handles[7].as_future(lambda md: ("converted", md.offset))
    assert all(isinstance(f, asyncio.Future) and not f.done() for f in futures)
    assert batch.waiters is None  # no waiter, no callback on the batch's future per record
    before = _ready_callbacks(loop)
    batch.complete(40, -1)
    # Resolved by complete() itself: done before the loop runs anything...
    assert all(f.done() for f in futures) and converted.done()
    # ...and without a callback scheduled per record (each future has no callback of its own:
    # at most a constant few are queued, whatever the number of records).
    assert _ready_callbacks(loop) - before < 5
    assert futures[0].result() == RecordMetadata("t", 2, 40, 1000)
    assert futures[49].result() == RecordMetadata("t", 2, 89, 1049)
    assert type(futures[3].result()) is RecordMetadata
    assert converted.result() == ("converted", 47)
    assert batch.futures is None  # the entries are dropped with the pass


async def test_log_append_time_and_unknown_offsets() -> None:
    loop = asyncio.get_running_loop()
    log_appended = _batch_for(loop)
    appended = DeliveryHandle(log_appended, 3, 5).as_future()
    log_appended.complete(10, 999)
    assert appended.result() == RecordMetadata("t", 2, 13, 999)
    fire_and_forget = _batch_for(loop)
    no_offset = DeliveryHandle(fire_and_forget, 4, 77).as_future()
    fire_and_forget.complete(-1, -1)
    assert no_offset.result() == RecordMetadata("t", 2, -1, 77)


async def test_a_failed_batch_fails_every_future_with_its_error() -> None:
    loop = asyncio.get_running_loop()
    batch = _batch_for(loop)
    futures = [DeliveryHandle(batch, i, 1).as_future() for i in range(20)]
    converted = DeliveryHandle(batch, 20, 1).as_future(str)
    error = errors.NotLeaderOrFollowerError("gone")
    batch.fail(error)
    assert all(f.done() for f in [*futures, converted])
    assert all(f.exception() is error for f in futures) and converted.exception() is error
    with pytest.raises(errors.NotLeaderOrFollowerError, match="gone"):
        await futures[5]


async def test_a_cancelled_future_is_skipped_and_the_others_resolve() -> None:
    loop = asyncio.get_running_loop()
    batch = _batch_for(loop)
    handle = DeliveryHandle(batch, 0, 1)
    first, second, third = handle.as_future(), handle.as_future(), DeliveryHandle(batch, 1, 1)
    later = third.as_future()
    second.cancel()
    batch.complete(7, -1)  # no InvalidStateError from the cancelled one
    assert second.cancelled()
    assert first.result().offset == 7 and later.result().offset == 8
    assert handle.result().offset == 7  # the delivery itself is untouched
    failing = _batch_for(loop)
    kept, dropped = DeliveryHandle(failing, 0, 1).as_future(), DeliveryHandle(failing, 1, 1)
    cancelled = dropped.as_future()
    cancelled.cancel()
    failing.fail(errors.KafkaConnectionError("cut"))
    assert cancelled.cancelled() and isinstance(kept.exception(), errors.KafkaConnectionError)


async def test_a_decided_delivery_gives_a_resolved_future() -> None:
    loop = asyncio.get_running_loop()
    delivered = _batch_for(loop)
    delivered.complete(100, -1)
    handle = DeliveryHandle(delivered, 2, 9)
    assert handle.as_future().result() == RecordMetadata("t", 2, 102, 9)
    assert handle.as_future(lambda md: md.offset * 2).result() == 204
    assert delivered.futures is None
    failed = _batch_for(loop)
    failed.fail(errors.RecordTooLargeError("big"))
    future = DeliveryHandle(failed, 0, 1).as_future()
    assert future.done() and isinstance(future.exception(), errors.RecordTooLargeError)


async def test_a_failing_convert_fails_only_its_own_future() -> None:
    loop = asyncio.get_running_loop()
    batch = _batch_for(loop)

    def broken(metadata: RecordMetadata) -> object:
        raise ValueError(f"cannot convert {metadata.offset}")

    bad = DeliveryHandle(batch, 0, 1).as_future(broken)
    good = DeliveryHandle(batch, 1, 1).as_future()
    batch.complete(5, -1)
    with pytest.raises(ValueError, match="cannot convert 5"):
        bad.result()
    assert good.result().offset == 6
    decided = DeliveryHandle(batch, 2, 1).as_future(broken)
    assert isinstance(decided.exception(), ValueError)


def _unretrieved_reports(loop: asyncio.AbstractEventLoop, make_error: Any) -> list[str]:
    """What asyncio reports when futures failed with ``make_error()`` are dropped unawaited."""
    reports: list[str] = []
    loop.set_exception_handler(lambda _loop, context: reports.append(context["message"]))
    try:
        pending = _batch_for(loop)
        DeliveryHandle(pending, 0, 1).as_future()  # dropped at once: only the batch holds it
        pending.fail(make_error())
        decided = _batch_for(loop)
        decided.fail(make_error())
        DeliveryHandle(decided, 0, 1).as_future()
        gc.collect()
    finally:
        loop.set_exception_handler(None)
    return reports


async def test_an_aborted_transaction_is_not_reported_other_errors_are() -> None:
    loop = asyncio.get_running_loop()
    # The application aborted the transaction itself (aiokafka's rule): not reported.
    assert _unretrieved_reports(loop, lambda: errors.TransactionAbortedError("aborted")) == []
    # Any other delivery error of a future nobody looked at is, as for any asyncio future.
    reports = _unretrieved_reports(loop, lambda: errors.KafkaConnectionError("cut"))
    assert reports == ["Future exception was never retrieved"] * 2


async def test_batches_nobody_asked_a_future_of_keep_no_list() -> None:
    loop = asyncio.get_running_loop()
    batch = _batch_for(loop)
    handle = DeliveryHandle(batch, 0, 1)
    batch.complete(1, -1)
    assert batch.futures is None and (await handle).offset == 1
