"""The consumer's positions: seeking, looking offsets up, pausing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from aiokafkawire import errors
from aiokafkawire._waits import wait_event
from aiokafkawire.consumer._state import ConsumerParts
from aiokafkawire.consumer.fetch import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from aiokafkawire.consumer.fetch.config import RESET_TIMESTAMPS
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.consumer.value_types import OffsetAndTimestamp
from aiokafkawire.structs import TopicPartition


class PositionControls:
    """Where the consumer reads next, and the offsets the brokers know of.

    Positions live in the subscription (``SubscriptionState``); this moves them (seeks,
    pauses) and looks offsets up through the fetcher.  ``discard`` drops what is buffered for
    partitions whose position moved.
    """

    def __init__(
        self,
        subs: SubscriptionState,
        parts: ConsumerParts,
        discard: Callable[[Iterable[TopicPartition]], None],
        *,
        auto_offset_reset: str,
        request_timeout_ms: int,
    ) -> None:
        self._subs = subs
        self._parts = parts
        self._discard = discard
        self._auto_offset_reset = auto_offset_reset
        self._request_timeout_ms = request_timeout_ms

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """See :meth:`Consumer.seek`."""
        self._parts.require_started()
        subs = self._subs
        if offset < 0:
            raise errors.ConfigError("offset must be >= 0")
        subs.state(partition).seek(offset)
        self._discard([partition])
        subs.notify()

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """See :meth:`Consumer.seek_to_beginning`."""
        await self._seek_to_timestamp(partitions, EARLIEST_TIMESTAMP)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        """See :meth:`Consumer.seek_to_end`."""
        await self._seek_to_timestamp(partitions, LATEST_TIMESTAMP)

    async def _seek_to_timestamp(self, partitions: Sequence[TopicPartition], ts: int) -> None:
        _, fetcher = self._parts.require_started()
        subs = self._subs
        tps = list(partitions) or list(subs.assignment)
        for tp in tps:
            subs.state(tp)
        offsets = await fetcher.list_offsets(dict.fromkeys(tps, ts))
        for tp, (offset, _, epoch) in offsets.items():
            if offset is not None and tp in subs.assignment:
                self.seek(tp, offset)
                subs.assignment[tp].leader_epoch = epoch

    async def seek_to_committed(
        self, *partitions: TopicPartition
    ) -> dict[TopicPartition, int | None]:
        """See :meth:`Consumer.seek_to_committed`."""
        _, fetcher = self._parts.require_started()
        subs = self._subs
        tps = list(partitions) or list(subs.assignment)
        for tp in tps:
            subs.state(tp)
        committed = await self._parts.group_offsets().fetch(tps)
        result: dict[TopicPartition, int | None] = {}
        lookups: dict[TopicPartition, int] = {}
        strategy = self._auto_offset_reset
        for tp in tps:
            found = committed.get(tp)
            result[tp] = found.offset if found is not None else None
            if found is None and subs.state(tp).reset_to is None:
                timestamp = RESET_TIMESTAMPS.get(strategy)
                if timestamp is None:
                    raise errors.NoOffsetForPartitionError(
                        f"no committed offset for {tp} and auto_offset_reset={strategy!r}"
                    )
                lookups[tp] = timestamp
        looked_up = await fetcher.list_offsets(lookups) if lookups else {}
        for tp in tps:
            found = committed.get(tp)
            state = subs.assignment.get(tp)
            if state is None:
                continue  # revoked meanwhile
            if found is not None:
                self.seek(tp, found.offset)
            elif state.reset_to is not None:
                self.seek(tp, state.reset_to[0])
                state.leader_epoch = state.fetch_epoch = state.reset_to[1]
            else:
                offset, _, epoch = looked_up.get(tp, (None, None, None))
                if offset is not None:
                    self.seek(tp, offset)
                    state.reset_to = (offset, epoch)
                    state.leader_epoch = state.fetch_epoch = epoch
        return result

    async def position(self, partition: TopicPartition) -> int:
        """See :meth:`Consumer.position`."""
        self._parts.require_started()
        subs = self._subs
        state = subs.state(partition)
        deadline = time.monotonic() + self._request_timeout_ms / 1000
        while state.position is None:
            if state.pending_error is not None:
                raise state.pending_error
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.KafkaTimeoutError(f"position of {partition} not known in time")
            await wait_event(subs.change_event(), min(remaining, 0.2))
            state = subs.state(partition)
        return state.position

    def highwater(self, partition: TopicPartition) -> int | None:
        """See :meth:`Consumer.highwater`."""
        self._parts.require_started()
        subs = self._subs
        return subs.state(partition).highwater

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """See :meth:`Consumer.last_stable_offset`."""
        self._parts.require_started()
        subs = self._subs
        return subs.state(partition).last_stable_offset

    def pause(self, *partitions: TopicPartition) -> None:
        """See :meth:`Consumer.pause`."""
        self._parts.require_started()
        subs = self._subs
        for tp in partitions:
            subs.state(tp).paused = True

    def resume(self, *partitions: TopicPartition) -> None:
        """See :meth:`Consumer.resume`."""
        self._parts.require_started()
        subs = self._subs
        for tp in partitions:
            subs.state(tp).paused = False
        subs.notify()

    def paused(self) -> set[TopicPartition]:
        """See :meth:`Consumer.paused`."""
        return {tp for tp, st in self._subs.assignment.items() if st.paused}

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """See :meth:`Consumer.beginning_offsets`."""
        _, fetcher = self._parts.require_started()
        found = await fetcher.list_offsets(dict.fromkeys(partitions, EARLIEST_TIMESTAMP))
        return {tp: v[0] for tp, v in found.items() if v[0] is not None}

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """See :meth:`Consumer.end_offsets`."""
        _, fetcher = self._parts.require_started()
        found = await fetcher.list_offsets(dict.fromkeys(partitions, LATEST_TIMESTAMP))
        return {tp: v[0] for tp, v in found.items() if v[0] is not None}

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """See :meth:`Consumer.offsets_for_times`."""
        _, fetcher = self._parts.require_started()
        for ts in timestamps.values():
            if ts < 0:
                raise errors.ConfigError("timestamps must be >= 0")
        found = await fetcher.list_offsets(dict(timestamps))
        return {
            tp: OffsetAndTimestamp(v[0], v[1] if v[1] is not None else -1, v[2])
            if v[0] is not None
            else None
            for tp, v in found.items()
        }

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """See :meth:`Consumer.last_poll_timestamp`."""
        self._parts.require_started()
        subs = self._subs
        return subs.state(partition).last_poll_ms
