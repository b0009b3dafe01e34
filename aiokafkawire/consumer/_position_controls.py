"""The consumer's positions: seeking, looking offsets up, pausing."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from aiokafkawire import errors
from aiokafkawire._waits import wait_event
from aiokafkawire.consumer._state import ConsumerState
from aiokafkawire.consumer.fetch import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from aiokafkawire.consumer.fetch.config import RESET_TIMESTAMPS
from aiokafkawire.consumer.records import OffsetAndTimestamp
from aiokafkawire.structs import TopicPartition


class PositionControlsMixin(ConsumerState):
    """Where the consumer reads next, and the offsets the brokers know of."""

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` from ``offset`` next."""
        _, subs, _ = self._require_started()
        if offset < 0:
            raise errors.ConfigError("offset must be >= 0")
        subs.state(partition).seek(offset)
        self._discard([partition])
        subs.notify()

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Read from the earliest available offset (all assigned partitions by default)."""
        await self._seek_to_timestamp(partitions, EARLIEST_TIMESTAMP)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Read only records written from now on (all assigned partitions by default)."""
        await self._seek_to_timestamp(partitions, LATEST_TIMESTAMP)

    async def _seek_to_timestamp(self, partitions: Sequence[TopicPartition], ts: int) -> None:
        _, subs, fetcher = self._require_started()
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
        """Read from the committed offsets; returns them (``None``: nothing committed).

        A partition with nothing committed goes back to where ``auto_offset_reset`` put it when
        this consumer began reading it (so after an aborted transaction its input is read
        again), or, when it never did (the partition was seeked by hand), to the
        ``auto_offset_reset`` position now, as a new member of the group would start.  With
        ``auto_offset_reset="none"`` such a partition raises
        :class:`~aiokafkawire.errors.NoOffsetForPartitionError` (and nothing is moved).
        """
        _, subs, fetcher = self._require_started()
        tps = list(partitions) or list(subs.assignment)
        for tp in tps:
            subs.state(tp)
        committed = await self._group_offsets().fetch(tps)
        result: dict[TopicPartition, int | None] = {}
        lookups: dict[TopicPartition, int] = {}
        strategy = self._fetch_config.auto_offset_reset
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
        """The offset of the next record to be handed out (looked up when not yet known)."""
        _, subs, _ = self._require_started()
        state = subs.state(partition)
        deadline = time.monotonic() + self._common.request_timeout_ms / 1000
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
        """The high watermark last seen in a fetch response."""
        _, subs, _ = self._require_started()
        return subs.state(partition).highwater

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The last stable offset last seen in a fetch response (v4+)."""
        _, subs, _ = self._require_started()
        return subs.state(partition).last_stable_offset

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop handing out (and fetching) records of these partitions."""
        _, subs, _ = self._require_started()
        for tp in partitions:
            subs.state(tp).paused = True

    def resume(self, *partitions: TopicPartition) -> None:
        """Undo :meth:`pause`."""
        _, subs, _ = self._require_started()
        for tp in partitions:
            subs.state(tp).paused = False
        subs.notify()

    def paused(self) -> set[TopicPartition]:
        """The paused partitions."""
        return {tp for tp, st in self._subs.assignment.items() if st.paused}

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The earliest offset of each partition."""
        _, _, fetcher = self._require_started()
        found = await fetcher.list_offsets(dict.fromkeys(partitions, EARLIEST_TIMESTAMP))
        return {tp: v[0] for tp, v in found.items() if v[0] is not None}

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record (the LSO with read_committed)."""
        _, _, fetcher = self._require_started()
        found = await fetcher.list_offsets(dict.fromkeys(partitions, LATEST_TIMESTAMP))
        return {tp: v[0] for tp, v in found.items() if v[0] is not None}

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset whose timestamp is at or after each given timestamp (ms)."""
        _, _, fetcher = self._require_started()
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
        """When the last fetch response for ``partition`` arrived (ms since the epoch).

        The :meth:`highwater` seen then is that fresh; None before the first response.
        """
        _, subs, _ = self._require_started()
        return subs.state(partition).last_poll_ms
