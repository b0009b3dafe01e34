"""Partition assignors of the classic group protocol's "consumer" embedded protocol.

The group leader runs one of these over every member's subscription and sends each member its
share. They follow the Java client's assignors (same names, same user-data formats, same member
ordering), so groups mixing Java, librdkafka and aiokafkawire members work:

* :class:`RangeAssignor` (``"range"``): per topic, contiguous ranges; the first members get the
  extra partitions.
* :class:`RoundRobinAssignor` (``"roundrobin"``): all partitions dealt out in turn.
* :class:`StickyAssignor` (``"sticky"``): balanced, and keeps partitions where they were (previous
  assignment carried in the subscription user data, Java's StickyAssignor format).
* :class:`CooperativeStickyAssignor` (``"cooperative-sticky"``, KIP-429): the sticky algorithm over
  the members' ``owned_partitions``; a partition that changes owner is first only revoked, and
  handed to its new owner by the follow-up rebalance.

Members are ordered as Java orders them: static members (with a ``group.instance.id``) first, by
instance id, then dynamic members by member id, comparing strings by UTF-16 code units.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from aiokafkawire.errors import ConfigError, IllegalStateError
from aiokafkawire.structs import TopicPartition

__all__ = [
    "ASSIGNORS",
    "COOPERATIVE",
    "DEFAULT_GENERATION",
    "EAGER",
    "CooperativeStickyAssignor",
    "MemberAssignment",
    "MemberSubscription",
    "PartitionAssignor",
    "PartitionRacks",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "create_assignor",
    "decode_sticky_user_data",
    "encode_sticky_user_data",
]

EAGER = "EAGER"
COOPERATIVE = "COOPERATIVE"
DEFAULT_GENERATION = -1


@dataclass(slots=True)
class MemberSubscription:
    """What one member sent in its JoinGroup metadata (ConsumerProtocolSubscription)."""

    member_id: str
    topics: Sequence[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = DEFAULT_GENERATION
    rack_id: str | None = None
    group_instance_id: str | None = None


@dataclass(slots=True)
class MemberAssignment:
    """What the leader sends one member in SyncGroup (ConsumerProtocolAssignment)."""

    partitions: list[TopicPartition]
    user_data: bytes | None = None


@runtime_checkable
class PartitionAssignor(Protocol):
    """The leader-side assignment strategy, plus the member-side hooks around it.

    ``rebalance_protocol`` is ``"EAGER"`` (members give up everything before each rebalance) or
    ``"COOPERATIVE"`` (members keep what they own; only moved partitions are revoked).
    Instances keep per-member state (the last assignment and generation); use one per consumer.
    """

    name: str
    rebalance_protocol: str
    version: int

    def subscription_user_data(
        self, topics: Collection[str], owned: Sequence[TopicPartition]
    ) -> bytes | None:
        """Return the user data this member puts in its subscription, if any."""
        ...

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, MemberSubscription],
    ) -> dict[str, MemberAssignment]:
        """Compute every member's assignment (run by the group leader only).

        ``partitions_per_topic`` gives the partition count of each subscribed topic whose metadata
        is known; topics missing from it are skipped. Every member of ``subscriptions`` gets an
        entry in the result, possibly with no partitions.
        """
        ...

    def on_assignment(self, assignment: MemberAssignment, generation: int) -> None:
        """Called on every member when it receives its assignment for ``generation``."""
        ...


# --- shared helpers -------------------------------------------------------------------------------


def _java_string_key(text: str) -> bytes:
    """Sort key ordering strings like Java's ``String.compareTo`` (by UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def _sorted_strings(texts: Iterable[str]) -> list[str]:
    return sorted(texts, key=_java_string_key)


def _member_sort_key(subscription: MemberSubscription) -> tuple[int, bytes]:
    """Java's MemberInfo order: static members by instance id first, then others by member id."""
    if subscription.group_instance_id is not None:
        return (0, _java_string_key(subscription.group_instance_id))
    return (1, _java_string_key(subscription.member_id))


def _ordered_members(subscriptions: Mapping[str, MemberSubscription]) -> list[str]:
    """Member ids in Java's MemberInfo order (member id breaks ties between equal instance ids)."""
    return sorted(
        subscriptions,
        key=lambda member_id: (
            _member_sort_key(subscriptions[member_id]),
            _java_string_key(member_id),
        ),
    )


def _empty_assignment(
    subscriptions: Mapping[str, MemberSubscription],
) -> dict[str, list[TopicPartition]]:
    return {member_id: [] for member_id in subscriptions}


def _wrap(assignment: Mapping[str, list[TopicPartition]]) -> dict[str, MemberAssignment]:
    return {member_id: MemberAssignment(partitions) for member_id, partitions in assignment.items()}


class _StatelessAssignorBase:
    """Hooks of assignors that carry no member state (range, roundrobin)."""

    name = ""
    rebalance_protocol = EAGER
    supported_protocols: tuple[str, ...] = (EAGER,)
    version = 0

    def subscription_user_data(
        self, topics: Collection[str], owned: Sequence[TopicPartition]
    ) -> bytes | None:
        """Range and round-robin send no user data."""
        return None

    def on_assignment(self, assignment: MemberAssignment, generation: int) -> None:
        """Range and round-robin keep no state between rebalances."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# --- range ----------------------------------------------------------------------------------------


PartitionRacks = Mapping[TopicPartition, Collection[str]]
"""The racks holding replicas of each partition (from metadata), for rack-aware assignment."""


class _RangeTopicState:
    """Range assignment of one topic in progress: quotas, counts and unassigned partitions."""

    __slots__ = (
        "counts",
        "member_racks",
        "needs_rack_matching",
        "partition_racks",
        "per_member",
        "topic",
        "unassigned",
        "with_extra",
    )

    def __init__(
        self,
        topic: str,
        partition_count: int,
        members: list[str],
        member_racks: Mapping[str, str | None],
        partition_racks: PartitionRacks | None,
    ) -> None:
        self.topic = topic
        self.counts = {member_id: 0 for member_id in members}  # in assignment order
        self.per_member, self.with_extra = divmod(partition_count, len(members))
        # An insertion-ordered dict serves as an ordered set of partition numbers.
        self.unassigned = dict.fromkeys(range(partition_count))
        self.member_racks = member_racks
        racks = partition_racks or {}
        self.partition_racks = [
            frozenset(racks.get(TopicPartition(topic, p), ())) for p in range(partition_count)
        ]
        self.needs_rack_matching = self._rack_matching_helps(members)

    def _rack_matching_helps(self, members: list[str]) -> bool:
        """KIP-881: match racks only if members have racks, some replicas are on them, and
        partitions are not all on the same set of racks (then any member is as good)."""
        consumer_racks = {self.member_racks[m] for m in members} - {None}
        all_racks = frozenset().union(*self.partition_racks)
        if not consumer_racks or consumer_racks.isdisjoint(all_racks):
            return False
        return any(racks != all_racks for racks in self.partition_racks)

    def racks_match(self, member_id: str, partition: int) -> bool:
        rack = self.member_racks[member_id]
        return rack is None or rack in self.partition_racks[partition]

    def max_assignable(self, member_id: str) -> int:
        quota = self.per_member + (1 if self.with_extra > 0 else 0)
        return max(0, quota - self.counts[member_id])

    def give(
        self, member_id: str, partitions: list[int], assignment: dict[str, list[TopicPartition]]
    ) -> None:
        assignment[member_id].extend(TopicPartition(self.topic, p) for p in partitions)
        self.counts[member_id] += len(partitions)
        if self.counts[member_id] > self.per_member:
            self.with_extra -= 1
        for partition in partitions:
            del self.unassigned[partition]

    def assign_ranges(
        self, assignment: dict[str, list[TopicPartition]], *, rack_matched_only: bool
    ) -> None:
        """Give each member, in order, the first unassigned partitions it may take."""
        for member_id in self.counts:
            if not self.unassigned:
                return
            limit = self.max_assignable(member_id)
            chosen: list[int] = []
            for partition in self.unassigned:
                if len(chosen) >= limit:
                    break
                if not rack_matched_only or self.racks_match(member_id, partition):
                    chosen.append(partition)
            if chosen:
                self.give(member_id, chosen, assignment)


def _assign_copartitioned_by_rack(
    members: Sequence[str],
    partition_count: int,
    states: list[_RangeTopicState],
    assignment: dict[str, list[TopicPartition]],
) -> None:
    """Topics with the same members and partition count: give partition p of every one of them
    to the same member, the first whose rack holds all of them (Java's co-partitioning rule)."""
    remaining = list(members)
    for partition in range(partition_count):
        for member_id in remaining:
            if all(
                s.racks_match(member_id, partition) and s.max_assignable(member_id) > 0
                for s in states
            ):
                for state in states:
                    state.give(member_id, [partition], assignment)
                if not any(s.max_assignable(member_id) > 0 for s in states):
                    remaining.remove(member_id)
                break
        if not remaining:
            return


class RangeAssignor(_StatelessAssignorBase):
    """Java's ``RangeAssignor``: per topic, contiguous partition ranges in member order.

    For each topic the subscribed members are ordered (static members by instance id, then dynamic
    ones by member id); each gets ``count // members`` partitions and the first
    ``count % members`` get one more. Topics are independent, so the same members get the extra
    partitions of every topic.

    Rack awareness (KIP-881): given ``partition_racks`` and members with a ``rack_id``, each
    member first takes, within its quota, partitions with a replica on its rack (co-partitioned
    topics together), and the rest is assigned as above.
    """

    name = "range"

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, MemberSubscription],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, MemberAssignment]:
        """Assign contiguous ranges of each topic's partitions (see the class docstring)."""
        assignment = _empty_assignment(subscriptions)
        members_per_topic: dict[str, list[str]] = {}
        for member_id in _ordered_members(subscriptions):
            for topic in dict.fromkeys(subscriptions[member_id].topics):
                members_per_topic.setdefault(topic, []).append(member_id)
        member_racks = {member_id: s.rack_id for member_id, s in subscriptions.items()}
        states = [
            _RangeTopicState(
                topic,
                partitions_per_topic[topic],
                members_per_topic[topic],
                member_racks,
                partition_racks,
            )
            for topic in _sorted_strings(members_per_topic)
            if partitions_per_topic.get(topic, 0) > 0
        ]
        rack_aware = any(state.needs_rack_matching for state in states)
        if rack_aware:
            self._assign_rack_matched(states, assignment)
        for state in states:
            state.assign_ranges(assignment, rack_matched_only=False)
        if rack_aware:
            for partitions in assignment.values():
                partitions.sort()
        return _wrap(assignment)

    @staticmethod
    def _assign_rack_matched(
        states: list[_RangeTopicState], assignment: dict[str, list[TopicPartition]]
    ) -> None:
        # Topics with the same members and the same partition count are co-partitioned: their
        # partition p goes to one member together, as the rack-unaware assignment would do.
        groups: dict[tuple[tuple[str, ...], int], list[_RangeTopicState]] = {}
        for state in states:
            key = (tuple(state.counts), len(state.partition_racks))
            groups.setdefault(key, []).append(state)
        for (members, partition_count), group in groups.items():
            if len(group) > 1:
                _assign_copartitioned_by_rack(members, partition_count, group, assignment)
            elif group[0].needs_rack_matching:
                group[0].assign_ranges(assignment, rack_matched_only=True)


# --- round robin ----------------------------------------------------------------------------------


class RoundRobinAssignor(_StatelessAssignorBase):
    """Java's ``RoundRobinAssignor``: deal all partitions out to the members in turn.

    The partitions of all subscribed topics are sorted by topic then partition; the members are
    ordered as in :class:`RangeAssignor` and visited circularly, skipping a member not subscribed
    to the partition's topic.
    """

    name = "roundrobin"

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, MemberSubscription],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, MemberAssignment]:
        """Deal the partitions out in turn (see the class docstring); racks play no part."""
        assignment = _empty_assignment(subscriptions)
        members = _ordered_members(subscriptions)
        if not members:
            return {}
        subscribed = {member_id: set(subscriptions[member_id].topics) for member_id in members}
        all_topics = {topic for topics in subscribed.values() for topic in topics}
        position = 0
        for topic in _sorted_strings(all_topics):
            partition_count = partitions_per_topic.get(topic)
            if partition_count is None:
                continue
            for partition in range(partition_count):
                # Some member subscribes to ``topic``, so this finds one within a full turn.
                while topic not in subscribed[members[position]]:
                    position = (position + 1) % len(members)
                assignment[members[position]].append(TopicPartition(topic, partition))
                position = (position + 1) % len(members)
        return _wrap(assignment)


# --- sticky user data (Java StickyAssignor format) ------------------------------------------------

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int | None) -> bytes:
    """Encode Java's StickyAssignor user data: the member's partitions by topic, then generation.

    The layout is the Kafka struct ``[topic_partitions: [topic: string, partitions: [int32]]],
    generation: int32`` (version 1); ``generation=None`` writes version 0, without it.
    """
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    out = bytearray(_INT32.pack(len(by_topic)))
    for topic in _sorted_strings(by_topic):
        name = topic.encode()
        out += _INT16.pack(len(name))
        out += name
        numbers = by_topic[topic]
        out += _INT32.pack(len(numbers))
        out += struct.pack(f">{len(numbers)}i", *numbers)
    if generation is not None:
        out += _INT32.pack(generation)
    return bytes(out)


def _parse_sticky_user_data(data: bytes, offset: int) -> tuple[list[TopicPartition], int | None]:
    """Parse the sticky user data struct at ``offset``; raises ``ValueError``/``struct.error``."""
    (topic_count,) = _INT32.unpack_from(data, offset)
    offset += 4
    if topic_count < 0:
        raise ValueError("negative topic count")
    partitions: list[TopicPartition] = []
    for _ in range(topic_count):
        (name_length,) = _INT16.unpack_from(data, offset)
        offset += 2
        if name_length < 0 or offset + name_length > len(data):
            raise ValueError("bad topic name length")
        topic = data[offset : offset + name_length].decode()
        offset += name_length
        (partition_count,) = _INT32.unpack_from(data, offset)
        offset += 4
        if partition_count < 0 or offset + 4 * partition_count > len(data):
            raise ValueError("bad partition count")
        numbers = struct.unpack_from(f">{partition_count}i", data, offset)
        offset += 4 * partition_count
        partitions.extend(TopicPartition(topic, number) for number in numbers)
    if offset + 4 <= len(data):
        return partitions, _INT32.unpack_from(data, offset)[0]
    return partitions, None


def decode_sticky_user_data(data: bytes | None) -> tuple[list[TopicPartition], int | None]:
    """Decode Java's StickyAssignor user data into (partitions, generation or ``None``).

    Version 0 data (no generation) gives ``None``. Data that cannot be parsed counts as no previous
    assignment at the default generation, as in Java. Data prefixed with an int16 version 1, as
    kafka-python 3.x writes it, is understood too.
    """
    if not data:
        return [], None
    try:
        return _parse_sticky_user_data(data, 0)
    except (struct.error, ValueError, UnicodeDecodeError):
        pass
    # A Java count of 65,536+ topics is implausible, so a leading 0x0001 means a version prefix.
    if data[:2] == b"\x00\x01":
        try:
            return _parse_sticky_user_data(data, 2)
        except (struct.error, ValueError, UnicodeDecodeError):
            pass
    return [], DEFAULT_GENERATION


def _decode_cooperative_generation(data: bytes | None) -> int | None:
    """Decode CooperativeStickyAssignor user data (one int32 generation); ``None`` if absent."""
    if data is None:
        return None
    if len(data) < 4:
        return DEFAULT_GENERATION
    return int(_INT32.unpack_from(data)[0])


# --- the sticky algorithm -------------------------------------------------------------------------


@dataclass(slots=True)
class _StickyOutcome:
    assignment: dict[str, list[TopicPartition]]
    # The owner each partition was left with after resolving conflicting claims.
    valid_owner: dict[TopicPartition, str]


class _StickyAlgorithm:
    """Balanced assignment that moves as few previously owned partitions as it can.

    ``claims`` maps each member to (generation, partitions it says it owns). A partition's claim
    counts only for the member(s) of the highest generation claiming it; if several members of
    that generation claim it, nobody keeps it. Claims on partitions that no longer exist or that
    the member no longer subscribes to are dropped.

    When all members subscribe to the same topics, every member ends with ``floor`` or ``ceil`` of
    ``partitions / members`` and keeps as many of its partitions as that allows (Java's
    "constrained" assignment). Otherwise unowned partitions go to the least loaded eligible member,
    then partitions are moved from a member to an eligible one with at least two fewer until no
    such move exists.
    """

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, MemberSubscription],
        claims: Mapping[str, tuple[int, Sequence[TopicPartition]]],
    ) -> None:
        self.members = _ordered_members(subscriptions)
        self.rank = {member_id: index for index, member_id in enumerate(self.members)}
        self.topics_of = {
            member_id: frozenset(subscriptions[member_id].topics) for member_id in self.members
        }
        subscribed = {topic for topics in self.topics_of.values() for topic in topics}
        self.partition_counts = {
            topic: partitions_per_topic[topic]
            for topic in _sorted_strings(subscribed)
            if topic in partitions_per_topic
        }
        self.owned = self._resolve_claims(claims)

    def _resolve_claims(
        self, claims: Mapping[str, tuple[int, Sequence[TopicPartition]]]
    ) -> dict[str, list[TopicPartition]]:
        best: dict[TopicPartition, tuple[int, list[str]]] = {}
        for member_id in self.members:
            generation, partitions = claims.get(member_id, (DEFAULT_GENERATION, ()))
            for tp in dict.fromkeys(partitions):
                count = self.partition_counts.get(tp.topic)
                if count is None or not 0 <= tp.partition < count:
                    continue
                current = best.get(tp)
                if current is None or generation > current[0]:
                    best[tp] = (generation, [member_id])
                elif generation == current[0]:
                    current[1].append(member_id)
        owned: dict[str, list[TopicPartition]] = {member_id: [] for member_id in self.members}
        for member_id in self.members:
            for tp in dict.fromkeys(claims.get(member_id, (DEFAULT_GENERATION, ()))[1]):
                winner = best.get(tp)
                if (
                    winner is not None
                    and winner[1] == [member_id]
                    and tp.topic in self.topics_of[member_id]
                ):
                    owned[member_id].append(tp)
        return owned

    def all_partitions(self) -> list[TopicPartition]:
        return [
            TopicPartition(topic, partition)
            for topic, count in self.partition_counts.items()
            for partition in range(count)
        ]

    def run(self) -> _StickyOutcome:
        valid_owner = {tp: member_id for member_id, tps in self.owned.items() for tp in tps}
        if not self.members:
            return _StickyOutcome({}, valid_owner)
        first_topics = self.topics_of[self.members[0]]
        if all(self.topics_of[member_id] == first_topics for member_id in self.members):
            assignment = self._constrained_assign()
        else:
            assignment = self._general_assign()
        return _StickyOutcome(
            {member_id: sorted(tps) for member_id, tps in assignment.items()}, valid_owner
        )

    def _constrained_assign(self) -> dict[str, list[TopicPartition]]:
        """All members subscribe to the same topics: exact quotas, keep owned within them."""
        all_partitions = self.all_partitions()
        min_quota, members_over_min = divmod(len(all_partitions), len(self.members))
        max_quota = min_quota + (1 if members_over_min else 0)
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in self.members}
        assigned: set[TopicPartition] = set()
        under_min: list[str] = []
        # Members at min quota that may still take one more partition.
        at_min: deque[str] = deque()
        over_min_count = 0
        for member_id in self.members:
            owned = self.owned[member_id]
            if len(owned) < min_quota:
                kept = owned
                under_min.append(member_id)
            elif len(owned) >= max_quota and over_min_count < members_over_min:
                kept = owned[:max_quota]
                over_min_count += 1
                if over_min_count == members_over_min:
                    at_min.clear()
            else:
                kept = owned[:min_quota]
                if over_min_count < members_over_min:
                    at_min.append(member_id)
            assignment[member_id].extend(kept)
            assigned.update(kept)

        unassigned = deque(tp for tp in all_partitions if tp not in assigned)
        # Fill everyone up to min quota, one partition per member per round.
        while under_min:
            still_under: list[str] = []
            for member_id in under_min:
                assignment[member_id].append(unassigned.popleft())
                if len(assignment[member_id]) < min_quota:
                    still_under.append(member_id)
                else:
                    at_min.append(member_id)
            under_min = still_under
        # The remainder gives some members at min quota one more each.
        while unassigned:
            if not at_min:
                raise IllegalStateError("sticky assignor: partitions left but no member for them")
            member_id = at_min.popleft()
            assignment[member_id].append(unassigned.popleft())
            over_min_count += 1
            if over_min_count == members_over_min:
                at_min.clear()
        return assignment

    def _general_assign(self) -> dict[str, list[TopicPartition]]:
        """Members subscribe to different topics: greedy fill, then local balancing moves."""
        rank = self.rank
        subscribers = {
            topic: [m for m in self.members if topic in self.topics_of[m]]
            for topic in self.partition_counts
        }
        owner_of: dict[TopicPartition, str] = {}
        count = {member_id: 0 for member_id in self.members}
        for member_id, tps in self.owned.items():
            for tp in tps:
                owner_of[tp] = member_id
            count[member_id] = len(tps)

        def least_loaded(candidates: list[str]) -> str:
            return min(candidates, key=lambda m: (count[m], rank[m]))

        all_partitions = self.all_partitions()
        # Partitions with the fewest possible owners first, so they are not crowded out.
        unassigned = sorted(
            (tp for tp in all_partitions if tp not in owner_of),
            key=lambda tp: len(subscribers[tp.topic]),
        )
        for tp in unassigned:
            target = least_loaded(subscribers[tp.topic])
            owner_of[tp] = target
            count[target] += 1

        # Each move lowers the sum of squared counts by at least 2, so this loop terminates.
        moved = True
        while moved:
            moved = False
            for topic, partition_count in self.partition_counts.items():
                candidates = subscribers[topic]
                if len(candidates) < 2:
                    continue
                target = least_loaded(candidates)
                for partition in range(partition_count):
                    tp = TopicPartition(topic, partition)
                    owner = owner_of[tp]
                    if count[owner] > count[target] + 1:
                        owner_of[tp] = target
                        count[owner] -= 1
                        count[target] += 1
                        moved = True
                        target = least_loaded(candidates)

        assignment: dict[str, list[TopicPartition]] = {m: [] for m in self.members}
        for tp in all_partitions:
            assignment[owner_of[tp]].append(tp)
        return assignment


class StickyAssignor:
    """Java's ``StickyAssignor`` (``"sticky"``, eager): balanced, and sticky across rebalances.

    Each member's previous assignment and generation travel in its subscription user data, in
    Java's format (:func:`encode_sticky_user_data`), so Java members and this one understand each
    other's data.
    """

    name = "sticky"
    rebalance_protocol = EAGER
    supported_protocols: tuple[str, ...] = (EAGER,)
    version = 0

    def __init__(self) -> None:
        self._member_assignment: list[TopicPartition] | None = None
        self._generation = DEFAULT_GENERATION

    def subscription_user_data(
        self, topics: Collection[str], owned: Sequence[TopicPartition]
    ) -> bytes | None:
        """Return this member's last assignment and generation (``None`` before the first)."""
        if self._member_assignment is None:
            return None
        return encode_sticky_user_data(self._member_assignment, self._generation)

    def on_assignment(self, assignment: MemberAssignment, generation: int) -> None:
        """Remember the assignment and generation for the next subscription's user data."""
        self._member_assignment = list(assignment.partitions)
        self._generation = generation

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, MemberSubscription],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, MemberAssignment]:
        """Balanced assignment keeping partitions with their previous owners where possible.

        ``partition_racks`` is accepted for a uniform call but not used yet (no rack matching).
        """
        claims: dict[str, tuple[int, Sequence[TopicPartition]]] = {}
        for member_id, subscription in subscriptions.items():
            partitions, generation = decode_sticky_user_data(subscription.user_data)
            claims[member_id] = (
                DEFAULT_GENERATION if generation is None else generation,
                partitions,
            )
        outcome = _StickyAlgorithm(partitions_per_topic, subscriptions, claims).run()
        return _wrap(outcome.assignment)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class CooperativeStickyAssignor:
    """Java's ``CooperativeStickyAssignor`` (``"cooperative-sticky"``, KIP-429).

    The sticky algorithm runs over the partitions members say they own (``owned_partitions``,
    subscription v1+), with the generation from the subscription (v2+) or from the user data (a
    single int32, Java's format). A partition that must move to another member is left out of this
    round: its owner revokes it, rejoins, and the follow-up rebalance gives it to the new owner, so
    two members never hold it at once.
    """

    name = "cooperative-sticky"
    rebalance_protocol = COOPERATIVE
    supported_protocols: tuple[str, ...] = (COOPERATIVE, EAGER)
    version = 0

    def __init__(self) -> None:
        self._generation = DEFAULT_GENERATION

    def subscription_user_data(
        self, topics: Collection[str], owned: Sequence[TopicPartition]
    ) -> bytes | None:
        """Return the generation of this member's last assignment (for pre-v2 subscriptions)."""
        return _INT32.pack(self._generation)

    def on_assignment(self, assignment: MemberAssignment, generation: int) -> None:
        """Remember the generation for the next subscription's user data."""
        self._generation = generation

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, MemberSubscription],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, MemberAssignment]:
        """Sticky assignment minus the partitions that must first be revoked from their owner.

        ``partition_racks`` is accepted for a uniform call but not used yet (no rack matching).
        """
        claims: dict[str, tuple[int, Sequence[TopicPartition]]] = {}
        claimants: dict[TopicPartition, list[str]] = {}
        for member_id, subscription in subscriptions.items():
            generation: int | None = subscription.generation_id
            if generation is None or generation < 0:
                generation = _decode_cooperative_generation(subscription.user_data)
            claims[member_id] = (
                DEFAULT_GENERATION if generation is None else generation,
                subscription.owned_partitions,
            )
            for tp in subscription.owned_partitions:
                claimants.setdefault(tp, []).append(member_id)
        outcome = _StickyAlgorithm(partitions_per_topic, subscriptions, claims).run()
        result: dict[str, MemberAssignment] = {}
        for member_id, partitions in outcome.assignment.items():
            kept = [
                tp
                for tp in partitions
                if outcome.valid_owner.get(tp) == member_id
                or all(claimant == member_id for claimant in claimants.get(tp, ()))
            ]
            result[member_id] = MemberAssignment(kept)
        return result

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# --- registry -------------------------------------------------------------------------------------

ASSIGNORS: dict[str, type[PartitionAssignor]] = {
    RangeAssignor.name: RangeAssignor,
    RoundRobinAssignor.name: RoundRobinAssignor,
    StickyAssignor.name: StickyAssignor,
    CooperativeStickyAssignor.name: CooperativeStickyAssignor,
}

# Java's ``partition.assignment.strategy`` takes class names; accept those too.
_JAVA_CLASS_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def create_assignor(
    name_or_instance: str | PartitionAssignor | type[PartitionAssignor],
) -> PartitionAssignor:
    """Return an assignor for a name (``"range"``, ``"roundrobin"``, ``"sticky"``,
    ``"cooperative-sticky"`` or Java's class name), a class (instantiated) or an instance (as is).
    """
    if isinstance(name_or_instance, str):
        name = _JAVA_CLASS_NAMES.get(name_or_instance, name_or_instance)
        try:
            return ASSIGNORS[name]()
        except KeyError:
            known = ", ".join(ASSIGNORS)
            raise ConfigError(
                f"unknown partition assignor {name_or_instance!r} (known: {known})"
            ) from None
    if isinstance(name_or_instance, type):
        return name_or_instance()
    if isinstance(name_or_instance, PartitionAssignor):
        return name_or_instance
    raise ConfigError(f"not a partition assignor: {name_or_instance!r}")
