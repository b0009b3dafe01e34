"""Share consumer pieces without a broker: acknowledgement batches and bookkeeping, the share
session state machine, record delivery from acquired ranges, the consumer's option checks."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import time
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiokafkawire import errors
from aiokafkawire.consumer.share import AcknowledgeType, ShareConsumer, ShareRecord
from aiokafkawire.consumer.share.acknowledgements import (
    AckBatch,
    Acknowledgements,
    build_batches,
    expand_batches,
)
from aiokafkawire.consumer.share.buffer import ShareChunk
from aiokafkawire.consumer.share.codec import (
    build_share_acknowledge,
    delivered_records,
    without_renewals,
)
from aiokafkawire.consumer.share.fetcher import ShareFetchConfig, ShareFetcher
from aiokafkawire.consumer.share.membership import ShareMembership, new_member_id
from aiokafkawire.consumer.share.session import (
    TRANSITIONS,
    SessionEvent,
    SessionState,
    ShareSession,
)
from aiokafkawire.protocol.records import DefaultRecordBatchBuilder
from aiokafkawire.structs import TopicPartition

TP = TopicPartition("jobs", 0)
A, R, J, G = (
    AcknowledgeType.ACCEPT,
    AcknowledgeType.RELEASE,
    AcknowledgeType.REJECT,
    AcknowledgeType.GAP,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# ------------------------------------------------------------------ acknowledgement batches


def test_batches_one_type_per_uniform_run_and_split_at_holes() -> None:
    acks = {5: A, 6: A, 7: A, 9: R, 10: R, 12: A}
    assert build_batches(acks) == [
        AckBatch(5, 7, (1,)),
        AckBatch(9, 10, (2,)),
        AckBatch(12, 12, (1,)),
    ]


def test_batches_mixed_run_has_one_type_per_offset() -> None:
    acks = {0: A, 1: G, 2: J, 3: A}
    assert build_batches(acks) == [AckBatch(0, 3, (1, 0, 3, 1))]


def test_batches_of_nothing() -> None:
    assert build_batches({}) == []


@given(st.dictionaries(st.integers(0, 300), st.sampled_from([0, 1, 2, 3]), max_size=120))
def test_batches_round_trip_ascending_and_disjoint(acks: dict[int, int]) -> None:
    batches = build_batches(acks)
    assert expand_batches(batches) == acks
    for before, after in itertools.pairwise(batches):
        # Ascending, non-overlapping and not adjacent (adjacent runs would be one batch).
        assert before.last_offset + 1 < after.first_offset
    for batch in batches:
        assert len(batch.types) in (1, batch.last_offset - batch.first_offset + 1)


def test_acknowledge_type_parse() -> None:
    assert AcknowledgeType.parse("Accept") is A
    assert AcknowledgeType.parse("release") is R
    assert AcknowledgeType.parse(3) is J
    with pytest.raises(ValueError, match="accept"):
        AcknowledgeType.parse("ok")
    with pytest.raises(ValueError, match="GAP"):
        AcknowledgeType.parse("gap")


# ------------------------------------------------------------------ bookkeeping


def test_acquire_acknowledge_take() -> None:
    acks = Acknowledgements(FakeClock())
    acks.acquire(TP, 10, 14, 1, 30_000)
    assert acks.held(TP) == 5 and acks.delivery_count(TP, 12) == 1
    acks.acknowledge(TP, 10, A)
    acks.acknowledge(TP, 11, R)
    acks.acknowledge_gaps(TP, [12])
    assert acks.held_offsets(TP) == [13, 14]
    assert acks.has_pending([TP]) and acks.pending_partitions() == [TP]
    taken = acks.take_pending()
    assert taken == {TP: {10: A, 11: R, 12: G}}
    assert not acks.has_pending()


def _share_records(offsets: list[int], delivery_count: int = 1) -> list[ShareRecord]:
    return [
        ShareRecord(TP.topic, TP.partition, o, 0, 0, None, b"", (), None, delivery_count)
        for o in offsets
    ]


def test_accept_delivered_skips_records_already_acknowledged_or_delivered_again() -> None:
    clock = FakeClock()
    acks = Acknowledgements(clock)
    acks.acquire(TP, 0, 3, 1, 30_000)
    acks.acknowledge(TP, 1, R)
    acks.acquire(TP, 2, 2, 2, 30_000)  # offset 2 came back: the handed-out delivery is stale
    delivered = _share_records([0, 1, 2, 3])
    assert acks.unacknowledged(TP, delivered) == [0, 3]
    acks.accept_delivered(TP, delivered)
    assert acks.unacknowledged(TP, delivered) == []
    assert acks.take_pending() == {TP: {0: A, 1: R, 3: A}}
    assert acks.held_offsets(TP) == [2]
    acks.acquire(TP, 4, 4, 1, 1_000)
    clock.now += 2
    acks.accept_delivered(TP, _share_records([4]))
    assert not acks.has_pending()
    [outcome] = acks.take_expired()
    assert outcome.offsets == {4: A}


@given(
    st.lists(
        st.tuples(
            st.integers(0, 12),  # first offset
            st.integers(0, 8),  # length - 1
            st.integers(1, 3),  # delivery count
            st.sampled_from([1_000, 30_000]),  # lock timeout ms
            st.floats(0, 2),  # seconds before the next step
        ),
        min_size=1,
        max_size=4,
    ),
    st.sets(st.integers(0, 20), max_size=4),  # acknowledged (RELEASE) before the poll
    st.lists(
        st.tuples(st.integers(0, 20), st.integers(1, 3)), max_size=12, unique_by=lambda r: r[0]
    ),
    # the records as delivered (ascending, the acquired counts), an older delivery, or as drawn
    st.sampled_from(["delivered", "older", "drawn"]),
)
def test_accept_delivered_in_bulk_settles_like_one_acknowledgement_per_record(
    ranges: list[tuple[int, int, int, int, float]],
    released: set[int],
    drawn: list[tuple[int, int]],
    records_are: str,
) -> None:
    """The bulk fast paths (acquire, accept_delivered) keep the per-offset semantics."""
    bulk, each = Acknowledgements(FakeClock()), Acknowledgements(FakeClock())
    for acks in (bulk, each):
        for first, extra, count, lock_ms, later in ranges:
            acks.acquire(TP, first, first + extra, count, lock_ms)
            acks.clock.now += later  # type: ignore[attr-defined]
        for offset in sorted(released):
            if acks.delivery_count(TP, offset) is not None:
                acks.acknowledge(TP, offset, R)
    if records_are != "drawn":
        older = records_are == "older"
        drawn = [(o, c + older) for o in each.held_offsets(TP) if (c := each.delivery_count(TP, o))]
    records = [_share_records([offset], count)[0] for offset, count in drawn]
    bulk.accept_delivered(TP, records)
    for record in records:
        if each.delivery_count(TP, record.offset) == record.delivery_count:
            each.acknowledge(TP, record.offset, A)
    assert bulk.held_offsets(TP) == each.held_offsets(TP)
    assert bulk.take_pending() == each.take_pending()
    assert [o.offsets for o in bulk.take_expired()] == [o.offsets for o in each.take_expired()]


def test_acquiring_a_range_again_moves_its_pending_acknowledgements_to_expired() -> None:
    acks = Acknowledgements(FakeClock())
    acks.acquire(TP, 0, 9, 1, 30_000)
    for offset in (2, 3, 8):
        acks.acknowledge(TP, offset, G if offset == 8 else R)
    acks.acquire(TP, 3, 8, 2, 30_000)  # 3..8 came back: their acknowledgements are stale
    assert acks.take_pending() == {TP: {2: R}}
    [outcome] = acks.take_expired()
    assert outcome.offsets == {3: R}  # a GAP is never reported late
    assert acks.held_offsets(TP) == [0, 1, 3, 4, 5, 6, 7, 8, 9]
    assert {acks.delivery_count(TP, o) for o in range(3, 9)} == {2}


def test_acknowledge_twice_or_unknown_is_refused() -> None:
    acks = Acknowledgements(FakeClock())
    acks.acquire(TP, 0, 0, 1, 30_000)
    acks.acknowledge(TP, 0, A)
    with pytest.raises(errors.IllegalStateError, match="not held"):
        acks.acknowledge(TP, 0, A)
    with pytest.raises(errors.IllegalStateError, match="not held"):
        acks.acknowledge(TopicPartition("jobs", 1), 0, A)


def test_take_pending_by_partition_and_put_back() -> None:
    other = TopicPartition("jobs", 1)
    acks = Acknowledgements(FakeClock())
    acks.acquire(TP, 0, 1, 1, 30_000)
    acks.acquire(other, 0, 0, 1, 30_000)
    acks.acknowledge(TP, 0, A)
    acks.acknowledge(other, 0, J)
    assert acks.take_pending(lambda tp: tp == other) == {other: {0: J}}
    taken = acks.take_pending()
    assert taken == {TP: {0: A}}
    acks.put_back(taken)
    assert acks.take_pending() == {TP: {0: A}}


def test_acknowledging_after_the_lock_expired_is_reported_not_sent() -> None:
    clock = FakeClock()
    acks = Acknowledgements(clock)
    acks.acquire(TP, 0, 1, 1, 1_000)
    acks.acknowledge(TP, 0, A)
    clock.now += 1.5
    acks.acknowledge(TP, 1, A)
    assert acks.take_pending() == {TP: {0: A}}
    [outcome] = acks.take_expired()
    assert outcome.partition == TP and outcome.offsets == {1: A}
    assert isinstance(outcome.error, errors.AcquisitionLockTimeoutError)
    assert isinstance(outcome.error, errors.InvalidRecordStateError)
    assert acks.take_expired() == []


def test_an_older_delivery_of_a_record_acquired_again_counts_as_expired() -> None:
    acks = Acknowledgements(FakeClock())
    acks.acquire(TP, 7, 7, 1, 30_000)
    acks.acquire(TP, 7, 7, 2, 30_000)  # the lock ran out and the broker delivered it again
    acks.acknowledge(TP, 7, A, delivery_count=1)
    assert acks.delivery_count(TP, 7) == 2  # the new delivery is still held
    assert not acks.has_pending()
    [outcome] = acks.take_expired()
    assert isinstance(outcome.error, errors.AcquisitionLockTimeoutError)
    acks.acknowledge(TP, 7, R, delivery_count=2)
    assert acks.take_pending() == {TP: {7: R}}


def test_acquiring_again_drops_a_pending_acknowledgement_of_the_old_delivery() -> None:
    acks = Acknowledgements(FakeClock())
    acks.acquire(TP, 3, 3, 1, 30_000)
    acks.acknowledge(TP, 3, A)
    acks.acquire(TP, 3, 3, 2, 30_000)
    assert not acks.has_pending()
    assert acks.delivery_count(TP, 3) == 2
    [outcome] = acks.take_expired()
    assert outcome.offsets == {3: A}
    assert isinstance(outcome.error, errors.AcquisitionLockTimeoutError)


def test_renew_keeps_the_record_held_and_moves_its_deadline_when_the_broker_agrees() -> None:
    clock = FakeClock()
    acks = Acknowledgements(clock)
    acks.acquire(TP, 0, 1, 1, 5_000)
    record = ShareRecord("jobs", 0, 0, 0, 0, None, b"v", (), None, 1)
    assert acks.unacknowledged(TP, [record]) == [0]
    clock.now += 2
    acks.acknowledge(TP, 0, AcknowledgeType.RENEW, 1)
    assert acks.renewing
    assert acks.delivery_count(TP, 0) == 1  # still held: a renewal settles nothing
    assert acks.unacknowledged(TP, [record]) == []  # yet the next poll may go ahead
    taken = acks.take_pending()
    assert taken == {TP: {0: AcknowledgeType.RENEW}}
    assert acks.deadline(TP, 0) == 105.0
    acks.renewed(TP, [0], 5_000)  # the broker's verdict, 2 s after the acquisition
    assert acks.deadline(TP, 0) == 107.0
    assert acks.deadline(TP, 1) == 105.0  # not renewed
    clock.now += 4  # past the first lock, within the renewed one
    acks.acknowledge(TP, 0, A, 1)
    assert acks.take_pending() == {TP: {0: A}}
    assert acks.take_expired() == []
    with pytest.raises(errors.IllegalStateError, match="no lock to renew"):
        acks.acknowledge(TP, 0, AcknowledgeType.RENEW, 1)


def test_a_final_acknowledgement_replaces_a_renewal_not_yet_sent() -> None:
    acks = Acknowledgements(FakeClock())
    acks.acquire(TP, 4, 4, 1, 5_000)
    acks.acknowledge(TP, 4, AcknowledgeType.RENEW)
    acks.acknowledge(TP, 4, R)
    assert acks.take_pending() == {TP: {4: R}}
    acks.acquire(TP, 5, 5, 1, 5_000)
    acks.acknowledge(TP, 5, J)
    with pytest.raises(errors.IllegalStateError):
        acks.acknowledge(TP, 5, AcknowledgeType.RENEW)  # settled already


def test_renewing_a_lock_past_its_deadline_is_reported_expired() -> None:
    clock = FakeClock()
    acks = Acknowledgements(clock)
    acks.acquire(TP, 0, 0, 1, 1_000)
    clock.now += 1.5
    acks.acknowledge(TP, 0, AcknowledgeType.RENEW)
    assert not acks.has_pending()
    [outcome] = acks.take_expired()
    assert outcome.offsets == {0: AcknowledgeType.RENEW}
    assert isinstance(outcome.error, errors.AcquisitionLockTimeoutError)


def test_renewals_travel_alone_with_is_renew_ack() -> None:
    renew = AcknowledgeType.RENEW
    acks = {TP: {0: renew, 1: A}, TopicPartition("jobs", 1): {5: R}}
    request = build_share_acknowledge(
        "g", member_id="m", epoch=3, topic_id=lambda _: uuid.UUID(int=1), acks=acks
    )
    assert request.is_renew_ack is True
    assert without_renewals(acks) == {TP: {1: A}, TopicPartition("jobs", 1): {5: R}}
    plain = build_share_acknowledge(
        "g", member_id="m", epoch=3, topic_id=lambda _: uuid.UUID(int=1), acks={TP: {1: A}}
    )
    assert plain.is_renew_ack is False


def test_unknown_acknowledgement_type_is_a_typed_value_error() -> None:
    for bad in ("acept", 9, "gap"):
        with pytest.raises(errors.KafkaValueError) as caught:
            AcknowledgeType.parse(bad)  # type: ignore[arg-type]
        assert isinstance(caught.value, errors.KafkaError)
        assert isinstance(caught.value, ValueError)
    assert AcknowledgeType.parse("Renew") is AcknowledgeType.RENEW


def test_consumer_acknowledge_takes_names_members_and_numbers_but_not_gap() -> None:
    consumer: Any = ShareConsumer("jobs", group_id="g", acknowledgement_mode="explicit")
    acks: Acknowledgements = consumer._acks
    acks.acquire(TP, 0, 4, 1, 30_000)
    records = _share_records([0, 1, 2, 3, 4])
    for record, kind in zip(records, ["accept", R, 3, "Release"], strict=False):
        consumer.acknowledge(record, kind)
    for bad in (0, G, "gap", ["accept"], 9):
        with pytest.raises(errors.KafkaValueError):
            consumer.acknowledge(records[4], bad)
    assert acks.take_pending() == {TP: {0: A, 1: R, 2: J, 3: R}}
    assert acks.held_offsets(TP) == [4]


def _ack_held_twins() -> list[Any]:
    from aiokafkawire.consumer.share import acknowledgements

    twins = [acknowledgements.pure_ack_held]
    if acknowledgements.ack_held is not acknowledgements.pure_ack_held:
        twins.append(acknowledgements.ack_held)  # the compiled one
    return twins


@pytest.mark.parametrize("ack_held", _ack_held_twins())
def test_ack_held_settles_only_the_common_case(ack_held: Any) -> None:
    clock = FakeClock()
    acks = Acknowledgements(clock)
    acks.acquire(TP, 0, 3, 1, 1_000)
    r0, r1, _, r3 = _share_records([0, 1, 2, 3])
    acks.acknowledge(TP, 0, A)  # the partition's first pending acknowledgement: general path
    assert ack_held(acks.acquired_offsets, acks.pending_offsets, r1, R, clock)
    assert acks.take_pending() == {TP: {0: A, 1: R}}
    acks.acknowledge(TP, 2, A)
    # Each of these answers False and changes nothing: the general path decides.
    untouched = [
        (r0, A, clock),  # not held (acknowledged already)
        (_share_records([3], delivery_count=2)[0], A, clock),  # another delivery
        (r3, A, lambda: clock.now + 1.0),  # its lock's deadline has passed
        (("jobs", 0, 3), A, clock),  # not a share record
        (ShareRecord("other", 0, 3, 0, 0, None, b"", (), None, 1), A, clock),
        (r3, A, clock),  # the partition's last held offset
    ]
    for record, kind, now in untouched:
        assert not ack_held(acks.acquired_offsets, acks.pending_offsets, record, kind, now)
    assert acks.held_offsets(TP) == [3] and acks.take_pending() == {TP: {2: A}}
    acks.acquire(TP, 4, 4, 1, 1_000)
    assert not ack_held(
        acks.acquired_offsets, acks.pending_offsets, r3, A, clock
    )  # no pending dict yet
    assert acks.held_offsets(TP) == [3, 4] and not acks.has_pending()
    acks.acknowledge(TP, 3, A)
    # time.monotonic itself (the compiled twin reads its clock directly) against its deadline.
    acks = Acknowledgements()
    acks.acquire(TP, 0, 2, 1, 30_000)
    acks.acknowledge(TP, 0, A)
    assert ack_held(acks.acquired_offsets, acks.pending_offsets, r1, A, time.monotonic)
    acks.acquire(TP, 5, 6, 1, -1)  # a lock that ended already
    late = _share_records([5])[0]
    assert not ack_held(acks.acquired_offsets, acks.pending_offsets, late, A, time.monotonic)


@pytest.mark.parametrize("ack_held", _ack_held_twins())
def test_ack_held_finds_each_record_s_own_partition(ack_held: Any) -> None:
    # The compiled twin keeps the last record's partition key: records of other partitions, and
    # of an equal topic name in another string object, must still find their own.
    acks = Acknowledgements()
    other = TopicPartition("jobs", 1)
    twin_topic = "".join(["jo", "bs"])  # equal to "jobs", another object
    for tp in (TP, other, TopicPartition(twin_topic, 2)):
        acks.acquire(tp, 0, 9, 1, 30_000)
        acks.acknowledge(tp, 0, A)
    for offset in range(1, 5):
        for partition in (0, 1, 2):
            record = ShareRecord(
                twin_topic if partition == 2 else "jobs",
                partition,
                offset,
                0,
                0,
                None,
                b"",
                (),
                None,
                1,
            )
            assert ack_held(acks.acquired_offsets, acks.pending_offsets, record, A, time.monotonic)
    assert acks.take_pending() == {
        tp: dict.fromkeys(range(5), A) for tp in (TP, other, TopicPartition("jobs", 2))
    }
    assert [acks.held_offsets(tp) for tp in (TP, other)] == [list(range(5, 10))] * 2


def test_consumer_acknowledge_refuses_twice_unknown_and_non_records_typed() -> None:
    consumer: Any = ShareConsumer("jobs", group_id="g", acknowledgement_mode="explicit")
    acks: Acknowledgements = consumer._acks
    acks.acquire(TP, 0, 9, 1, 30_000)
    records = _share_records(list(range(10)))
    for record in records[:5]:
        consumer.acknowledge(record)
    for record in records[:5]:  # each acknowledged already, on the common path
        with pytest.raises(errors.IllegalStateError, match="not held"):
            consumer.acknowledge(record)
    stranger = ShareRecord("jobs", 1, 5, 0, 0, None, b"", (), None, 1)  # not delivered here
    with pytest.raises(errors.IllegalStateError, match="not held"):
        consumer.acknowledge(stranger)
    for bad in (5, None, ("jobs", 0, 5), records[5][:9]):
        with pytest.raises(errors.KafkaTypeError, match="ShareRecord"):
            consumer.acknowledge(bad)
    assert acks.take_pending() == {TP: dict.fromkeys(range(5), A)}
    assert acks.held_offsets(TP) == list(range(5, 10))


def _compiled_acknowledge() -> Any:
    from aiokafkawire.consumer.share import consumer as share_consumer

    accelerator = share_consumer._ack_accelerator
    if accelerator is None:
        pytest.skip("the compiled extension is not built (or AIOKAFKAWIRE_PURE_PYTHON)")
    return accelerator


def test_compiled_acknowledge_keeps_the_method_s_face() -> None:
    accelerator = _compiled_acknowledge()
    method = ShareConsumer.__dict__["acknowledge"]
    assert isinstance(method, accelerator.ShareAckMethod)
    consumer: Any = ShareConsumer("jobs", group_id="g", acknowledgement_mode="explicit")
    python_method = method.__wrapped__
    assert list(inspect.signature(consumer.acknowledge).parameters) == ["record", "type"]
    assert inspect.signature(ShareConsumer.acknowledge) == inspect.signature(python_method)
    assert consumer.acknowledge.__doc__ == python_method.__doc__
    assert consumer.acknowledge.__doc__.startswith("Acknowledge one delivered record")
    assert ShareConsumer.acknowledge.__name__ == "acknowledge"
    assert ShareConsumer.acknowledge.__qualname__ == "ShareConsumer.acknowledge"
    assert inspect.getdoc(consumer.acknowledge) == inspect.getdoc(python_method)


def test_compiled_acknowledge_settles_accepts_and_hands_the_rest_to_the_method(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    accelerator = _compiled_acknowledge()
    python_method = ShareConsumer.__dict__["acknowledge"].__wrapped__
    calls: list[tuple[Any, ...]] = []

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(args + tuple(kwargs.items()))
        python_method(self, *args, **kwargs)

    monkeypatch.setattr(
        ShareConsumer, "acknowledge", accelerator.ShareAckMethod(counting, A, Acknowledgements)
    )
    consumer: Any = ShareConsumer("jobs", group_id="g", acknowledgement_mode="explicit")
    acks: Acknowledgements = consumer._acks
    acks.acquire(TP, 0, 9, 1, 30_000)
    records = _share_records(list(range(10)))
    consumer.acknowledge(records[0])  # the partition's first pending offset: the method
    assert len(calls) == 1
    # Every spelling of ACCEPT, on a held record: settled without the method.
    consumer.acknowledge(records[1])
    consumer.acknowledge(records[2], "accept")
    consumer.acknowledge(records[3], A)
    consumer.acknowledge(records[4], type="accept")
    consumer.acknowledge(records[5], "".join(["acc", "ept"]))  # equal, not the same object
    assert len(calls) == 1
    # Anything else goes to the method, with the same arguments.
    consumer.acknowledge(records[6], "release")
    consumer.acknowledge(records[7], "Accept")  # a name parse() knows, not the fast spelling
    consumer.acknowledge(record=records[8])
    with pytest.raises(errors.IllegalStateError, match="not held"):
        consumer.acknowledge(records[1])  # acknowledged already
    with pytest.raises(errors.KafkaTypeError, match="ShareRecord"):
        consumer.acknowledge(("jobs", 0, 9))
    with pytest.raises(TypeError):
        consumer.acknowledge()
    handed = [records[6], records[7], ("record", records[8]), records[1]]
    assert [c[0] for c in calls[1:5]] == handed
    assert len(calls) == 7
    assert acks.take_pending() == {TP: {0: A, 1: A, 2: A, 3: A, 4: A, 5: A, 6: R, 7: A, 8: A}}
    # While an offset is renewed, a failed consumer, implicit mode: the method decides.
    acks.acquire(TP, 10, 12, 1, 30_000)
    acks.acknowledge(TP, 10, AcknowledgeType.RENEW, 1)
    later = _share_records([10, 11, 12])
    calls.clear()
    consumer.acknowledge(later[1])
    consumer.acknowledge(later[0])  # settles the renewed offset
    assert len(calls) == 2 and not acks.renewed_held
    consumer._started = True  # as after start(): the fatal error is what the call raises
    consumer._set_fatal(errors.KafkaError("gone"))
    with pytest.raises(errors.KafkaError, match="gone"):
        consumer.acknowledge(later[2])  # held, and the common case if it were not failed
    assert len(calls) == 3 and acks.held_offsets(TP) == [9, 12]
    implicit: Any = ShareConsumer("jobs", group_id="g")
    implicit._acks.acquire(TP, 0, 2, 1, 30_000)
    implicit._acks.acknowledge(TP, 0, A)
    with pytest.raises(errors.IllegalStateError):  # (not started: that error comes first)
        implicit.acknowledge(records[1])
    assert len(calls) == 4 and implicit._acks.held_offsets(TP) == [1, 2]


def test_compiled_acknowledge_reads_only_acknowledgements_itself_in_place() -> None:
    accelerator = _compiled_acknowledge()

    class Plain:  # the names, but as class attributes, not slots
        renewed_held = acquired_offsets = pending_offsets = clock = None

    with pytest.raises(TypeError, match="slot"):
        accelerator.ShareAckMethod(lambda self, record: None, A, Plain)

    class Counting(Acknowledgements):  # a subclass: the Python method settles every record
        __slots__ = ("calls",)

        def acknowledge_record(self, record: Any, ack_type: AcknowledgeType) -> None:
            self.calls += 1
            super().acknowledge_record(record, ack_type)

    consumer: Any = ShareConsumer("jobs", group_id="g", acknowledgement_mode="explicit")
    acks = consumer._acks = consumer._open_acks = Counting()
    acks.calls = 0
    acks.acquire(TP, 0, 3, 1, 30_000)
    for record in _share_records([0, 1, 2, 3]):
        consumer.acknowledge(record)
    # The method's ack_held settles records 1 and 2 (0 is the first pending, 3 the last held).
    assert acks.calls == 2 and acks.take_pending() == {TP: dict.fromkeys(range(4), A)}


async def test_compiled_acknowledge_refuses_after_close() -> None:
    consumer: Any = ShareConsumer("jobs", group_id="g", acknowledgement_mode="explicit")
    acks: Acknowledgements = consumer._acks
    acks.acquire(TP, 0, 3, 1, 30_000)
    records = _share_records([0, 1, 2, 3])
    consumer.acknowledge(records[0])
    await consumer.close()
    with pytest.raises(errors.ClientClosedError):
        consumer.acknowledge(records[1])  # held, and would be the common case if open
    assert acks.held_offsets(TP) == [1, 2, 3]


def test_consumer_acknowledge_after_the_lock_expired_is_an_outcome_not_a_send() -> None:
    consumer: Any = ShareConsumer("jobs", group_id="g", acknowledgement_mode="explicit")
    clock = FakeClock()
    acks = consumer._acks = consumer._open_acks = Acknowledgements(clock)
    acks.acquire(TP, 0, 3, 1, 1_000)
    records = _share_records([0, 1, 2, 3])
    consumer.acknowledge(records[0])
    consumer.acknowledge(records[1])
    clock.now += 1.5
    consumer.acknowledge(records[2])
    assert acks.take_pending() == {TP: {0: A, 1: A}}
    [outcome] = acks.take_expired()
    assert outcome.offsets == {2: A}
    assert isinstance(outcome.error, errors.AcquisitionLockTimeoutError)


# ------------------------------------------------------------------ the session state machine


def test_session_epochs_open_increment_close() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    session = ShareSession(1)
    assert session.state is SessionState.NEW and session.request_epoch == 0
    assert not session.can_acknowledge
    assert session.plan([a, b]) == ([a, b], [])
    session.answered()
    assert session.state is SessionState.OPEN and session.request_epoch == 1
    assert session.can_acknowledge
    assert session.plan([b]) == ([], [a])
    session.answered()
    assert session.request_epoch == 2 and session.partitions == {b}
    assert session.plan([a, b]) == ([a], [])
    session.answered()
    session.close()
    assert session.state is SessionState.CLOSING and session.request_epoch == -1
    session.answered()
    assert session.state is SessionState.CLOSED
    with pytest.raises(errors.IllegalStateError, match="closed"):
        _ = session.request_epoch


def test_session_error_or_lost_answer_starts_over_with_a_full_request() -> None:
    a = TopicPartition("t", 0)
    for fail in (ShareSession.session_error, ShareSession.lost):
        session = ShareSession(1)
        session.plan([a])
        session.answered()
        session.plan([a])
        fail(session)
        assert session.state is SessionState.NEW and session.request_epoch == 0
        assert session.partitions == set()
        assert session.plan([a]) == ([a], [])


def test_session_epoch_wraps_to_one() -> None:
    session = ShareSession(1)
    session.plan([])
    session.answered()
    session.epoch = 2**31 - 1
    session.plan([])
    session.answered()
    assert session.request_epoch == 1


def test_session_close_without_a_session_needs_no_request() -> None:
    session = ShareSession(1)
    session.close()
    assert session.state is SessionState.CLOSED


def test_session_illegal_transitions_raise() -> None:
    session = ShareSession(1)
    session.close()
    with pytest.raises(errors.InvalidTransitionError) as info:
        session.answered()
    assert (info.value.state, info.value.event) == (SessionState.CLOSED, SessionEvent.ANSWERED)
    assert "share session" in str(info.value)
    closing = ShareSession(2)
    closing.plan([])
    closing.answered()
    closing.close()
    with pytest.raises(errors.IllegalStateError, match="cannot fetch while closing"):
        closing.plan([])


def test_transition_table_covers_every_live_state() -> None:
    for state in (SessionState.NEW, SessionState.OPEN, SessionState.CLOSING):
        for event in (SessionEvent.ANSWERED, SessionEvent.SESSION_ERROR, SessionEvent.LOST):
            assert TRANSITIONS.allows(state, event)
    # Nothing ever leaves CLOSED.
    closed_rows = TRANSITIONS.transitions.items()
    assert {to for (frm, _), to in closed_rows if frm is SessionState.CLOSED} == {
        SessionState.CLOSED
    }


# ------------------------------------------------------------------ delivery from an answer


def _records(base_offset: int, count: int) -> bytes:
    builder = DefaultRecordBatchBuilder(base_offset=base_offset, batch_size=1 << 20)
    for i in range(count):
        builder.append(1_000 + i, None, b"v%d" % (base_offset + i))
    return bytes(builder.build())


def _fetcher(acks: Acknowledgements) -> ShareFetcher:
    topic_id = uuid.uuid4()
    metadata = SimpleNamespace(
        topics={"jobs": SimpleNamespace(topic_id=topic_id)}, leader_for=lambda t, p: 1
    )
    cluster: Any = SimpleNamespace(metadata=metadata)
    return ShareFetcher(
        cluster,
        ShareFetchConfig(group_id="g", check_crcs=False),
        acks,
        member_id=lambda: "m",
        on_outcomes=lambda outcomes: None,
        on_fatal=lambda error: None,
    )


async def test_only_acquired_offsets_are_delivered_and_the_rest_are_gaps() -> None:
    acks = Acknowledgements(FakeClock())
    fetcher = _fetcher(acks)
    raw = _records(10, 10)  # offsets 10..19
    acquired = [
        SimpleNamespace(first_offset=12, last_offset=13, delivery_count=1),
        SimpleNamespace(first_offset=15, last_offset=21, delivery_count=3),  # 20, 21 absent
    ]
    delivered = delivered_records(acks, fetcher._config, TP, raw, acquired, 30_000)
    assert [r.offset for r in delivered] == [12, 13, 15, 16, 17, 18, 19]
    assert [r.delivery_count for r in delivered] == [1, 1, 3, 3, 3, 3, 3]
    assert all(isinstance(r, ShareRecord) for r in delivered)
    assert delivered[0].value == b"v12" and delivered[0].topic_partition == TP
    # Offsets acquired without a record are acknowledged as gaps at once.
    assert acks.take_pending() == {TP: {20: G, 21: G}}
    assert acks.held_offsets(TP) == [12, 13, 15, 16, 17, 18, 19]


async def test_drain_hands_out_in_order_and_wakes_the_loop_when_a_chunk_is_done() -> None:
    acks = Acknowledgements(FakeClock())
    fetcher = _fetcher(acks)
    records = delivered_records(
        acks,
        fetcher._config,
        TP,
        _records(0, 5),
        [SimpleNamespace(first_offset=0, last_offset=4, delivery_count=1)],
        1,
    )
    wake = asyncio.Event()
    fetcher._wakes[1] = wake
    fetcher.buffer.add(1, [ShareChunk(1, TP, records)])
    [(tp, run)] = fetcher.drain(3)
    assert tp == TP and [r.offset for r in run] == [0, 1, 2]
    assert not wake.is_set()
    [(tp, run)] = fetcher.drain(3)
    assert [r.offset for r in run] == [3, 4]
    assert wake.is_set() and not fetcher.has_data()


# ------------------------------------------------------------------ the consumer's surface


def test_member_ids_look_like_kafka_uuids() -> None:
    ids = {new_member_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == 22 and "=" not in i for i in ids)


def test_options_are_checked() -> None:
    with pytest.raises(errors.ConfigError, match="group_id"):
        ShareConsumer("t", group_id="")
    with pytest.raises(errors.ConfigError, match="acknowledgement_mode"):
        ShareConsumer("t", group_id="g", acknowledgement_mode="auto")
    with pytest.raises(errors.ConfigError, match="acquire_mode"):
        ShareConsumer("t", group_id="g", acquire_mode="greedy")
    with pytest.raises(errors.ConfigError, match="unknown ShareConsumer options"):
        ShareConsumer("t", group_id="g", enable_auto_commit=True)
    with pytest.raises(errors.ConfigTypeError, match="max_poll_records"):
        ShareConsumer("t", group_id="g", max_poll_records="10")
    with pytest.raises(errors.ConfigError, match="max_poll_records"):
        ShareConsumer("t", group_id="g", max_poll_records=0)
    with pytest.raises(errors.ConfigTypeError, match="on_acknowledgement"):
        ShareConsumer("t", group_id="g", on_acknowledgement="print")
    with pytest.raises(errors.ConfigTypeError, match="topic"):
        ShareConsumer(b"t", group_id="g")  # type: ignore[arg-type]


async def test_use_before_start_and_after_close() -> None:
    consumer = ShareConsumer("t", group_id="g", acknowledgement_mode="explicit")
    with pytest.raises(errors.IllegalStateError, match="not started"):
        await consumer.getmany()
    await consumer.close()
    with pytest.raises(errors.ClientClosedError):
        await consumer.commit()


async def test_state_and_metrics_follow_the_consumer_and_its_acknowledgement_outcomes() -> None:
    from aiokafkawire.consumer import Consumer
    from aiokafkawire.consumer.share import AcknowledgementOutcome

    consumer = ShareConsumer("t", group_id="g", acknowledgement_mode="explicit")
    assert consumer.state == "unjoined"
    snapshot = consumer.metrics()
    share = snapshot["consumer"]
    # The keys both consumers have mean the same thing (and have the same types).
    plain = Consumer(group_id="g").metrics()["consumer"]
    for key in ("records_consumed", "records_per_sec", "fetch_latency", "assigned_partitions"):
        assert type(share[key]) is type(plain[key]), key
    assert set(snapshot) == {"brokers", "consumer"} and share["state"] == "unjoined"
    assert share["records_acquired"] == share["records_accepted"] == 0
    renew = AcknowledgeType.RENEW
    consumer._outcomes(
        [
            AcknowledgementOutcome(TP, {0: A, 1: A, 2: R, 3: J, 4: G, 5: renew}, None),
            AcknowledgementOutcome(TP, {6: A, 7: J}, errors.InvalidRecordStateError()),
        ]
    )
    share = consumer.metrics()["consumer"]
    counted = {k: share[k] for k in share if k.startswith(("records_", "acknowledgements_"))}
    counted.pop("records_per_sec")
    assert counted == {
        "records_consumed": 0,
        "records_acquired": 0,
        "records_accepted": 2,  # the refused outcome's offsets are not counted by type
        "records_released": 1,
        "records_rejected": 1,
        "records_renewed": 1,
        "acknowledgements_sent": 8,  # every offset answered, the gap included
        "acknowledgements_failed": 2,
    }
    consumer._set_fatal(errors.GroupAuthorizationFailedError("no"))
    assert consumer.state == consumer.metrics()["consumer"]["state"] == "fatal"
    await consumer.close()
    assert consumer.state == "closed"


# ------------------------------------------------------------------ the fetch loop, scripted


class _ScriptedConnection:
    """Answers share requests from a script; records what was sent."""

    host, port = "127.0.0.1", 9092

    def __init__(self, answer: Any) -> None:
        self.versions = SimpleNamespace(supports=lambda key, version=0: True)
        self.sent: list[Any] = []
        self._answer = answer

    async def send(self, request: Any, version: Any = None, *, timeout_ms: Any = None) -> Any:
        self.sent.append(request)
        await asyncio.sleep(0)
        return self._answer(request, len(self.sent))


def _scripted_fetcher(answer: Any) -> tuple[ShareFetcher, _ScriptedConnection, Any]:
    from aiokafkawire.protocol.messages import share_acknowledge as m_ack
    from aiokafkawire.protocol.messages import share_fetch as m_fetch

    topic_id = uuid.uuid4()
    connection = _ScriptedConnection(answer)

    async def get_connection(node: int, purpose: str = "default") -> _ScriptedConnection:
        return connection

    metadata = SimpleNamespace(
        topics={"jobs": SimpleNamespace(topic_id=topic_id)}, leader_for=lambda t, p: 1
    )
    cluster: Any = SimpleNamespace(
        metadata=metadata, connection=get_connection, request_update=lambda: None
    )
    outcomes: list[Any] = []
    fetcher = ShareFetcher(
        cluster,
        ShareFetchConfig(group_id="g", check_crcs=False, fetch_max_wait_ms=10),
        Acknowledgements(FakeClock()),
        member_id=lambda: "member",
        on_outcomes=outcomes.extend,
        on_fatal=lambda error: outcomes.append(error),
    )
    helpers = SimpleNamespace(topic_id=topic_id, m_fetch=m_fetch, m_ack=m_ack, outcomes=outcomes)
    return fetcher, connection, helpers


def _fetch_answer(
    h: Any,
    *,
    error: int = 0,
    records: bytes | None = None,
    ack_error: int = 0,
    acquired: list[tuple[int, int, int]] = (),
) -> Any:
    m = h.m_fetch
    partition = m.PartitionData(
        partition_index=0,
        acknowledge_error_code=ack_error,
        current_leader=m.LeaderIdAndEpoch(leader_id=1, leader_epoch=0),
        records=records,
        acquired_records=[
            m.AcquiredRecords(first_offset=first, last_offset=last, delivery_count=count)
            for first, last, count in acquired
        ],
    )
    return m.ShareFetchResponse(
        error_code=error,
        acquisition_lock_timeout_ms=30_000,
        responses=[m.ShareFetchableTopicResponse(topic_id=h.topic_id, partitions=[partition])]
        if not error
        else [],
        node_endpoints=[],
    )


async def test_a_forgotten_share_session_is_reopened_and_its_acknowledgements_fail() -> None:
    h: Any = None

    def answer(request: Any, n: int) -> Any:
        if n == 1:  # opens the session: records 0..2
            return _fetch_answer(h, records=_records(0, 3), acquired=[(0, 2, 1)])
        if n == 2:  # carries the acknowledgements; the broker forgot the session
            return _fetch_answer(h, error=errors.ShareSessionNotFoundError.code)
        return _fetch_answer(h)

    fetcher, connection, h = _scripted_fetcher(answer)
    fetcher.set_assignment([TP])
    fetcher.start()
    try:
        await asyncio.wait_for(fetcher.wait_for_data(5), 5)
        [(_, records)] = fetcher.drain(10)
        assert [r.offset for r in records] == [0, 1, 2]
        for record in records:
            fetcher._acks.acknowledge(TP, record.offset, A)
        fetcher.wake_all()
        for _ in range(200):
            if len(connection.sent) >= 3:
                break
            await asyncio.sleep(0.01)
    finally:
        await fetcher.close(1.0)
    first, second, third = connection.sent[:3]
    assert (
        first.share_session_epoch == 0
        and first.topics[0].partitions[0].acknowledgement_batches == []
    )
    assert second.share_session_epoch == 1
    [batch] = second.topics[0].partitions[0].acknowledgement_batches
    assert (batch.first_offset, batch.last_offset, batch.acknowledge_types) == (0, 2, [1])
    # A new session: epoch 0 again, naming the partition again.
    assert third.share_session_epoch == 0
    assert [p.partition_index for p in third.topics[0].partitions] == [0]
    [outcome] = [o for o in h.outcomes if hasattr(o, "offsets")]
    assert outcome.offsets == {0: A, 1: A, 2: A}
    assert isinstance(outcome.error, errors.ShareSessionNotFoundError)


async def test_acknowledgements_made_while_a_fetch_is_out_ride_on_the_next_share_fetch() -> None:
    """Records acknowledged while the leader's next ShareFetch is out (the application works on
    the previous answer) wait, once its answer is buffered, for the application to take it:
    the ShareFetch then due carries them, with no ShareAcknowledge round trip in between (which
    would hold that ShareFetch back)."""
    h: Any = None
    gate = asyncio.Event()

    def answer(request: Any, n: int) -> Any:
        if n <= 2:
            return _fetch_answer(
                h, records=_records(3 * n - 3, 3), acquired=[(3 * n - 3, 3 * n - 1, 1)]
            )
        return _fetch_answer(h)

    fetcher, connection, h = _scripted_fetcher(answer)
    scripted = connection.send

    async def send(request: Any, version: Any = None, *, timeout_ms: Any = None) -> Any:
        if len(connection.sent) == 1:  # the second ShareFetch: answered once the gate opens
            await gate.wait()
        return await scripted(request, version, timeout_ms=timeout_ms)

    connection.send = send  # type: ignore[method-assign]
    fetcher.set_assignment([TP])
    fetcher.start()
    try:
        await asyncio.wait_for(fetcher.wait_for_data(5), 5)
        [(_, first)] = fetcher.drain(10)  # the second ShareFetch goes out ...
        await asyncio.sleep(0.01)
        for record in first:  # ... and the application acknowledges meanwhile
            fetcher._acks.acknowledge(TP, record.offset, A)
        gate.set()
        await asyncio.wait_for(fetcher.wait_for_data(5), 5)
        await asyncio.sleep(0.01)  # the loop sees the answer and the acknowledgements
        [(_, second)] = fetcher.drain(10)
        assert [r.offset for r in second] == [3, 4, 5]
        for _ in range(200):
            if len(connection.sent) >= 3:
                break
            await asyncio.sleep(0.005)
    finally:
        await fetcher.close(1.0)
    third = connection.sent[2]
    assert isinstance(third, h.m_fetch.ShareFetchRequest)
    [batch] = third.topics[0].partitions[0].acknowledgement_batches
    assert (batch.first_offset, batch.last_offset, batch.acknowledge_types) == (0, 2, [1])


async def test_commit_sends_a_share_acknowledge_and_returns_the_verdicts() -> None:
    h: Any = None

    def answer(request: Any, n: int) -> Any:
        if isinstance(request, h.m_ack.ShareAcknowledgeRequest):
            m = h.m_ack
            return m.ShareAcknowledgeResponse(
                responses=[
                    m.ShareAcknowledgeTopicResponse(
                        topic_id=h.topic_id,
                        partitions=[
                            m.PartitionData(
                                partition_index=0,
                                error_code=errors.InvalidRecordStateError.code,
                                current_leader=m.LeaderIdAndEpoch(leader_id=1, leader_epoch=0),
                            )
                        ],
                    )
                ],
                node_endpoints=[],
            )
        if n == 1:
            return _fetch_answer(h, records=_records(0, 2), acquired=[(0, 1, 1)])
        return _fetch_answer(h)

    fetcher, connection, h = _scripted_fetcher(answer)
    fetcher.set_assignment([TP])
    fetcher.start()
    try:
        await asyncio.wait_for(fetcher.wait_for_data(5), 5)
        fetcher.drain(10)
        fetcher._acks.acknowledge(TP, 0, A)
        fetcher._acks.acknowledge(TP, 1, J)
        outcomes = await asyncio.wait_for(fetcher.commit(fetcher._acks.take_pending()), 5)
    finally:
        await fetcher.close(1.0)
    acknowledges = [r for r in connection.sent if isinstance(r, h.m_ack.ShareAcknowledgeRequest)]
    ack, close = acknowledges
    assert close.share_session_epoch == -1 and close.topics == []
    assert ack.share_session_epoch >= 1 and ack.group_id == "g" and ack.member_id == "member"
    [batch] = ack.topics[0].partitions[0].acknowledgement_batches
    assert (batch.first_offset, batch.last_offset, batch.acknowledge_types) == (0, 1, [1, 3])
    [outcome] = outcomes
    assert outcome.partition == TP and outcome.offsets == {0: A, 1: J}
    assert isinstance(outcome.error, errors.InvalidRecordStateError)


# ------------------------------------------------------------------ membership, scripted


def _scripted_membership(answers: list[Any]) -> tuple[Any, list[Any], list[Any], Any]:
    from aiokafkawire.consumer.share.membership import ShareMembership

    topic_id = uuid.uuid4()
    sent: list[Any] = []
    assignments: list[set[TopicPartition]] = []
    fatal: list[Any] = []

    class Connection:
        host, port = "127.0.0.1", 9092
        versions = SimpleNamespace(supports=lambda key, version=0: True)

        async def send(self, request: Any, version: Any = None, *, timeout_ms: Any = None) -> Any:
            sent.append(request)
            return answers.pop(0) if answers else answers_default(request)

    def answers_default(request: Any) -> Any:
        from aiokafkawire.protocol.messages import share_group_heartbeat as m

        return m.ShareGroupHeartbeatResponse(
            member_id=request.member_id, member_epoch=7, heartbeat_interval_ms=50
        )

    refreshed: list[bool] = []

    async def coordinator_connection(key: str, purpose: str = "group") -> Connection:
        return Connection()

    async def refresh_metadata() -> None:
        refreshed.append(True)

    metadata = SimpleNamespace(topics={"jobs": SimpleNamespace(topic_id=topic_id)})
    cluster: Any = SimpleNamespace(
        metadata=metadata,
        set_topics=lambda topics: None,
        coordinator_connection=coordinator_connection,
        invalidate_coordinator=lambda key, kind="group": None,
        refresh_metadata=refresh_metadata,
    )
    membership = ShareMembership(
        cluster, "g", on_assignment=assignments.append, on_fatal=fatal.append, retry_backoff_ms=5
    )
    return (
        membership,
        sent,
        assignments,
        SimpleNamespace(topic_id=topic_id, fatal=fatal, refreshed=refreshed),
    )


def _heartbeat_answer(member_epoch: int, *, error: int = 0, assignment: Any = None) -> Any:
    from aiokafkawire.protocol.messages import share_group_heartbeat as m

    return m.ShareGroupHeartbeatResponse(
        error_code=error,
        member_id=None,
        member_epoch=member_epoch,
        heartbeat_interval_ms=20,
        assignment=None
        if assignment is None
        else m.Assignment(
            topic_partitions=[
                m.TopicPartitions(topic_id=tid, partitions=parts) for tid, parts in assignment
            ]
        ),
    )


async def _until(predicate: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.005)


async def test_membership_joins_follows_the_assignment_and_rejoins_when_fenced() -> None:
    answers: list[Any] = []
    membership, sent, assignments, h = _scripted_membership(answers)
    answers += [
        _heartbeat_answer(1, assignment=[(h.topic_id, [0, 1])]),
        _heartbeat_answer(1),  # no change
        _heartbeat_answer(-1, error=errors.FencedMemberEpochError.code),
        _heartbeat_answer(3, assignment=[(h.topic_id, [1])]),
    ]
    membership.subscribe(["jobs"])
    membership.start()
    try:
        await _until(lambda: len(assignments) >= 3)
    finally:
        await membership.close(leave=True)
    jobs = TopicPartition
    assert assignments[:3] == [{jobs("jobs", 0), jobs("jobs", 1)}, set(), {jobs("jobs", 1)}]
    # Join (epoch 0) with the full state, then only the epoch; after fencing, join again.
    assert sent[0].member_epoch == 0 and sent[0].subscribed_topic_names == ["jobs"]
    assert sent[1].member_epoch == 1 and sent[1].subscribed_topic_names is None
    assert sent[3].member_epoch == 0 and sent[3].subscribed_topic_names == ["jobs"]
    assert len({r.member_id for r in sent}) == 1  # one member id for the consumer's lifetime
    assert sent[-1].member_epoch == -1  # left the group on close
    assert h.fatal == []


async def test_membership_unsupported_broker_is_fatal_with_the_way_to_enable_it() -> None:
    answers = [_heartbeat_answer(0, error=errors.UnsupportedVersionError.code)]
    membership, _, _, h = _scripted_membership(answers)
    membership.subscribe(["jobs"])
    membership.start()
    try:
        await _until(lambda: bool(h.fatal))
    finally:
        await membership.close(leave=False)
    [error] = h.fatal
    assert isinstance(error, errors.ShareGroupsUnsupportedError)
    assert "share.version" in str(error)


async def test_membership_waits_for_metadata_naming_an_assigned_topic_id() -> None:
    unknown = uuid.uuid4()
    answers: list[Any] = []
    membership, _, assignments, h = _scripted_membership(answers)
    answers.append(_heartbeat_answer(1, assignment=[(unknown, [0])]))
    membership.subscribe(["jobs"])
    membership.start()
    try:
        await _until(lambda: len(h.refreshed) >= 2)
        assert assignments == []  # never an assignment with a topic it cannot name
        membership._cluster.metadata.topics["later"] = SimpleNamespace(topic_id=unknown)
        await _until(lambda: bool(assignments))
    finally:
        await membership.close(leave=False)
    assert assignments == [{TopicPartition("later", 0)}, set()]  # set(): given up on close


# ------------------------------------------------------------------ retry backoff


class _StopLoop(Exception):
    pass


def _recording_sleep(monkeypatch: pytest.MonkeyPatch, delays: list[float], stop_after: int) -> None:
    """asyncio.sleep records each delay (and ends the loop under test after ``stop_after``)."""
    real_sleep = asyncio.sleep

    async def sleep(delay: float, *args: Any) -> Any:
        delays.append(delay)
        if len(delays) >= stop_after:
            raise _StopLoop
        return await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)


async def test_heartbeat_retries_back_off_from_retry_backoff_ms_even_above_two_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def unreachable(key: str, purpose: str = "group") -> Any:
        raise errors.KafkaConnectionError("coordinator gone")

    cluster: Any = SimpleNamespace(
        coordinator_connection=unreachable, invalidate_coordinator=lambda *a, **k: None
    )
    membership = ShareMembership(
        cluster,
        "g",
        on_assignment=lambda p: None,
        on_fatal=lambda e: None,
        retry_backoff_ms=3000,
        retry_backoff_max_ms=1000,
    )
    delays: list[float] = []
    _recording_sleep(monkeypatch, delays, stop_after=5)
    with pytest.raises(_StopLoop):
        await membership._heartbeat_loop()
    # Never below the first wait (the old loop fell back to 2 s), jitter +-20%.
    assert all(2.4 <= d <= 3.6 for d in delays), delays


async def test_share_fetch_retries_double_to_retry_backoff_max_ms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = ShareFetchConfig(group_id="g", retry_backoff_ms=100, retry_backoff_max_ms=800)
    cluster: Any = SimpleNamespace(request_update=lambda: None)
    fetcher = ShareFetcher(
        cluster,
        config,
        Acknowledgements(),
        member_id=lambda: "m",
        on_outcomes=lambda o: None,
        on_fatal=lambda e: None,
    )
    fetcher._sessions[1] = ShareSession(1)
    fetcher._wakes[1] = asyncio.Event()

    async def failing_step(node: int, session: ShareSession, may_hold: bool = False) -> Any:
        raise errors.KafkaConnectionError("leader gone")

    monkeypatch.setattr(fetcher, "_step", failing_step)
    delays: list[float] = []
    _recording_sleep(monkeypatch, delays, stop_after=6)
    with pytest.raises(_StopLoop):
        await fetcher._node_loop(1)
    expected = [0.1, 0.2, 0.4, 0.8, 0.8, 0.8]
    assert all(e * 0.8 <= d <= e * 1.2 for d, e in zip(delays, expected, strict=True)), delays


@pytest.mark.parametrize(
    ("code", "fatal"),
    [
        (errors.KafkaStorageErrorError.code, False),  # retriable: a new session, no failure
        (errors.NotLeaderOrFollowerError.code, False),  # stale metadata: refreshed, reopened
        (errors.GroupAuthorizationFailedError.code, True),
        (errors.InvalidRequestError.code, True),  # FATAL in the action table: not retried
    ],
)
async def test_top_level_share_fetch_errors_follow_the_action_table(code: int, fatal: bool) -> None:
    h: Any = None

    def answer(request: Any, n: int) -> Any:
        return _fetch_answer(h, error=code) if n == 1 else _fetch_answer(h)

    fetcher, connection, h = _scripted_fetcher(answer)
    fetcher.set_assignment([TP])
    fetcher.start()
    try:
        for _ in range(300):
            if len(connection.sent) >= 2 or h.outcomes:
                break
            await asyncio.sleep(0.01)
    finally:
        await fetcher.close(1.0)
    failures = [o for o in h.outcomes if isinstance(o, errors.KafkaError)]
    assert [type(f).code for f in failures] == ([code] if fatal else [])  # type: ignore[attr-defined]
    if not fatal:  # the session was opened again (epoch 0)
        assert [r.share_session_epoch for r in connection.sent[:2]] == [0, 0]


# ------------------------------------------------------------------ the shared retry policy


async def test_a_share_fetch_without_a_readable_answer_is_retried_not_fatal() -> None:
    """A malformed answer (ProtocolError: the connection is closed) is retried after the
    backoff with a new session, as any error the table retries in the background; it used to
    end the loop and reach the user as fatal."""
    h: Any = None

    def answer(request: Any, n: int) -> Any:
        if n == 1:
            raise errors.ProtocolError("a garbled ShareFetch answer")
        return _fetch_answer(h, records=_records(0, 2), acquired=[(0, 1, 1)])

    fetcher, connection, h = _scripted_fetcher(answer)
    fetcher.set_assignment([TP])
    fetcher.start()
    try:
        assert await asyncio.wait_for(fetcher.wait_for_data(5), 5)
    finally:
        await fetcher.close(1.0)
    assert [r.share_session_epoch for r in connection.sent[:2]] == [0, 0]
    assert [o for o in h.outcomes if isinstance(o, errors.KafkaError)] == []


async def test_a_non_retriable_share_request_error_reaches_the_user_typed_once() -> None:
    h: Any = None

    def answer(request: Any, n: int) -> Any:
        raise errors.TopicAuthorizationFailedError("not allowed to read jobs")

    fetcher, connection, h = _scripted_fetcher(answer)
    fetcher.set_assignment([TP])
    fetcher.start()
    try:
        await _until(lambda: bool(h.outcomes))
        await asyncio.sleep(0.05)
    finally:
        await fetcher.close(1.0)
    [fatal] = h.outcomes
    assert isinstance(fatal, errors.TopicAuthorizationFailedError)
    assert len(connection.sent) == 1  # not tried again in a loop


async def test_heartbeat_retries_what_the_error_table_retries_and_surfaces_the_rest() -> None:
    from aiokafkawire.protocol.messages import share_group_heartbeat as m

    answers: list[Any] = []
    membership, sent, assignments, h = _scripted_membership(answers)
    send = membership._send

    async def flaky_send(epoch: int) -> Any:
        if len(sent) == 1:
            sent.append("garbled")
            raise errors.ProtocolError("a garbled heartbeat answer")
        return await send(epoch)

    membership._send = flaky_send
    answers += [
        _heartbeat_answer(0, error=errors.CoordinatorLoadInProgressError.code),
        # (the ProtocolError), then a retriable error code, then the join goes through
        _heartbeat_answer(0, error=errors.KafkaStorageErrorError.code),
        _heartbeat_answer(1, assignment=[(h.topic_id, [0])]),
        _heartbeat_answer(1, error=errors.GroupAuthorizationFailedError.code),
    ]
    membership.subscribe(["jobs"])
    membership.start()
    try:
        await _until(lambda: bool(h.fatal))
        await asyncio.sleep(0.05)
    finally:
        await membership.close(leave=False)
    assert assignments[0] == {TP}
    [fatal] = h.fatal
    assert isinstance(fatal, errors.GroupAuthorizationFailedError)
    assert len(sent) == 5  # the loop ended with the fatal error: no heartbeat after it
    assert isinstance(sent[0], m.ShareGroupHeartbeatRequest)


async def test_a_commit_whose_renewal_check_fails_gets_the_error_instead_of_waiting() -> None:
    """The connection fails while the ShareAcknowledge of a commit holding a RENEW is prepared
    (before any request): the commit's acknowledgements fail with that error; the commit used
    to wait for ever (the loop retried without it)."""
    h: Any = None

    def answer(request: Any, n: int) -> Any:
        if n == 1:
            return _fetch_answer(h, records=_records(0, 2), acquired=[(0, 1, 1)])
        return _fetch_answer(h)

    fetcher, connection, h = _scripted_fetcher(answer)
    failures = [errors.KafkaConnectionError("connection lost")]

    def supports(key: int, version: int = 0) -> bool:
        if version == 2 and failures:  # only the RENEW check asks for ShareAcknowledge v2
            raise failures.pop()
        return True

    connection.versions = SimpleNamespace(supports=supports)
    fetcher.set_assignment([TP])
    fetcher.start()
    try:
        await asyncio.wait_for(fetcher.wait_for_data(5), 5)
        fetcher.drain(10)
        fetcher._acks.acknowledge(TP, 0, AcknowledgeType.RENEW)
        fetcher._acks.acknowledge(TP, 1, A)
        outcomes = await asyncio.wait_for(fetcher.commit(fetcher._acks.take_pending()), 5)
    finally:
        await fetcher.close(1.0)
    [outcome] = outcomes
    assert outcome.offsets == {0: AcknowledgeType.RENEW, 1: A}
    assert isinstance(outcome.error, errors.KafkaConnectionError)
