"""AddPartitionsToTxn in the background (``TransactionManager.add_pending_partitions``): retried
through the retry policy as the error table says, each round for the partitions pending then,
and stopped by an abort (the records waiting were failed; nothing joins any more).

The manager runs against a stand-in: ``add_partitions`` (the one request) is a script.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _producer_helpers import unique_topic

from aiokafkawire import _retry, errors
from aiokafkawire._retry import Backoff
from aiokafkawire.producer import Producer
from aiokafkawire.producer._txn import TransactionManager, TxnEvent, TxnState
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _in_transaction() -> TransactionManager:
    cluster: Any = object()  # add_partitions is replaced: no request is made
    manager = TransactionManager(
        cluster,
        transactional_id="txn",
        transaction_timeout_ms=60_000,
        request_timeout_ms=30_000,
        retry_backoff_ms=100,
    )
    manager._move(TxnEvent.GOT_PRODUCER_ID)
    manager._move(TxnEvent.BEGIN)
    return manager


class Coordinator:
    """``add_partitions`` stand-in: raises the scripted errors in turn, then adds everything
    asked for.  While the first is answered, the user sends to ``TP1`` too."""

    def __init__(self, manager: TransactionManager, *failures: BaseException) -> None:
        self.manager = manager
        self.failures = list(failures)
        self.asked: list[set[TopicPartition]] = []

    async def __call__(self, partitions: Any) -> None:
        self.asked.append(set(partitions))
        self.manager.maybe_add_partition(TP1)
        if self.failures:
            raise self.failures.pop(0)
        self.manager.partitions_in_txn |= self.asked[-1]
        self.manager.pending_partitions -= self.asked[-1]


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The retry policy's pauses, recorded (and not waited out)."""
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        delays.append(delay)
        await real_sleep(0)

    fake = type("FakeAsyncio", (), {"sleep": staticmethod(sleep)})
    fake.CancelledError = asyncio.CancelledError  # type: ignore[attr-defined]
    monkeypatch.setattr(_retry, "asyncio", fake)
    return delays


async def test_retriable_answers_are_asked_again_with_what_is_pending_then(
    pauses: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _in_transaction()
    manager.maybe_add_partition(TP0)
    coordinator = Coordinator(
        manager, errors.ConcurrentTransactionsError("busy"), errors.NotCoordinatorError("moved")
    )
    monkeypatch.setattr(manager, "add_partitions", coordinator)
    backoff = Backoff(20, 500, jitter=0)
    assert await manager.add_pending_partitions(backoff) is None
    assert coordinator.asked == [{TP0}, {TP0, TP1}, {TP0, TP1}]
    assert pauses == [0.02, 0.04]
    assert manager.partitions_in_txn == {TP0, TP1} and not manager.pending_partitions
    assert backoff.attempts == 0  # reset after the success


async def test_an_abort_during_the_pause_ends_the_rounds(
    pauses: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    # abort_transaction() failed the waiting records and waits for this task: no further
    # AddPartitionsToTxn may reopen the transaction while its EndTxn(abort) is under way.
    manager = _in_transaction()
    manager.maybe_add_partition(TP0)

    async def busy(partitions: Any) -> None:
        manager.start_abort()  # the user aborts while the request is answered
        raise errors.ConcurrentTransactionsError("busy")

    monkeypatch.setattr(manager, "add_partitions", busy)
    assert await manager.add_pending_partitions(Backoff(20, 500, jitter=0)) is None
    assert manager.state is TxnState.ABORTING
    assert len(pauses) == 1 and not manager.pending_partitions


async def test_refused_for_good_is_returned_and_fenced_is_fatal(
    pauses: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _in_transaction()
    manager.maybe_add_partition(TP0)
    refused = errors.TopicAuthorizationFailedError("no")
    monkeypatch.setattr(manager, "add_partitions", Coordinator(manager, refused))
    assert await manager.add_pending_partitions(Backoff(20, 500)) is refused
    assert pauses == []

    fenced = errors.ProducerFencedClientError("another producer took over")
    monkeypatch.setattr(manager, "add_partitions", Coordinator(manager, fenced))
    assert await manager.add_pending_partitions(Backoff(20, 500)) is None
    assert manager.fatal is fenced and manager.state is TxnState.FATAL_ERROR


ADD_PARTITIONS_TO_TXN = 24


async def test_retriable_add_partitions_answers_are_retried_on_the_mock(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("txnadd")
    mock_cluster.create_topic(topic, partitions=1)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        transactional_id=unique_topic("txn"),
        retry_backoff_ms=10,
    ) as producer:
        await producer.partitions_for(topic)
        mock_cluster.push_request_errors(
            ADD_PARTITIONS_TO_TXN,
            [errors.ConcurrentTransactionsError.code, errors.CoordinatorLoadInProgressError.code],
        )
        async with producer.transaction():
            handle = await producer.send(topic, b"added", partition=0)
        assert (await handle).offset >= 0


async def test_partitions_refused_without_a_reason_make_the_transaction_abortable(
    mock_cluster: MockCluster,
) -> None:
    # OPERATION_NOT_ATTEMPTED with no other partition's error to explain it: Java's
    # AddPartitionsToTxnHandler makes the transaction abortable; asking again would only loop.
    topic = unique_topic("txnnotattempted")
    mock_cluster.create_topic(topic, partitions=1)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        transactional_id=unique_topic("txn"),
        retry_backoff_ms=10,
    ) as producer:
        await producer.partitions_for(topic)
        mock_cluster.push_request_errors(
            ADD_PARTITIONS_TO_TXN, [errors.OperationNotAttemptedError.code]
        )
        await producer.begin_transaction()
        handle = await producer.send(topic, b"refused", partition=0)
        with pytest.raises(errors.OperationNotAttemptedError):
            await asyncio.wait_for(handle, 10)
        with pytest.raises(errors.IllegalStateError, match="abort"):
            await producer.commit_transaction()
        await producer.abort_transaction()
        async with producer.transaction():
            accepted = await producer.send(topic, b"accepted", partition=0)
        assert (await accepted).offset >= 0
