"""What the consumer reads: subscribed topics or manual assignment, and per-partition positions.

No I/O here.  The fetcher, the group coordinator and the :class:`Consumer` share one
:class:`SubscriptionState`; every change that should wake the fetch loops bumps ``changed``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from typing import Any

from aiokafkawire.errors import IllegalStateError
from aiokafkawire.structs import TopicPartition

__all__ = ["PartitionState", "SubscriptionState"]


class PartitionState:
    """Consumption state of one assigned partition.

    ``position`` is the offset of the next record to hand to the user (``None`` until known);
    ``fetch_position`` runs ahead of it while fetched records wait in the buffer; ``leader_epoch``
    is the epoch of the record before ``position`` and ``fetch_epoch`` that of the batch before
    ``fetch_position`` (what Fetch sends as ``last_fetched_epoch``, KIP-320).  ``version``
    changes on every seek so fetched data for an old position is recognised and dropped.
    ``reset_to`` is ``(offset, leader_epoch)`` where ``auto_offset_reset`` last put the partition
    (where reading began with nothing committed; ``seek_to_committed`` goes back there).
    ``held`` is set while a rebalance listener runs for the partition (newly assigned, or being
    revoked): it is not fetched and none of its records are handed out meanwhile.
    """

    __slots__ = (
        "awaiting_validation",
        "fetch_epoch",
        "fetch_position",
        "fetch_size",
        "held",
        "highwater",
        "last_poll_ms",
        "last_stable_offset",
        "leader_epoch",
        "log_start_offset",
        "paused",
        "pending_error",
        "position",
        "reset_strategy",
        "reset_to",
        "version",
    )

    def __init__(self) -> None:
        self.position: int | None = None
        self.fetch_position: int | None = None
        self.leader_epoch: int | None = None
        self.fetch_epoch: int | None = None
        self.paused = False
        self.held = False
        self.highwater: int | None = None
        self.last_poll_ms: int | None = None
        self.last_stable_offset: int | None = None
        self.log_start_offset: int | None = None
        self.reset_strategy: str | None = None
        self.reset_to: tuple[int, int | None] | None = None
        self.awaiting_validation = False
        self.pending_error: Exception | None = None
        self.fetch_size: int | None = None
        self.version = 0

    def seek(self, offset: int, leader_epoch: int | None = None) -> None:
        """Move to ``offset``: buffered data becomes stale."""
        self.position = offset
        self.fetch_position = offset
        self.leader_epoch = leader_epoch
        self.fetch_epoch = leader_epoch
        self.reset_strategy = None
        self.pending_error = None
        self.version += 1

    def request_reset(self, strategy: str) -> None:
        """Forget the position; it will be looked up with ``strategy`` (earliest/latest/...)."""
        self.position = None
        self.fetch_position = None
        self.fetch_epoch = None
        self.reset_strategy = strategy
        self.version += 1

    @property
    def has_position(self) -> bool:
        """Whether the next offset to read is known."""
        return self.position is not None


class SubscriptionState:
    """Subscribed topics (or pattern) and the assigned partitions with their state."""

    def __init__(self, default_reset: str) -> None:
        self.default_reset = default_reset
        self.topics: set[str] = set()
        self.pattern: re.Pattern[str] | None = None
        self.listener: Any = None
        self.manual = False
        self.assignment: dict[TopicPartition, PartitionState] = {}
        self._changed = asyncio.Event()
        self.assignment_event = asyncio.Event()

    # ----------------------------------------------------------------- change notification

    def notify(self) -> None:
        """Wake everyone waiting for a change (fetch loops, position resolution)."""
        event, self._changed = self._changed, asyncio.Event()
        event.set()

    def change_event(self) -> asyncio.Event:
        """An event set at the next :meth:`notify`."""
        return self._changed

    # ----------------------------------------------------------------- subscription

    @property
    def subscribed(self) -> bool:
        """Whether group-managed consumption (topics or pattern) is active."""
        return bool(self.topics) or self.pattern is not None

    def subscribe(self, topics: Iterable[str], listener: Any = None) -> None:
        """Subscribe to a fixed set of topics."""
        if self.manual:
            raise IllegalStateError("subscribe() cannot be mixed with assign(); unsubscribe first")
        self.topics = set(topics)
        self.pattern = None
        self.listener = listener

    def subscribe_pattern(self, pattern: str | re.Pattern[str], listener: Any = None) -> None:
        """Subscribe to every topic matching ``pattern`` (matched against the whole name)."""
        if self.manual:
            raise IllegalStateError("subscribe() cannot be mixed with assign(); unsubscribe first")
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.topics = set()
        self.listener = listener

    def matching_topics(self, available: Iterable[str]) -> set[str]:
        """Topics of ``available`` that the pattern selects (internal topics excluded)."""
        if self.pattern is None:
            return set(self.topics)
        return {t for t in available if not t.startswith("__") and self.pattern.fullmatch(t)}

    def unsubscribe(self) -> None:
        """Drop the subscription and the assignment."""
        self.topics = set()
        self.pattern = None
        self.listener = None
        self.manual = False
        self.set_assignment(())

    # ----------------------------------------------------------------- assignment

    def assign_manually(self, partitions: Iterable[TopicPartition]) -> None:
        """Manual assignment (no group management)."""
        if self.subscribed:
            raise IllegalStateError("assign() cannot be mixed with subscribe(); unsubscribe first")
        self.manual = True
        self.set_assignment(partitions)

    def set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        """Replace the assignment, keeping the state of partitions that stay."""
        wanted = set(partitions)
        self.assignment = {tp: self.assignment.get(tp) or PartitionState() for tp in sorted(wanted)}
        if wanted:
            self.assignment_event.set()
        else:
            self.assignment_event.clear()
        self.notify()

    def add_partitions(self, partitions: Iterable[TopicPartition], *, held: bool = False) -> None:
        """Add partitions to the assignment; ``held``: new ones wait for :meth:`release`."""
        added = set(partitions) - set(self.assignment)
        self.set_assignment(set(self.assignment) | added)
        if held:
            for tp in added:
                self.assignment[tp].held = True

    def hold(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching and handing out these partitions (a rebalance listener runs)."""
        for tp in partitions:
            state = self.assignment.get(tp)
            if state is not None:
                state.held = True

    def release(self, partitions: Iterable[TopicPartition]) -> None:
        """Undo :meth:`hold` for the partitions still assigned, and wake the fetcher."""
        for tp in partitions:
            state = self.assignment.get(tp)
            if state is not None:
                state.held = False
        self.notify()

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Remove partitions from the assignment (cooperative rebalancing)."""
        self.set_assignment(set(self.assignment) - set(partitions))

    def state(self, tp: TopicPartition) -> PartitionState:
        """The state of an assigned partition; IllegalStateError when not assigned."""
        try:
            return self.assignment[tp]
        except KeyError:
            raise IllegalStateError(f"partition {tp} is not assigned to this consumer") from None

    def needs_position(self) -> list[TopicPartition]:
        """Assigned partitions whose position is unknown."""
        return [tp for tp, st in self.assignment.items() if st.position is None]
