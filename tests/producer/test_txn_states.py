"""The transaction state machine: its declared table, and the manager moving only through it."""

from __future__ import annotations

from typing import Any

import pytest

from aiokafkawire import errors
from aiokafkawire.producer._txn import (
    TRANSACTION_STATES,
    TransactionManager,
    TxnEvent,
    TxnState,
)


def _manager(transactional_id: str | None = "txn") -> TransactionManager:
    cluster: Any = object()  # no request is made by these transitions
    return TransactionManager(
        cluster,
        transactional_id=transactional_id,
        transaction_timeout_ms=60_000,
        request_timeout_ms=30_000,
        retry_backoff_ms=100,
    )


@pytest.mark.parametrize(
    ("state", "event", "expected"),
    [
        (TxnState.UNINITIALIZED, TxnEvent.GOT_PRODUCER_ID, TxnState.READY),
        (TxnState.READY, TxnEvent.BEGIN, TxnState.IN_TRANSACTION),
        (TxnState.IN_TRANSACTION, TxnEvent.COMMIT, TxnState.COMMITTING),
        (TxnState.COMMITTING, TxnEvent.ENDED, TxnState.READY),
        (TxnState.COMMITTING, TxnEvent.FAILED, TxnState.ABORTABLE_ERROR),
        (TxnState.IN_TRANSACTION, TxnEvent.FAILED, TxnState.ABORTABLE_ERROR),
        (TxnState.ABORTABLE_ERROR, TxnEvent.ABORT, TxnState.ABORTING),
        (TxnState.ABORTING, TxnEvent.FAILED, TxnState.ABORTING),
        (TxnState.ABORTING, TxnEvent.ENDED, TxnState.READY),
        (TxnState.COMMITTING, TxnEvent.FATAL, TxnState.FATAL_ERROR),
    ],
)
def test_legal_transitions(state: TxnState, event: TxnEvent, expected: TxnState) -> None:
    assert TRANSACTION_STATES.next(state, event) is expected


@pytest.mark.parametrize(
    ("state", "event"),
    [
        (TxnState.UNINITIALIZED, TxnEvent.BEGIN),  # no producer id yet
        (TxnState.IN_TRANSACTION, TxnEvent.BEGIN),
        (TxnState.READY, TxnEvent.COMMIT),
        (TxnState.ABORTABLE_ERROR, TxnEvent.COMMIT),
        (TxnState.READY, TxnEvent.ENDED),
        (TxnState.FATAL_ERROR, TxnEvent.BEGIN),
        (TxnState.COMMITTING, TxnEvent.GOT_PRODUCER_ID),
    ],
)
def test_illegal_transitions_raise_naming_state_and_event(state: TxnState, event: TxnEvent) -> None:
    assert not TRANSACTION_STATES.allows(state, event)
    with pytest.raises(errors.InvalidTransitionError) as raised:
        TRANSACTION_STATES.next(state, event)
    assert isinstance(raised.value, errors.IllegalStateError)
    message = str(raised.value)
    assert "transaction" in message and str(state) in message and str(event) in message


def test_every_state_can_become_fatal_and_every_state_is_reachable() -> None:
    for state in TxnState:
        assert TRANSACTION_STATES.next(state, TxnEvent.FATAL) is TxnState.FATAL_ERROR
    assert TRANSACTION_STATES.states() == frozenset(TxnState)


def test_the_manager_moves_through_the_table_only() -> None:
    txn = _manager()
    assert txn.state is TxnState.UNINITIALIZED
    with pytest.raises(errors.IllegalStateError, match="cannot begin"):
        txn.begin()  # its own check first: a clear message for the user
    txn._move(TxnEvent.GOT_PRODUCER_ID)
    txn.begin()
    assert txn.state is TxnState.IN_TRANSACTION
    txn.start_commit()
    failure = errors.KafkaTimeoutError("EndTxn")
    txn.set_abortable(failure)
    assert (txn.state, txn.abortable) == (TxnState.ABORTABLE_ERROR, failure)
    with pytest.raises(errors.InvalidTransitionError):
        txn.start_commit()
    assert txn.state is TxnState.ABORTABLE_ERROR  # an illegal event changes nothing
    txn.start_abort()
    txn.set_abortable(errors.KafkaTimeoutError("late batch"))  # while aborting: no change
    assert (txn.state, txn.abortable) == (TxnState.ABORTING, failure)
    fenced = errors.ProducerFencedClientError("fenced")
    txn.set_fatal(fenced)
    assert (txn.state, txn.fatal) == (TxnState.FATAL_ERROR, fenced)
