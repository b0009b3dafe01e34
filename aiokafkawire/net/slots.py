"""Request slots of one connection: at most ``max_in_flight`` requests on the wire at a time.

A counter of free slots and a FIFO of futures owned by the connection, in place of an
:class:`asyncio.Semaphore`: :meth:`RequestSlots.take_now` takes a free slot synchronously (the
callback path, :meth:`~aiokafkawire.net.connection.BrokerConnection.try_submit`, never awaits),
and a released slot goes straight to the first waiter, so a free slot never coexists with a
waiter and "free" is one integer compare.
"""

from __future__ import annotations

import asyncio
from collections import deque

from aiokafkawire import errors
from aiokafkawire._waits import timeout_after

__all__ = ["RequestSlots"]


class RequestSlots:
    """``limit`` slots handed out first come, first served."""

    __slots__ = ("free", "limit", "waiters")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: Slots nobody holds; > 0 only while no one waits.
        self.free = limit
        self.waiters: deque[asyncio.Future[None]] = deque()

    def take_now(self) -> bool:
        """Take a free slot without waiting; False (nothing taken) when none is free."""
        if self.free > 0:
            self.free -= 1
            return True
        return False

    def release(self) -> None:
        """Give a slot back: to the longest waiter, or to the free count."""
        waiters = self.waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes on, still taken
                return
        self.free += 1

    async def acquire(self, timeout: float, owner: object) -> None:
        """Take a slot, waiting up to ``timeout`` seconds for one (``owner`` names the
        connection in the :class:`~aiokafkawire.errors.KafkaTimeoutError`)."""
        if self.free > 0:
            self.free -= 1  # no timeout context needed: nothing to wait for
            return
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            async with timeout_after(timeout):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot just as the wait ended: pass it on
            else:
                waiter.cancel()
                try:
                    self.waiters.remove(waiter)
                except ValueError:
                    pass
            if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
                raise errors.KafkaTimeoutError(
                    f"no free request slot on {owner!r} within {timeout:.1f}s"
                ) from None
            raise
