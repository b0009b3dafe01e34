"""Producer partitioners: choose the partition each record goes to.

Keyed records must land where the Java client (and librdkafka's ``murmur2_random``) would put them,
so that producers written in different languages agree on which partition holds a key. That is
``(murmur2(key) & 0x7fffffff) % partition_count``, computed over *all* partitions of the topic.

Keyless records follow KIP-480 ("sticky" partitioning): one partition per topic is used until the
accumulator reports that a batch for it was completed (:meth:`Partitioner.on_new_batch`), then
another one is picked at random. This fills batches faster than round-robin does.

Partition lists are lists of partition ids. Kafka numbers the partitions of a topic ``0..n-1``, so
the keyed path returns the hash modulo ``len(partitions)`` directly, as Java does, whatever order
the caller's list is in.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from aiokafkawire._compiled import load_accelerator
from aiokafkawire.errors import ConfigError, UnknownTopicError

__all__ = [
    "CallablePartitioner",
    "DefaultPartitioner",
    "Partitioner",
    "PartitionerFunction",
    "RoundRobinPartitioner",
    "UniformStickyPartitioner",
    "create_partitioner",
    "murmur2",
    "partition_for_key",
    "pure_murmur2",
    "pure_partition_for_key",
]

_SEED = 0x9747B28C
_MULTIPLIER = 0x5BD1E995
_MASK32 = 0xFFFFFFFF
_POSITIVE_MASK = 0x7FFFFFFF

# Struct objects that unpack n little-endian uint32 blocks, built once per block count.
_BLOCK_UNPACKERS: dict[int, struct.Struct] = {}


def _block_unpacker(block_count: int) -> struct.Struct:
    unpacker = _BLOCK_UNPACKERS.get(block_count)
    if unpacker is None:
        unpacker = struct.Struct(f"<{block_count}I")
        if block_count <= 1024:  # bound the cache; longer keys are rare
            _BLOCK_UNPACKERS[block_count] = unpacker
    return unpacker


def _murmur2_unsigned(data: bytes) -> int:
    """MurmurHash2 (32-bit, Kafka's seed) of ``data`` as an unsigned 32-bit value."""
    length = len(data)
    m = _MULTIPLIER
    h = (_SEED ^ length) & _MASK32
    block_count = length >> 2
    if block_count:
        for k in _block_unpacker(block_count).unpack_from(data):
            k = (k * m) & _MASK32
            k ^= k >> 24
            # The low 32 bits of an XOR are the XOR of the low 32 bits: mask once.
            h = (h * m ^ k * m) & _MASK32
    tail_length = length & 3
    if tail_length:
        tail_start = length - tail_length
        if tail_length == 3:
            h ^= data[tail_start + 2] << 16
        if tail_length >= 2:
            h ^= data[tail_start + 1] << 8
        h ^= data[tail_start]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return h


def pure_murmur2(data: bytes) -> int:
    """Return the Java client's ``Utils.murmur2(data)``: a signed 32-bit MurmurHash2 value."""
    h = _murmur2_unsigned(data)
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def pure_partition_for_key(key: bytes, partition_count: int) -> int:
    """Return the partition the Java client picks for ``key`` in a topic of ``partition_count``."""
    return (_murmur2_unsigned(key) & _POSITIVE_MASK) % partition_count


def _compiled() -> tuple[Callable[[bytes], int], Callable[[bytes, int], int]] | None:
    """The C versions (same results), unless missing or pure Python is forced."""
    cmurmur2: Any = load_accelerator("aiokafkawire.producer._cmurmur2")
    if cmurmur2 is None:
        return None
    return cmurmur2.murmur2, cmurmur2.partition_for_key


_COMPILED = _compiled()
#: ``murmur2(data)`` and ``partition_for_key(key, count)``: compiled when available.
murmur2, partition_for_key = _COMPILED or (pure_murmur2, pure_partition_for_key)


@runtime_checkable
class Partitioner(Protocol):
    """Chooses the partition of a record. Instances keep per-topic state; share them carefully."""

    def partition(
        self,
        topic: str,
        key: bytes | None,
        partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        """Return the partition for a record of ``topic`` with serialized ``key``.

        ``partitions`` are all partition ids of the topic; ``available`` those whose leader is
        currently known (it may be empty).
        """
        ...

    def on_new_batch(self, topic: str, previous_partition: int) -> None:
        """Called by the accumulator when the batch for ``previous_partition`` is complete."""
        ...


class _StickyPartitionCache:
    """KIP-480: the current "sticky" partition of each topic, changed only on a new batch."""

    __slots__ = ("_random", "_retired", "current")

    def __init__(self, rng: random.Random) -> None:
        self.current: dict[str, int] = {}
        # Partition whose batch just completed, to avoid when the topic's next one is picked.
        self._retired: dict[str, int] = {}
        self._random = rng

    def partition(self, topic: str, partitions: Sequence[int], available: Sequence[int]) -> int:
        current = self.current.get(topic)
        # A shrunk partition list (topic recreated) invalidates the cached choice.
        if current is None or current >= len(partitions):
            current = self._choose(topic, partitions, available)
        return current

    def on_new_batch(self, topic: str, previous_partition: int) -> None:
        current = self.current.get(topic)
        # Only a completed batch of the partition we stick to moves us on: one completed on
        # another partition (keyed records) says nothing about the sticky one.
        if current is not None and current != previous_partition:
            return
        # The hook gets no partition lists, so the choice is made lazily by the next record.
        self.current.pop(topic, None)
        self._retired[topic] = previous_partition

    def _choose(self, topic: str, partitions: Sequence[int], available: Sequence[int]) -> int:
        previous = self._retired.pop(topic, None)
        candidates = available if available else partitions
        if not candidates:
            raise UnknownTopicError(f"topic {topic!r} has no partitions")
        if len(candidates) == 1 or previous is None or previous not in candidates:
            choice = candidates[self._random.randrange(len(candidates))]
        else:
            # Uniform over the other candidates: draw among n-1 and step over the previous one.
            skipped = candidates.index(previous)
            index = self._random.randrange(len(candidates) - 1)
            choice = candidates[index + 1 if index >= skipped else index]
        self.current[topic] = choice
        return choice


class DefaultPartitioner:
    """The Java client's default: murmur2 of the key over all partitions; keyless records sticky.

    ``rng`` makes the keyless choices reproducible (tests); by default a private
    :class:`random.Random` is used.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._sticky = _StickyPartitionCache(rng or random.Random())

    @property
    def sticky_partitions(self) -> dict[str, int]:
        """Topic -> its current sticky partition (read only: the accumulator's compiled path
        reads it to place keyless records; a topic without one goes through :meth:`partition`)."""
        return self._sticky.current

    def partition(
        self,
        topic: str,
        key: bytes | None,
        partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        """Return ``partition_for_key`` for keyed records, else the topic's sticky partition."""
        if key is not None:
            return partition_for_key(key, len(partitions))
        return self._sticky.partition(topic, partitions, available)

    def on_new_batch(self, topic: str, previous_partition: int) -> None:
        """Move the topic's sticky partition on if its batch was the one completed."""
        self._sticky.on_new_batch(topic, previous_partition)


class UniformStickyPartitioner:
    """Sticky partitioning (KIP-480) for every record, keyed or not: keys are ignored."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._sticky = _StickyPartitionCache(rng or random.Random())

    def partition(
        self,
        topic: str,
        key: bytes | None,
        partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        """Return the topic's sticky partition."""
        return self._sticky.partition(topic, partitions, available)

    def on_new_batch(self, topic: str, previous_partition: int) -> None:
        """Move the topic's sticky partition on if its batch was the one completed."""
        self._sticky.on_new_batch(topic, previous_partition)


class RoundRobinPartitioner:
    """Each record of a topic goes to the next available partition in turn; keys are ignored.

    When no partition is available, the counter runs over all partitions instead (as Java does).
    """

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}

    def partition(
        self,
        topic: str,
        key: bytes | None,
        partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        """Return the next partition of ``topic`` in round-robin order."""
        counter = self._counters.get(topic, 0)
        # Wrap like Java's int counter so the value stays small however long we run.
        self._counters[topic] = (counter + 1) & _POSITIVE_MASK
        if available:
            return available[counter % len(available)]
        if not partitions:
            raise UnknownTopicError(f"topic {topic!r} has no partitions")
        return partitions[counter % len(partitions)]

    def on_new_batch(self, topic: str, previous_partition: int) -> None:
        """Round-robin does not depend on batches."""


PartitionerFunction = Callable[[bytes | None, Sequence[int], Sequence[int]], int]
"""A user function ``fn(key, all_partitions, available_partitions) -> partition``."""


class CallablePartitioner:
    """Adapts a plain function ``fn(key, all_partitions, available_partitions) -> int``."""

    def __init__(self, function: PartitionerFunction) -> None:
        self._function = function

    def partition(
        self,
        topic: str,
        key: bytes | None,
        partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        """Call the wrapped function and check that it returned one of ``partitions``."""
        chosen = self._function(key, partitions, available)
        # Partition ids are 0..n-1, so a range check stands for a membership test.
        if type(chosen) is not int or not 0 <= chosen < len(partitions):
            raise ConfigError(
                f"partitioner {self._function!r} returned {chosen!r} for topic {topic!r}, "
                f"which has {len(partitions)} partitions"
            )
        return chosen

    def on_new_batch(self, topic: str, previous_partition: int) -> None:
        """Plain functions have no batch hook."""


_PARTITIONERS_BY_NAME: dict[str, Callable[[], Partitioner]] = {
    "default": DefaultPartitioner,
    "murmur2_random": DefaultPartitioner,
    "round_robin": RoundRobinPartitioner,
    "uniform_sticky": UniformStickyPartitioner,
}


def create_partitioner(
    spec: Partitioner | PartitionerFunction | type[Partitioner] | str | None = None,
) -> Partitioner:
    """Turn a producer's ``partitioner`` setting into a :class:`Partitioner` instance.

    Accepts ``None`` (a new :class:`DefaultPartitioner`), a name (``"default"``,
    ``"murmur2_random"``, ``"round_robin"``, ``"uniform_sticky"``), a partitioner class (it is
    instantiated, so each producer gets its own state), a partitioner instance (used as is) or a
    plain function ``fn(key, all_partitions, available_partitions) -> int``.
    """
    if spec is None:
        return DefaultPartitioner()
    if isinstance(spec, str):
        try:
            return _PARTITIONERS_BY_NAME[spec]()
        except KeyError:
            known = ", ".join(sorted(_PARTITIONERS_BY_NAME))
            raise ConfigError(f"unknown partitioner {spec!r} (known: {known})") from None
    if isinstance(spec, type):
        return spec()
    if isinstance(spec, Partitioner):
        return spec
    if callable(spec):
        return CallablePartitioner(spec)
    raise ConfigError(f"not a partitioner: {spec!r}")
