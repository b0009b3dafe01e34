"""Exactly-once writes of the Spark sink: task transactions ended by the driver.

The protocol (see ``docs/DESIGN.md``, "Exactly-once writes"):

- **Tasks** (:func:`write_in_transaction`): each task attempt writes inside one transaction of its
  own transactional id ``<prefix>-<Spark partition id>-<attempt number>``, delivers every record,
  and hands the transaction's identity (id, producer id, epoch, transactions v2 or not) back in
  its commit message *without ending it*.  Its InitProducerId fences whatever an earlier holder
  of the same id (a dead earlier batch or run) left open: the coordinator aborts it.
- **Driver** (:class:`TransactionCompleter`): ``commit(messages, batch)`` first records durably in
  the *commit log* (a compacted Kafka topic, keyed by the prefix) that it is completing ``batch``
  with exactly these transactions, then sends EndTxn(commit) for each, then records ``done``.
  ``abort`` sends EndTxn(abort).  Afterwards it fences (InitProducerId) every transaction of the
  prefix still ongoing: failed attempts and speculative copies whose messages Spark dropped.
- **Restart**: before any task of a new run writes, the driver reads the commit log: a batch left
  ``completing`` is completed (EndTxn commit again: a retry of an ended transaction succeeds);
  when Spark then replays a batch the log says is done, the replay's transactions are aborted,
  so it is never written twice.

Nothing here imports pyspark except :func:`task_transactional_id` (the task context).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from aiokafkawire import errors
from aiokafkawire._retry import Backoff, Deadline, retry
from aiokafkawire.spark._kafka_io import (
    LoopRunner,
    _close_on,
    _raise_failed,
    _send_batch,
    client_options,
)
from aiokafkawire.spark._options import KafkaOptions
from aiokafkawire.structs import TopicPartition

__all__ = [
    "CommitLogEntry",
    "TransactionCompleter",
    "TransactionRef",
    "task_transactional_id",
    "write_in_transaction",
]

log = logging.getLogger("aiokafkawire.spark")

T = TypeVar("T")

_END_TXN_V1_MAX = 4
_END_TXN_V2 = 5


@dataclass(frozen=True)
class TransactionRef:
    """A task's open transaction, as EndTxn names it (picklable, travels in commit messages)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    transaction_v2: bool

    def to_json(self) -> list[Any]:
        """The commit log's form."""
        return [self.transactional_id, self.producer_id, self.producer_epoch, self.transaction_v2]

    @classmethod
    def from_json(cls, item: Sequence[Any]) -> TransactionRef:
        """Back from :meth:`to_json`."""
        return cls(str(item[0]), int(item[1]), int(item[2]), bool(item[3]))


@dataclass(frozen=True)
class CommitLogEntry:
    """The last state the commit log holds for one writer (one prefix)."""

    batch: int
    state: str  # "completing" | "done"
    transactions: tuple[TransactionRef, ...] = ()

    def encode(self) -> bytes:
        """JSON value of the log record."""
        return json.dumps(
            {
                "batch": self.batch,
                "state": self.state,
                "transactions": [t.to_json() for t in self.transactions],
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def decode(cls, value: bytes) -> CommitLogEntry:
        """Back from :meth:`encode`."""
        parsed = json.loads(value)
        return cls(
            int(parsed["batch"]),
            str(parsed["state"]),
            tuple(TransactionRef.from_json(t) for t in parsed.get("transactions", ())),
        )


# ---------------------------------------------------------------------- tasks


def task_transactional_id(prefix: str) -> str:
    """``<prefix>-<partition id>-<attempt number>`` of the running Spark task.

    Reused by the same partition and attempt number of every batch and run: a new holder
    fences (and so aborts) what an earlier one left open.
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise errors.IllegalStateError("an exactly-once write runs inside a Spark task")
    return f"{prefix}-{context.partitionId()}-{context.attemptNumber()}"


def write_in_transaction(
    opts: KafkaOptions, batches: Iterable[pa.RecordBatch], transactional_id: str
) -> tuple[int, TransactionRef | None]:
    """Write every row inside one transaction and leave it open; (rows, its identity).

    No rows: no transaction (None).  A failure aborts the transaction before raising.
    """
    from aiokafkawire.producer import Producer

    runner = LoopRunner()
    producer_options: dict[str, Any] = {"acks": "all", **opts.producer}
    producer_options.pop("enable_idempotence", None)
    producer = Producer(
        **client_options(opts),
        **producer_options,
        transactional_id=transactional_id,
        transaction_timeout_ms=opts.transaction_timeout_ms,
    )
    started = False
    try:
        runner.run(producer.start())
        started = True
        runner.run(producer.begin_transaction())
        count = 0
        watched: dict[Any, Any] = {}
        try:
            for batch in batches:
                runner.run(_send_batch(producer, opts.topic, batch, watched))
                count += batch.num_rows
            prepared = runner.run(producer.prepare_transaction())
            _raise_failed(watched, wait_all=True)
        except BaseException:
            _abort_quietly(runner, producer)
            raise
        if not prepared.partitions:
            runner.run(producer.abort_transaction())
            return count, None
        return count, TransactionRef(
            prepared.transactional_id,
            prepared.producer_id,
            prepared.producer_epoch,
            prepared.transaction_v2,
        )
    finally:
        _close_on(runner, producer if started else None)


def _abort_quietly(runner: LoopRunner, producer: Any) -> None:
    try:
        runner.run(producer.abort_transaction())
    except Exception as exc:  # the driver's fencing sweep or the timeout ends it then
        log.warning("could not abort the failed task's transaction: %s", exc)


# ---------------------------------------------------------------------- driver


class TransactionCompleter:
    """Driver side: the commit log, EndTxn for a batch's transactions, fencing of leftovers."""

    def __init__(self, opts: KafkaOptions) -> None:
        assert opts.transactional_id_prefix is not None
        self._opts = opts
        self._prefix = opts.transactional_id_prefix
        self._own = re.compile(re.escape(self._prefix) + r"-\d+-\d+")
        self._runner = LoopRunner()
        self._cluster: Any = None
        self._admin: Any = None
        self._log_ready = False

    def close(self) -> None:
        """Close the clients and the loop."""

        async def close_all() -> None:
            if self._admin is not None:
                await self._admin.close()
            if self._cluster is not None:
                await self._cluster.close()

        try:
            self._runner.run(close_all())
        finally:
            self._runner.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._runner.run(coro)

    async def _clients(self) -> tuple[Any, Any]:
        if self._cluster is None:
            from aiokafkawire.admin import Admin
            from aiokafkawire.client_config import split_common_options

            common, _ = split_common_options(client_options(self._opts))
            cluster = common.build_cluster()
            await cluster.start()
            self._cluster = cluster
            admin = Admin(**client_options(self._opts))
            await admin.start()
            self._admin = admin
        return self._cluster, self._admin

    # ------------------------------------------------------------------ commit log

    def last_entry(self) -> CommitLogEntry | None:
        """The commit log's last record for this prefix (None: never committed)."""
        return self._run(self._last_entry())

    async def _ensure_log_topic(self) -> None:
        from aiokafkawire.admin import NewTopic

        if self._log_ready:
            return
        _, admin = await self._clients()
        topic = self._opts.commit_log_topic
        described = await admin.describe_topics([topic], raise_on_error=False)
        if topic in described and described[topic].error_code == 0:
            self._log_ready = True
            return
        results = await admin.create_topics(
            [NewTopic(topic, num_partitions=1, configs={"cleanup.policy": "compact"})]
        )
        result = results[topic]
        if not result.ok and not isinstance(result.error, errors.TopicAlreadyExistsError):
            raise errors.KafkaError(f"cannot create the commit log topic {topic!r}: {result.error}")
        self._log_ready = True

    async def _last_entry(self) -> CommitLogEntry | None:
        from aiokafkawire.consumer import Consumer

        await self._ensure_log_topic()
        tp = TopicPartition(self._opts.commit_log_topic, 0)
        consumer = Consumer(
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            **client_options(self._opts),
        )
        await consumer.start()
        try:
            end = (await consumer.end_offsets([tp]))[tp]
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            key = self._prefix.encode()
            found: CommitLogEntry | None = None
            deadline = asyncio.get_running_loop().time() + self._opts.poll_timeout_ms / 1000
            while await consumer.position(tp) < end:
                if asyncio.get_running_loop().time() > deadline:
                    raise errors.KafkaTimeoutError(
                        f"the commit log {tp.topic!r} could not be read to offset {end}"
                    )
                fetched = await consumer.getmany(tp, timeout_ms=500)
                for record in fetched.get(tp, ()):
                    if record.key == key and record.value is not None:
                        found = CommitLogEntry.decode(record.value)
            return found
        finally:
            await consumer.close()

    async def _append(self, entry: CommitLogEntry) -> None:
        """Write ``entry`` durably (acks=all, idempotent, flushed) before going on."""
        from aiokafkawire.producer import Producer

        await self._ensure_log_topic()
        producer = Producer(acks="all", **client_options(self._opts))
        await producer.start()
        try:
            handle = await producer.send(
                self._opts.commit_log_topic, entry.encode(), self._prefix.encode(), partition=0
            )
            await producer.flush()
            await handle
        finally:
            await producer.close()

    # ------------------------------------------------------------------ ending transactions

    def recover(self) -> CommitLogEntry | None:
        """Complete a batch the log left ``completing`` (a driver died during its commit)."""
        return self._run(self._recover())

    async def _recover(self) -> CommitLogEntry | None:
        entry = await self._last_entry()
        if entry is not None and entry.state == "completing":
            log.warning(
                "exactly-once sink %r: completing batch %d, whose commit a driver left half done",
                self._prefix,
                entry.batch,
            )
            await self._end_all(entry.transactions, commit=True, recovering=True)
            entry = CommitLogEntry(entry.batch, "done")
            await self._append(entry)
        return entry

    def commit(self, transactions: Sequence[TransactionRef], batch: int) -> bool:
        """Commit ``batch``'s transactions; False if the log says it was committed before
        (then they are aborted: a replayed batch is never written twice)."""
        return self._run(self._commit(list(transactions), batch))

    async def _commit(self, transactions: list[TransactionRef], batch: int) -> bool:
        entry = await self._recover()
        if entry is not None and entry.batch > batch:
            await self._end_all(transactions, commit=False)
            raise errors.IllegalStateError(
                f"the commit log {self._opts.commit_log_topic!r} says the writer "
                f"{self._prefix!r} committed batch {entry.batch}, after batch {batch} that Spark "
                "commits now: the checkpoint was reset or another query uses this prefix. Set a "
                "new transactionalIdPrefix (or checkpointLocation) for a new query"
            )
        if entry is not None and entry.batch == batch:
            log.info(
                "exactly-once sink %r: batch %d was committed before: its replay is aborted",
                self._prefix,
                batch,
            )
            await self._end_all(transactions, commit=False)
            await self._fence_leftovers(keep=())
            return False
        await self._append(CommitLogEntry(batch, "completing", tuple(transactions)))
        await self._end_all(transactions, commit=True)
        await self._append(CommitLogEntry(batch, "done"))
        await self._fence_leftovers(keep=())
        return True

    def abort(self, transactions: Sequence[TransactionRef]) -> None:
        """Abort the given transactions and fence every other open one of the prefix."""
        self._run(self._abort(list(transactions)))

    async def _abort(self, transactions: list[TransactionRef]) -> None:
        await self._end_all(transactions, commit=False)
        await self._fence_leftovers(keep=())

    async def _end_all(
        self, transactions: Sequence[TransactionRef], *, commit: bool, recovering: bool = False
    ) -> None:
        results = await asyncio.gather(
            *(self._end(t, commit) for t in transactions), return_exceptions=True
        )
        failures = [
            (t, r)
            for t, r in zip(transactions, results, strict=True)
            if isinstance(r, BaseException)
        ]
        if not failures:
            return
        if not commit:
            # An abort that finds the transaction fenced or ended: nothing of it is visible.
            for ref, failure in failures:
                log.info("abort of %s: %s (already ended)", ref.transactional_id, failure)
            return
        names = ", ".join(f"{t.transactional_id}: {r}" for t, r in failures)
        raise errors.KafkaError(
            ("recovering, " if recovering else "")
            + f"the exactly-once sink could not commit {len(failures)} of {len(transactions)} "
            f"transactions ({names}). A transaction aborted by the coordinator (it outlived "
            "transactionTimeoutMs) loses its records: raise transactionTimeoutMs above the "
            "longest micro-batch plus a driver restart."
        )

    async def _end(self, ref: TransactionRef, commit: bool) -> None:
        from aiokafkawire.protocol.messages import EndTxnRequest

        cluster, _ = await self._clients()
        request = EndTxnRequest(
            transactional_id=ref.transactional_id,
            producer_id=ref.producer_id,
            producer_epoch=ref.producer_epoch,
            committed=commit,
        )

        async def attempt() -> None:
            connection = await cluster.coordinator_connection(
                ref.transactional_id, "transaction", purpose="transaction"
            )
            if ref.transaction_v2:
                version = _END_TXN_V2
            else:
                version = min(connection.versions.version_for(EndTxnRequest.API_KEY), 4)
            response = await connection.send(request, version)
            errors.raise_for_code(response.error_code, f"EndTxn of {ref.transactional_id}")

        await self._retrying(f"EndTxn {ref.transactional_id}", ref.transactional_id, attempt)

    async def _retrying(self, what: str, key: str, attempt: Callable[[], Awaitable[T]]) -> T:
        cluster, _ = await self._clients()

        def should_retry(exc: BaseException) -> bool:
            return (
                isinstance(exc, errors.KafkaError)
                and not isinstance(exc, errors.TXN_UNRETRIABLE_ERRORS)
                and (
                    exc.retriable
                    or isinstance(exc, errors.COORDINATOR_ERRORS)
                    or isinstance(exc, errors.ConcurrentTransactionsError)
                )
            )

        def forget(exc: BaseException) -> None:
            if isinstance(exc, errors.COORDINATOR_ERRORS):
                cluster.invalidate_coordinator(key, "transaction")

        return await retry(
            attempt,
            should_retry=should_retry,
            deadline=Deadline.after_ms(max(self._opts.transaction_timeout_ms, 30_000)),
            backoff=Backoff(20, 500),
            what=what,
            on_retry=forget,
        )

    async def _fence_leftovers(self, keep: Iterable[str]) -> None:
        """InitProducerId for each still-ongoing transaction of this prefix: the coordinator
        aborts it (failed attempts, speculative copies, dead runs)."""
        _, admin = await self._clients()
        kept = set(keep)
        listed = await admin.list_transactions(states=["Ongoing", "PrepareAbort"])
        stale = [
            t.transactional_id
            for t in listed
            if self._own.fullmatch(t.transactional_id) and t.transactional_id not in kept
        ]
        for tid in stale:
            log.info("exactly-once sink %r: fencing leftover transaction %s", self._prefix, tid)
            await self._fence(tid)

    async def _fence(self, tid: str) -> None:
        from aiokafkawire.protocol.messages import InitProducerIdRequest

        cluster, _ = await self._clients()
        request = InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=self._opts.transaction_timeout_ms
        )

        async def attempt() -> None:
            connection = await cluster.coordinator_connection(
                tid, "transaction", purpose="transaction"
            )
            version = connection.versions.version_for(InitProducerIdRequest.API_KEY)
            response = await connection.send(request, version)
            errors.raise_for_code(response.error_code, f"InitProducerId of {tid}")

        try:
            await self._retrying(f"fence {tid}", tid, attempt)
        except errors.KafkaError as exc:
            log.warning("could not fence transaction %s: %s", tid, exc)
