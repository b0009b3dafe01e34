"""The asyncio Kafka consumer.

::

    async with Consumer("orders", bootstrap_servers="host:9092", group_id="billing",
                        auto_offset_reset="earliest") as consumer:
        async for record in consumer:
            ...
        batches = await consumer.getmany(timeout_ms=1000, max_records=500)
        await consumer.commit()
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, overload

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire._unclosed import warn_unclosed
from aiokafkawire._waits import CloseBudget, wait_event
from aiokafkawire.client_properties import translate_properties
from aiokafkawire.consumer._commits import CommitOffsets, Commits
from aiokafkawire.consumer._metrics import ConsumerMetrics
from aiokafkawire.consumer._options import consumer_options
from aiokafkawire.consumer._position_controls import PositionControls
from aiokafkawire.consumer._state import ConsumerParts, IteratedRecords, discard_buffered
from aiokafkawire.consumer._timeouts import timeout_seconds
from aiokafkawire.consumer.fetch import Fetcher
from aiokafkawire.consumer.fetch.deserialize import deserialize_drained
from aiokafkawire.consumer.group.assignors import PartitionAssignor
from aiokafkawire.consumer.group.classic import ClassicMembership
from aiokafkawire.consumer.group.membership import Membership
from aiokafkawire.consumer.group.offsets import GroupOffsets
from aiokafkawire.consumer.no_group import NoGroupAssignment
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.consumer.value_types import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
)
from aiokafkawire.serialization import (
    AnyAsyncDeserializer,
    AnyDeserializer,
    K,
    SyncDeserializer,
    V,
    context_deserializers,
)
from aiokafkawire.structs import TopicPartition
from aiokafkawire.telemetry import TelemetryReporter, Value, consumer_values, start_reporter
from aiokafkawire.telemetry import client_instance_id as telemetry_instance_id

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from aiokafkawire.client_config import CommonOptions
    from aiokafkawire.cluster.cluster import Cluster

    class _ConsumerOptions(CommonOptions, total=False):
        """The keyword options of :class:`Consumer` besides the deserializers (for the
        constructor overloads)."""

        group_id: str | None
        group_instance_id: str | None
        group_protocol: str
        group_remote_assignor: str | None
        partition_assignment_strategy: Sequence[str | PartitionAssignor | type]
        session_timeout_ms: int
        heartbeat_interval_ms: int
        max_poll_interval_ms: int
        rebalance_timeout_ms: int | None
        auto_offset_reset: str
        enable_auto_commit: bool
        auto_commit_interval_ms: int
        isolation_level: str
        fetch_min_bytes: int
        fetch_max_wait_ms: int
        fetch_max_bytes: int
        max_partition_fetch_bytes: int
        max_poll_records: int
        check_crcs: bool
        client_rack: str | None
        fetch_sessions: bool
        pattern_refresh_interval_ms: int


log = logging.getLogger("aiokafkawire.consumer")

__all__ = ["CommitOffsets", "Consumer", "ConsumerRebalanceListener"]


class ConsumerRebalanceListener:
    """Base class for rebalance listeners; methods may be plain functions or coroutines.

    ``on_partitions_revoked`` runs before partitions are given up cleanly (commits made there
    succeed); ``on_partitions_lost`` when the membership ended without a clean hand-over (it
    defaults to ``on_partitions_revoked``); ``on_partitions_assigned`` after new partitions
    arrive.  With a cooperative assignor only the partitions that move are passed.
    """

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        """Partitions are about to be taken away."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        """Partitions were added to the assignment."""

    def on_partitions_lost(self, lost: set[TopicPartition]) -> Any:
        """Partitions were lost (already owned by someone else); do not commit them."""
        return self.on_partitions_revoked(lost)


class Consumer(Generic[K, V]):  # long: public API (delegating to collaborators) + option map
    """Reads records from Kafka topics, alone (:meth:`assign`) or in a consumer group.

    Options (besides the common connection options of every client, e.g. ``bootstrap_servers``,
    ``client_id``, ``security_protocol``, ``api_version``):

    - ``group_id``: the consumer group (``None``: no group, no commits; ``""`` is refused).
    - ``group_instance_id``: a static member id (KIP-345): a restart within the session
      timeout keeps the assignment without a rebalance.
    - ``group_protocol``: ``"classic"`` (default) or ``"consumer"`` (KIP-848, broker-side
      assignment).
    - ``group_remote_assignor``: the broker-side assignor for ``"consumer"`` groups.
    - ``partition_assignment_strategy``: assignor names or objects, in order of preference
      (default range and cooperative-sticky, as the Java client).
    - ``session_timeout_ms``: the coordinator drops a member it has not heard from this long.
    - ``heartbeat_interval_ms``: how often the member heartbeats (below the session timeout).
    - ``max_poll_interval_ms``: a member that does not poll for this long leaves the group
      (and rejoins at its next poll).
    - ``rebalance_timeout_ms``: how long the coordinator waits for members to rejoin
      (default: ``max_poll_interval_ms``).
    - ``auto_offset_reset``: where to start without a committed offset: ``"earliest"``,
      ``"latest"`` or ``"none"`` (raise :class:`~aiokafkawire.errors.NoOffsetForPartitionError`
      / :class:`~aiokafkawire.errors.OffsetOutOfRangeClientError`).
    - ``enable_auto_commit``: commit the positions every ``auto_commit_interval_ms``, on
      revocation and on close.
    - ``auto_commit_interval_ms``: the period of automatic commits.
    - ``isolation_level``: ``"read_uncommitted"`` or ``"read_committed"`` (records of aborted
      transactions are dropped, open transactions hold reading back at the last stable offset).
    - ``fetch_min_bytes``: the broker answers a fetch once it has this many bytes...
    - ``fetch_max_wait_ms``: ...or after this long.
    - ``fetch_max_bytes``: the most bytes a fetch response may carry.
    - ``max_partition_fetch_bytes``: the most bytes per partition in a fetch response.
    - ``max_poll_records``: the most records one ``getmany`` (or iteration step) hands out.
    - ``check_crcs``: verify the CRC of every record batch.
    - ``client_rack``: the consumer's rack, to fetch from a replica in it (KIP-392).
    - ``fetch_sessions``: incremental fetch sessions (KIP-227): brokers send only what changed.
    - ``pattern_refresh_interval_ms``: with a pattern subscription, how often the topic list is
      fetched again, so that new matching topics are joined within this time (subscribed
      topics that do not exist yet are looked for with backoff up to ``retry_backoff_max_ms``).
    - ``key_deserializer`` / ``value_deserializer``: ``bytes | None -> Any``, or
      ``deserializer(data, ctx)`` receiving a
      :class:`~aiokafkawire.serialization.SerializationContext`, possibly ``async`` (a
      schema-registry deserializer).  A failure raises
      :class:`~aiokafkawire.serialization.RecordDeserializationError` at the record's position.
    """

    @overload
    def __init__(
        self,
        *topics: str,
        key_deserializer: AnyAsyncDeserializer[K],
        value_deserializer: AnyAsyncDeserializer[V],
        **options: Unpack[_ConsumerOptions],
    ) -> None: ...
    @overload
    def __init__(
        self,
        *topics: str,
        key_deserializer: SyncDeserializer[K] | None = None,
        value_deserializer: AnyAsyncDeserializer[V],
        **options: Unpack[_ConsumerOptions],
    ) -> None: ...
    @overload
    def __init__(
        self,
        *topics: str,
        key_deserializer: AnyAsyncDeserializer[K],
        value_deserializer: SyncDeserializer[V] | None = None,
        **options: Unpack[_ConsumerOptions],
    ) -> None: ...
    @overload
    def __init__(
        self,
        *topics: str,
        key_deserializer: AnyDeserializer[K] | None = None,
        value_deserializer: AnyDeserializer[V] | None = None,
        **options: Unpack[_ConsumerOptions],
    ) -> None: ...
    def __init__(  # type: ignore[misc]  # long: the documented signature, one line per option
        self,
        *topics: str,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        group_protocol: str = "classic",
        group_remote_assignor: str | None = None,
        partition_assignment_strategy: Sequence[str | PartitionAssignor | type] = (
            "range",
            "cooperative-sticky",
        ),
        session_timeout_ms: int = 45_000,
        heartbeat_interval_ms: int = 3_000,
        max_poll_interval_ms: int = 300_000,
        rebalance_timeout_ms: int | None = None,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        isolation_level: str = "read_uncommitted",
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52_428_800,
        max_partition_fetch_bytes: int = 1_048_576,
        max_poll_records: int = 500,
        check_crcs: bool = True,
        client_rack: str | None = None,
        fetch_sessions: bool = True,
        pattern_refresh_interval_ms: int = 5_000,
        key_deserializer: AnyDeserializer[K] | None = None,
        value_deserializer: AnyDeserializer[V] | None = None,
        **options: Unpack[CommonOptions],
    ) -> None:
        """Configure the consumer; nothing connects until :meth:`start` (or ``async with``).

        Wrong option types raise :class:`~aiokafkawire.errors.ConfigTypeError`, bad values
        :class:`~aiokafkawire.errors.ConfigError`, naming the option.
        """
        named: dict[str, Any] = {
            "group_id": group_id,
            "group_instance_id": group_instance_id,
            "group_protocol": group_protocol,
            "group_remote_assignor": group_remote_assignor,
            "partition_assignment_strategy": partition_assignment_strategy,
            "session_timeout_ms": session_timeout_ms,
            "heartbeat_interval_ms": heartbeat_interval_ms,
            "max_poll_interval_ms": max_poll_interval_ms,
            "rebalance_timeout_ms": rebalance_timeout_ms,
            "auto_offset_reset": auto_offset_reset,
            "enable_auto_commit": enable_auto_commit,
            "auto_commit_interval_ms": auto_commit_interval_ms,
            "isolation_level": isolation_level,
            "fetch_min_bytes": fetch_min_bytes,
            "fetch_max_wait_ms": fetch_max_wait_ms,
            "fetch_max_bytes": fetch_max_bytes,
            "max_partition_fetch_bytes": max_partition_fetch_bytes,
            "max_poll_records": max_poll_records,
            "check_crcs": check_crcs,
            "client_rack": client_rack,
            "fetch_sessions": fetch_sessions,
            "pattern_refresh_interval_ms": pattern_refresh_interval_ms,
            "key_deserializer": key_deserializer,
            "value_deserializer": value_deserializer,
        }
        self._options = opts = consumer_options(topics, named, dict(options))
        self._pattern_refresh_ms = opts.pattern_refresh_interval_ms
        self._common = opts.common
        self._group_id = group_id
        self._group_protocol = group_protocol
        self._enable_auto_commit = enable_auto_commit and group_id is not None
        self._max_poll_records = max_poll_records
        self._group_config = opts.group_config()
        self._fetch_config = opts.fetch_config()
        # Context / async deserializers, applied after a drain (plain ones run in the decoder).
        self._deserializers = context_deserializers(key_deserializer, value_deserializer)
        # Exists from the start: subscribe() and assign() before start() take effect at start.
        self._subs = subs = SubscriptionState(self._fetch_config.auto_offset_reset)
        if topics:
            subs.subscribe(topics)
        # The collaborators, each owning its state (issue 24 room 5).
        self._parts = parts = ConsumerParts()
        self._iterated = IteratedRecords(subs, parts)
        self._commits = Commits(
            subs,
            parts,
            group_id=group_id,
            group_config=self._group_config,
            auto_commit_interval=auto_commit_interval_ms / 1000,
        )
        self._positions = PositionControls(
            subs,
            parts,
            self._discard,
            auto_offset_reset=self._fetch_config.auto_offset_reset,
            request_timeout_ms=self._common.request_timeout_ms,
        )
        self._metrics = ConsumerMetrics(self._common, subs, parts)
        self._tasks = TaskSupervisor("consumer", self._task_failed)
        self._telemetry: TelemetryReporter | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Consumer:
        """A consumer configured with Java or librdkafka property names.

        ``Consumer.from_config({"bootstrap.servers": "host:9092", ...})``: each property maps to
        one option (see :data:`aiokafkawire.client_properties.PROPERTIES`); aiokafkawire's own
        option names may be mixed in.  An unsupported property raises ConfigError naming it.
        """
        return cls(**translate_properties("consumer", config))

    def __repr__(self) -> str:
        return f"<Consumer group={self._group_id!r} state={self.state}>"

    #: What a dropped consumer's warning names: its class, how to stop it (compat sets its own).
    _dropped_as = ("Consumer", "consumer.stop()")

    def __del__(self) -> None:
        # Started and dropped without close() (as aiokafka's "Unclosed AIOKafkaConsumer").
        parts = getattr(self, "_parts", None)
        if parts is not None and parts.started and not parts.closed:
            warn_unclosed(self, *self._dropped_as)

    @property
    def state(self) -> str:
        """One of "unjoined", "rebalancing", "stable", "fatal", "manual", "closed"."""
        return self._parts.state(self._subs)

    def _require_started(self) -> tuple[Cluster, SubscriptionState, Fetcher]:
        cluster, fetcher = self._parts.require_started()
        return cluster, self._subs, fetcher

    def _discard(self, partitions: Iterable[TopicPartition]) -> None:
        discard_buffered(self._parts, self._iterated, partitions)

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Connect (bootstrap metadata), start fetching and, when subscribed, join the group
        (or, without a ``group_id``, read every partition of the subscribed topics).

        When it fails, everything it started is stopped again before the error is raised.
        """
        if self._parts.started:
            return
        if self._parts.closed:
            raise errors.ClientClosedError("the consumer is closed")
        try:
            await self._start_parts()
        except BaseException:
            await self._stop_parts()
            raise
        self._parts.started = True
        self._telemetry = start_reporter(
            self._common,
            self._parts.cluster,
            self._tasks,
            "consumer",
            self._telemetry_values,
            {"group_id": self._group_id},
        )
        if self._enable_auto_commit:
            self._tasks.start("auto-commit", self._commits.auto_commit_loop())
        if self._subs.manual:
            self._follow_assignment()
        elif self._subs.subscribed:
            self._follow_subscription()

    async def _start_parts(self) -> None:
        parts = self._parts
        parts.cluster = cluster = self._common.build_cluster()
        await cluster.start()
        if self._group_id is not None:
            parts.offsets = GroupOffsets(
                cluster,
                self._group_id,
                self._commits.identity,
                request_timeout_ms=self._common.request_timeout_ms,
                retry_backoff_ms=self._common.retry_backoff_ms,
                # Always, as the Java consumer: a plain OffsetFetch is answered at the
                # coordinator's high watermark, which just after a takeover can lag what the
                # previous coordinator acknowledged (an older offset: records read twice).
                require_stable=True,
            )
        lookup = self._commits.committed_lookup if parts.offsets is not None else None
        parts.fetcher = Fetcher(cluster, self._subs, self._fetch_config, committed_lookup=lookup)
        parts.fetcher.start()

    async def _stop_parts(self) -> None:
        """Stop what :meth:`start` started (after a failed start, or at the end of close)."""
        try:
            await self._tasks.stop()
            if self._parts.no_group is not None:
                await self._parts.no_group.close()
        finally:
            parts = self._parts
            fetcher, cluster = parts.fetcher, parts.cluster
            parts.fetcher = parts.cluster = parts.offsets = parts.no_group = None
            if fetcher is not None:
                await fetcher.close()
            if cluster is not None:
                await cluster.close()

    async def close(self, timeout: float | None = None) -> None:
        """Commit (with auto-commit), leave the group, stop every task and close connections.

        ``timeout``: how many seconds the close may take (``None``: as long as its steps take).
        A step cut short (the terminating telemetry push, the commit and revocation, the
        LeaveGroup) is logged as a warning; the consumer still ends closed, every task stopped.
        """
        budget = CloseBudget(
            "consumer", timeout_seconds("Consumer.close", timeout, None, None), log
        )
        if self._parts.closed:
            return
        self._parts.closed = True
        if not self._parts.started:
            return
        try:
            if self._telemetry is not None:  # the terminating push (KIP-714)
                await budget.step("the telemetry push", self._telemetry.close())
            await self._tasks.stop()
            if self._parts.membership is not None:
                await budget.step("leaving the group", self._parts.membership.close())
            elif self._enable_auto_commit and self._subs.assignment:
                try:
                    commit = self._commits.commit_positions(list(self._subs.assignment))
                    await budget.step("the commit", commit)
                except errors.KafkaError as exc:
                    log.warning("commit on close failed: %s", exc)
        finally:
            await self._stop_parts()

    async def stop(self) -> None:
        """The same as :meth:`close` (aiokafka's name)."""
        await self.close()

    def _telemetry_values(self) -> list[Value]:
        assignment = self._subs.assignment
        membership = self._parts.membership
        return consumer_values(
            self._metrics.records_consumed,
            (
                s.highwater - s.position
                if s.highwater is not None and s.position is not None
                else None
                for s in assignment.values()
            ),
            len(assignment),
            membership.rebalances if membership else 0,
            membership.rebalance_time_total_s if membership else 0.0,
            self._common.metrics,
        )

    async def client_instance_id(self, timeout: float = 5.0) -> uuid.UUID | None:
        """The client instance id the cluster gave this consumer (KIP-714), as Java's
        ``clientInstanceId(timeout)``; None when the broker does not support client telemetry or
        gave none within ``timeout`` seconds.

        Raises :class:`~aiokafkawire.errors.IllegalStateError` with ``enable_metrics_push=False``
        or before :meth:`start`.
        """
        return await telemetry_instance_id(
            self._telemetry, self._common.enable_metrics_push, "consumer", timeout
        )

    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _task_failed(self, name: str, exc: BaseException) -> None:
        log.error("consumer task %s failed", name, exc_info=exc)
        if name == "auto-commit" and not self._parts.closed:
            self._tasks.restart(name, self._commits.auto_commit_loop)

    # ----------------------------------------------------------------- subscription

    def subscribe(
        self,
        topics: Iterable[str] = (),
        pattern: str | re.Pattern[str] | None = None,
        listener: Any = None,
    ) -> None:
        """Subscribe to topics (or a regex ``pattern``) as a member of ``group_id``.

        Without a ``group_id`` every partition of the topics is read, with no group and no
        commits (new partitions and new matching topics are followed on metadata refresh).
        Before :meth:`start` the subscription takes effect at start.
        ``listener`` gets ``on_partitions_revoked/assigned/lost`` calls (see
        :class:`ConsumerRebalanceListener`).
        """
        if self._parts.closed:
            raise errors.ClientClosedError("the consumer is closed")
        subs = self._subs
        topics = [topics] if isinstance(topics, str) else list(topics)
        if pattern is not None:
            if topics:
                raise errors.ConfigError("give either topics or pattern, not both")
            if not isinstance(pattern, (str, re.Pattern)):
                raise errors.KafkaTypeError(
                    f"pattern must be a str or re.Pattern, got {type(pattern).__name__}"
                )
            subs.subscribe_pattern(pattern, listener)
        else:
            if not topics:
                raise errors.ConfigError("subscribe() needs topics or a pattern")
            for topic in topics:
                if not isinstance(topic, str) or not topic:
                    raise errors.KafkaTypeError(
                        f"topics must be non-empty strings, got {topic!r}; "
                        "pass a list of names (or pattern=...)"
                    )
            subs.subscribe(topics, listener)
        if self._parts.started:
            self._follow_subscription()

    def _follow_subscription(self) -> None:
        """Ask the metadata the subscription needs; join (or update) the group."""
        cluster = self._parts.cluster
        assert cluster is not None and self._parts.fetcher is not None
        subs = self._subs
        if subs.pattern is not None:
            cluster.set_awaited_topics(())
            # New matching topics are seen within pattern_refresh_interval_ms.
            cluster.want_all_topics(True, refresh_ms=self._pattern_refresh_ms)
        else:
            cluster.want_all_topics(False)
            # A subscribed topic that does not exist yet is looked for with backoff.
            cluster.set_awaited_topics(subs.topics)
        cluster.request_update()
        if self._group_config is None:
            if self._parts.no_group is None:
                self._parts.no_group = NoGroupAssignment(cluster, subs, self._discard)
                self._parts.no_group.start()
            else:
                self._parts.no_group.subscription_changed()
        elif self._parts.membership is None:
            self._parts.membership = self._new_membership()
            self._parts.membership.start()
        else:
            self._parts.membership.request_rejoin("the subscription changed")

    def _new_membership(self) -> Membership:
        assert self._parts.cluster is not None and self._parts.fetcher is not None
        assert self._group_config is not None
        kwargs: dict[str, Any] = {
            "offsets": self._parts.offsets,
            "commit_positions": (
                self._commits.commit_positions if self._enable_auto_commit else None
            ),
            "discard_buffered": self._discard,
        }
        if self._group_protocol == "consumer":
            from aiokafkawire.consumer.group.consumer_protocol import ConsumerProtocolMembership

            return ConsumerProtocolMembership(
                self._parts.cluster, self._subs, self._group_config, **kwargs
            )
        return ClassicMembership(self._parts.cluster, self._subs, self._group_config, **kwargs)

    def unsubscribe(self) -> None:
        """Leave the group (revoking partitions in the background) and drop the assignment."""
        _, subs, fetcher = self._require_started()
        membership = self._parts.membership
        self._parts.membership = None
        if membership is not None:
            self._tasks.start("leave", membership.close())
        no_group = self._parts.no_group
        self._parts.no_group = None
        if no_group is not None:
            self._tasks.start("no-group-stop", no_group.close())
        fetcher.discard(list(subs.assignment))
        self._iterated.records.clear()
        subs.unsubscribe()
        cluster = self._parts.cluster
        assert cluster is not None
        cluster.set_awaited_topics(())
        cluster.want_all_topics(False)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions, without group management.

        Before :meth:`start` the assignment takes effect at start.
        """
        if self._parts.closed:
            raise errors.ClientClosedError("the consumer is closed")
        self._subs.assign_manually([TopicPartition(*tp) for tp in partitions])
        if self._parts.started:
            self._follow_assignment()

    def _follow_assignment(self) -> None:
        cluster = self._parts.cluster
        assert cluster is not None
        if cluster.add_topics({tp.topic for tp in self._subs.assignment}):
            cluster.request_update()

    def assignment(self) -> set[TopicPartition]:
        """The partitions currently assigned."""
        return set(self._subs.assignment)

    def subscription(self) -> set[str]:
        """The subscribed topics."""
        return set(self._subs.topics)

    async def topics(self) -> set[str]:
        """Every topic of the cluster (internal topics excluded); fetches fresh metadata."""
        cluster, _, _ = self._require_started()
        response = await cluster.list_all_topics()
        return {name for name, info in response.items() if not info.is_internal}

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The partition ids of ``topic`` from the metadata at hand (None when unknown).

        Like aiokafka's, this does not wait: call :meth:`topics` first (or subscribe) to
        refresh the metadata.
        """
        cluster, _, _ = self._require_started()
        info = cluster.metadata.topics.get(topic)
        if info is None or info.error_code:
            return None
        return set(info.partitions)

    async def wait_for_assignment(
        self,
        legacy_timeout_ms: float | None = None,
        /,
        *,
        timeout: float | None = None,
        timeout_ms: float | None = None,
    ) -> set[TopicPartition]:
        """Wait until partitions are assigned; the assignment.

        Raises :class:`~aiokafkawire.errors.KafkaTimeoutError` after ``timeout`` seconds
        (``None``: wait as long as needed).  Deprecated for one release: ``timeout_ms=`` and a
        positional number, both milliseconds as before (a ``DeprecationWarning`` each).
        """
        seconds = timeout_seconds(
            "Consumer.wait_for_assignment", timeout, timeout_ms, legacy_timeout_ms
        )
        _, subs, _ = self._require_started()
        deadline = None if seconds is None else time.monotonic() + seconds
        while not subs.assignment:
            if self._parts.membership is not None:
                await self._parts.membership.on_poll()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise errors.KafkaTimeoutError("no partitions were assigned in time")
            await wait_event(
                subs.assignment_event, 0.5 if remaining is None else min(remaining, 0.5)
            )
        return set(subs.assignment)

    # ----------------------------------------------------------------- positions

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` from ``offset`` next."""
        self._positions.seek(partition, offset)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Read from the earliest available offset (all assigned partitions by default)."""
        await self._positions.seek_to_beginning(*partitions)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Read only records written from now on (all assigned partitions by default)."""
        await self._positions.seek_to_end(*partitions)

    async def seek_to_committed(
        self, *partitions: TopicPartition
    ) -> dict[TopicPartition, int | None]:
        """Read from the committed offsets; returns them (``None``: nothing committed).

        A partition with nothing committed goes back to where ``auto_offset_reset`` put it when
        this consumer began reading it (so after an aborted transaction its input is read
        again), or, when it never did (the partition was seeked by hand), to the
        ``auto_offset_reset`` position now, as a new member of the group would start.  With
        ``auto_offset_reset="none"`` such a partition raises
        :class:`~aiokafkawire.errors.NoOffsetForPartitionError` (and nothing is moved).
        """
        return await self._positions.seek_to_committed(*partitions)

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record to be handed out (looked up when not yet known)."""
        return await self._positions.position(partition)

    def highwater(self, partition: TopicPartition) -> int | None:
        """The high watermark last seen in a fetch response."""
        return self._positions.highwater(partition)

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The last stable offset last seen in a fetch response (v4+)."""
        return self._positions.last_stable_offset(partition)

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop handing out (and fetching) records of these partitions."""
        self._positions.pause(*partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        """Undo :meth:`pause`."""
        self._positions.resume(*partitions)

    def paused(self) -> set[TopicPartition]:
        """The paused partitions."""
        return self._positions.paused()

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The earliest offset of each partition."""
        return await self._positions.beginning_offsets(partitions)

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record (the LSO with read_committed)."""
        return await self._positions.end_offsets(partitions)

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset whose timestamp is at or after each given timestamp (ms)."""
        return await self._positions.offsets_for_times(timestamps)

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When the last fetch response for ``partition`` arrived (ms since the epoch).

        The :meth:`highwater` seen then is that fresh; None before the first response.
        """
        return self._positions.last_poll_timestamp(partition)

    # ----------------------------------------------------------------- commits

    async def committed(self, partition: TopicPartition) -> int | None:
        """The committed offset of ``partition`` in this group (``None`` when none)."""
        return await self._commits.committed(partition)

    async def committed_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets with metadata and leader epoch."""
        return await self._commits.committed_offsets(partitions)

    async def commit(self, offsets: CommitOffsets | None = None) -> None:
        """Commit the positions of all assigned partitions, or the given offsets.

        ``offsets`` maps partitions to the offset of the next record to read: an int, an
        ``(offset, metadata)`` tuple or an :class:`OffsetAndMetadata`.  Raises
        :class:`~aiokafkawire.errors.CommitFailedError` when the group moved on without us.
        A subscribed member commits only partitions assigned to it: a partition revoked
        (once ``on_partitions_revoked`` returned) raises ``CommitFailedError`` too.
        """
        await self._commits.commit(offsets)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group membership, for ``Producer.send_offsets_to_transaction``."""
        return self._commits.group_metadata()

    # ----------------------------------------------------------------- metrics

    def metrics(self) -> dict[str, Any]:
        """A snapshot of this consumer's counters (see :mod:`aiokafkawire.metrics`).

        ``brokers``: per broker request counts, latency percentiles per API, in-flight requests,
        bytes in/out, throttle time.  ``consumer``: records consumed and their rate since the
        previous call, the fetch latency over all brokers (it includes the broker's long-poll
        wait, up to ``fetch_max_wait_ms``), lag per assigned partition (high watermark minus
        position, None until both are known), rebalances and their duration.
        """
        return self._metrics.snapshot()

    # ----------------------------------------------------------------- reading

    async def getmany(
        self,
        *partitions: TopicPartition,
        timeout_ms: int = 0,
        max_records: int | None = None,
    ) -> dict[TopicPartition, list[ConsumerRecord[K, V]]]:
        """Records fetched so far, waiting up to ``timeout_ms`` for some to arrive.

        Positions advance past the returned records.  Only ``partitions`` when given.
        """
        _, _, fetcher = self._require_started()
        limit = max_records or self._max_poll_records
        self._iterated.flush(fetcher)
        deadline = time.monotonic() + timeout_ms / 1000
        wanted = partitions or None
        while True:
            if self._parts.membership is not None:
                await self._parts.membership.on_poll()
            if self._deserializers is None:
                data, _ = fetcher.drain(limit, wanted)
            else:
                data, ends = fetcher.drain(limit, wanted, advance=False)
                await deserialize_drained(self._deserializers, data, ends, self._subs, fetcher)
                for tp, update in ends.items():
                    fetcher.apply_position(tp, update)
            if data:
                self._metrics.records_consumed += sum(map(len, data.values()))
                return data
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._parts.closed:
                return {}
            event = fetcher.data_event()
            if event.is_set():
                # Data for other partitions (or paused ones) only: do not spin on it.
                await asyncio.sleep(min(remaining, 0.005))
                continue
            await wait_event(event, min(remaining, 1.0))

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[K, V]:
        """The next record (waiting as long as needed); its position advances past it."""
        if partitions:
            while True:
                data = await self.getmany(*partitions, timeout_ms=1000, max_records=1)
                for records in data.values():
                    return records[0]
        return await self.__anext__()

    def __aiter__(self) -> Consumer[K, V]:
        return self

    async def __anext__(self) -> ConsumerRecord[K, V]:
        """The next record; iteration stops when the consumer is closed."""
        iterated = self._iterated
        pending = iterated.records
        if pending:
            return iterated.hand_out()
        _, _, fetcher = self._require_started()
        while True:
            if self._parts.closed:
                raise StopAsyncIteration
            if self._parts.membership is not None:
                await self._parts.membership.on_poll()
            data, ends = fetcher.drain(self._max_poll_records, advance=False)
            if self._deserializers is not None and data:
                await deserialize_drained(self._deserializers, data, ends, self._subs, fetcher)
            if data or ends:
                iterated.ends = ends
                for tp, update in ends.items():
                    if tp not in data:
                        fetcher.apply_position(tp, update)
                for records in data.values():
                    pending.extend(records)
                self._metrics.records_consumed += len(pending)
                if pending:
                    return iterated.hand_out()
                continue
            event = fetcher.data_event()
            if event.is_set():
                await asyncio.sleep(0.005)
                continue
            await wait_event(event, 1.0)


# The methods as defined here, whoever wraps them later (aiokafkawire.otel.instrument()): a
# caller that hands out held records itself (the aiokafka compat consumer) checks they are not.
_DEFINED_ANEXT = Consumer.__anext__
_DEFINED_GETONE = Consumer.getone
