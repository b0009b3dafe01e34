"""``Producer.send`` compiled (``_cproducer.SendMethod``): a coroutine without a frame per call.

Where the extension is built, ``Producer.send`` is a ``SendMethod`` wrapping the ``async def``:
a call returns a ``SendCall``, which must behave as the coroutine it replaces (lazy, awaitable,
a task's coroutine, cancellable, warned about when never awaited) and look like it to
introspection (``inspect.iscoroutinefunction``, the signature, the docstring).
"""

from __future__ import annotations

import asyncio
import inspect
import warnings
from typing import Any

import pytest
from _producer_helpers import unique_topic

import aiokafkawire.producer.producer as producer_module
from aiokafkawire import errors
from aiokafkawire.producer import Producer
from aiokafkawire.producer._batch import DeliveryHandle, RecordMetadata
from aiokafkawire.testing import MockCluster

_accelerator = producer_module._send_accelerator
needs_extension = pytest.mark.skipif(
    _accelerator is None, reason="_cproducer is not built or pure Python is forced"
)


def _producer(mock_cluster: MockCluster, **options: Any) -> Producer:
    return Producer(bootstrap_servers=mock_cluster.bootstrap_servers, acks=1, **options)


def _topic(mock_cluster: MockCluster) -> str:
    name = unique_topic("sendcall")
    mock_cluster.create_topic(name, partitions=2)
    return name


def _never_awaited(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "was never awaited" in str(w.message)]


def test_send_looks_like_the_coroutine_function() -> None:
    producer = Producer(bootstrap_servers="127.0.0.1:9")
    for send in (Producer.send, producer.send):
        assert inspect.iscoroutinefunction(send)
        assert asyncio.iscoroutinefunction(send)
        assert send.__doc__ and send.__doc__.startswith("Append a record")
        assert send.__name__ == "send" and send.__qualname__ == "Producer.send"
    parameters = list(inspect.signature(producer.send).parameters)
    assert parameters == ["topic", "value", "key", "partition", "timestamp", "headers"]
    assert next(iter(inspect.signature(Producer.send).parameters)) == "self"
    assert "Producer.send" in repr(Producer.send)
    assert inspect.isfunction(inspect.unwrap(Producer.send))
    assert "async def send(" in inspect.getsource(Producer.send)


@needs_extension
def test_send_is_compiled_with_the_async_defs_parameters() -> None:
    """The C call parses the parameters by name: they must be the ``async def``'s."""
    assert type(Producer.send) is _accelerator.SendMethod
    wrapped = Producer.send.__code__
    names = wrapped.co_varnames[: wrapped.co_argcount + wrapped.co_kwonlyargcount]
    assert names == ("self", "topic", "value", "key", "partition", "timestamp", "headers")
    producer = Producer(bootstrap_servers="127.0.0.1:9")
    every_keyword = producer.send(
        topic="t", value=b"v", key=None, partition=0, timestamp=1, headers=[]
    )
    assert type(every_keyword).__name__ == "SendCall"
    every_keyword.close()
    # Other shapes are the async def's own: a real coroutine, or its TypeError.
    coroutine = producer.send("t", b"v", b"k", **{"head" + "ers": None})
    assert inspect.iscoroutine(coroutine) or type(coroutine).__name__ == "SendCall"
    coroutine.close()
    with pytest.raises(TypeError, match="unexpected keyword argument 'color'"):
        producer.send("t", color=1)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'topic'"):
        producer.send()
    with pytest.raises(TypeError, match="positional arguments"):
        producer.send("t", b"v", b"k", 0)
    with pytest.raises(TypeError, match="multiple values for argument 'value'"):
        producer.send("t", b"v", value=b"w")


async def test_a_send_call_is_a_lazy_coroutine(mock_cluster: MockCluster) -> None:
    topic = _topic(mock_cluster)
    async with _producer(mock_cluster) as producer:
        await producer.partitions_for(topic)
        call = producer.send(topic, b"v", b"k")
        assert asyncio.iscoroutine(call) and inspect.isawaitable(call)
        assert producer.buffered_bytes == 0  # nothing happens before it is awaited
        handle = await call
        assert isinstance(handle, DeliveryHandle) and producer.buffered_bytes > 0
        with pytest.raises(RuntimeError, match="cannot reuse already awaited coroutine"):
            await call
        task = asyncio.create_task(producer.send(topic, b"task", b"k"))
        future = asyncio.ensure_future(producer.send(topic, b"future", b"k"))
        handles = [handle, await task, await future]
        waited = await asyncio.wait_for(producer.send(topic, b"wait_for", b"k"), 5)
        metadata = [await h for h in [*handles, waited]]
    assert all(isinstance(m, RecordMetadata) for m in metadata)
    offsets = [m.offset for m in metadata]
    assert offsets == sorted(offsets) and len(set(offsets)) == 4  # same key: one partition


async def test_a_send_call_never_awaited_warns_and_sends_nothing(
    mock_cluster: MockCluster,
) -> None:
    topic = _topic(mock_cluster)
    async with _producer(mock_cluster) as producer:
        await producer.partitions_for(topic)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            producer.send(topic, b"dropped")
        assert _never_awaited(caught) == ["coroutine 'Producer.send' was never awaited"]
        assert producer.buffered_bytes == 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            producer.send(topic, b"closed").close()  # as a coroutine: closing says it is gone
        assert _never_awaited(caught) == [] and producer.buffered_bytes == 0


async def test_a_send_that_waits_can_be_cancelled(mock_cluster: MockCluster) -> None:
    """A send the fast path declines delegates to the async def; cancelling reaches it."""
    async with _producer(mock_cluster, max_block_ms=30_000) as producer:
        missing = unique_topic("absent")  # no metadata: send waits for the topic
        task = asyncio.create_task(producer.send(missing, b"v"))
        await asyncio.sleep(0.05)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        call = producer.send(missing, b"v")
        assert call.send(None) is not None  # started: waiting on the metadata
        call.close()
        with pytest.raises(RuntimeError, match="cannot reuse"):
            call.send(None)
        thrown = producer.send(missing, b"v")
        with pytest.raises(KeyError):
            thrown.throw(KeyError("before it started"))


async def test_send_raises_what_the_async_def_raises(mock_cluster: MockCluster) -> None:
    producer = _producer(mock_cluster)
    with pytest.raises(errors.IllegalStateError):
        await producer.send("t", b"v")  # not started
    async with producer:
        topic = _topic(mock_cluster)
        await producer.partitions_for(topic)
        with pytest.raises(errors.RecordTooLargeError):
            await producer.send(topic, b"x" * 2_000_000)
        with pytest.raises(TypeError):
            await producer.send(topic, "not bytes")
    with pytest.raises(errors.ClientClosedError):
        await producer.send(topic, b"v")


async def test_a_subclass_may_override_send(mock_cluster: MockCluster) -> None:
    seen: list[bytes] = []

    class Recording(Producer):
        async def send(self, topic: str, value: Any = None, key: Any = None, **kw: Any) -> Any:
            seen.append(value)
            return await super().send(topic, value, key, **kw)

    topic = _topic(mock_cluster)
    async with Recording(bootstrap_servers=mock_cluster.bootstrap_servers, acks=1) as producer:
        await producer.partitions_for(topic)
        handle = await producer.send(topic, b"sub", b"k")
        assert (await handle).topic == topic
    assert seen == [b"sub"]
