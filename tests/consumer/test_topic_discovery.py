"""Subscriptions to topics that do not exist yet: picked up promptly once created (issue 14).

Before the fix a consumer subscribed to a missing topic saw it only at the next periodic
metadata refresh, ``metadata_max_age_ms`` (5 minutes) later.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid

from aiokafkawire import Admin, Consumer, NewTopic, Producer
from aiokafkawire.testing import TansuBroker

# Tansu answers a first JoinGroup after half the session timeout: keep it short.
GROUP_OPTIONS = {
    "session_timeout_ms": 2_000,
    "heartbeat_interval_ms": 300,
    "auto_offset_reset": "earliest",
    "fetch_max_wait_ms": 100,
}


async def _create_and_produce(bootstrap: str, topic: str) -> None:
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    async with Producer(bootstrap_servers=bootstrap) as producer:
        await producer.send_and_wait(topic, b"hello")


async def test_subscribed_topic_created_later_is_consumed_promptly(
    tansu_broker: TansuBroker,
) -> None:
    bootstrap = tansu_broker.bootstrap_servers
    topic = f"later-{uuid.uuid4().hex[:10]}"
    async with Consumer(
        topic, bootstrap_servers=bootstrap, group_id=f"g-{uuid.uuid4().hex[:8]}", **GROUP_OPTIONS
    ) as consumer:
        await asyncio.sleep(1.5)  # joined (or joining) with the topic still missing
        assert not consumer.assignment()
        await _create_and_produce(bootstrap, topic)
        created = time.monotonic()
        record = await asyncio.wait_for(consumer.getone(), 20)
        waited = time.monotonic() - created
    assert record.value == b"hello"
    # The Java client's backoff is at most retry_backoff_max_ms (1 s) between refreshes; the
    # rest is the rejoin.  Before the fix: metadata_max_age_ms (300 s).
    assert waited < 15, waited


async def test_pattern_subscription_sees_a_new_topic_within_bounded_time(
    tansu_broker: TansuBroker,
) -> None:
    bootstrap = tansu_broker.bootstrap_servers
    prefix = f"pat-{uuid.uuid4().hex[:8]}"
    async with Consumer(
        bootstrap_servers=bootstrap,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        pattern_refresh_interval_ms=1_000,
        **GROUP_OPTIONS,
    ) as consumer:
        consumer.subscribe(pattern=re.escape(prefix) + r"-.*")
        await asyncio.sleep(1.0)
        await _create_and_produce(bootstrap, f"{prefix}-a")
        created = time.monotonic()
        record = await asyncio.wait_for(consumer.getone(), 20)
        waited = time.monotonic() - created
    assert record.topic == f"{prefix}-a" and record.value == b"hello"
    assert waited < 15, waited
