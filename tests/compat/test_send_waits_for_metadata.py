"""The aiokafka compat ``send`` waits for the topic's metadata even with an explicit partition
(aiokafka does, and raises from ``send``), although the native ``send`` queues such a record
without waiting (issue 24)."""

from __future__ import annotations

import pytest

from aiokafkawire import errors
from aiokafkawire.compat.aiokafka import AIOKafkaProducer
from aiokafkawire.testing import MockCluster


async def test_a_partition_the_topic_lacks_raises_from_compat_send(
    mock_cluster: MockCluster,
) -> None:
    mock_cluster.create_topic("compat-cold", partitions=2)
    mock_cluster.create_topic("compat-cold-batch", partitions=2)
    producer = AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers)
    await producer.start()
    try:
        batch = producer.create_batch()
        batch.append(key=None, value=b"v", timestamp=None)
        with pytest.raises(errors.ConfigError, match="3 is not one"):
            await producer.send_batch(batch, "compat-cold-batch", partition=3)
        with pytest.raises(errors.ConfigError, match="2 is not one"):
            await producer.send("compat-cold", b"v", partition=2)
        with pytest.raises(errors.ConfigError, match="5 is not one"):
            await producer.send_and_wait("compat-cold", b"v", partition=5)
        future = await producer.send("compat-cold", b"v", partition=1)
        assert (await future).partition == 1
    finally:
        await producer.stop()
