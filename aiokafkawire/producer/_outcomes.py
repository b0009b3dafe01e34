"""What becomes of a sent batch: delivered, retried in order, or failed for good."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.metrics import BatchEvent, ClientMetrics, ProducerStats
from aiokafkawire.producer._accumulator import RecordAccumulator
from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.producer._partition import PartitionCursor
from aiokafkawire.producer._request import partition_results, too_large
from aiokafkawire.producer._txn import FENCING_ERRORS, TransactionManager

__all__ = ["BatchOutcomes"]

log = logging.getLogger("aiokafkawire.producer")


class BatchOutcomes:
    """Decides each batch's fate from its answer and keeps its partition's cursor up to date."""

    def __init__(
        self,
        cluster: Cluster,
        accumulator: RecordAccumulator,
        txn: TransactionManager,
        *,
        idempotent: bool,
        retry_backoff: float,
        delivery_timeout: float,
        metrics: ClientMetrics | None,
    ) -> None:
        self.stats = ProducerStats()
        self.metrics = metrics
        self.cluster = cluster
        self.accumulator = accumulator
        self.txn = txn
        self.cursors = accumulator.batches  # every partition's queue and send state
        self.idempotent = idempotent
        self.retry_backoff = retry_backoff
        self.delivery_timeout = delivery_timeout
        self.closing = False  # the producer is closing: nothing is retried any more

    def handle_response(
        self, batches: list[ProducerBatch], response: Any, topic_names: dict[uuid.UUID, str]
    ) -> None:
        """Decide every batch of a request from its Produce answer."""
        results = partition_results(response, topic_names)
        for batch in batches:
            part = results.get((batch.topic, batch.partition))
            if part is None:
                self.attempt_failed(
                    batch, errors.ProtocolError("the Produce response omits a partition")
                )
                continue
            code = part.error_code
            if code == 0 or code == errors.DuplicateSequenceNumberError.code:
                self.succeeded(batch, part.base_offset, part.log_append_time_ms)
            else:
                message = getattr(part, "error_message", None) or (
                    f"Produce to {batch.topic}-{batch.partition}"
                )
                error: errors.KafkaError = errors.error_for_code(code)(message)
                if code == errors.MessageTooLargeError.code:
                    error = too_large(batch, error)
                self.attempt_failed(batch, error)

    def returned(self, batch: ProducerBatch) -> None:
        """``batch`` is no longer in flight: its partition may send again."""
        batch.in_flight = False
        self.cursors[batch.tp].returned()

    def succeeded(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        """The leader wrote ``batch`` (at ``base_offset``, -1 when it does not say)."""
        self.returned(batch)
        txn = self.txn
        if self.idempotent and batch.base_sequence >= 0:
            current = (
                batch.producer_id == txn.producer_id and batch.producer_epoch == txn.producer_epoch
            )
            cursor = self.cursors[batch.tp]
            cursor.note_acknowledged(batch, current)
            if current:
                cursor.confirmed = batch.producer_id
        stats = self.stats
        stats.records += batch.count
        stats.batches += 1
        payload = batch.payload
        if payload is not None:
            stats.bytes += len(payload)
            stats.uncompressed_bytes += batch.raw_size
        if self.metrics is not None:
            self._emit_batch(batch, base_offset, None)
        spent = batch.spent
        batch.complete(base_offset, log_append_time)
        self.accumulator.release(batch)
        if spent is not None:  # compressed: the records' buffer, not the payload's
            self.accumulator.keep_spare(spent)
        elif type(payload) is memoryview:
            buffer = payload.obj
            del payload  # the batch's last view of its buffer, unless a write still holds one
            self.accumulator.keep_spare(buffer)

    def _emit_batch(
        self, batch: ProducerBatch, base_offset: int, error: BaseException | None
    ) -> None:
        assert self.metrics is not None
        payload = batch.payload
        self.metrics.emit(
            "on_batch",
            BatchEvent(
                batch.topic,
                batch.partition,
                batch.count,
                len(payload) if payload is not None else 0,
                batch.raw_size,
                batch.attempts,
                time.monotonic() - batch.created,
                base_offset,
                error,
            ),
        )

    def fail_batch(self, batch: ProducerBatch, exc: BaseException) -> None:
        """``batch`` failed for good with ``exc``."""
        self.stats.batch_errors += 1
        self.stats.records_failed += batch.count
        log.debug("%r failed for good: %s", batch, exc)
        if self.metrics is not None:
            self._emit_batch(batch, -1, exc)
        batch.fail(exc)
        self.accumulator.release(batch)
        txn = self.txn
        txn.batch_failed(exc)
        if self.idempotent and batch.base_sequence >= 0 and batch.attempts:
            # Its sequence numbers may or may not be in the log: only a new epoch resolves that.
            self.cursors[batch.tp].resequence = True
            txn.request_bump(f"batch for {batch.topic}-{batch.partition} failed: {exc}")

    def attempt_failed(self, batch: ProducerBatch, exc: errors.KafkaError) -> None:
        """A send of ``batch`` failed with ``exc``: retry it in order, or fail it for good."""
        cursor = self.cursors[batch.tp]
        if (
            self.idempotent
            and isinstance(exc, errors.OutOfOrderSequenceNumberError)
            and cursor.acknowledged_after(batch)
        ):
            # A batch the leader wrote while its answer was lost (a cut connection), then five
            # more after it before this retry: too old for its duplicate check, so refused as
            # out of order.  Later sequences were acknowledged, so it is in the log: delivered
            # (offset unknown).  A new epoch would write it a second time.
            log.debug("%r: in the log already (later sequences acknowledged)", batch)
            self.succeeded(batch, -1, -1)
            return
        self.returned(batch)
        txn = self.txn
        if isinstance(exc, FENCING_ERRORS):
            batch.fail(txn.fenced(exc))
            self.accumulator.release(batch)
            return
        action = errors.action_of(exc)
        retriable = action.retriable
        if self.idempotent and isinstance(exc, errors.SEQUENCE_ERRORS):
            if not self._sequence_error_retries(batch, cursor, exc):
                return
            retriable = True  # an earlier batch failed, or the epoch changes: resend in order
        if action is errors.ErrorAction.REFRESH_METADATA:
            self.cluster.request_update()
        now = time.monotonic()
        if (
            retriable
            and not self.closing
            and now + self.retry_backoff - batch.created < self.delivery_timeout
        ):
            batch.retry_at = now + self.retry_backoff
            self.stats.retries += 1
            cursor.gated = True
            self.accumulator.reenqueue(batch)
            log.debug("retrying %r after %s", batch, exc)
            return
        self.fail_batch(batch, exc)

    def _sequence_error_retries(
        self, batch: ProducerBatch, cursor: PartitionCursor, exc: errors.KafkaError
    ) -> bool:
        """After OUT_OF_ORDER / UNKNOWN_PRODUCER_ID: whether ``batch`` may be retried.

        False when it was failed here (a transactional producer cannot renumber it).
        """
        txn = self.txn
        same_identity = (
            batch.producer_id == txn.producer_id and batch.producer_epoch == txn.producer_epoch
        )
        if same_identity and not self._earlier_batch_pending(batch, cursor):
            # The broker lost our state (or records): nothing earlier is pending, so waiting
            # will not help.  A new epoch restarts the sequences (KIP-360).
            cursor.resequence = True
            if txn.transactional:
                self.fail_batch(batch, exc)
                return False
            tp = batch.tp
            txn.request_bump(f"{exc} on {tp.topic}-{tp.partition}")
        return True

    def _earlier_batch_pending(self, batch: ProducerBatch, cursor: PartitionCursor) -> bool:
        """Whether a batch sent before ``batch`` to its partition is still undecided.

        If so, an OUT_OF_ORDER_SEQUENCE_NUMBER for ``batch`` only means that batch was not
        written yet; otherwise the broker really lost sequence numbers.
        """
        if cursor.expects(batch):
            return False
        return any(
            other.tp == batch.tp
            and other.order < batch.order
            and other.producer_epoch == batch.producer_epoch
            and other.producer_id == batch.producer_id
            for other in self.accumulator.incomplete
        )
