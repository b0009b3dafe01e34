"""A share consumer's record that cannot be deserialized (issue 22): released (delivered
again) by default as in the Java client, or rejected (archived at once) with
``on_deserialization_error="reject"``.  On the session's Apache Kafka 4.x."""

from __future__ import annotations

import time

import pytest
from test_share_kafka import _setup

from aiokafkawire import errors
from aiokafkawire.consumer.share import ShareConsumer
from aiokafkawire.producer import Producer
from aiokafkawire.serialization import RecordDeserializationError
from aiokafkawire.testing import KafkaCluster

pytestmark = pytest.mark.integration


async def deliveries(bootstrap: str, on_error: str) -> tuple[list[int], list[int]]:
    """The values handed out and the offsets that failed, polling until both good records
    came and then 2 s more (a released record comes back within that time)."""
    topic, group = await _setup(bootstrap)
    async with Producer(bootstrap_servers=bootstrap) as producer:
        for value in (b"0", b"bad", b"2"):
            await producer.send(topic, value, partition=0)
        await producer.flush()
    values: list[int] = []
    failed: list[int] = []
    async with ShareConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        value_deserializer=int,
        on_deserialization_error=on_error,
    ) as consumer:
        deadline = time.monotonic() + 30
        settled: float | None = None
        while time.monotonic() < (settled or deadline):
            try:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    values.extend(r.value for r in records)
            except RecordDeserializationError as error:
                failed.append(error.offset)
                assert (error.topic, error.value) == (topic, b"bad")
            if settled is None and len(values) >= 2 and failed:
                settled = time.monotonic() + 2
    return values, failed


async def test_reject_archives_the_record_at_once(kafka_cluster: KafkaCluster) -> None:
    values, failed = await deliveries(kafka_cluster.bootstrap_servers, "reject")
    assert values == [0, 2]
    assert failed == [1]  # never delivered again


async def test_release_delivers_it_again(kafka_cluster: KafkaCluster) -> None:
    values, failed = await deliveries(kafka_cluster.bootstrap_servers, "release")
    assert values == [0, 2]
    assert len(failed) >= 2 and set(failed) == {1}


def test_the_choice_is_checked() -> None:
    with pytest.raises(errors.ConfigError, match="on_deserialization_error"):
        ShareConsumer("t", group_id="g", on_deserialization_error="skip")
