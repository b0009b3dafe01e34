"""Context and async deserializers, applied to the records a drain took (issue 22).

Plain one-argument deserializers run inside the record decoder (in C).  Those that want a
:class:`~aiokafkawire.serialization.SerializationContext` or are ``async`` (a schema-registry
deserializer) cannot: :func:`deserialize_drained` applies them to what ``getmany`` / ``async
for`` drained (with ``advance=False``), one partition's records in order, before any position
moves.  On a failure the partition's records before the failing one are kept and its position
is set to the failing record (fetched again from there); when nothing precedes it, every
partition of the drain is rewound to its first record and the typed error is raised, so the
position never passes a record the application did not get.
"""

from __future__ import annotations

from typing import Any

from aiokafkawire.consumer.fetch.buffer import PositionUpdate
from aiokafkawire.consumer.fetch.dispatch import Fetcher
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.serialization import DeserializerPair
from aiokafkawire.structs import TopicPartition

__all__ = ["deserialize_drained"]


async def deserialize_drained(
    pair: DeserializerPair,
    data: dict[TopicPartition, list[Any]],
    ends: dict[TopicPartition, PositionUpdate],
    subs: SubscriptionState,
    fetcher: Fetcher,
) -> None:
    """Deserialize ``data`` in place; ``ends`` (the positions after it) follow any cut.

    Raises :class:`~aiokafkawire.serialization.RecordDeserializationError` when a partition's
    first drained record fails (after rewinding the drain: nothing is lost).
    """
    for tp, records in list(data.items()):
        good, error = await pair.apply(records)
        if error is None:
            data[tp] = good
            continue
        state = subs.assignment.get(tp)
        if not good:
            _rewind(data, ends, subs, fetcher)
            raise error
        data[tp] = good
        if state is not None:
            epoch = good[-1].leader_epoch
            state.seek(error.offset, epoch)
            ends[tp] = PositionUpdate(error.offset, epoch, state.version)
            fetcher.discard([tp])
            subs.notify()


def _rewind(
    data: dict[TopicPartition, list[Any]],
    ends: dict[TopicPartition, PositionUpdate],
    subs: SubscriptionState,
    fetcher: Fetcher,
) -> None:
    """Put every partition of the drain back at its first drained record (the positions of
    partitions that only moved past control records are applied)."""
    for tp, records in data.items():
        state = subs.assignment.get(tp)
        end = ends.get(tp)
        if records and state is not None and (end is None or end.version == state.version):
            first = records[0]
            state.seek(first.offset, first.leader_epoch)
    for tp, end in ends.items():
        if tp not in data:
            fetcher.apply_position(tp, end)
    fetcher.discard(list(data))
    data.clear()
    ends.clear()
    subs.notify()
