"""``IteratedRecords.hand_out``: the position the ``async for`` iterator (native and aiokafka
compat) gives a partition as each held record is handed out.  No broker: a subscription, the
fetch buffer and hand-made records."""

from __future__ import annotations

from aiokafkawire.consumer._state import ConsumerParts, IteratedRecords
from aiokafkawire.consumer.fetch.buffer import FetchBuffer, PositionUpdate
from aiokafkawire.consumer.fetch.config import FetchConfig
from aiokafkawire.consumer.fetch.decode import RecordDecoder
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.consumer.value_types import ConsumerRecord
from aiokafkawire.structs import TopicPartition

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)


def _record(tp: TopicPartition, offset: int, epoch: int) -> ConsumerRecord:
    return ConsumerRecord(tp.topic, tp.partition, offset, 0, 0, None, b"v", (), epoch)


def _iterated(
    ends: dict[TopicPartition, PositionUpdate],
) -> tuple[IteratedRecords, SubscriptionState]:
    subs = SubscriptionState("earliest")
    subs.assign_manually([A, B])
    for tp in (A, B):
        subs.assignment[tp].seek(0)
    parts = ConsumerParts()
    parts.fetcher = FetchBuffer(subs, RecordDecoder(FetchConfig()))  # type: ignore[assignment]
    iterated = IteratedRecords(subs, parts)
    iterated.ends = {
        tp: end._replace(version=subs.assignment[tp].version) for tp, end in ends.items()
    }
    return iterated, subs


def test_interleaved_partitions_move_one_record_at_a_time() -> None:
    # A's records 0..2 (end 5: offsets 3 and 4 were control records), B's 0..1 (end 2).
    iterated, subs = _iterated({A: PositionUpdate(5, 7, 0), B: PositionUpdate(2, 9, 0)})
    iterated.records.extend(
        [_record(A, 0, 6), _record(B, 0, 9), _record(A, 1, 6), _record(B, 1, 9), _record(A, 2, 7)]
    )
    positions = []
    for _ in range(5):
        record = iterated.hand_out()
        tp = TopicPartition(record.topic, record.partition)
        positions.append((tp.partition, subs.assignment[tp].position))
    # Past each record while more of its partition is held (even behind another partition's),
    # then the drained end (past the control records) with the end's epoch.
    assert positions == [(0, 1), (1, 1), (0, 2), (1, 2), (0, 5)]
    assert subs.assignment[A].leader_epoch == 7 and subs.assignment[B].leader_epoch == 9


def test_a_partition_without_more_held_records_jumps_to_its_end() -> None:
    iterated, subs = _iterated({A: PositionUpdate(10, 3, 0)})
    iterated.records.extend([_record(A, 4, 2), _record(B, 0, 1)])
    iterated.hand_out()
    assert subs.assignment[A].position == 10 and subs.assignment[A].leader_epoch == 3
    iterated.hand_out()  # B has no drained end: its position stays
    assert subs.assignment[B].position == 0


def test_a_seeked_partition_is_left_where_the_seek_put_it() -> None:
    iterated, subs = _iterated({A: PositionUpdate(3, 1, 0)})
    iterated.records.extend([_record(A, 0, 1), _record(A, 1, 1), _record(A, 2, 1)])
    iterated.hand_out()
    assert subs.assignment[A].position == 1
    subs.assignment[A].seek(40)
    iterated.hand_out()
    iterated.hand_out()
    assert subs.assignment[A].position == 40
