"""One rule for the consumer's declared state machines: a move the table does not list raises.

The group membership (:mod:`aiokafkawire.consumer.group.states`) and the share session
(:mod:`aiokafkawire.consumer.share.session`) each declare ``(state, event) -> next state``; this
looks a move up and turns a missing row into an :class:`~aiokafkawire.errors.IllegalStateError`
naming who, the event and the state.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypeVar

from aiokafkawire import errors

__all__ = ["next_state"]

S = TypeVar("S", bound=enum.Enum)
E = TypeVar("E", bound=enum.Enum)


def next_state(table: Mapping[tuple[S, E], S], state: S, event: E, subject: str) -> S:
    """``table[(state, event)]``; raises IllegalStateError when the table has no such row."""
    try:
        return table[(state, event)]
    except KeyError:
        raise errors.IllegalStateError(
            f"{subject}: {event.value} in state {state.value} (a move the state table does not "
            "allow: a bug in aiokafkawire)"
        ) from None
