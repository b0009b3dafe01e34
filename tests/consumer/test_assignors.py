"""Tests for the consumer group partition assignors (pure logic)."""

from __future__ import annotations

import struct
import time
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiokafkawire.consumer.group.assignors import (
    ASSIGNORS,
    COOPERATIVE,
    EAGER,
    CooperativeStickyAssignor,
    MemberAssignment,
    MemberSubscription,
    PartitionAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    create_assignor,
    decode_sticky_user_data,
    encode_sticky_user_data,
)
from aiokafkawire.errors import ConfigError
from aiokafkawire.structs import TopicPartition

TP = TopicPartition
Assignment = dict[str, list[TopicPartition]]


def subscriptions(
    topics_by_member: Mapping[str, Sequence[str]],
    *,
    instance_ids: Mapping[str, str] | None = None,
    owned: Mapping[str, Sequence[TopicPartition]] | None = None,
    generation: int = -1,
) -> dict[str, MemberSubscription]:
    return {
        member_id: MemberSubscription(
            member_id,
            list(topics),
            None,
            list((owned or {}).get(member_id, ())),
            generation_id=generation,
            group_instance_id=(instance_ids or {}).get(member_id),
        )
        for member_id, topics in topics_by_member.items()
    }


def plain(result: Mapping[str, MemberAssignment]) -> Assignment:
    return {member_id: sorted(a.partitions) for member_id, a in result.items()}


def all_partitions(partitions_per_topic: Mapping[str, int], topics: set[str]) -> set[TP]:
    return {
        TP(topic, p)
        for topic, count in partitions_per_topic.items()
        if topic in topics
        for p in range(count)
    }


def check_valid(
    result: Mapping[str, MemberAssignment],
    partitions_per_topic: Mapping[str, int],
    subs: Mapping[str, MemberSubscription],
    *,
    complete: bool = True,
) -> None:
    """Every subscribed partition goes to exactly one subscribed member (at most one if not
    ``complete``) and every member gets an entry."""
    assert set(result) == set(subs)
    counts = Counter(tp for a in result.values() for tp in a.partitions)
    assert all(n == 1 for n in counts.values()), "a partition was assigned twice"
    for member_id, a in result.items():
        for tp in a.partitions:
            assert tp.topic in subs[member_id].topics, "assigned an unsubscribed topic"
    subscribed = {topic for s in subs.values() for topic in s.topics}
    expected = all_partitions(partitions_per_topic, subscribed)
    if complete:
        assert set(counts) == expected
    else:
        assert set(counts) <= expected


def check_locally_balanced(
    result: Mapping[str, MemberAssignment], subs: Mapping[str, MemberSubscription]
) -> None:
    """No single partition could move to another subscriber with at least 2 fewer partitions."""
    count = {m: len(a.partitions) for m, a in result.items()}
    for owner, a in result.items():
        for tp in a.partitions:
            for other, s in subs.items():
                if tp.topic in s.topics:
                    assert count[owner] <= count[other] + 1, (tp, owner, other, count)


# --- range ----------------------------------------------------------------------------------------
# Expected assignments from the Java client's RangeAssignorTest.


def test_range_two_consumers_two_topics() -> None:
    subs = subscriptions({"consumer1": ["topic1", "topic2"], "consumer2": ["topic1", "topic2"]})
    result = plain(RangeAssignor().assign({"topic1": 3, "topic2": 3}, subs))
    assert result == {
        "consumer1": [TP("topic1", 0), TP("topic1", 1), TP("topic2", 0), TP("topic2", 1)],
        "consumer2": [TP("topic1", 2), TP("topic2", 2)],
    }


def test_range_mixed_topics_and_nonexistent_topics() -> None:
    subs = subscriptions(
        {
            "consumer1": ["topic1"],
            "consumer2": ["topic1", "topic2"],
            "consumer3": ["topic1", "nope"],
        }
    )
    result = plain(RangeAssignor().assign({"topic1": 3, "topic2": 2, "other": 3}, subs))
    assert result == {
        "consumer1": [TP("topic1", 0)],
        "consumer2": [TP("topic1", 1), TP("topic2", 0), TP("topic2", 1)],
        "consumer3": [TP("topic1", 2)],
    }
    assert plain(RangeAssignor().assign({}, subscriptions({"c": []}))) == {"c": []}


def test_range_static_members_first_by_instance_id() -> None:
    # consumer-b sorts after consumer-a, but static members order by instance id, before
    # dynamic members.
    subs = subscriptions(
        {"consumer-b": ["topic1", "topic2"], "consumer-a": ["topic1", "topic2"]},
        instance_ids={"consumer-b": "instance1"},
    )
    result = plain(RangeAssignor().assign({"topic1": 3, "topic2": 3}, subs))
    assert result["consumer-b"] == [
        TP("topic1", 0),
        TP("topic1", 1),
        TP("topic2", 0),
        TP("topic2", 1),
    ]
    assert result["consumer-a"] == [TP("topic1", 2), TP("topic2", 2)]


def test_range_static_assignment_persists_when_member_ids_change() -> None:
    both = ["topic1", "topic2"]
    instances = {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}
    subs = subscriptions(
        {"consumer1": both, "consumer2": both, "consumer3": both, "consumer4": both},
        instance_ids=instances,
    )
    result = plain(RangeAssignor().assign({"topic1": 5, "topic2": 4}, subs))
    assert result == {
        "consumer1": [TP("topic1", 0), TP("topic1", 1), TP("topic2", 0)],
        "consumer2": [TP("topic1", 2), TP("topic2", 1)],
        "consumer3": [TP("topic1", 3), TP("topic2", 2)],
        "consumer4": [TP("topic1", 4), TP("topic2", 3)],
    }
    # New member ids for the same instances (restarts) and a new dynamic member.
    renamed = subscriptions(
        {"zz9": both, "aa1": both, "mm5": both, "consumer5": both},
        instance_ids={"zz9": "instance1", "aa1": "instance2", "mm5": "instance3"},
    )
    again = plain(RangeAssignor().assign({"topic1": 5, "topic2": 4}, renamed))
    assert again["zz9"] == result["consumer1"]
    assert again["aa1"] == result["consumer2"]
    assert again["mm5"] == result["consumer3"]
    assert again["consumer5"] == result["consumer4"]


def test_member_order_follows_java_utf16_comparison() -> None:
    # Java compares UTF-16 code units: U+10000 is the pair D800 DC00, which sorts before U+FFFF,
    # while Python's code point order puts U+FFFF first.
    low, high = "\U00010000", "\uffff"
    subs = subscriptions({high: ["t"], low: ["t"]})
    assert plain(RangeAssignor().assign({"t": 3}, subs)) == {
        low: [TP("t", 0), TP("t", 1)],
        high: [TP("t", 2)],
    }


def racks_by_global_index(
    partitions: Mapping[str, int], rack_count: int, shift: Mapping[str, int] | None = None
) -> dict[TopicPartition, set[str]]:
    """Replication factor 1: partitions numbered across topics (sorted), rack = index % racks."""
    racks: dict[TopicPartition, set[str]] = {}
    index = 0
    for topic in sorted(partitions):
        for p in range(partitions[topic]):
            racks[TP(topic, p)] = {f"rack{(index + (shift or {}).get(topic, 0)) % rack_count}"}
            index += 1
    return racks


def parse(text: str) -> list[TopicPartition]:
    return [TP(item.split("-")[0], int(item.split("-")[1])) for item in text.split(", ")]


def test_range_rack_aware_uniform_subscription_matches_java() -> None:
    # Java RangeAssignorTest.testRackAwareAssignmentWithUniformSubscription, replication factor 1.
    partitions = {"t1": 6, "t2": 7, "t3": 2}
    subs = {
        f"consumer{i}": MemberSubscription(f"consumer{i}", ["t1", "t2", "t3"], rack_id=f"rack{i}")
        for i in range(3)
    }
    result = plain(
        RangeAssignor().assign(
            partitions, subs, partition_racks=racks_by_global_index(partitions, 3)
        )
    )
    assert result == {
        "consumer0": parse("t1-0, t1-3, t2-0, t2-3, t2-6"),
        "consumer1": parse("t1-1, t1-4, t2-1, t2-4, t3-0"),
        "consumer2": parse("t1-2, t1-5, t2-2, t2-5, t3-1"),
    }
    # Without rack information the plain (Java "nonRackAwareAssignment") result comes back.
    assert plain(RangeAssignor().assign(partitions, subs)) == {
        "consumer0": parse("t1-0, t1-1, t2-0, t2-1, t2-2, t3-0"),
        "consumer1": parse("t1-2, t1-3, t2-3, t2-4, t3-1"),
        "consumer2": parse("t1-4, t1-5, t2-5, t2-6"),
    }


def test_range_rack_aware_keeps_copartitioned_topics_together() -> None:
    partitions = {"t1": 4, "t2": 4}
    subs = {
        "a": MemberSubscription("a", ["t1", "t2"], rack_id="rack0"),
        "b": MemberSubscription("b", ["t1", "t2"], rack_id="rack1"),
    }
    aligned = {tp: {f"rack{tp.partition % 2}"} for tp in all_partitions(partitions, {"t1", "t2"})}
    result = plain(RangeAssignor().assign(partitions, subs, partition_racks=aligned))
    assert result == {
        "a": parse("t1-0, t1-2, t2-0, t2-2"),
        "b": parse("t1-1, t1-3, t2-1, t2-3"),
    }
    # Partition p of t1 and t2 never share a rack: keep them together rather than match racks.
    crossed = {
        tp: {f"rack{(tp.partition + (tp.topic == 't2')) % 2}"}
        for tp in all_partitions(partitions, {"t1", "t2"})
    }
    result = plain(RangeAssignor().assign(partitions, subs, partition_racks=crossed))
    assert result == {"a": parse("t1-0, t1-1, t2-0, t2-1"), "b": parse("t1-2, t1-3, t2-2, t2-3")}


# --- round robin ----------------------------------------------------------------------------------


def test_roundrobin_two_consumers_two_topics() -> None:
    subs = subscriptions({"consumer1": ["topic1", "topic2"], "consumer2": ["topic1", "topic2"]})
    result = plain(RoundRobinAssignor().assign({"topic1": 3, "topic2": 3}, subs))
    assert result == {
        "consumer1": [TP("topic1", 0), TP("topic1", 2), TP("topic2", 1)],
        "consumer2": [TP("topic1", 1), TP("topic2", 0), TP("topic2", 2)],
    }


def test_roundrobin_skips_members_not_subscribed() -> None:
    # The example of the Java RoundRobinAssignor documentation.
    subs = subscriptions({"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]})
    result = plain(RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, subs))
    assert result == {
        "C0": [TP("t0", 0)],
        "C1": [TP("t1", 0)],
        "C2": [TP("t1", 1), TP("t2", 0), TP("t2", 1), TP("t2", 2)],
    }
    # From Java's RoundRobinAssignorTest.testMultipleConsumersMixedTopics.
    subs = subscriptions(
        {"consumer1": ["topic1"], "consumer2": ["topic1", "topic2"], "consumer3": ["topic1"]}
    )
    result = plain(RoundRobinAssignor().assign({"topic1": 3, "topic2": 2}, subs))
    assert result == {
        "consumer1": [TP("topic1", 0)],
        "consumer2": [TP("topic1", 1), TP("topic2", 0), TP("topic2", 1)],
        "consumer3": [TP("topic1", 2)],
    }


def test_roundrobin_static_members_order() -> None:
    subs = subscriptions(
        {"consumer-b": ["t"], "consumer-a": ["t"], "consumer-c": ["t"]},
        instance_ids={"consumer-c": "instance0"},
    )
    result = plain(RoundRobinAssignor().assign({"t": 4}, subs))
    assert result == {
        "consumer-c": [TP("t", 0), TP("t", 3)],
        "consumer-a": [TP("t", 1)],
        "consumer-b": [TP("t", 2)],
    }


# --- sticky: fixed scenarios ----------------------------------------------------------------------


class Member:
    """One simulated group member with its own assignor instance (as in a real consumer)."""

    def __init__(self, member_id: str, topics: Sequence[str], factory: type[PartitionAssignor]):
        self.member_id = member_id
        self.topics = list(topics)
        self.assignor = factory()
        self.owned: list[TP] = []

    def subscription(self) -> MemberSubscription:
        # Eager members give everything up before joining; cooperative ones report what they own.
        owned = self.owned if self.assignor.rebalance_protocol == COOPERATIVE else []
        return MemberSubscription(
            self.member_id,
            self.topics,
            self.assignor.subscription_user_data(set(self.topics), owned),
            list(owned),
        )


class Group:
    """Runs rebalances the way the classic protocol does: leader assigns, members apply."""

    def __init__(self, factory: type[PartitionAssignor], partitions_per_topic: dict[str, int]):
        self.factory = factory
        self.partitions_per_topic = partitions_per_topic
        self.members: dict[str, Member] = {}
        self.generation = 0

    def join(self, member_id: str, topics: Sequence[str]) -> None:
        self.members[member_id] = Member(member_id, topics, self.factory)

    def leave(self, member_id: str) -> None:
        del self.members[member_id]

    def rebalance(self) -> dict[str, MemberAssignment]:
        self.generation += 1
        subs = self.subscriptions()
        leader = next(iter(self.members.values()))
        result = leader.assignor.assign(self.partitions_per_topic, subs)
        for member_id, assignment in result.items():
            member = self.members[member_id]
            member.assignor.on_assignment(assignment, self.generation)
            member.owned = list(assignment.partitions)
        return result

    def subscriptions(self) -> dict[str, MemberSubscription]:
        return {m.member_id: m.subscription() for m in self.members.values()}

    def owned(self) -> Assignment:
        return {m.member_id: sorted(m.owned) for m in self.members.values()}


def test_sticky_add_and_remove_consumer_one_topic() -> None:
    group = Group(StickyAssignor, {"topic": 3})
    group.join("consumer1", ["topic"])
    assert plain(group.rebalance()) == {
        "consumer1": [TP("topic", 0), TP("topic", 1), TP("topic", 2)]
    }
    group.join("consumer2", ["topic"])
    result = plain(group.rebalance())
    assert result == {"consumer1": [TP("topic", 0), TP("topic", 1)], "consumer2": [TP("topic", 2)]}
    group.leave("consumer1")
    assert plain(group.rebalance()) == {
        "consumer2": [TP("topic", 0), TP("topic", 1), TP("topic", 2)]
    }


def test_cooperative_add_consumer_revokes_first_then_assigns() -> None:
    group = Group(CooperativeStickyAssignor, {"topic": 3})
    group.join("consumer1", ["topic"])
    group.rebalance()
    group.join("consumer2", ["topic"])
    # Round 1: consumer1 must give up topic-2, so nobody gets it yet.
    assert plain(group.rebalance()) == {
        "consumer1": [TP("topic", 0), TP("topic", 1)],
        "consumer2": [],
    }
    # Round 2 (triggered by the revocation): consumer2 gets it.
    assert plain(group.rebalance()) == {
        "consumer1": [TP("topic", 0), TP("topic", 1)],
        "consumer2": [TP("topic", 2)],
    }


def test_sticky_example_from_java_documentation() -> None:
    # StickyAssignor javadoc: heterogeneous subscriptions still get the balanced 1/2/3 split.
    subs = subscriptions({"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]})
    partitions = {"t0": 1, "t1": 2, "t2": 3}
    for assignor in (StickyAssignor(), CooperativeStickyAssignor()):
        result = plain(assignor.assign(partitions, subs))
        assert result == {
            "C0": [TP("t0", 0)],
            "C1": [TP("t1", 0), TP("t1", 1)],
            "C2": [TP("t2", 0), TP("t2", 1), TP("t2", 2)],
        }


def test_sticky_user_data_is_javas_format() -> None:
    data = encode_sticky_user_data([TP("t0", 2), TP("t0", 0)], generation=5)
    # [topic_partitions: [topic: int16-length string, partitions: [int32]]], generation: int32
    expected = (
        struct.pack(">i", 1)
        + struct.pack(">h", 2)
        + b"t0"
        + struct.pack(">iii", 2, 2, 0)
        + struct.pack(">i", 5)
    )
    assert data == expected
    assert decode_sticky_user_data(data) == ([TP("t0", 2), TP("t0", 0)], 5)
    version0 = encode_sticky_user_data([TP("a", 1), TP("b", 0)], generation=None)
    assert decode_sticky_user_data(version0) == ([TP("a", 1), TP("b", 0)], None)
    assert decode_sticky_user_data(None) == ([], None)
    assert decode_sticky_user_data(b"\x00\x00\x00\x05\x00") == ([], -1)  # truncated: ignored


@given(
    st.lists(st.tuples(st.text(max_size=8), st.integers(0, 2**31 - 1)), max_size=20),
    st.one_of(st.none(), st.integers(-1, 2**31 - 1)),
)
def test_sticky_user_data_roundtrip(pairs: list[tuple[str, int]], generation: int | None) -> None:
    partitions = [TP(t, p) for t, p in pairs]
    decoded, decoded_generation = decode_sticky_user_data(
        encode_sticky_user_data(partitions, generation)
    )
    assert sorted(decoded) == sorted(partitions)
    assert decoded_generation == generation


def test_sticky_subscription_user_data_tracks_assignment() -> None:
    assignor = StickyAssignor()
    assert assignor.subscription_user_data({"t"}, []) is None
    assignor.on_assignment(MemberAssignment([TP("t", 1), TP("t", 3)]), generation=7)
    assert decode_sticky_user_data(assignor.subscription_user_data({"t"}, [])) == (
        [TP("t", 1), TP("t", 3)],
        7,
    )
    cooperative = CooperativeStickyAssignor()
    assert cooperative.subscription_user_data({"t"}, []) == struct.pack(">i", -1)
    cooperative.on_assignment(MemberAssignment([]), generation=4)
    assert cooperative.subscription_user_data({"t"}, []) == struct.pack(">i", 4)


def test_sticky_higher_generation_claim_wins() -> None:
    partitions = {"t": 4}
    stale = encode_sticky_user_data([TP("t", 0), TP("t", 1), TP("t", 2)], generation=3)
    fresh = encode_sticky_user_data([TP("t", 2), TP("t", 3)], generation=4)
    subs = {
        "a": MemberSubscription("a", ["t"], stale),
        "b": MemberSubscription("b", ["t"], fresh),
    }
    result = plain(StickyAssignor().assign(partitions, subs))
    assert result["b"] == [TP("t", 2), TP("t", 3)]
    assert result["a"] == [TP("t", 0), TP("t", 1)]


def test_cooperative_generation_from_subscription_or_user_data() -> None:
    partitions = {"t": 2}
    subs = {
        # Generation in the v2+ subscription field.
        "a": MemberSubscription("a", ["t"], None, [TP("t", 0), TP("t", 1)], generation_id=8),
        # Older subscription: generation only in the user data, and older.
        "b": MemberSubscription("b", ["t"], struct.pack(">i", 7), [TP("t", 1)]),
    }
    result = plain(CooperativeStickyAssignor().assign(partitions, subs))
    # a (generation 8) owns both; balance wants one to move to b, which must wait a round.
    assert result == {"a": [TP("t", 0)], "b": []}


def test_cooperative_same_generation_conflict_is_revoked_from_everyone() -> None:
    partitions = {"t": 3}
    subs = {
        "a": MemberSubscription("a", ["t"], None, [TP("t", 0)], generation_id=5),
        "b": MemberSubscription("b", ["t"], None, [TP("t", 0), TP("t", 1)], generation_id=5),
        "c": MemberSubscription("c", ["t"], None, [TP("t", 2)], generation_id=5),
    }
    result = plain(CooperativeStickyAssignor().assign(partitions, subs))
    assigned = {tp for tps in result.values() for tp in tps}
    assert TP("t", 0) not in assigned  # both claimed it: whoever gets it must wait a round
    assert result["b"] == [TP("t", 1)]
    assert result["c"] == [TP("t", 2)]


def test_sticky_drops_claims_on_vanished_partitions_and_topics() -> None:
    owned = [TP("t", 0), TP("t", 5), TP("gone", 0)]
    subs = {
        "a": MemberSubscription("a", ["t"], None, owned, generation_id=1),
        "b": MemberSubscription("b", ["t"], None, [], generation_id=1),
    }
    result = plain(CooperativeStickyAssignor().assign({"t": 2, "gone": 1}, subs))
    assert result == {"a": [TP("t", 0)], "b": [TP("t", 1)]}


# --- properties -----------------------------------------------------------------------------------


@st.composite
def group_setups(
    draw: st.DrawFn, homogeneous: bool | None = None
) -> tuple[dict[str, int], dict[str, list[str]]]:
    topic_count = draw(st.integers(1, 4))
    topics = [f"topic{i}" for i in range(topic_count)]
    partitions = {t: draw(st.integers(0, 12)) for t in topics}
    member_count = draw(st.integers(1, 8))
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    members: dict[str, list[str]] = {}
    for i in range(member_count):
        member_id = f"member-{draw(st.integers(0, 99)):02d}-{i}"
        if same:
            members[member_id] = topics
        else:
            members[member_id] = draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
    return partitions, members


ALL_ASSIGNORS = [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]


@pytest.mark.parametrize("factory", ALL_ASSIGNORS)
@given(setup=group_setups())
@settings(max_examples=60, deadline=None)
def test_every_partition_assigned_once_to_a_subscriber(
    factory: type[PartitionAssignor], setup: tuple[dict[str, int], dict[str, list[str]]]
) -> None:
    partitions, members = setup
    subs = subscriptions(members)
    result = factory().assign(partitions, subs)
    check_valid(result, partitions, subs)
    # Determinism: same input in another order gives the same output.
    reversed_subs = dict(reversed(list(subs.items())))
    assert plain(
        factory().assign(dict(reversed(list(partitions.items()))), reversed_subs)
    ) == plain(result)


@pytest.mark.parametrize("factory", [RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor])
@given(setup=group_setups(homogeneous=True))
@settings(max_examples=60, deadline=None)
def test_balanced_when_all_members_subscribe_the_same_topics(
    factory: type[PartitionAssignor], setup: tuple[dict[str, int], dict[str, list[str]]]
) -> None:
    partitions, members = setup
    counts = [
        len(a.partitions) for a in factory().assign(partitions, subscriptions(members)).values()
    ]
    assert max(counts) - min(counts) <= 1


@given(setup=group_setups(homogeneous=True))
@settings(max_examples=60, deadline=None)
def test_range_balanced_per_topic(setup: tuple[dict[str, int], dict[str, list[str]]]) -> None:
    partitions, members = setup
    result = RangeAssignor().assign(partitions, subscriptions(members))
    for topic in partitions:
        counts = [sum(tp.topic == topic for tp in a.partitions) for a in result.values()]
        assert max(counts) - min(counts) <= 1


@pytest.mark.parametrize("factory", [StickyAssignor, CooperativeStickyAssignor])
@given(setup=group_setups(homogeneous=False))
@settings(max_examples=60, deadline=None)
def test_sticky_heterogeneous_is_locally_balanced_and_stable(
    factory: type[PartitionAssignor], setup: tuple[dict[str, int], dict[str, list[str]]]
) -> None:
    partitions, members = setup
    subs = subscriptions(members)
    first = factory().assign(partitions, subs)
    check_locally_balanced(first, subs)
    # Re-running with everyone owning what they got must change nothing.
    user_data = {m: encode_sticky_user_data(a.partitions, 1) for m, a in first.items()}
    again_subs = {
        m: MemberSubscription(m, s.topics, user_data[m], list(first[m].partitions), generation_id=1)
        for m, s in subs.items()
    }
    assert plain(factory().assign(partitions, again_subs)) == plain(first)


@st.composite
def membership_changes(draw: st.DrawFn) -> tuple[dict[str, int], list[str], list[str], list[str]]:
    topics = [f"t{i}" for i in range(draw(st.integers(1, 3)))]
    partitions = {t: draw(st.integers(1, 15)) for t in topics}
    before = draw(
        st.lists(st.sampled_from([f"m{i}" for i in range(10)]), min_size=1, max_size=7, unique=True)
    )
    leaving = draw(st.lists(st.sampled_from(before), max_size=len(before) - 1, unique=True))
    joining = draw(st.lists(st.sampled_from([f"n{i}" for i in range(5)]), max_size=4, unique=True))
    return partitions, before, leaving, joining


@pytest.mark.parametrize("factory", [StickyAssignor, CooperativeStickyAssignor])
@given(change=membership_changes())
@settings(max_examples=80, deadline=None)
def test_sticky_keeps_partitions_with_owners_as_far_as_balance_allows(
    factory: type[PartitionAssignor], change: tuple[dict[str, int], list[str], list[str], list[str]]
) -> None:
    partitions, before, leaving, joining = change
    topics = sorted(partitions)
    group = Group(factory, partitions)
    for member_id in before:
        group.join(member_id, topics)
    group.rebalance()
    if factory is CooperativeStickyAssignor:
        group.rebalance()  # settle (nothing was owned, so nothing is revoked)
    previous = group.owned()
    for member_id in leaving:
        group.leave(member_id)
    for member_id in joining:
        group.join(member_id, topics)

    result = group.rebalance()
    total = sum(partitions.values())
    min_quota = total // len(group.members)
    for member_id, a in result.items():
        kept = set(previous.get(member_id, ())) & set(a.partitions)
        assert len(kept) >= min(len(previous.get(member_id, ())), min_quota), member_id
        if factory is CooperativeStickyAssignor:
            # Never given a partition another member owned going into this round.
            for tp in a.partitions:
                owner = next(
                    (m for m, tps in previous.items() if tp in tps and m in group.members), None
                )
                assert owner in (None, member_id), (tp, owner, member_id)

    if factory is CooperativeStickyAssignor:
        check_valid(result, partitions, group.subscriptions(), complete=False)
        owned_after_revocation = group.owned()
        result = group.rebalance()  # the follow-up rebalance after revocations
        for member_id, a in result.items():
            # Nothing more to revoke: the follow-up only hands out the revoked partitions.
            assert set(owned_after_revocation[member_id]) <= set(a.partitions)
    check_valid(result, partitions, group.subscriptions())
    counts = [len(a.partitions) for a in result.values()]
    assert max(counts) - min(counts) <= 1


# --- sizes, registry ------------------------------------------------------------------------------


@pytest.mark.parametrize("factory", ALL_ASSIGNORS)
@pytest.mark.parametrize("homogeneous", [True, False])
def test_large_group_is_fast(factory: type[PartitionAssignor], homogeneous: bool) -> None:
    partitions = {f"topic-{i:02d}": 100 for i in range(10)}  # 1,000 partitions
    topic_names = sorted(partitions)
    members = {
        f"consumer-{i:03d}": topic_names
        if homogeneous
        else topic_names[i % 10 :] + topic_names[: i % 3]
        for i in range(100)
    }
    subs = subscriptions(members)
    started = time.perf_counter()
    result = factory().assign(partitions, subs)
    elapsed = time.perf_counter() - started
    check_valid(result, partitions, subs)
    assert elapsed < 1.0, elapsed


def test_registry_and_create_assignor() -> None:
    assert set(ASSIGNORS) == {"range", "roundrobin", "sticky", "cooperative-sticky"}
    for name, cls in ASSIGNORS.items():
        instance = create_assignor(name)
        assert isinstance(instance, cls)
        assert isinstance(instance, PartitionAssignor)
        assert instance.name == name
        assert instance.rebalance_protocol in (EAGER, COOPERATIVE)
        assert create_assignor(name) is not instance  # fresh state per consumer
    assert CooperativeStickyAssignor.rebalance_protocol == COOPERATIVE
    assert isinstance(
        create_assignor("org.apache.kafka.clients.consumer.RangeAssignor"), RangeAssignor
    )
    assert isinstance(create_assignor(StickyAssignor), StickyAssignor)
    mine = RoundRobinAssignor()
    assert create_assignor(mine) is mine
    with pytest.raises(ConfigError):
        create_assignor("no-such-assignor")
    with pytest.raises(ConfigError):
        create_assignor(3)  # type: ignore[arg-type]


@given(setup=group_setups(homogeneous=False), newcomers=group_setups(homogeneous=False))
@settings(max_examples=60, deadline=None)
def test_cooperative_converges_after_membership_change(
    setup: tuple[dict[str, int], dict[str, list[str]]],
    newcomers: tuple[dict[str, int], dict[str, list[str]]],
) -> None:
    partitions, members = setup
    group = Group(CooperativeStickyAssignor, partitions)
    for member_id, topics in members.items():
        group.join(member_id, topics)
    group.rebalance()
    # Half the members leave, others join with their own subscriptions (on the same topics).
    for member_id in list(group.members)[1::2]:
        group.leave(member_id)
    for member_id, topics in newcomers[1].items():
        group.join("new-" + member_id, [t for t in topics if t in partitions] or sorted(partitions))

    for _ in range(4):  # bounded: each round either revokes something or is final
        before = group.owned()
        result = group.rebalance()
        subs = group.subscriptions()
        check_valid(result, partitions, subs, complete=False)
        for member_id, a in result.items():
            for tp in a.partitions:
                owners = [m for m, tps in before.items() if tp in tps]
                assert owners in ([], [member_id]), "given away in the round it was revoked"
        revoked = any(set(before[m]) - set(result[m].partitions) for m in result)
        if not revoked:
            check_valid(result, partitions, subs)
            check_locally_balanced(result, subs)
            return
    pytest.fail("cooperative rebalancing did not settle within 4 rounds")


def test_sticky_user_data_written_by_kafka_python_is_understood() -> None:
    user_data_module = pytest.importorskip("kafka.coordinator.assignors.sticky.user_data")
    # kafka-python 3.x prefixes the struct with an int16 version (Java does not).
    written = user_data_module.StickyAssignorUserData([("t0", [2, 0]), ("x", [5])], 7).encode()
    assert decode_sticky_user_data(bytes(written)) == ([TP("t0", 2), TP("t0", 0), TP("x", 5)], 7)


def test_java_stale_generation_claims_are_invalidated() -> None:
    # From Java AbstractStickyAssignorTest:
    # testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration
    owned = [TP("topic", 0), TP("topic", 2), TP("topic2", 1)]
    subs = {
        "consumer1": MemberSubscription(
            "consumer1", ["topic", "topic2"], None, owned, generation_id=2
        ),
        "consumer2": MemberSubscription(
            "consumer2", ["topic", "topic2"], None, owned, generation_id=1
        ),
    }
    expected = {
        "consumer1": sorted(owned),
        "consumer2": [TP("topic", 1), TP("topic2", 0), TP("topic2", 2)],
    }
    assert plain(CooperativeStickyAssignor().assign({"topic": 3, "topic2": 3}, subs)) == expected
    for member_id, generation in (("consumer1", 2), ("consumer2", 1)):
        subs[member_id] = MemberSubscription(
            member_id, ["topic", "topic2"], encode_sticky_user_data(owned, generation)
        )
    assert plain(StickyAssignor().assign({"topic": 3, "topic2": 3}, subs)) == expected


@given(
    setup=group_setups(),
    rack_count=st.integers(1, 3),
    member_racks=st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=8, max_size=8),
)
@settings(max_examples=80, deadline=None)
def test_range_rack_aware_keeps_per_topic_quotas(
    setup: tuple[dict[str, int], dict[str, list[str]]],
    rack_count: int,
    member_racks: list[int | None],
) -> None:
    partitions, members = setup
    subs = {
        m: MemberSubscription(m, topics, rack_id=None if rack is None else f"rack{rack}")
        for (m, topics), rack in zip(members.items(), member_racks, strict=False)
    }
    racks = racks_by_global_index(partitions, rack_count)
    result = RangeAssignor().assign(partitions, subs, partition_racks=racks)
    check_valid(result, partitions, subs)
    plain_result = RangeAssignor().assign(partitions, subs)
    for topic in partitions:
        counts = sorted(
            sum(tp.topic == topic for tp in a.partitions)
            for m, a in result.items()
            if topic in subs[m].topics
        )
        plain_counts = sorted(
            sum(tp.topic == topic for tp in a.partitions)
            for m, a in plain_result.items()
            if topic in subs[m].topics
        )
        assert counts == plain_counts  # same quotas as without racks
    if all(s.rack_id is None for s in subs.values()) or rack_count == 1:
        assert plain(result) == plain(plain_result)


@pytest.mark.parametrize(
    "assignor",
    [RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), CooperativeStickyAssignor()],
)
def test_every_assignor_accepts_partition_racks(assignor: RangeAssignor) -> None:
    partitions = {"t": 5}
    subs = {m: MemberSubscription(m, ["t"], rack_id="rack0") for m in ("a", "b")}
    racks = {TP("t", p): {"rack0", "rack1"} for p in range(5)}
    with_racks = assignor.assign(partitions, subs, partition_racks=racks)
    assert plain(with_racks) == plain(assignor.assign(partitions, subs))
