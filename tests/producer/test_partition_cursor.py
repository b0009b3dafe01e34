"""PartitionCursor: one partition's queue and send state, owned by its leader's sink."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from _producer_helpers import unique_topic

from aiokafkawire.producer import Producer
from aiokafkawire.producer._partition import PartitionCursor
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster

TP = TopicPartition("t", 0)


def _batch(producer_id: int, epoch: int, base_sequence: int, count: int) -> Any:
    return SimpleNamespace(
        producer_id=producer_id, producer_epoch=epoch, base_sequence=base_sequence, count=count
    )


def test_a_cursor_is_its_partitions_queue_and_keeps_its_state_when_emptied() -> None:
    cursor = PartitionCursor(TP)
    batches = [_batch(7, 0, -1, 1), _batch(7, 0, -1, 1)]
    cursor.extend(batches)
    cursor.in_flight, cursor.gated, cursor.confirmed = 2, True, 7
    cursor.take_sequences(7, 0, 10)
    assert cursor.popleft() is batches[0] and list(cursor) == batches[1:]
    cursor.clear()
    assert not cursor and (cursor.in_flight, cursor.gated, cursor.confirmed) == (2, True, 7)
    assert cursor.take_sequences(7, 0, 5) == 10  # numbering goes on where it was
    # A queue with state is equal to itself only (a deque compares items) and hashable.
    assert cursor != PartitionCursor(TP) and {cursor: 1}[cursor] == 1


def test_sequences_restart_for_another_identity_and_wrap() -> None:
    cursor = PartitionCursor(TP)
    assert cursor.take_sequences(7, 0, 3) == 0
    assert cursor.take_sequences(7, 0, 3) == 3
    assert cursor.take_sequences(7, 1, 3) == 0  # a new epoch starts at 0
    assert cursor.take_sequences(8, 1, 3) == 0  # so does a new producer id
    cursor.next = (8, 1, 0x7FFFFFFF)
    assert cursor.take_sequences(8, 1, 2) == 0x7FFFFFFF
    assert cursor.take_sequences(8, 1, 1) == 1


def test_acknowledged_sequences_only_move_forward_for_one_identity() -> None:
    cursor = PartitionCursor(TP)
    cursor.note_acknowledged(_batch(7, 0, 5, 5), current=True)
    assert cursor.acked_next == (7, 0, 10)
    cursor.note_acknowledged(_batch(7, 0, 0, 5), current=True)  # a late answer
    assert cursor.acked_next == (7, 0, 10)
    assert cursor.acknowledged_after(_batch(7, 0, 0, 5))
    assert not cursor.acknowledged_after(_batch(7, 0, 10, 5))
    assert not cursor.acknowledged_after(_batch(7, 1, 0, 5))  # another epoch knows nothing
    assert cursor.expects(_batch(7, 0, 10, 1)) and not cursor.expects(_batch(7, 0, 11, 1))
    assert cursor.expects(_batch(7, 1, 0, 1))
    cursor.note_acknowledged(_batch(6, 0, 50, 5), current=False)  # an older identity
    assert cursor.acked_next == (7, 0, 10)
    cursor.note_acknowledged(_batch(7, 1, 0, 2), current=True)
    assert cursor.acked_next == (7, 1, 2)


async def test_a_leader_change_moves_the_partitions_cursor_between_sinks(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("cursor")
    mock_cluster.create_topic(topic, partitions=1)
    mock_cluster.set_partition_leader(topic, 0, 1)
    tp = TopicPartition(topic, 0)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, acks="all", retry_backoff_ms=10
    ) as producer:
        await producer.send_and_wait(topic, b"before", partition=0)
        sender: Any = producer._sender
        cursor = producer._accumulator.batches[tp]
        first_sink = sender._sinks[cursor.leader]
        assert first_sink.node == 1 and first_sink.cursors[tp] is cursor
        identity = sender.txn.producer_id, sender.txn.producer_epoch
        assert cursor.acked_next == (*identity, 1)
        mock_cluster.set_partition_leader(topic, 0, 2)
        await producer.send_and_wait(topic, b"after", partition=0)
        assert producer._accumulator.batches[tp] is cursor  # the same cursor, the new leader's
        assert cursor.leader == 2 and sender._sinks[2].cursors[tp] is cursor
        assert tp not in first_sink.cursors
        # Its sequences went on under the new leader: the second batch was sequence 1.
        assert cursor.acked_next == (*identity, 2)
        assert cursor.in_flight == 0 and not cursor.gated
