"""Every error is a KafkaError, held over the public API: the typed errors that stand for a
builtin one (a timeout, a bad value or type) are both, so either ``except`` clause catches them."""

from __future__ import annotations

import asyncio
import inspect
import uuid

import pytest

from aiokafkawire import Producer, errors
from aiokafkawire.testing import MockCluster

BUILTIN_TWINS = {
    errors.KafkaTimeoutError: TimeoutError,
    errors.KafkaValueError: ValueError,
    errors.KafkaTypeError: TypeError,
}


def test_every_public_exception_class_is_a_kafka_error() -> None:
    public = [
        value
        for name, value in vars(errors).items()
        if not name.startswith("_") and inspect.isclass(value) and issubclass(value, Exception)
    ]
    assert len(public) > 150
    assert [cls.__name__ for cls in public if not issubclass(cls, errors.KafkaError)] == []


@pytest.mark.parametrize("cls", sorted(BUILTIN_TWINS, key=lambda cls: cls.__name__))
def test_typed_errors_are_also_their_builtin(cls: type[errors.KafkaError]) -> None:
    exc = cls("what happened")
    assert isinstance(exc, errors.KafkaError) and isinstance(exc, BUILTIN_TWINS[cls])
    assert str(exc) == "what happened"


def test_buffer_full_is_a_timeout() -> None:
    assert issubclass(errors.BufferFullError, TimeoutError)


async def test_producer_flush_timeout_is_a_kafka_timeout_error() -> None:
    topic = f"flush-timeout-{uuid.uuid4().hex[:8]}"
    with MockCluster(1) as cluster:
        cluster.create_topic(topic, partitions=1, replication_factor=1)
        async with Producer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=0) as producer:
            await producer.send_and_wait(topic, b"warm")  # metadata and connection are ready
            (broker,) = cluster.broker_ids
            cluster.set_broker_rtt(broker, 5000)  # every answer now takes 5 s
            await producer.send(topic, b"slow")
            with pytest.raises(errors.KafkaTimeoutError, match="undelivered") as caught:
                await producer.flush(timeout=0.2)
            assert isinstance(caught.value, TimeoutError)
            cluster.set_broker_rtt(broker, 0)
            await asyncio.wait_for(producer.flush(), 30)
