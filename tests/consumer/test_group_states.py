"""The group membership's state table: every legal move, and illegal ones raising clearly."""

from __future__ import annotations

import itertools

import pytest

from aiokafkawire import errors
from aiokafkawire.consumer.group.states import (
    TRANSITIONS,
    GroupEvent,
    GroupState,
    GroupStateMachine,
)

_PAIRS = itertools.product(GroupState, GroupEvent)
_ILLEGAL = [pair for pair in _PAIRS if not TRANSITIONS.allows(*pair)]


def _machine_in(state: GroupState) -> GroupStateMachine:
    machine = GroupStateMachine("g")
    machine.state = state
    return machine


def test_states_are_the_strings_users_see() -> None:
    # Consumer.state shows these values; docs/consumer.md and user code compare against them.
    assert {s.value for s in GroupState} == {
        "unjoined",
        "rebalancing",
        "stable",
        "fatal",
        "closed",
    }


def test_a_new_member_is_unjoined() -> None:
    assert GroupStateMachine("g").state is GroupState.UNJOINED


@pytest.mark.parametrize(("state", "event"), sorted(TRANSITIONS.transitions, key=str))
def test_legal_transition(state: GroupState, event: GroupEvent) -> None:
    machine = _machine_in(state)
    assert machine.apply(event) is TRANSITIONS.next(state, event)
    assert machine.state is TRANSITIONS.next(state, event)


@pytest.mark.parametrize(("state", "event"), _ILLEGAL)
def test_illegal_transition_raises_naming_state_and_event(
    state: GroupState, event: GroupEvent
) -> None:
    machine = _machine_in(state)
    with pytest.raises(errors.InvalidTransitionError) as info:
        machine.apply(event)
    assert isinstance(info.value, errors.IllegalStateError)
    assert (info.value.state, info.value.event) == (state, event)
    assert str(state) in str(info.value) and str(event) in str(info.value)
    assert machine.state is state  # a refused event changes nothing


def test_some_moves_are_refused() -> None:
    # The ones a bug would most likely make: a closed member coming back, a joining member
    # timing out its polls, a closed member failing.
    assert (GroupState.CLOSED, GroupEvent.JOIN) in _ILLEGAL
    assert (GroupState.CLOSED, GroupEvent.ASSIGNED) in _ILLEGAL
    assert (GroupState.CLOSED, GroupEvent.FAILED) in _ILLEGAL
    assert (GroupState.REBALANCING, GroupEvent.POLL_TIMEOUT) in _ILLEGAL
    assert (GroupState.UNJOINED, GroupEvent.POLL_TIMEOUT) in _ILLEGAL


def test_fatal_is_sticky_until_closed() -> None:
    machine = _machine_in(GroupState.STABLE)
    machine.apply(GroupEvent.FAILED)
    for event in (GroupEvent.JOIN, GroupEvent.ASSIGNED, GroupEvent.FENCED, GroupEvent.FAILED):
        assert machine.apply(event) is GroupState.FATAL
    assert machine.apply(GroupEvent.CLOSE) is GroupState.CLOSED


def test_every_state_can_close_and_closed_is_final() -> None:
    for state in GroupState:
        assert TRANSITIONS.next(state, GroupEvent.CLOSE) is GroupState.CLOSED
    assert TRANSITIONS.events_from(GroupState.CLOSED) == {GroupEvent.CLOSE}


def _walk(moves: list[tuple[GroupEvent, GroupState]]) -> None:
    machine = GroupStateMachine("g")
    for event, expected in moves:
        assert machine.apply(event) is expected, event


def test_classic_round_trip() -> None:
    _walk(
        [
            (GroupEvent.JOIN, GroupState.REBALANCING),
            (GroupEvent.ASSIGNED, GroupState.STABLE),
            (GroupEvent.JOIN, GroupState.REBALANCING),  # a cooperative follow-up round
            (GroupEvent.ASSIGNED, GroupState.STABLE),
            (GroupEvent.POLL_TIMEOUT, GroupState.UNJOINED),
            (GroupEvent.JOIN, GroupState.REBALANCING),
            (GroupEvent.ASSIGNED, GroupState.STABLE),
            (GroupEvent.CLOSE, GroupState.CLOSED),
        ]
    )


def test_kip848_round_trip() -> None:
    _walk(
        [
            (GroupEvent.ASSIGNED, GroupState.STABLE),  # the first heartbeat answer's assignment
            (GroupEvent.ASSIGNED, GroupState.STABLE),
            (GroupEvent.FENCED, GroupState.REBALANCING),
            (GroupEvent.ASSIGNED, GroupState.STABLE),
            (GroupEvent.CLOSE, GroupState.CLOSED),
        ]
    )
