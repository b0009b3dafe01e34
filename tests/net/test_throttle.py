"""Quota throttling (KIP-219): a broker answers at once with ``throttle_time_ms`` and expects no
request on that connection until the time is over; the connection honours and reports it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fake_broker import FakeBroker

from aiokafkawire.net.connection import BrokerConnection
from aiokafkawire.protocol.messages import MetadataRequest, MetadataResponse
from aiokafkawire.protocol.messages.metadata import MetadataRequestTopic

THROTTLE_MS = 400


def _ask() -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequestTopic(name="t")])


class _ThrottleFirst:
    """Answers the first Metadata request with a throttle time; notes when each arrives."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []

    async def __call__(self, header: Any, request: Any) -> Any:
        self.arrivals.append(time.monotonic())
        throttle = THROTTLE_MS if len(self.arrivals) == 1 else 0
        return MetadataResponse(throttle_time_ms=throttle, brokers=[], topics=[])


async def test_no_request_goes_out_until_the_throttle_time_is_over() -> None:
    broker_handler = _ThrottleFirst()
    async with FakeBroker(broker_handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        try:
            first = await connection.send(_ask(), 12)
            answered = time.monotonic()
            assert first.throttle_time_ms == THROTTLE_MS
            assert connection.throttled
            assert not connection.try_submit(_ask(), 12, lambda r, e: None)  # nothing written
            await asyncio.gather(connection.send(_ask(), 12), connection.send(_ask(), 12))
            assert len(broker_handler.arrivals) == 3
            # Both waited for the throttle to end (a little slack for the clock's grain).
            assert min(broker_handler.arrivals[1:]) - answered >= THROTTLE_MS / 1000 - 0.02
            assert not connection.throttled
            assert connection._stats.throttle_time_ms_total == THROTTLE_MS  # reported
        finally:
            connection.close()


async def test_versions_before_kip219_are_not_held_back() -> None:
    # Metadata v5: the broker delays the answer itself; the client must not wait again.
    broker_handler = _ThrottleFirst()
    async with FakeBroker(broker_handler) as broker:
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        try:
            await connection.send(_ask(), 5)
            assert not connection.throttled
            started = time.monotonic()
            await connection.send(_ask(), 5)
            assert time.monotonic() - started < THROTTLE_MS / 1000
            assert connection._stats.throttle_time_ms_total == THROTTLE_MS  # still reported
        finally:
            connection.close()
