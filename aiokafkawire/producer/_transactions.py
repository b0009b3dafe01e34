"""The user's transaction operations, in one room: what ``Producer``'s transaction methods do.

:class:`~.TransactionManager` (``_txn.py``) keeps the transaction's state and speaks its
protocol; :class:`Transactions` runs each operation the user calls (begin, commit, prepare,
abort, offsets, the ``transaction()`` block) across it, the accumulator (the records to
deliver or to drop) and the sender (an AddPartitionsToTxn under way), so that ``Producer``
only checks it is started and delegates.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiokafkawire import errors
from aiokafkawire.producer._accumulator import RecordAccumulator
from aiokafkawire.producer._sender import Sender
from aiokafkawire.producer._txn import TransactionManager, TxnState
from aiokafkawire.structs import OffsetAndMetadata, TopicPartition

__all__ = ["PreparedTransaction", "Transactions"]

P = TypeVar("P")


@dataclass(frozen=True)
class PreparedTransaction:
    """An open transaction, named as EndTxn needs it (see :meth:`Producer.prepare_transaction`).

    ``transaction_v2``: the transaction runs under transactions v2 (KIP-890), so it must be
    ended with EndTxn v5+, which bumps the epoch.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    transaction_v2: bool
    partitions: tuple[TopicPartition, ...]


class Transactions:
    """A started transactional producer's operations (one per producer).

    ``deliver()`` sends every record appended so far and waits for their outcomes (the
    producer's flush); ``check_open(operation)`` raises when the producer is closed.
    """

    __slots__ = ("_accumulator", "_check_open", "_deliver", "_sender", "txn")

    def __init__(
        self,
        txn: TransactionManager,
        accumulator: RecordAccumulator,
        sender: Sender,
        deliver: Callable[[], Awaitable[None]],
        check_open: Callable[[str], None],
    ) -> None:
        self.txn = txn
        self._accumulator = accumulator
        self._sender = sender
        self._deliver = deliver
        self._check_open = check_open

    def require(self, operation: str) -> Transactions:
        """Raise unless ``operation`` may run: an open producer with a ``transactional_id``
        that is not fenced (or failed for good)."""
        self._check_open(operation)
        txn = self.txn
        if not txn.transactional:
            raise errors.IllegalStateError(f"{operation}() needs a transactional_id")
        if txn.fatal is not None:
            raise txn.fatal
        return self

    def begin(self) -> None:
        """See :meth:`Producer.begin_transaction`."""
        self.txn.begin()

    async def commit(self) -> None:
        """See :meth:`Producer.commit_transaction`."""
        await self.txn.commit(self._deliver)

    async def prepare(self) -> PreparedTransaction:
        """See :meth:`Producer.prepare_transaction`."""
        txn = self.txn
        await txn.deliver_open("prepare", self._deliver)
        assert txn.transactional_id is not None
        return PreparedTransaction(
            transactional_id=txn.transactional_id,
            producer_id=txn.producer_id,
            producer_epoch=txn.producer_epoch,
            transaction_v2=txn.transaction_v2,
            partitions=tuple(sorted(txn.partitions_in_txn)),
        )

    async def abort(self) -> None:
        """See :meth:`Producer.abort_transaction`."""
        await self.txn.abort(self._accumulator.abort_queued, self._settle)

    async def _settle(self) -> None:
        """Wait until the batches sent are decided and no AddPartitionsToTxn is under way
        (one would otherwise reopen the transaction being aborted)."""
        in_flight = [batch.future for batch in self._accumulator.incomplete]
        if in_flight:
            await asyncio.wait(in_flight)
        await self._sender.wait_add_partitions()

    @contextlib.asynccontextmanager
    async def block(self, producer: P) -> AsyncIterator[P]:
        """See :meth:`Producer.transaction`: commits on success, aborts on an exception."""
        self.begin()
        txn = self.txn
        try:
            yield producer
        except BaseException:
            if txn.can_abort():
                await self.require("abort_transaction").abort()
            raise
        try:
            await self.require("commit_transaction").commit()
        except errors.KafkaError:
            if txn.can_abort() and txn.state == TxnState.ABORTABLE_ERROR:
                # Leave the producer ready for the next transaction.
                await self.require("abort_transaction").abort()
            raise

    async def send_offsets(
        self,
        offsets: dict[TopicPartition, int | OffsetAndMetadata],
        group_id: str | None,
        group_metadata: Any,
    ) -> None:
        """See :meth:`Producer.send_offsets_to_transaction`."""
        await self.txn.send_offsets_for_group(offsets, group_id, group_metadata)
