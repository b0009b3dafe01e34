"""The asyncio share consumer (KIP-932 "Queues for Kafka").

::

    async with ShareConsumer("jobs", bootstrap_servers="host:9092", group_id="workers",
                             acknowledgement_mode="explicit") as consumer:
        async for record in consumer:
            try:
                await handle(record)
            except TemporaryFailure:
                consumer.acknowledge(record, "release")   # redelivered, delivery_count + 1
            except PermanentFailure:
                consumer.acknowledge(record, "reject")    # archived, never delivered again
            else:
                consumer.acknowledge(record, "accept")

Many share consumers read the same partitions; each record goes to one of them at a time, locked
for the group's ``share.record.lock.duration.ms``.  In ``"implicit"`` acknowledgement mode (the
default) every record handed out by one poll (``getmany`` call, or iteration step) is accepted
by the next poll, :meth:`ShareConsumer.commit` or :meth:`ShareConsumer.close`.  In
``"explicit"`` mode the application acknowledges each record, and must have acknowledged all
records of one poll before the next.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, overload

from aiokafkawire import errors
from aiokafkawire._compiled import load_accelerator
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire._unclosed import warn_unclosed
from aiokafkawire._waits import CloseBudget, timeout_after
from aiokafkawire.client_config import (
    CommonOptions,
    check_choice,
    check_int,
    check_number,
    check_type,
    split_common_options,
    unknown_options_error,
)
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer._timeouts import timeout_seconds
from aiokafkawire.consumer.share._metrics import ShareConsumerMetrics
from aiokafkawire.consumer.share.acknowledgements import Acknowledgements, ack_held
from aiokafkawire.consumer.share.codec import Runs, deserialize_runs
from aiokafkawire.consumer.share.fetcher import ShareFetchConfig, ShareFetcher
from aiokafkawire.consumer.share.membership import (
    SHARE_GROUP_HEARTBEAT_KEY,
    ShareMembership,
    share_groups_unsupported,
)
from aiokafkawire.consumer.share.records import (
    AcknowledgementOutcome,
    AcknowledgeType,
    ShareRecord,
)
from aiokafkawire.serialization import (
    AnyAsyncDeserializer,
    AnyDeserializer,
    K,
    RecordDeserializationError,
    SyncDeserializer,
    V,
    context_deserializers,
)
from aiokafkawire.structs import TopicPartition
from aiokafkawire.telemetry import TelemetryReporter, Value, share_consumer_values, start_reporter
from aiokafkawire.telemetry import client_instance_id as telemetry_instance_id

if TYPE_CHECKING:
    from typing_extensions import Required, Unpack

    class _ShareConsumerOptions(CommonOptions, total=False):
        """The keyword options of :class:`ShareConsumer` besides the deserializers (for the
        constructor overloads)."""

        group_id: Required[str]
        acknowledgement_mode: str
        on_acknowledgement: OutcomeCallback | None
        fetch_max_wait_ms: int
        fetch_min_bytes: int
        fetch_max_bytes: int
        max_poll_records: int
        acquire_mode: str
        check_crcs: bool
        client_rack: str | None
        on_deserialization_error: str


log = logging.getLogger("aiokafkawire.consumer.share")

__all__ = ["ShareConsumer"]

_MODES = ("implicit", "explicit")
#: What becomes of a record a deserializer fails on.
_ON_ERROR = {"release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}
#: ShareFetch ``ShareAcquireMode`` values (KIP-1206, Kafka 4.2+; older brokers batch-optimize).
ACQUIRE_MODES = {"batch_optimized": 0, "record_limit": 1}
_ACK_BY_NAME: dict[object, AcknowledgeType] = {
    "accept": AcknowledgeType.ACCEPT,
    "release": AcknowledgeType.RELEASE,
    "reject": AcknowledgeType.REJECT,
    "renew": AcknowledgeType.RENEW,
}
# The members an application may give, found by the same lookup (equal ints map to them too,
# as AcknowledgeType.parse does; GAP is left to parse, which refuses it).
_ACK_BY_NAME.update({t: t for t in AcknowledgeType if t is not AcknowledgeType.GAP})
_RENEW = AcknowledgeType.RENEW
OutcomeCallback = Callable[[AcknowledgementOutcome], Any]


class ShareConsumer(
    Generic[K, V]
):  # long: the public API (getmany, acknowledge, commit, iteration)
    """A member of a share group: records are shared out one by one and acknowledged.

    How long a record stays locked (``share.record.lock.duration.ms``), how often it is
    delivered at most (``share.delivery.count.limit``) and where a new group starts
    (``share.auto.offset.reset``, ``"latest"`` by default) are group configurations on the
    broker, set with ``Admin.alter_configs`` on a ``ResourceType.GROUP`` resource.

    Options (besides the common connection options of every client, e.g. ``bootstrap_servers``,
    ``client_id``, ``security_protocol``):

    - ``group_id`` (required): the share group.
    - ``acknowledgement_mode``: ``"implicit"`` (default: a poll accepts the records the previous
      poll handed out) or ``"explicit"`` (:meth:`acknowledge` every record).
    - ``on_acknowledgement``: called with each
      :class:`~aiokafkawire.consumer.share.records.AcknowledgementOutcome` (the broker's verdict
      on the acknowledgements of one partition in one request, or a client-side failure such as
      :class:`~aiokafkawire.errors.AcquisitionLockTimeoutError`); a plain function or a
      coroutine function.
    - ``fetch_max_wait_ms``: how long a ShareFetch waits on the broker for records.
    - ``fetch_min_bytes``: how much data a ShareFetch waits for.
    - ``fetch_max_bytes``: the most data one ShareFetch answer carries.
    - ``max_poll_records``: the most records one poll hands out; also the ShareFetch
      ``MaxRecords`` (and ``BatchSize``).
    - ``acquire_mode``: ``"batch_optimized"`` (default: the broker may acquire more than
      ``max_poll_records`` to keep whole record batches together) or ``"record_limit"`` (at
      most ``max_poll_records`` per fetch: finer sharing between members, more requests).
    - ``check_crcs``: verify the CRC of fetched record batches.
    - ``client_rack``: the rack id sent with the heartbeat (rack-aware assignment).
    - ``key_deserializer``: ``bytes | None -> Any`` applied to record keys, or
      ``deserializer(data, ctx)`` (a :class:`~aiokafkawire.serialization.SerializationContext`),
      possibly ``async``.
    - ``value_deserializer``: the same for record values.  A record either fails on raises
      :class:`~aiokafkawire.serialization.RecordDeserializationError` at its position.
    - ``on_deserialization_error``: what becomes of that record: ``"release"`` (default, as the
      Java client does: delivered again, to any member, until the group's delivery count limit
      archives it) or ``"reject"`` (archived at once, never delivered again: dead-letter it
      from the error's raw ``key`` / ``value`` / ``headers``).
    """

    @overload
    def __init__(
        self,
        *topics: str,
        key_deserializer: AnyAsyncDeserializer[K],
        value_deserializer: AnyAsyncDeserializer[V],
        **options: Unpack[_ShareConsumerOptions],
    ) -> None: ...
    @overload
    def __init__(
        self,
        *topics: str,
        key_deserializer: SyncDeserializer[K] | None = None,
        value_deserializer: AnyAsyncDeserializer[V],
        **options: Unpack[_ShareConsumerOptions],
    ) -> None: ...
    @overload
    def __init__(
        self,
        *topics: str,
        key_deserializer: AnyAsyncDeserializer[K],
        value_deserializer: SyncDeserializer[V] | None = None,
        **options: Unpack[_ShareConsumerOptions],
    ) -> None: ...
    @overload
    def __init__(
        self,
        *topics: str,
        key_deserializer: AnyDeserializer[K] | None = None,
        value_deserializer: AnyDeserializer[V] | None = None,
        **options: Unpack[_ShareConsumerOptions],
    ) -> None: ...
    def __init__(  # type: ignore[misc]  # long: one checked line per option of the signature
        self,
        *topics: str,
        group_id: str,
        acknowledgement_mode: str = "implicit",
        on_acknowledgement: OutcomeCallback | None = None,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52_428_800,
        max_poll_records: int = 500,
        acquire_mode: str = "batch_optimized",
        check_crcs: bool = True,
        client_rack: str | None = None,
        key_deserializer: AnyDeserializer[K] | None = None,
        value_deserializer: AnyDeserializer[V] | None = None,
        on_deserialization_error: str = "release",
        **options: Unpack[CommonOptions],
    ) -> None:
        common, rest = split_common_options(dict(options))
        if rest:
            own = inspect.signature(ShareConsumer.__init__).parameters
            raise unknown_options_error("ShareConsumer", rest, own)
        for topic in topics:
            check_type("topic", topic, str)
        check_type("group_id", group_id, str)
        if not group_id.strip():
            raise errors.ConfigError("a ShareConsumer needs a group_id (the share group)")
        check_choice("acknowledgement_mode", acknowledgement_mode, _MODES)
        check_choice("on_deserialization_error", on_deserialization_error, _ON_ERROR)
        check_choice("acquire_mode", acquire_mode, tuple(ACQUIRE_MODES))
        check_int("max_poll_records", max_poll_records, minimum=1)
        check_number("fetch_max_wait_ms", fetch_max_wait_ms, minimum=0)
        check_int("fetch_min_bytes", fetch_min_bytes, minimum=0)
        check_int("fetch_max_bytes", fetch_max_bytes, minimum=1)
        check_type("check_crcs", check_crcs, bool)
        check_type("client_rack", client_rack, str, none_ok=True)
        for name, function in (
            ("on_acknowledgement", on_acknowledgement),
            ("key_deserializer", key_deserializer),
            ("value_deserializer", value_deserializer),
        ):
            if function is not None and not callable(function):
                raise errors.ConfigTypeError(
                    f"{name} must be callable, got {type(function).__name__}"
                )
        self._common = common
        self._group_id = group_id
        self._explicit = acknowledgement_mode == "explicit"
        self._on_acknowledgement = on_acknowledgement
        self._client_rack = client_rack
        self._max_poll_records = max_poll_records
        self._fetch_config = ShareFetchConfig(
            group_id=group_id,
            fetch_max_wait_ms=int(fetch_max_wait_ms),
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_bytes=fetch_max_bytes,
            max_poll_records=max_poll_records,
            acquire_mode=ACQUIRE_MODES[acquire_mode],
            check_crcs=check_crcs,
            request_timeout_ms=common.request_timeout_ms,
            retry_backoff_ms=common.retry_backoff_ms,
            retry_backoff_max_ms=common.retry_backoff_max_ms,
        )
        self._topics = list(topics)
        self._acks = Acknowledgements()
        self._metrics = ShareConsumerMetrics(common)
        self._cluster: Cluster | None = None
        self._membership: ShareMembership | None = None
        self._fetcher: ShareFetcher | None = None
        self._tasks = TaskSupervisor("share-consumer", self._callback_failed)
        #: The records handed out by the last poll, as runs of one partition each.
        self._delivered: list[tuple[TopicPartition, list[ShareRecord]]] = []
        self._iter_records: deque[ShareRecord] = deque()
        # Deserializers run as records are handed out; a failing record is released and
        # raised (RecordDeserializationError), the records after it held for the next poll.
        self._deserializers = context_deserializers(
            key_deserializer, value_deserializer, plain_too=True
        )
        self._on_deserialization_error = _ON_ERROR[on_deserialization_error]
        #: Raised by the next poll: a failing record that followed the records handed out.
        self._deserialization_error: RecordDeserializationError | None = None
        self._held: Runs = []
        self._fatal: errors.KafkaError | None = None
        self._started = False
        self._closed = False
        #: The bookkeeping acknowledge() may change: ``_acks`` in explicit mode until the
        #: consumer closes or fails for good, else None (the one attribute the compiled
        #: acknowledge reads of this object; close() and _set_fatal clear it).
        self._open_acks: Acknowledgements | None = self._acks if self._explicit else None

    def __repr__(self) -> str:
        mode = "explicit" if self._explicit else "implicit"
        return f"<ShareConsumer group={self._group_id!r} {mode} topics={self._topics}>"

    def __del__(self) -> None:
        # Started and dropped without close(): its acquired records wait out their lock.
        if getattr(self, "_started", False) and not getattr(self, "_closed", True):
            warn_unclosed(self, "ShareConsumer", "consumer.close()")

    # ----------------------------------------------------------------- lifecycle

    # Client telemetry (KIP-714): the push loop (started by start()) and its counters.
    _telemetry: TelemetryReporter | None = None

    async def start(self) -> None:
        """Connect, check that the cluster serves share groups, and join with the topics given.

        A start that fails stops everything it started (loops, connections) before raising;
        it may be called again.
        """
        if self._started:
            return
        if self._closed:
            raise errors.ClientClosedError("the share consumer is closed")
        cluster = self._common.build_cluster()
        try:
            await cluster.start()
            connection = await cluster.coordinator_connection(self._group_id, purpose="group")
            if not connection.versions.supports(SHARE_GROUP_HEARTBEAT_KEY):
                raise share_groups_unsupported(
                    f"broker {connection.host}:{connection.port}",
                    "it has no ShareGroupHeartbeat API",
                )
            self._cluster = cluster
            self._membership = ShareMembership(
                cluster,
                self._group_id,
                on_assignment=self._assignment_changed,
                on_fatal=self._set_fatal,
                rack_id=self._client_rack,
                retry_backoff_ms=self._common.retry_backoff_ms,
                retry_backoff_max_ms=self._common.retry_backoff_max_ms,
                request_timeout_ms=self._common.request_timeout_ms,
            )
            self._fetcher = ShareFetcher(
                cluster,
                self._fetch_config,
                self._acks,
                member_id=lambda: self._member_id,
                on_outcomes=self._outcomes,
                on_fatal=self._set_fatal,
            )
            self._fetcher.start()
            self._started = True
            if self._topics:
                self.subscribe(self._topics)
            self._telemetry = start_reporter(
                self._common,
                cluster,
                self._tasks,
                "consumer.share",
                self._telemetry_values,
                {"group_id": self._group_id},
            )
        except BaseException:
            await self._undo_start(cluster)
            raise

    async def _undo_start(self, cluster: Cluster) -> None:
        """Stop what a failed :meth:`start` started, in reverse order (never raises)."""
        self._started = False
        fetcher, membership = self._fetcher, self._membership
        self._fetcher = self._membership = self._cluster = None
        try:
            if fetcher is not None:
                await fetcher.close(0)
            if membership is not None:
                await membership.close(leave=True)  # only if a heartbeat joined already
        except Exception:
            log.exception("share consumer: stopping after a failed start")
        finally:
            await cluster.close()

    async def close(
        self,
        legacy_timeout_ms: float | None = None,
        /,
        *,
        timeout: float | None = None,
        timeout_ms: float | None = None,
    ) -> None:
        """Acknowledge (implicit mode: accept the last poll's records), close the share
        sessions, leave the group, stop every task and close the connections.

        ``timeout``: how many seconds the close may take, the session close, the leave and the
        terminating telemetry push together (default: the session close takes at most the
        ``request_timeout_ms`` option, the rest as long as it takes); a step cut short is
        logged.  Deprecated for one release: ``timeout_ms=`` and a positional number, both
        milliseconds as before (a ``DeprecationWarning`` each).
        Records acquired but not acknowledged are released to the group by the session close.
        """
        seconds = timeout_seconds("ShareConsumer.close", timeout, timeout_ms, legacy_timeout_ms)
        if self._closed:
            return
        self._closed = True
        self._open_acks = None
        if not self._started:
            return
        budget = CloseBudget("share consumer", seconds, log)
        assert self._fetcher is not None and self._membership is not None
        assert self._cluster is not None
        try:
            if not self._explicit:
                self._accept_delivered()
            self._outcomes(self._acks.take_expired())
            left = budget.remaining()
            await self._fetcher.close(
                self._common.request_timeout_ms / 1000 if left is None else left
            )
            await budget.step("leaving the group", self._membership.close())
            if self._telemetry is not None:  # the terminating push (KIP-714)
                await budget.step("the telemetry push", self._telemetry.close())
        finally:
            await self._tasks.stop()  # also after a failed close: no loop outlives the client
            await self._cluster.close()

    def _telemetry_values(self) -> list[Value]:
        counts = self._metrics
        return share_consumer_values(
            counts.acknowledgements_sent, counts.acknowledgements_failed, self._common.metrics
        )

    async def client_instance_id(self, timeout: float = 5.0) -> uuid.UUID | None:
        """The client instance id the cluster gave this share consumer (KIP-714), as Java's
        ``clientInstanceId(timeout)``; None when the broker does not support client telemetry or
        gave none within ``timeout`` seconds.

        Raises :class:`~aiokafkawire.errors.IllegalStateError` with ``enable_metrics_push=False``
        or before :meth:`start`.
        """
        return await telemetry_instance_id(
            self._telemetry, self._common.enable_metrics_push, "share consumer", timeout
        )

    async def __aenter__(self) -> ShareConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _require_started(self) -> ShareFetcher:
        if self._closed:
            raise errors.ClientClosedError("the share consumer is closed")
        if not self._started:
            raise errors.IllegalStateError("the share consumer is not started; use `async with`")
        if self._fatal is not None:
            raise self._fatal
        assert self._fetcher is not None
        return self._fetcher

    def _set_fatal(self, error: errors.KafkaError) -> None:
        if self._fatal is None:
            log.error("share consumer of group %r failed: %s", self._group_id, error)
            self._fatal = error
            self._open_acks = None

    @property
    def _member_id(self) -> str:
        assert self._membership is not None
        return self._membership.member_id

    @property
    def member_id(self) -> str | None:
        """This member's id in the share group (``None`` before :meth:`start`)."""
        return None if self._membership is None else self._membership.member_id

    # ----------------------------------------------------------------- subscription

    def subscribe(self, topics: Iterable[str]) -> None:
        """Set the topics to consume (replacing the previous ones); the group reassigns."""
        self._require_started()
        topics = sorted(set(topics))
        if not topics:
            raise errors.ConfigError("subscribe() needs at least one topic; use unsubscribe()")
        assert self._membership is not None
        self._topics = topics
        self._membership.subscribe(topics)
        self._membership.start()

    def unsubscribe(self) -> None:
        """Stop consuming every topic (the member stays in the group with no subscription)."""
        self._require_started()
        assert self._membership is not None
        self._topics = []
        self._membership.subscribe([])

    def subscription(self) -> set[str]:
        """The subscribed topics (a set, as :meth:`Consumer.subscription`)."""
        return set(self._topics)

    def assignment(self) -> set[TopicPartition]:
        """The partitions the group currently assigns to this member."""
        return set() if self._fetcher is None else self._fetcher.assignment

    def _assignment_changed(self, partitions: set[TopicPartition]) -> None:
        assert self._fetcher is not None
        self._fetcher.set_assignment(partitions)

    # ----------------------------------------------------------------- polling

    def _begin_poll(self) -> None:
        """The start of a poll: settle the records handed out by the previous one."""
        if self._explicit:
            for tp, records in self._delivered:
                left = self._acks.unacknowledged(tp, records)
                if left:
                    raise errors.IllegalStateError(
                        f"explicit acknowledgement mode: record(s) of the previous poll are not "
                        f"acknowledged (first: {tp.topic}-{tp.partition}@{left[0]}); acknowledge "
                        "every record before polling again"
                    )
            self._delivered = []
        else:
            self._accept_delivered()
        expired = self._acks.take_expired()
        if expired:
            self._outcomes(expired)
        if self._acks.has_pending():
            assert self._fetcher is not None
            self._fetcher.wake_all()

    def _accept_delivered(self) -> None:
        accept = self._acks.accept_delivered
        for tp, records in self._delivered:
            accept(tp, records)
        self._delivered = []

    async def getmany(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ShareRecord[K, V]]]:
        """Records acquired for this member, waiting up to ``timeout_ms`` for some to arrive.

        Settles the previous poll first (implicit mode accepts its records; explicit mode raises
        :class:`~aiokafkawire.errors.IllegalStateError` if any is not acknowledged).
        """
        fetcher = self._require_started()
        if self._iter_records:
            raise errors.IllegalStateError(
                "records handed out by iteration are still pending; finish the iteration first"
            )
        self._begin_poll()
        limit = max_records or self._max_poll_records
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            runs = await self._drain(fetcher, limit)
            if runs:
                self._delivered = runs
                out: dict[TopicPartition, list[ShareRecord]] = {}
                for tp, records in runs:
                    if tp in out:
                        out[tp] = out[tp] + records
                    else:
                        out[tp] = records
                return out
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._closed:
                return {}
            await fetcher.wait_for_data(min(remaining, 1.0))
            if self._fatal is not None:
                raise self._fatal

    async def _drain(self, fetcher: ShareFetcher, limit: int) -> Runs:
        """Runs of records for a poll, deserialized (held ones first).  A deserialization
        error is raised by the poll that reaches the failing record: at once when nothing
        precedes it, else by the next poll (the record is already released or rejected, so
        it would not come back to raise it)."""
        pending = self._deserialization_error
        if pending is not None:
            self._deserialization_error = None
            raise pending
        runs, self._held = (self._held, []) if self._held else (fetcher.drain(limit), [])
        if runs and self._deserializers is not None:
            runs, self._held, error = await deserialize_runs(
                self._deserializers, runs, self._acks, self._on_deserialization_error
            )
            if error is not None:
                if not runs:
                    raise error
                self._deserialization_error = error
        if runs:
            self._metrics.records_consumed += sum(len(records) for _, records in runs)
        return runs

    def __aiter__(self) -> ShareConsumer[K, V]:
        return self

    async def __anext__(self) -> ShareRecord[K, V]:
        """The next record (one record is one poll); iteration stops when the consumer closes."""
        if self._closed:
            raise StopAsyncIteration
        fetcher = self._require_started()
        self._begin_poll()
        pending = self._iter_records
        while not pending:
            if self._closed:
                raise StopAsyncIteration
            for _, records in await self._drain(fetcher, self._max_poll_records):
                pending.extend(records)
            if not pending:
                await fetcher.wait_for_data(1.0)
                if self._fatal is not None:
                    raise self._fatal
        record = pending.popleft()
        self._delivered = [(record.topic_partition, [record])]
        return record

    # ----------------------------------------------------------------- acknowledging

    def acknowledge(
        self, record: ShareRecord, type: AcknowledgeType | str = AcknowledgeType.ACCEPT
    ) -> None:
        """Acknowledge one delivered record (explicit mode): ``"accept"``, ``"release"``
        (deliver again, to any member), ``"reject"`` (archive, never deliver again) or
        ``"renew"``.

        The acknowledgement goes out with the next request to the partition's leader (or at once
        with :meth:`commit`).  ``"renew"`` (KIP-1222, Kafka 4.2+ with the group config
        ``share.renew.acknowledge.enable=true``) asks the broker, at once, to restart the
        record's acquisition lock (:attr:`acquisition_lock_timeout_ms` long) while the
        application is still working on it: the record stays this member's, is not handed out
        again, and still needs a final ``"accept"``, ``"release"`` or ``"reject"``; the next
        poll does not wait for that.  The broker's verdict comes to ``on_acknowledgement`` (or
        :meth:`commit`); a refused renewal is an
        :class:`~aiokafkawire.errors.InvalidRecordStateError` outcome.

        An unknown type raises :class:`~aiokafkawire.errors.KafkaValueError`.
        """
        acks = self._open_acks  # None: implicit mode, closed, or failed for good
        if acks is None:
            self._require_started()
            raise errors.IllegalStateError(
                "acknowledge() needs acknowledgement_mode='explicit' (implicit mode accepts "
                "every record at the next poll)"
            )
        try:
            ack_type = _ACK_BY_NAME.get(type)  # the hot path: a name or a member
        except TypeError:  # unhashable
            ack_type = None
        if ack_type is None:
            ack_type = AcknowledgeType.parse(type)
        # The common case in one call to ``ack_held`` (compiled: one dict entry moved, the
        # clock read in C); with the extension built, ShareAckMethod (the compiled
        # acknowledge, end of this module) settles an ACCEPT so before coming here.
        if (
            ack_type is _RENEW
            or acks.renewed_held
            or not ack_held(
                acks.acquired_offsets, acks.pending_offsets, record, ack_type, acks.clock
            )
        ):
            acks.acknowledge_record(record, ack_type)
        if ack_type is _RENEW:  # a module constant: an enum member lookup costs ~0.4 us
            assert self._fetcher is not None
            self._fetcher.wake_all()  # a renewal cannot wait for the next poll

    async def commit(self) -> dict[TopicPartition, errors.KafkaError | None]:
        """Send the acknowledgements made so far now and wait for the broker's verdicts.

        Implicit mode first accepts the records of the last poll.  Returns, per partition, the
        error of its acknowledgements or ``None`` when all were applied.
        """
        fetcher = self._require_started()
        if not self._explicit:
            self._accept_delivered()
        outcomes = self._acks.take_expired()
        self._outcomes(outcomes)
        outcomes.extend(await fetcher.commit(self._acks.take_pending()))
        results: dict[TopicPartition, errors.KafkaError | None] = {}
        for outcome in outcomes:
            if results.get(outcome.partition) is None:
                results[outcome.partition] = outcome.error
        return results

    def _outcomes(self, outcomes: list[AcknowledgementOutcome]) -> None:
        callback = self._on_acknowledgement
        for outcome in outcomes:
            self._metrics.outcome(outcome)  # metrics() and client telemetry (KIP-714)
            if outcome.error is not None:
                log.info(
                    "acknowledgements of %s failed: %s",
                    outcome.partition,
                    outcome.error,
                )
            if callback is None:
                continue
            try:
                result = callback(outcome)
            except Exception:
                log.exception("the on_acknowledgement callback raised")
                continue
            if inspect.isawaitable(result):
                self._tasks.start("on-acknowledgement", _await(result))

    def _callback_failed(self, name: str, exc: BaseException) -> None:
        log.error("the on_acknowledgement callback raised", exc_info=exc)

    # ----------------------------------------------------------------- introspection

    @property
    def state(self) -> str:
        """One of the :attr:`Consumer.state <aiokafkawire.consumer.Consumer.state>` values
        that apply to a share group member: ``"unjoined"`` (not started, or not a member
        yet), ``"stable"`` (a member of the group, with or without partitions), ``"fatal"``
        (a fatal error ended it: the next poll raises it), ``"closed"``.  A share group has no
        rebalance and no manual assignment, so ``"rebalancing"`` and ``"manual"`` never occur.
        """
        if self._closed:
            return "closed"
        if self._fatal is not None:
            return "fatal"
        membership = self._membership
        if not self._started or membership is None or membership.member_epoch <= 0:
            return "unjoined"
        return "stable"

    def metrics(self) -> dict[str, Any]:
        """A snapshot of this share consumer's counters, shaped as :meth:`Consumer.metrics()
        <aiokafkawire.consumer.Consumer.metrics>` (see :mod:`aiokafkawire.metrics`).

        ``brokers``: per broker request counts, latency percentiles per API, in-flight
        requests, bytes in/out, throttle time.  ``consumer``: as the consumer's,
        ``records_consumed`` (records handed out by polls and iteration) and its rate,
        ``fetch_latency`` (ShareFetch, including the broker's long-poll wait),
        ``assigned_partitions`` and ``state``; the share group's own: ``acknowledge_latency``
        (ShareAcknowledge requests), ``records_acquired`` (in-flight acquisitions: records
        held under an acquisition lock and not acknowledged yet, buffered or handed out),
        ``records_accepted`` / ``records_released`` / ``records_rejected`` /
        ``records_renewed`` (acknowledgements the broker applied, by type),
        ``acknowledgements_sent`` and ``acknowledgements_failed`` (acknowledged offsets the
        broker answered, and refused).
        """
        return self._metrics.snapshot(self.state, len(self.assignment()), self._acks.held())

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """The acquisition lock duration the broker announced last (ShareFetch answers, and
        ShareAcknowledge v2 answers, KIP-1222); ``None`` before the first answer."""
        return None if self._fetcher is None else self._fetcher.acquisition_lock_timeout_ms

    async def wait_for_assignment(self, *, timeout: float | None = None) -> set[TopicPartition]:
        """Wait until the group assigns this member at least one partition; the assignment.

        Raises :class:`~aiokafkawire.errors.KafkaTimeoutError` after ``timeout`` seconds
        (``None``: wait as long as needed), as :meth:`Consumer.wait_for_assignment`.
        """
        seconds = timeout_seconds("ShareConsumer.wait_for_assignment", timeout, None, None)
        try:
            async with timeout_after(seconds):
                while not self.assignment():
                    self._require_started()
                    await asyncio.sleep(0.05)
        except (TimeoutError, asyncio.TimeoutError):
            raise errors.KafkaTimeoutError(
                f"no partitions were assigned within {seconds:g} s"
            ) from None
        return self.assignment()

    async def wait_assignment(self, timeout: float = 30.0) -> set[TopicPartition]:
        """Deprecated alias of :meth:`wait_for_assignment` (removed in the next release).

        Keeps its old behaviour: waits up to ``timeout`` seconds and returns the assignment,
        empty when none came in time, instead of raising.
        """
        warnings.warn(
            "ShareConsumer.wait_assignment() is deprecated and will be removed in the next "
            "release; use wait_for_assignment(timeout=...) (it raises KafkaTimeoutError when "
            "nothing is assigned in time)",
            DeprecationWarning,
            stacklevel=2,
        )
        try:
            return await self.wait_for_assignment(timeout=timeout)
        except errors.KafkaTimeoutError:
            return self.assignment()


async def _await(awaitable: Any) -> None:
    await awaitable


_ack_accelerator: Any = load_accelerator("aiokafkawire.protocol.records._crecords")
if _ack_accelerator is not None and not TYPE_CHECKING:
    # acknowledge without a Python frame in its common case (an ACCEPT of a held record, on an
    # open explicit-mode consumer, see _crecords.c "ShareAckMethod"); anything else calls the
    # method above with the same arguments.
    ShareConsumer.acknowledge = _ack_accelerator.ShareAckMethod(
        ShareConsumer.acknowledge, AcknowledgeType.ACCEPT, Acknowledgements
    )
