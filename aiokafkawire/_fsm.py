"""State machines declared as transition tables (in the spirit of h11).

A machine's whole behaviour is one mapping ``(state, event) -> next state`` that a reader can
take in at a glance; its owner keeps the current state and moves it only through
:meth:`TransitionTable.next`.  A pair the table does not declare is a bug of ours, and raises
:class:`~aiokafkawire.errors.InvalidTransitionError` naming the machine, the state and the event,
instead of leaving the object in a state nobody planned.

The lookup is one dict access, cheap enough for per-request paths that change state rarely; a
hot path that only needs "am I ready?" compares the owner's state attribute directly.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from types import MappingProxyType
from typing import Generic, TypeVar

from aiokafkawire.errors import InvalidTransitionError

__all__ = ["TransitionTable"]

S = TypeVar("S", bound=Hashable)
E = TypeVar("E", bound=Hashable)


class TransitionTable(Generic[S, E]):
    """An immutable table of a state machine's legal transitions.

    ``TransitionTable("transaction", {(READY, BEGIN): IN_TRANSACTION, ...})``;
    ``table.next(state, event)`` returns the next state or raises
    :class:`~aiokafkawire.errors.InvalidTransitionError`.
    """

    __slots__ = ("_table", "machine")

    def __init__(self, machine: str, transitions: Mapping[tuple[S, E], S]) -> None:
        self.machine = machine
        self._table: Mapping[tuple[S, E], S] = MappingProxyType(dict(transitions))

    def next(self, state: S, event: E) -> S:
        """The state after ``event`` in ``state``."""
        try:
            return self._table[(state, event)]
        except KeyError:
            raise InvalidTransitionError(self.machine, state, event) from None

    def allows(self, state: S, event: E) -> bool:
        """Whether ``event`` is legal in ``state``."""
        return (state, event) in self._table

    def events_from(self, state: S) -> frozenset[E]:
        """The events legal in ``state``."""
        return frozenset(e for (s, e) in self._table if s == state)

    @property
    def transitions(self) -> Mapping[tuple[S, E], S]:
        """The whole table (read-only), for documentation and tests."""
        return self._table

    def states(self) -> frozenset[S]:
        """Every state named by the table, as a source or a target."""
        found: set[S] = set()
        for (state, _), target in self._table.items():
            found.update((state, target))
        return frozenset(found)

    @staticmethod
    def from_rows(machine: str, rows: Iterable[tuple[S, E, S]]) -> TransitionTable[S, E]:
        """Build a table from ``(state, event, next_state)`` rows; a repeated pair is an error."""
        table: dict[tuple[S, E], S] = {}
        for state, event, target in rows:
            if (state, event) in table:
                raise ValueError(f"{machine}: ({state}, {event}) declared twice")
            table[(state, event)] = target
        return TransitionTable(machine, table)
