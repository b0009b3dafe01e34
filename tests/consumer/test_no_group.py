"""A consumer without a group (issue 20): subscribe() reads every partition of its topics, and
follows new ones; subscribe()/assign() before start(); a failed start() stops what it started."""

from __future__ import annotations

import asyncio
import socket
import uuid

import pytest
from _consumer_helpers import Broker, consume_n, produce_values, wait_until

from aiokafkawire import Admin, errors
from aiokafkawire.consumer import Consumer
from aiokafkawire.consumer.fetch import Fetcher
from aiokafkawire.structs import TopicPartition


async def test_subscribe_without_group_reads_every_partition(broker: Broker) -> None:
    topic = broker.create_topic(3)
    produce_values(broker.bootstrap_servers, topic, 3, 30)
    assigned: list[set[TopicPartition]] = []

    class Listener:
        def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
            assigned.append(partitions)

    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest"
    ) as consumer:
        consumer.subscribe([topic], listener=Listener())
        await consumer.wait_for_assignment(timeout=20)
        everything = {TopicPartition(topic, p) for p in range(3)}
        assert consumer.assignment() == everything
        assert assigned == [everything]
        assert consumer.state == "manual"
        records = await consume_n(consumer, 30)
        assert sorted(int(r.value) for r in records) == list(range(30))
        with pytest.raises(errors.IllegalStateError, match="group_id"):
            await consumer.commit()
        with pytest.raises(errors.IllegalStateError, match="group_id"):
            await consumer.committed(TopicPartition(topic, 0))
        # Unsubscribing stops following the topics; another subscription starts over.
        consumer.unsubscribe()
        assert consumer.assignment() == set()
        other = broker.create_topic(1)
        consumer.subscribe([other])
        await wait_until(lambda: consumer.assignment() == {TopicPartition(other, 0)})


async def test_without_group_a_constructor_topic_and_a_pattern_follow_new_topics(
    broker: Broker,
) -> None:
    prefix = f"ng{uuid.uuid4().hex[:6]}"
    first = broker.create_topic(1, name=f"{prefix}-a")
    produce_values(broker.bootstrap_servers, first, 1, 3)
    # aiokafka's first example: topics in the constructor, no group_id.
    async with Consumer(
        first, bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest"
    ) as consumer:
        assert len(await consume_n(consumer, 3)) == 3
    async with Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        auto_offset_reset="earliest",
        pattern_refresh_interval_ms=500,
    ) as consumer:
        consumer.subscribe(pattern=rf"{prefix}-.*")
        await wait_until(lambda: consumer.assignment() == {TopicPartition(first, 0)})
        second = broker.create_topic(2, name=f"{prefix}-b")
        produce_values(broker.bootstrap_servers, second, 2, 4)
        await wait_until(
            lambda: {TopicPartition(second, 0), TopicPartition(second, 1)} <= consumer.assignment(),
            30,
        )
        records = await consume_n(consumer, 7)
        assert sorted((r.topic, r.value) for r in records) == sorted(
            [(first, b"%d" % i) for i in range(3)] + [(second, b"%d" % i) for i in range(4)]
        )


async def test_without_group_new_partitions_of_a_topic_are_read(broker: Broker) -> None:
    if broker.kind != "kafka":
        pytest.skip(f"{broker.kind}: no CreatePartitions (BROKERS.md)")
    topic = broker.create_topic(1)
    async with (
        Admin(bootstrap_servers=broker.bootstrap_servers) as admin,
        Consumer(
            topic,
            bootstrap_servers=broker.bootstrap_servers,
            auto_offset_reset="earliest",
            metadata_max_age_ms=500,
        ) as consumer,
    ):
        await wait_until(lambda: consumer.assignment() == {TopicPartition(topic, 0)})
        await admin.create_partitions({topic: 3})
        everything = {TopicPartition(topic, p) for p in range(3)}
        await wait_until(lambda: consumer.assignment() == everything, 30)
        produce_values(broker.bootstrap_servers, topic, 3, 9)
        records = await consume_n(consumer, 9)
        assert sorted(int(r.value) for r in records) == list(range(9))


async def test_subscribe_and_assign_before_start_take_effect_at_start(broker: Broker) -> None:
    topic = broker.create_topic(2)
    produce_values(broker.bootstrap_servers, topic, 2, 10)
    consumer = Consumer(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=200,
    )
    consumer.subscribe([topic])
    assert consumer.subscription() == {topic}
    with pytest.raises(errors.IllegalStateError, match="cannot be mixed"):
        consumer.assign([TopicPartition(topic, 0)])
    async with consumer:
        assert len(await consume_n(consumer, 10, timeout=30)) == 10
    with pytest.raises(errors.ClientClosedError):
        consumer.subscribe([topic])

    manual = Consumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest")
    manual.assign([TopicPartition(topic, 1)])
    assert manual.assignment() == {TopicPartition(topic, 1)}
    async with manual:
        assert manual.state == "manual"
        records = await consume_n(manual, 5)
        assert {r.partition for r in records} == {1} and len(records) == 5


def _our_live_tasks() -> list[str]:
    current = asyncio.current_task()
    return sorted(
        t.get_name()
        for t in asyncio.all_tasks()
        if t is not current and not t.done() and t.get_name().startswith(("cluster:", "fetcher:"))
    )


async def test_a_failed_start_stops_what_it_started(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    if broker.kind != "tansu":
        pytest.skip("one broker shows it")

    def broken_start(self: Fetcher) -> None:
        # The last step of start() fails after the cluster (metadata refresh loop) and the
        # fetcher (dispatch loop) are running.
        Fetcher_start(self)
        raise errors.KafkaConnectionError("injected failure at the end of start()")

    Fetcher_start = Fetcher.start
    monkeypatch.setattr(Fetcher, "start", broken_start)
    consumer = Consumer("t", bootstrap_servers=broker.bootstrap_servers)
    with pytest.raises(errors.KafkaConnectionError, match="injected"):
        await consumer.start()
    await asyncio.sleep(0)
    assert _our_live_tasks() == []
    monkeypatch.setattr(Fetcher, "start", Fetcher_start)
    # The consumer can be started again after the failure.
    await consumer.start()
    assert any(name.startswith("fetcher:") for name in _our_live_tasks())
    await consumer.close()
    assert _our_live_tasks() == []


async def test_a_start_that_finds_no_broker_stops_everything() -> None:
    consumer = Consumer(
        "t",
        bootstrap_servers="127.0.0.1:1",
        request_timeout_ms=1000,
        retry_backoff_ms=10,
    )
    with pytest.raises(errors.KafkaError):
        await consumer.start()
    await asyncio.sleep(0)
    assert _our_live_tasks() == []
    # Cancelled while bootstrapping (a listener that never answers): the same.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        consumer = Consumer("t", bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=30_000)
        task = asyncio.ensure_future(consumer.start())
        await asyncio.sleep(0.3)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        assert _our_live_tasks() == []
