"""Where a group member stands, as a declared state machine.

The classic membership (JoinGroup/SyncGroup) and the KIP-848 one (ConsumerGroupHeartbeat) share
one set of states; :data:`TRANSITIONS` lists every move either makes, and :class:`GroupStateMachine`
is the one place that applies them.  An event the table does not list for the current state is a
bug in the membership code and raises :class:`~aiokafkawire.errors.InvalidTransitionError` (an
:class:`~aiokafkawire.errors.IllegalStateError`) naming both.

The values of :class:`GroupState` are the strings users see as ``Consumer.state``.
"""

from __future__ import annotations

import enum

from aiokafkawire._fsm import TransitionTable

__all__ = ["TRANSITIONS", "GroupEvent", "GroupState", "GroupStateMachine"]


class GroupState(enum.Enum):
    """Where a member stands in its group (the value is ``Consumer.state``)."""

    UNJOINED = "unjoined"  # not a member: before the first join, or after a poll timeout
    REBALANCING = "rebalancing"  # joining (classic) or rejoining after being fenced (KIP-848)
    STABLE = "stable"  # the member holds its assignment and heartbeats
    FATAL = "fatal"  # a non-retriable error ended the membership; the next poll raises it
    CLOSED = "closed"  # the consumer left the group; nothing runs any more


class GroupEvent(enum.Enum):
    """What happens to a member."""

    JOIN = "join"  # classic: a JoinGroup/SyncGroup round begins
    ASSIGNED = "assigned"  # an assignment was received and applied
    FENCED = "fenced"  # KIP-848: the coordinator fenced the member; it rejoins with epoch 0
    POLL_TIMEOUT = "poll_timeout"  # not polled within max_poll_interval_ms: leave the group
    FAILED = "failed"  # a non-retriable error (a loop died, or the static member was fenced)
    CLOSE = "close"  # the consumer is closing (or unsubscribed)


_S = GroupState
_E = GroupEvent

#: (state, event) -> next state.  Anything else is illegal.
TRANSITIONS: TransitionTable[GroupState, GroupEvent] = TransitionTable.from_rows(
    "group membership",
    [
        # Classic: every join starts from here; a follow-up (cooperative) or failed join repeats it.
        (_S.UNJOINED, _E.JOIN, _S.REBALANCING),
        (_S.REBALANCING, _E.JOIN, _S.REBALANCING),
        (_S.STABLE, _E.JOIN, _S.REBALANCING),
        # Classic: after SyncGroup.  KIP-848: each heartbeat answer that settles the assignment,
        # the first one included (there is no separate join round).
        (_S.UNJOINED, _E.ASSIGNED, _S.STABLE),
        (_S.REBALANCING, _E.ASSIGNED, _S.STABLE),
        (_S.STABLE, _E.ASSIGNED, _S.STABLE),
        # KIP-848 only: UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH, at any point of the membership.
        (_S.UNJOINED, _E.FENCED, _S.REBALANCING),
        (_S.REBALANCING, _E.FENCED, _S.REBALANCING),
        (_S.STABLE, _E.FENCED, _S.REBALANCING),
        # Only a stable member is checked for poll timeouts (a joining one is waiting on us).
        (_S.STABLE, _E.POLL_TIMEOUT, _S.UNJOINED),
        (_S.UNJOINED, _E.FAILED, _S.FATAL),
        (_S.REBALANCING, _E.FAILED, _S.FATAL),
        (_S.STABLE, _E.FAILED, _S.FATAL),
        # Fatal is sticky: a loop still finishing its step when the other failed must not undo it.
        (_S.FATAL, _E.JOIN, _S.FATAL),
        (_S.FATAL, _E.ASSIGNED, _S.FATAL),
        (_S.FATAL, _E.FENCED, _S.FATAL),
        (_S.FATAL, _E.POLL_TIMEOUT, _S.FATAL),
        (_S.FATAL, _E.FAILED, _S.FATAL),
        (_S.UNJOINED, _E.CLOSE, _S.CLOSED),
        (_S.REBALANCING, _E.CLOSE, _S.CLOSED),
        (_S.STABLE, _E.CLOSE, _S.CLOSED),
        (_S.FATAL, _E.CLOSE, _S.CLOSED),
        (_S.CLOSED, _E.CLOSE, _S.CLOSED),
    ],
)


class GroupStateMachine:
    """The current :class:`GroupState` of one member; :meth:`apply` is the only way to move it."""

    __slots__ = ("_group_id", "state")

    def __init__(self, group_id: str) -> None:
        self._group_id = group_id
        self.state = GroupState.UNJOINED

    def __repr__(self) -> str:
        return f"<GroupStateMachine group={self._group_id!r} {self.state.value}>"

    def apply(self, event: GroupEvent) -> GroupState:
        """Move on ``event`` and return the new state (InvalidTransitionError if not allowed)."""
        self.state = TRANSITIONS.next(self.state, event)
        return self.state
