"""Producer identity (idempotence) and transactions: the transaction manager."""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiokafkawire import errors
from aiokafkawire._fsm import TransitionTable
from aiokafkawire._retry import Backoff, Deadline, retry, retry_until_stopped
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from aiokafkawire.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnTopic
from aiokafkawire.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from aiokafkawire.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger("aiokafkawire.producer")

# Newest versions whose semantics this client implements: AddPartitionsToTxn v4+ is broker-to-
# broker; EndTxn v5, TxnOffsetCommit v5 and Produce v12 mean "transactions v2" (KIP-890 part 2) and
# are used only under it.
ADD_PARTITIONS_MAX_VERSION = 3
END_TXN_MAX_VERSION = 4
END_TXN_V2_VERSION = 5
TXN_OFFSET_COMMIT_MAX_VERSION = 4
TXN_OFFSET_COMMIT_V2_VERSION = 5
TXN_OFFSET_COMMIT_TOPIC_ID_VERSION = 6  # names topics by id (KIP-1319)
INIT_PRODUCER_ID_KEY = InitProducerIdRequest.API_KEY
#: The feature whose finalized level 2 enables transactions v2 on the cluster.
TRANSACTION_VERSION_FEATURE = "transaction.version"

FENCING_ERRORS = errors.FENCING_ERRORS  # the table's group (errors/actions.py)


class TxnState(enum.Enum):
    """Where a transactional producer is in its life."""

    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in_transaction"
    COMMITTING = "committing"
    ABORTING = "aborting"
    ABORTABLE_ERROR = "abortable_error"
    FATAL_ERROR = "fatal_error"


class TxnEvent(enum.Enum):
    """What moves a producer from one :class:`TxnState` to the next."""

    GOT_PRODUCER_ID = "got_producer_id"  # InitProducerId answered (a new id or epoch)
    BEGIN = "begin"  # begin_transaction()
    COMMIT = "commit"  # commit_transaction() is about to send EndTxn
    ABORT = "abort"  # abort_transaction() starts
    ENDED = "ended"  # EndTxn answered (or nothing to end)
    FAILED = "failed"  # a batch or request of the transaction failed for good
    FATAL = "fatal"  # fenced, or an error after which nothing can be sent


_S, _E = TxnState, TxnEvent
#: Every legal transition of the transaction state machine; anything else is a bug of ours
#: (InvalidTransitionError).  A failure outside a transaction's open or committing phase
#: changes nothing: the abort under way, or the next begin, deals with it.
TRANSACTION_STATES: TransitionTable[TxnState, TxnEvent] = TransitionTable.from_rows(
    "transaction",
    [
        (_S.UNINITIALIZED, _E.GOT_PRODUCER_ID, _S.READY),
        (_S.READY, _E.GOT_PRODUCER_ID, _S.READY),  # an epoch bump after an abort
        (_S.ABORTABLE_ERROR, _E.GOT_PRODUCER_ID, _S.READY),
        (_S.FATAL_ERROR, _E.GOT_PRODUCER_ID, _S.FATAL_ERROR),  # answered after the fatal error
        (_S.READY, _E.BEGIN, _S.IN_TRANSACTION),
        (_S.IN_TRANSACTION, _E.COMMIT, _S.COMMITTING),
        (_S.IN_TRANSACTION, _E.ABORT, _S.ABORTING),
        (_S.ABORTABLE_ERROR, _E.ABORT, _S.ABORTING),
        (_S.COMMITTING, _E.ENDED, _S.READY),
        (_S.ABORTING, _E.ENDED, _S.READY),
        (_S.IN_TRANSACTION, _E.FAILED, _S.ABORTABLE_ERROR),
        (_S.COMMITTING, _E.FAILED, _S.ABORTABLE_ERROR),
        *((state, _E.FAILED, state) for state in (_S.UNINITIALIZED, _S.READY, _S.ABORTING)),
        *((state, _E.FAILED, state) for state in (_S.ABORTABLE_ERROR, _S.FATAL_ERROR)),
        *((state, _E.FATAL, _S.FATAL_ERROR) for state in TxnState),
    ],
)


def should_retry(exc: BaseException) -> bool:
    """Whether a request of the producer's identity or transaction is tried again after ``exc``
    (the error table's answer: a fenced producer, for one, never is)."""
    return errors.action_of(exc).retriable


def _finds_coordinator(exc: BaseException) -> bool:
    return errors.action_of(exc) is errors.ErrorAction.FIND_COORDINATOR


def fenced_error(cause: BaseException) -> errors.ProducerFencedClientError:
    """The typed error raised to the user when another producer took over our identity."""
    exc = errors.ProducerFencedClientError(
        f"this producer was fenced by another one with the same transactional id: {cause}"
    )
    exc.__cause__ = cause
    return exc


class TransactionManager:  # long: identity and every transactional request share its state
    """Producer id, epoch, per-partition sequences and the transaction state machine."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        request_timeout_ms: int,
        retry_backoff_ms: int,
    ) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff = retry_backoff_ms / 1000
        self.producer_id = -1
        self.producer_epoch = -1
        self.bump_needed = False
        self.state = TxnState.UNINITIALIZED
        self.fatal: BaseException | None = None
        self.abortable: BaseException | None = None
        self.partitions_in_txn: set[TopicPartition] = set()
        self.pending_partitions: set[TopicPartition] = set()
        self.offsets_added = False
        #: Transactions v2 for the current (or next) transaction; decided between transactions.
        self.transaction_v2 = False
        #: Called when an EndTxn (transactions v2) hands out a new epoch: sequences restart.
        self.on_new_epoch: Callable[[], None] | None = None
        #: Called once when the producer enters the fatal state (``fatal`` is set).
        # Called when may_append() may have changed (a state move, a fatal error): the
        # accumulator's compiled append follows it.
        self.on_sendable_change: Callable[[], None] | None = None

    # ---------------------------------------------------------------- identity

    @property
    def transactional(self) -> bool:
        """Whether this producer has a ``transactional_id``."""
        return self.transactional_id is not None

    @property
    def has_producer_id(self) -> bool:
        """Whether a producer id is assigned and no epoch bump is pending."""
        return self.producer_id >= 0 and not self.bump_needed

    def request_bump(self, reason: str) -> None:
        """Ask for a new epoch (KIP-360): sequences restart at 0 under the new epoch."""
        if not self.bump_needed:
            log.info("producer %d: epoch bump needed (%s)", self.producer_id, reason)
        self.bump_needed = True

    def _move(self, event: TxnEvent) -> None:
        """The one place the state changes: by ``event``, as TRANSACTION_STATES declares."""
        self.state = TRANSACTION_STATES.next(self.state, event)
        if self.on_sendable_change is not None:
            self.on_sendable_change()

    def may_append(self) -> bool:
        """Whether records may be appended now: :meth:`check_can_send` would not raise."""
        if self.fatal is not None:
            return False
        return not self.transactional or self.state == TxnState.IN_TRANSACTION

    def set_fatal(self, exc: BaseException) -> None:
        """Enter the fatal state: every later operation raises ``exc``."""
        if self.fatal is None:
            self.fatal = exc
            if self.on_sendable_change is not None:
                self.on_sendable_change()
        self._move(TxnEvent.FATAL)

    async def init_producer_id(self, timeout_ms: int | None = None) -> None:
        """InitProducerId: a new id, or (after ``request_bump``) the same id with a new epoch.

        Retried for ``timeout_ms`` (twice the request timeout by default), coordinator lookups
        included: the producer's start gives it ``max_block_ms``, as Java's initTransactions,
        since a fresh cluster creates and loads ``__transaction_state`` on first use.
        """
        if timeout_ms is None:
            timeout_ms = max(self.request_timeout_ms, 1000) * 2
        bump = self.bump_needed and self.producer_id >= 0

        async def attempt() -> Any:
            nonlocal bump
            response = await self._send_init(bump)
            code = response.error_code
            if code and bump and self.transactional_id is None:
                if not errors.error_for_code(code).retriable:
                    # The broker cannot bump this id (librdkafka's mock, older brokers): an
                    # idempotent producer may just as well start over with a fresh id.
                    log.debug("epoch bump refused (%s); asking for a new producer id", code)
                    bump = False
                    response = await self._send_init(bump)
                    code = response.error_code
            if code:
                error = errors.error_for_code(code)
                if issubclass(error, FENCING_ERRORS):
                    raise fenced_error(error("InitProducerId"))
                raise error("InitProducerId failed")
            return response

        try:
            response = await retry(
                attempt,
                should_retry=should_retry,
                deadline=Deadline.after(timeout_ms / 1000),
                backoff=Backoff(self.retry_backoff * 1000, 1000),
                what="InitProducerId",
                on_retry=self._forget_coordinator_after,
            )
        except errors.KafkaError as exc:
            if not should_retry(exc):
                raise
            self._forget_coordinator_after(exc)
            raise errors.KafkaTimeoutError(f"InitProducerId did not succeed: {exc}") from exc
        # Another id or epoch restarts the sequences: PartitionCursor counts them per identity.
        self.producer_id = response.producer_id
        self.producer_epoch = response.producer_epoch
        self.bump_needed = False
        self._move(TxnEvent.GOT_PRODUCER_ID)
        if self.transactional_id is not None and self.state == TxnState.READY:
            await self._choose_transaction_version()
        log.debug("producer id %d epoch %d", self.producer_id, self.producer_epoch)

    async def _choose_transaction_version(self) -> None:
        """Use transactions v2 for the next transaction if the coordinator's broker offers it."""
        assert self.transactional_id is not None
        try:
            connection = await self.cluster.coordinator_connection(
                self.transactional_id, "transaction", purpose="transaction"
            )
        except errors.KafkaError as exc:
            log.debug("transaction version unchanged: no coordinator connection (%s)", exc)
            return
        versions = connection.versions
        enabled = (
            versions.finalized_features.get(TRANSACTION_VERSION_FEATURE, 0) >= 2
            and versions.supports(EndTxnRequest.API_KEY, END_TXN_V2_VERSION)
            and versions.supports(TxnOffsetCommitRequest.API_KEY, TXN_OFFSET_COMMIT_V2_VERSION)
        )
        if enabled != self.transaction_v2:
            log.info(
                "transactional id %r: transactions v%d", self.transactional_id, 2 if enabled else 1
            )
        self.transaction_v2 = enabled

    async def _send_init(self, bump: bool) -> Any:
        request = InitProducerIdRequest(
            transactional_id=self.transactional_id,
            transaction_timeout_ms=self.transaction_timeout_ms,
        )
        if self.transactional_id is not None:
            connection = await self.cluster.coordinator_connection(
                self.transactional_id, "transaction", purpose="transaction"
            )
        else:
            connection = await self.cluster.any_connection()
        version = connection.versions.version_for(INIT_PRODUCER_ID_KEY)
        if bump and version >= 3:
            request.producer_id = self.producer_id
            request.producer_epoch = self.producer_epoch
        return await connection.send(request, version)

    # ---------------------------------------------------------------- transaction state

    def check_can_send(self) -> None:
        """Raise unless records may be appended now."""
        if self.fatal is not None:
            raise self.fatal
        if self.transactional:
            if self.state == TxnState.ABORTABLE_ERROR:
                raise errors.IllegalStateError(
                    f"the transaction must be aborted first: {self.abortable}"
                )
            if self.state != TxnState.IN_TRANSACTION:
                raise errors.IllegalStateError(
                    "a transactional producer can only send inside a transaction: "
                    "call begin_transaction() first"
                )

    def begin(self) -> None:
        """Start a transaction (local only: the coordinator learns of it with the first add)."""
        self._require_transactional("begin_transaction")
        if self.fatal is not None:
            raise self.fatal
        if self.state != TxnState.READY:
            raise errors.IllegalStateError(
                f"cannot begin a transaction in state {self.state.value}"
            )
        self.partitions_in_txn.clear()
        self.pending_partitions.clear()
        self.offsets_added = False
        self.abortable = None
        self._move(TxnEvent.BEGIN)

    def _require_transactional(self, operation: str) -> None:
        if not self.transactional:
            raise errors.IllegalStateError(f"{operation} needs a producer with a transactional_id")

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """Note that the transaction writes to ``tp`` (added before its first batch is sent)."""
        if tp not in self.partitions_in_txn:
            self.pending_partitions.add(tp)

    def set_abortable(self, exc: BaseException) -> None:
        """A batch or request of this transaction failed: only abort is possible now."""
        if self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            self.abortable = exc
        self._move(TxnEvent.FAILED)

    def start_commit(self) -> None:
        """commit_transaction() has delivered the records and sends EndTxn next."""
        self._move(TxnEvent.COMMIT)

    def start_abort(self) -> None:
        """abort_transaction() starts: queued records are dropped, then EndTxn."""
        self._move(TxnEvent.ABORT)

    # ---------------------------------------------------------------- what batches learn

    def queued_failure(self) -> BaseException | None:
        """The error that records not sent yet must fail with now, if any (the sender asks)."""
        if self.fatal is not None:
            return self.fatal
        if self.state == TxnState.ABORTABLE_ERROR:
            # Nothing more of this transaction can commit: do not make commit wait for it.
            return errors.IllegalStateError(f"the transaction must be aborted: {self.abortable}")
        return None

    def fenced(self, cause: BaseException) -> errors.ProducerFencedClientError:
        """A batch's answer says another producer took over: fatal; the error to fail it with."""
        exc = fenced_error(cause)
        self.set_fatal(exc)
        return exc

    def batch_failed(self, exc: BaseException) -> None:
        """A batch failed for good: a transaction can then only be aborted."""
        if self.transactional:
            self.set_abortable(exc)

    # ---------------------------------------------------------------- the user's operations

    async def deliver_open(self, operation: str, deliver: Callable[[], Awaitable[None]]) -> None:
        """Before ``operation`` ends the open transaction (commit, prepare): ``deliver()`` its
        records; raises unless there is one and every record of it was delivered (then only an
        abort is possible)."""
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
            raise errors.IllegalStateError(
                f"no transaction to {operation} (state {self.state.value})"
            )
        if self.state == TxnState.IN_TRANSACTION:
            await deliver()
        if self.fatal is not None:
            raise self.fatal
        if self.state == TxnState.ABORTABLE_ERROR:
            cause = self.abortable
            raise errors.IllegalStateError(
                f"the transaction cannot {operation}, abort it: {cause}"
            ) from cause

    async def commit(self, deliver: Callable[[], Awaitable[None]]) -> None:
        """``commit_transaction()``: ``deliver()`` the records, then EndTxn (commit).

        If a record failed, nothing is committed: raises, and the transaction must be aborted.
        """
        await self.deliver_open("commit", deliver)
        self.start_commit()
        try:
            await self.end_transaction(commit=True)
        except errors.ProducerFencedClientError as exc:
            self.set_fatal(exc)
            raise
        except errors.KafkaError as exc:
            self.set_abortable(exc)
            raise

    async def abort(
        self,
        drop_queued: Callable[[BaseException], None],
        settle: Callable[[], Awaitable[None]],
    ) -> None:
        """``abort_transaction()``: ``drop_queued`` the records not sent, ``settle()`` (the
        ones sent are decided, no AddPartitionsToTxn is under way), then EndTxn (abort)."""
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
            raise errors.IllegalStateError(f"no transaction to abort (state {self.state.value})")
        self.start_abort()
        drop_queued(
            errors.TransactionAbortedError("its transaction was aborted before the record was sent")
        )
        await settle()
        if self.fatal is not None:
            raise self.fatal
        try:
            await self.end_transaction(commit=False)
        except errors.ProducerFencedClientError as exc:
            self.set_fatal(exc)
            raise
        if self.bump_needed:
            await self.init_producer_id()

    def can_abort(self) -> bool:
        """Whether a transaction is open (or failed) and may be aborted."""
        return self.fatal is None and self.state in (
            TxnState.IN_TRANSACTION,
            TxnState.ABORTABLE_ERROR,
        )

    async def send_offsets_for_group(
        self,
        offsets: dict[TopicPartition, int | OffsetAndMetadata],
        group_id: str | None,
        group_metadata: Any,
    ) -> None:
        """``send_offsets_to_transaction()``: the group's offsets join the transaction."""
        if self.state != TxnState.IN_TRANSACTION:
            raise errors.IllegalStateError(
                f"send_offsets_to_transaction needs an open transaction (state {self.state.value})"
            )
        generation_id, member_id, instance_id = -1, "", None
        if group_metadata is not None:
            group_id = group_metadata.group_id
            generation_id = getattr(group_metadata, "generation_id", -1)
            member_id = getattr(group_metadata, "member_id", "")
            instance_id = getattr(group_metadata, "group_instance_id", None)
        if not group_id:
            raise errors.ConfigError("send_offsets_to_transaction needs group_id or group_metadata")
        try:
            await self.send_offsets(offsets, group_id, generation_id, member_id, instance_id)
        except errors.ProducerFencedClientError as exc:
            self.set_fatal(exc)
            raise
        except errors.KafkaError as exc:
            self.set_abortable(exc)
            raise

    async def add_pending_partitions(self, backoff: Backoff) -> BaseException | None:
        """AddPartitionsToTxn for the partitions waiting to join the transaction, until the
        coordinator has added every one asked for.

        What the error table retries is asked again ``backoff`` apart (Java's handler
        re-enqueues the request), each round for the partitions pending then.  It stops when
        none are pending, the producer failed, or the transaction is being aborted
        (``abort_transaction()`` failed their records and waits for this: they never join).
        Returns the error the records waiting for them fail with when the coordinator refused
        them for good (they are then no longer pending).
        """

        async def add_round() -> None:
            if self.state is TxnState.ABORTING:
                self.pending_partitions.clear()
            if self.pending_partitions and self.fatal is None:
                await self.add_partitions(set(self.pending_partitions))

        try:
            await retry_until_stopped(
                add_round, should_retry=should_retry, backoff=backoff, what="AddPartitionsToTxn"
            )
        except errors.ProducerFencedClientError as exc:
            self.set_fatal(exc)
        except errors.KafkaError as exc:
            return exc
        return None

    async def add_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """AddPartitionsToTxn for ``partitions``.

        Raises a partition's retriable error when some were not added yet (the others are),
        and makes the transaction abortable and raises when the coordinator refused one for
        good, or refused some without a reason (OPERATION_NOT_ATTEMPTED alone: Java's handler
        aborts then too).  Under transactions v2 the first Produce adds a partition: only noted
        here.
        """
        assert self.transactional_id is not None
        if self.transaction_v2:
            added = set(partitions)
            self.partitions_in_txn |= added
            self.pending_partitions -= added
            return
        wanted = sorted(partitions)
        by_topic: dict[str, list[int]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.producer_epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnTopic(name=topic, partitions=parts)
                for topic, parts in by_topic.items()
            ],
        )
        response = await self._coordinator_request(request, ADD_PARTITIONS_MAX_VERSION)
        failed: BaseException | None = None
        again: BaseException | None = None
        not_attempted = []
        for topic_result in response.results_by_topic_v3_and_below:
            for result in topic_result.results_by_partition:
                code = result.partition_error_code
                tp = TopicPartition(topic_result.name, result.partition_index)
                if code == 0:
                    self.partitions_in_txn.add(tp)
                    self.pending_partitions.discard(tp)
                    continue
                error = errors.error_for_code(code)
                if issubclass(error, FENCING_ERRORS):
                    raise fenced_error(error("AddPartitionsToTxn"))
                action = errors.action_for(code)
                if action is errors.ErrorAction.FIND_COORDINATOR:
                    self.cluster.invalidate_coordinator(self.transactional_id, "transaction")
                what = f"AddPartitionsToTxn {tp.topic}-{tp.partition}"
                if action.retriable:
                    again = again or error(what)
                elif error is errors.OperationNotAttemptedError:
                    # Refused because another partition was: that one says what comes next.
                    not_attempted.append(tp)
                elif failed is None:
                    failed = error(what)
        if failed is None and again is None and not_attempted:
            failed = errors.OperationNotAttemptedError(
                f"AddPartitionsToTxn {not_attempted}: not attempted, and no partition says why"
            )
        if failed is not None:
            self.set_abortable(failed)
            raise failed
        if again is not None:
            raise again

    async def _coordinator_request(
        self, request: Any, max_version: int, min_version: int = 0
    ) -> Any:
        assert self.transactional_id is not None
        connection = await self.cluster.coordinator_connection(
            self.transactional_id, "transaction", purpose="transaction"
        )
        version = connection.versions.version_for(
            request.API_KEY, max_version=max_version, min_version=min_version
        )
        try:
            return await connection.send(request, version)
        except errors.KafkaConnectionError:
            self.cluster.invalidate_coordinator(self.transactional_id, "transaction")
            raise

    def _forget_coordinator_after(self, exc: BaseException) -> None:
        """After a coordinator error, look the transaction coordinator up again."""
        if self.transactional_id is not None and _finds_coordinator(exc):
            self.cluster.invalidate_coordinator(self.transactional_id, "transaction")

    async def _retrying(
        self, operation: str, attempt: Any, forget: Callable[[BaseException], None] | None = None
    ) -> Any:
        """Run ``attempt()`` until it returns, retrying what the error table calls retriable.

        ``forget(exc)`` forgets the coordinator after an error (default: the transaction's).
        """
        assert self.transactional_id is not None
        if forget is None:
            forget = self._forget_coordinator_after
        try:
            return await retry(
                attempt,
                should_retry=should_retry,
                deadline=Deadline.after_ms(self.request_timeout_ms),
                backoff=Backoff(min(self.retry_backoff * 1000, 20), 500),
                what=operation,
                on_retry=forget,
            )
        except errors.KafkaError as exc:
            if isinstance(exc, FENCING_ERRORS):
                raise fenced_error(exc) from exc
            if not should_retry(exc):
                raise
            forget(exc)
            raise errors.KafkaTimeoutError(f"{operation} did not succeed: {exc}") from exc

    async def end_transaction(self, commit: bool) -> None:
        """EndTxn (retried) when the coordinator knows of the transaction; then READY."""
        if self.partitions_in_txn or self.offsets_added:
            request = EndTxnRequest(
                transactional_id=self.transactional_id or "",
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                committed=commit,
            )

            v2 = self.transaction_v2

            async def attempt() -> Any:
                if v2:  # only v5+ carries the bumped epoch back
                    response = await self._coordinator_request(
                        request, END_TXN_V2_VERSION, END_TXN_V2_VERSION
                    )
                else:
                    response = await self._coordinator_request(request, END_TXN_MAX_VERSION)
                errors.raise_for_code(response.error_code, "EndTxn")
                return response

            response = await self._retrying("EndTxn", attempt)
            if v2:
                self._take_epoch(response.producer_id, response.producer_epoch)
        self.partitions_in_txn.clear()
        self.pending_partitions.clear()
        self.offsets_added = False
        self.abortable = None
        self._move(TxnEvent.ENDED)
        if not self.bump_needed:
            await self._choose_transaction_version()

    def _topic_ids(self, topics: Iterable[str]) -> dict[str, uuid.UUID] | None:
        """The id of every topic in ``topics``, or None if metadata lacks one of them."""
        known = self.cluster.metadata.topics
        ids = {}
        for topic in topics:
            info = known.get(topic)
            if info is None or info.topic_id is None:
                return None
            ids[topic] = info.topic_id
        return ids

    def _take_epoch(self, producer_id: int, producer_epoch: int) -> None:
        """Adopt the id and epoch an EndTxn v5 answer carries (a bumped epoch, KIP-890 part 2)."""
        if producer_id < 0 or producer_epoch < 0:
            raise errors.ProtocolError(
                f"EndTxn v{END_TXN_V2_VERSION} answered without a producer id and epoch"
            )
        if (producer_id, producer_epoch) != (self.producer_id, self.producer_epoch):
            log.debug(
                "producer id %d epoch %d after EndTxn (was %d/%d)",
                producer_id,
                producer_epoch,
                self.producer_id,
                self.producer_epoch,
            )
            self.producer_id = producer_id
            self.producer_epoch = producer_epoch
            if self.on_new_epoch is not None:
                self.on_new_epoch()
        # Sequences restart under the new epoch, which is what a pending bump was for.
        self.bump_needed = False

    async def send_offsets(  # long: two requests (v1 and v2 variants), per-partition errors
        self,
        offsets: dict[TopicPartition, int | OffsetAndMetadata],
        group_id: str,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
    ) -> None:
        """AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to the group's.

        Under transactions v2, TxnOffsetCommit v5 adds the group itself (no AddOffsetsToTxn).
        """
        assert self.transactional_id is not None
        v2 = self.transaction_v2
        if not v2:
            add = AddOffsetsToTxnRequest(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                group_id=group_id,
            )

            async def add_offsets() -> None:
                response = await self._coordinator_request(add, AddOffsetsToTxnRequest.MAX_VERSION)
                errors.raise_for_code(response.error_code, "AddOffsetsToTxn")

            await self._retrying("AddOffsetsToTxn", add_offsets)
        self.offsets_added = True
        by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
        for tp, value in sorted(offsets.items()):
            meta = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
            by_topic.setdefault(tp.topic, []).append(
                TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=meta.offset,
                    committed_leader_epoch=-1 if meta.leader_epoch is None else meta.leader_epoch,
                    committed_metadata=meta.metadata,
                )
            )
        transactional_id = self.transactional_id

        def request(topic_ids: dict[str, uuid.UUID] | None) -> TxnOffsetCommitRequest:
            return TxnOffsetCommitRequest(
                transactional_id=transactional_id,
                group_id=group_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                generation_id_or_member_epoch=generation_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                topics=[
                    TxnOffsetCommitRequestTopic(topic_id=topic_ids[topic], partitions=parts)
                    if topic_ids is not None
                    else TxnOffsetCommitRequestTopic(name=topic, partitions=parts)
                    for topic, parts in by_topic.items()
                ],
            )

        async def commit_offsets() -> None:
            connection = await self.cluster.coordinator_connection(group_id, purpose="group")
            topic_ids = self._topic_ids(by_topic) if v2 else None
            if topic_ids is not None:
                max_version = TXN_OFFSET_COMMIT_TOPIC_ID_VERSION
            else:
                max_version = TXN_OFFSET_COMMIT_V2_VERSION if v2 else TXN_OFFSET_COMMIT_MAX_VERSION
            version = connection.versions.version_for(
                TxnOffsetCommitRequest.API_KEY, max_version=max_version
            )
            if v2 and version < TXN_OFFSET_COMMIT_V2_VERSION:
                raise errors.UnsupportedVersionForBrokerError(
                    f"transactions v2 need TxnOffsetCommit v{TXN_OFFSET_COMMIT_V2_VERSION}+ from "
                    f"the coordinator of group {group_id!r}"
                )
            if version < TXN_OFFSET_COMMIT_TOPIC_ID_VERSION:
                topic_ids = None
            names = {} if topic_ids is None else {i: name for name, i in topic_ids.items()}
            response = await self.cluster.send_to_coordinator(
                group_id, request(topic_ids), version, kind="group", purpose="group"
            )
            for topic in response.topics:
                name = names.get(topic.topic_id, topic.name) if names else topic.name
                for part in topic.partitions:
                    if part.error_code:
                        # Retried as the error table says (a coordinator error: after
                        # forget_group_coordinator).
                        error = errors.error_for_code(part.error_code)
                        raise error(f"TxnOffsetCommit {name}-{part.partition_index}")

        def forget_group_coordinator(exc: BaseException) -> None:
            if _finds_coordinator(exc):
                self.cluster.invalidate_coordinator(group_id, "group")

        await self._retrying("TxnOffsetCommit", commit_offsets, forget_group_coordinator)
