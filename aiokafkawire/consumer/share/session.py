"""The client side of a share session (KIP-932) with one broker, as a declared state machine.

A share session is keyed by (group, member) on the broker that leads the partitions.  Every
ShareFetch / ShareAcknowledge carries ``ShareSessionEpoch``:

- ``0`` opens a session (a full ShareFetch naming every partition; it may not carry
  acknowledgements, and it discards an older session of the member, releasing its records);
- ``1 .. 2**31-1``: the next request of an open session (incremental: partitions to add in
  ``Topics``, to remove in ``ForgottenTopicsData``; acknowledgements allowed); each answered
  request moves the epoch on by one;
- ``-1`` closes the session (acknowledgements allowed, no partitions), releasing what it holds.

SHARE_SESSION_NOT_FOUND and INVALID_SHARE_SESSION_EPOCH mean the broker forgot the session or
the epochs diverged: the client starts a new one at epoch 0.  A request without an answer
(connection lost, timeout) leaves the broker's epoch unknown, so the client starts over too.

The states and the events that move between them are the table :data:`TRANSITIONS`; an event the
table does not list for the current state is a bug and raises.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from aiokafkawire import errors
from aiokafkawire._fsm import TransitionTable
from aiokafkawire.structs import TopicPartition

__all__ = ["TRANSITIONS", "SessionEvent", "SessionState", "ShareSession"]

_MAX_EPOCH = 2**31 - 1
OPEN_EPOCH = 0
CLOSE_EPOCH = -1


class SessionState(enum.Enum):
    """Where the client's share session with one broker stands."""

    NEW = "new"  # no session: the next ShareFetch opens one (epoch 0)
    OPEN = "open"  # a session the broker knows, at ``epoch``
    CLOSING = "closing"  # the final request (epoch -1) is being sent
    CLOSED = "closed"  # done; no more requests


class SessionEvent(enum.Enum):
    """What happens to a session."""

    ANSWERED = "answered"  # the broker answered the request without a session error
    SESSION_ERROR = "session_error"  # SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH
    LOST = "lost"  # no answer: connection lost or request timed out
    CLOSE = "close"  # the consumer is closing


#: (state, event) -> next state.  Anything else is illegal.
TRANSITIONS: TransitionTable[SessionState, SessionEvent] = TransitionTable.from_rows(
    "share session",
    [
        (SessionState.NEW, SessionEvent.ANSWERED, SessionState.OPEN),
        (SessionState.NEW, SessionEvent.SESSION_ERROR, SessionState.NEW),
        (SessionState.NEW, SessionEvent.LOST, SessionState.NEW),
        (SessionState.NEW, SessionEvent.CLOSE, SessionState.CLOSED),  # nothing to close
        (SessionState.OPEN, SessionEvent.ANSWERED, SessionState.OPEN),
        (SessionState.OPEN, SessionEvent.SESSION_ERROR, SessionState.NEW),
        (SessionState.OPEN, SessionEvent.LOST, SessionState.NEW),
        (SessionState.OPEN, SessionEvent.CLOSE, SessionState.CLOSING),
        (SessionState.CLOSING, SessionEvent.ANSWERED, SessionState.CLOSED),
        (SessionState.CLOSING, SessionEvent.SESSION_ERROR, SessionState.CLOSED),
        (SessionState.CLOSING, SessionEvent.LOST, SessionState.CLOSED),
        (SessionState.CLOSED, SessionEvent.CLOSE, SessionState.CLOSED),
    ],
)


class ShareSession:
    """One broker's share session: its state, epoch and the partitions it fetches.

    Usage per request: :meth:`plan` (what the request names), send it, then :meth:`answered`,
    :meth:`session_error` or :meth:`lost`.  One request at a time: the epoch of the next request
    depends on the answer to this one.
    """

    __slots__ = ("_sent", "epoch", "node_id", "partitions", "state")

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.state = SessionState.NEW
        self.epoch = OPEN_EPOCH
        #: The partitions the broker's session fetches (as of the last answered request).
        self.partitions: set[TopicPartition] = set()
        self._sent: set[TopicPartition] | None = None

    def __repr__(self) -> str:
        return f"<ShareSession node={self.node_id} {self.state.value} epoch={self.epoch}>"

    def _move(self, event: SessionEvent) -> None:
        self.state = TRANSITIONS.next(self.state, event)

    @property
    def can_acknowledge(self) -> bool:
        """Whether the next request may carry acknowledgements (not the opening one)."""
        return self.state in (SessionState.OPEN, SessionState.CLOSING)

    @property
    def request_epoch(self) -> int:
        """The ``ShareSessionEpoch`` of the next request."""
        if self.state is SessionState.CLOSING:
            return CLOSE_EPOCH
        if self.state is SessionState.CLOSED:
            raise errors.IllegalStateError(f"share session with broker {self.node_id} is closed")
        return self.epoch

    def plan(
        self, wanted: Iterable[TopicPartition]
    ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """``(to_add, to_forget)`` for a ShareFetch that should leave ``wanted`` in the session.

        Opening a session names every wanted partition; an open one names the difference.
        """
        if self.state not in (SessionState.NEW, SessionState.OPEN):
            raise errors.IllegalStateError(
                f"share session with broker {self.node_id}: cannot fetch while {self.state.value}"
            )
        want = set(wanted)
        self._sent = want
        if self.state is SessionState.NEW:
            return sorted(want), []
        return sorted(want - self.partitions), sorted(self.partitions - want)

    def answered(self) -> None:
        """The broker answered (top-level error none): the epoch moves on."""
        was = self.state
        self._move(SessionEvent.ANSWERED)
        if self._sent is not None:
            self.partitions = self._sent
            self._sent = None
        if was is SessionState.NEW:
            self.epoch = 1
        elif was is SessionState.OPEN:
            self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1
        else:
            self.partitions = set()

    def _reset(self, event: SessionEvent) -> None:
        self._move(event)
        self._sent = None
        self.partitions = set()
        self.epoch = OPEN_EPOCH

    def session_error(self) -> None:
        """The broker forgot the session or the epochs diverged: start a new one."""
        self._reset(SessionEvent.SESSION_ERROR)

    def lost(self) -> None:
        """No answer came: the broker's epoch is unknown, start a new session."""
        self._reset(SessionEvent.LOST)

    def close(self) -> None:
        """Begin closing: the next request (if the session is open) has epoch -1."""
        self._move(SessionEvent.CLOSE)
        self._sent = None
