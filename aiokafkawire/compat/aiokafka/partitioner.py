"""``aiokafka.partitioner``: aiokafka's default partitioner and murmur2."""

from __future__ import annotations

import random
from collections.abc import Sequence

from aiokafkawire.producer.partitioner import pure_murmur2

__all__ = ["DefaultPartitioner", "murmur2"]


def murmur2(data: bytes) -> int:
    """The Java client's murmur2 hash of ``data`` (a signed 32-bit int, as aiokafka returns)."""
    return pure_murmur2(data)


class DefaultPartitioner:
    """Keyed records by murmur2 (as the Java client); keyless ones to a random available one.

    A producer given this partitioner (aiokafka's default) uses aiokafkawire's own default
    instead: the same partition for every keyed record, and sticky partitions for keyless ones
    (a batch fills before the next partition is chosen), which the Java client also does.
    """

    @classmethod
    def __call__(
        cls, key: bytes | None, all_partitions: Sequence[int], available: Sequence[int]
    ) -> int:
        if key is None:
            return random.choice(list(available) if available else list(all_partitions))
        index = (murmur2(key) & 0x7FFFFFFF) % len(all_partitions)
        return all_partitions[index]
