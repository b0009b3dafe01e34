"""What the fetcher's dispatch loop does when looking up positions fails (issue 24, room 6).

As the Java client's ``OffsetFetcher``: a retriable ListOffsets error is retried quietly; a
fatal one (an authorization failure) reaches the user as the typed error from ``getmany``, and
the lookup is tried again after the backoff, so the consumer reads once the cause is gone.
"""

from __future__ import annotations

import time

import pytest
from _consumer_helpers import produce_values

from aiokafkawire import errors
from aiokafkawire.consumer import Consumer
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster

LIST_OFFSETS = 2


async def _consume_one(consumer: Consumer, deadline: float) -> int:
    got = 0
    while not got:
        assert time.monotonic() < deadline, "no record arrived"
        batches = await consumer.getmany(timeout_ms=200)
        got = sum(len(records) for records in batches.values())
    return got


async def test_a_fatal_reset_error_reaches_the_user_and_the_lookup_goes_on(
    mock: MockCluster,
) -> None:
    topic = f"reset-denied-{time.monotonic_ns()}"
    mock.create_topic(topic, 1, 1)
    produce_values(mock.bootstrap_servers, topic, 1, 3)
    denied = errors.TopicAuthorizationFailedError.code
    mock.push_request_errors(LIST_OFFSETS, [denied, denied])
    async with Consumer(
        bootstrap_servers=mock.bootstrap_servers,
        auto_offset_reset="earliest",
        retry_backoff_ms=20,
        retry_backoff_max_ms=50,
    ) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        deadline = time.monotonic() + 10
        with pytest.raises(errors.TopicAuthorizationFailedError):
            await _consume_one(consumer, deadline)
        # The lookup was tried again; once the broker lets it through, records arrive (each
        # failed try is handed to the user, as Java's poll() throws each cached one).
        refused = 1
        while True:
            try:
                assert await _consume_one(consumer, deadline) >= 1
                break
            except errors.TopicAuthorizationFailedError:
                refused += 1
        assert refused in (1, 2)  # the second waits if the first was not taken yet


async def test_a_retriable_reset_error_is_retried_quietly(mock: MockCluster) -> None:
    topic = f"reset-retried-{time.monotonic_ns()}"
    mock.create_topic(topic, 1, 1)
    produce_values(mock.bootstrap_servers, topic, 1, 3)
    busy = errors.LeaderNotAvailableError.code
    mock.push_request_errors(LIST_OFFSETS, [busy, busy])
    async with Consumer(
        bootstrap_servers=mock.bootstrap_servers,
        auto_offset_reset="earliest",
        retry_backoff_ms=20,
        retry_backoff_max_ms=50,
    ) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        assert await _consume_one(consumer, time.monotonic() + 10) >= 1
