"""Request slots: a counter of free slots and a FIFO of waiters (no asyncio.Semaphore)."""

from __future__ import annotations

import asyncio

import pytest

from aiokafkawire import errors
from aiokafkawire.net.slots import RequestSlots


def test_take_now_takes_free_slots_only() -> None:
    slots = RequestSlots(2)
    assert slots.take_now() and slots.take_now()
    assert not slots.take_now()
    assert slots.free == 0
    slots.release()
    assert slots.free == 1 and slots.take_now()


async def test_a_released_slot_goes_to_the_longest_waiter() -> None:
    slots = RequestSlots(1)
    await slots.acquire(1.0, "conn")
    order: list[str] = []

    async def wait(name: str) -> None:
        await slots.acquire(1.0, "conn")
        order.append(name)

    first = asyncio.ensure_future(wait("first"))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(wait("second"))
    await asyncio.sleep(0)
    slots.release()
    assert slots.free == 0  # handed over, not freed: a new taker cannot jump the queue
    assert not slots.take_now()
    await first
    slots.release()
    await second
    assert order == ["first", "second"]
    slots.release()
    assert slots.free == 1 and not slots.waiters


async def test_a_wait_that_times_out_leaves_no_waiter_behind() -> None:
    slots = RequestSlots(1)
    assert slots.take_now()
    with pytest.raises(errors.KafkaTimeoutError, match="no free request slot on 'conn'"):
        await slots.acquire(0.01, "conn")
    assert not slots.waiters
    slots.release()
    assert slots.free == 1


async def test_a_cancelled_wait_leaves_no_waiter_and_loses_no_slot() -> None:
    slots = RequestSlots(1)
    assert slots.take_now()
    waiting = asyncio.ensure_future(slots.acquire(5.0, "conn"))
    await asyncio.sleep(0)
    slots.release()  # handed to the waiter ...
    waiting.cancel()  # ... which is cancelled before it runs: the slot must come back
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert slots.free == 1 and not slots.waiters
