"""The sinks own and drain their partitions' queues; answers never drain from a receive path."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _producer_helpers import unique_topic

from aiokafkawire.producer import Producer
from aiokafkawire.producer._sink import BrokerSink, Flight
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster


def _owners(producer: Producer) -> dict[Any, list[int | None]]:
    """Every queue -> the owners holding it (sinks by node, None: the sender's unrouted)."""
    sender: Any = producer._sender
    owners: dict[Any, list[int | None]] = {}
    for node, sink in sender._sinks.items():
        for tp, cursor in sink.cursors.items():
            assert cursor.tp == tp
            owners.setdefault(cursor, []).append(node)
    for cursor in sender._unrouted.values():
        owners.setdefault(cursor, []).append(None)
    return owners


async def test_answers_wake_the_sender_and_never_drain_inside_the_receive_path(
    mock_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer is handled inside the connection's receive path; the requests it makes
    possible are written by the sender's next pass (or a send's pump), never from there."""
    topic = unique_topic("sinks")
    mock_cluster.create_topic(topic, partitions=4)
    inside_answer = False
    submitted_inside: list[bool] = []
    answered = Flight.__call__
    submit = BrokerSink.submit

    def answer_spy(self: Flight, response: Any, error: BaseException | None) -> None:
        nonlocal inside_answer
        inside_answer = True
        try:
            answered(self, response, error)
        finally:
            inside_answer = False

    def submit_spy(self: BrokerSink, flight: Flight) -> None:
        submitted_inside.append(inside_answer)
        submit(self, flight)

    monkeypatch.setattr(Flight, "__call__", answer_spy)
    monkeypatch.setattr(BrokerSink, "submit", submit_spy)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        batch_size=2048,
        linger_ms=1,
        max_in_flight_requests_per_connection=1,  # answers free what waits
    ) as producer:
        handles = [await producer.send(topic, b"v" * 100, partition=i % 4) for i in range(2000)]
        await producer.flush(timeout=30)
        assert all([(await h).offset >= 0 for h in handles])
    assert len(submitted_inside) > 20  # many requests, many answers while others waited
    assert not any(submitted_inside)


async def test_each_queue_is_owned_by_its_leaders_sink_only(mock_cluster: MockCluster) -> None:
    topic = unique_topic("owners")
    mock_cluster.create_topic(topic, partitions=6)
    for partition in range(6):
        mock_cluster.set_partition_leader(topic, partition, 1 + partition % 3)
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers) as producer:
        for partition in range(6):
            await producer.send_and_wait(topic, b"x", partition=partition)
        owners = _owners(producer)
        assert set(owners) == set(producer._accumulator.batches.values())
        for cursor, holders in owners.items():
            assert holders == [cursor.leader] == [1 + cursor.tp.partition % 3]
        # Leaders change: the next pass after the metadata refresh moves the queues.
        for partition in range(6):
            mock_cluster.set_partition_leader(topic, partition, 3 - partition % 3)
        cluster: Any = producer._cluster
        await cluster.refresh_metadata()
        for partition in range(6):
            await producer.send_and_wait(topic, b"y", partition=partition)
        owners = _owners(producer)
        for cursor, holders in owners.items():
            assert holders == [cursor.leader] == [3 - cursor.tp.partition % 3]


async def test_a_queue_without_a_leader_waits_with_the_sender_then_goes_to_its_sink(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("leaderless")
    mock_cluster.create_topic(topic, partitions=2)
    mock_cluster.set_partition_leader(topic, 0, 1)
    mock_cluster.set_partition_leader(topic, 1, -1)  # no leader
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, retry_backoff_ms=20
    ) as producer:
        await producer.send_and_wait(topic, b"led", partition=0)
        handle = await producer.send(topic, b"waits", partition=1)
        producer._accumulator.flush_batch_of(handle)
        sender: Any = producer._sender
        for _ in range(50):
            await asyncio.sleep(0.02)
        assert not handle.done()
        cursor = producer._accumulator.batches[TopicPartition(topic, 1)]
        assert _owners(producer)[cursor] == [None] and cursor.leader is None and len(cursor) == 1
        mock_cluster.set_partition_leader(topic, 1, 2)  # found by the sender's refreshes
        metadata = await asyncio.wait_for(handle, 10)
        assert metadata.partition == 1 and metadata.offset == 0
        assert _owners(producer)[cursor] == [2] and sender._sinks[2].cursors[cursor.tp] is cursor
