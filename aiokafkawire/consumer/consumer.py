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
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire._waits import wait_event
from aiokafkawire.client_properties import translate_properties
from aiokafkawire.consumer._commits import CommitOffsets, CommitsMixin
from aiokafkawire.consumer._metrics import MetricsMixin
from aiokafkawire.consumer._options import consumer_options
from aiokafkawire.consumer._position_controls import PositionControlsMixin
from aiokafkawire.consumer.fetch import Fetcher
from aiokafkawire.consumer.fetch.deserialize import deserialize_drained
from aiokafkawire.consumer.group.assignors import PartitionAssignor
from aiokafkawire.consumer.group.classic import ClassicMembership
from aiokafkawire.consumer.group.membership import Membership
from aiokafkawire.consumer.group.offsets import GroupOffsets
from aiokafkawire.consumer.no_group import NoGroupAssignment
from aiokafkawire.consumer.records import ConsumerRecord
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.metrics import Rate
from aiokafkawire.serialization import AnyDeserializer, K, V, context_deserializers
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from aiokafkawire.client_config import CommonOptions

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


class Consumer(
    Generic[K, V], PositionControlsMixin, CommitsMixin, MetricsMixin
):  # long: public API + option map
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

    def __init__(  # long: the documented signature, one line per option
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
        self._auto_commit_interval = auto_commit_interval_ms / 1000
        self._max_poll_records = max_poll_records
        self._assignors = opts.assignors
        self._group_config = opts.group_config()
        self._fetch_config = opts.fetch_config()
        # Context / async deserializers, applied after a drain (plain ones run in the decoder).
        self._deserializers = context_deserializers(key_deserializer, value_deserializer)
        self._cluster = None
        # Exists from the start: subscribe() and assign() before start() take effect at start.
        self._subs = SubscriptionState(self._fetch_config.auto_offset_reset)
        if topics:
            self._subs.subscribe(topics)
        self._no_group = None
        self._fetcher = None
        self._membership = None
        self._offsets = None
        self._tasks = TaskSupervisor("consumer", self._task_failed)
        self._iter_records = deque()
        self._iter_ends = {}
        self._last_committed = {}
        self._started = False
        self._closed = False
        self._records_consumed = 0
        self._consume_rate = Rate()

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

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Connect (bootstrap metadata), start fetching and, when subscribed, join the group
        (or, without a ``group_id``, read every partition of the subscribed topics).

        When it fails, everything it started is stopped again before the error is raised.
        """
        if self._started:
            return
        if self._closed:
            raise errors.ClientClosedError("the consumer is closed")
        try:
            await self._start_parts()
        except BaseException:
            await self._stop_parts()
            raise
        self._started = True
        if self._enable_auto_commit:
            self._tasks.start("auto-commit", self._auto_commit_loop())
        if self._subs.manual:
            self._follow_assignment()
        elif self._subs.subscribed:
            self._follow_subscription()

    async def _start_parts(self) -> None:
        self._cluster = self._common.build_cluster()
        await self._cluster.start()
        if self._group_id is not None:
            self._offsets = GroupOffsets(
                self._cluster,
                self._group_id,
                self._identity,
                request_timeout_ms=self._common.request_timeout_ms,
                retry_backoff_ms=self._common.retry_backoff_ms,
                # Always, as the Java consumer: a plain OffsetFetch is answered at the
                # coordinator's high watermark, which just after a takeover can lag what the
                # previous coordinator acknowledged (an older offset: records read twice).
                require_stable=True,
            )
        self._fetcher = Fetcher(
            self._cluster,
            self._subs,
            self._fetch_config,
            committed_lookup=self._committed_lookup if self._offsets is not None else None,
        )
        self._fetcher.start()

    async def _stop_parts(self) -> None:
        """Stop what :meth:`start` started (after a failed start, or at the end of close)."""
        try:
            await self._tasks.stop()
            if self._no_group is not None:
                await self._no_group.close()
        finally:
            fetcher, cluster = self._fetcher, self._cluster
            self._fetcher = self._cluster = self._offsets = self._no_group = None
            if fetcher is not None:
                await fetcher.close()
            if cluster is not None:
                await cluster.close()

    async def close(self) -> None:
        """Commit (with auto-commit), leave the group, stop every task and close connections."""
        if self._closed:
            return
        self._closed = True
        if not self._started:
            return
        try:
            await self._tasks.stop()
            if self._membership is not None:
                await self._membership.close()
            elif self._enable_auto_commit and self._subs.assignment:
                try:
                    await self._commit_positions(list(self._subs.assignment))
                except errors.KafkaError as exc:
                    log.warning("commit on close failed: %s", exc)
        finally:
            await self._stop_parts()

    async def stop(self) -> None:
        """The same as :meth:`close` (aiokafka's name)."""
        await self.close()

    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _task_failed(self, name: str, exc: BaseException) -> None:
        log.error("consumer task %s failed", name, exc_info=exc)
        if name == "auto-commit" and not self._closed:
            self._tasks.restart(name, self._auto_commit_loop)

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
        if self._closed:
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
        if self._started:
            self._follow_subscription()

    def _follow_subscription(self) -> None:
        """Ask the metadata the subscription needs; join (or update) the group."""
        cluster = self._cluster
        assert cluster is not None and self._fetcher is not None
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
            if self._no_group is None:
                self._no_group = NoGroupAssignment(cluster, subs, self._discard)
                self._no_group.start()
            else:
                self._no_group.subscription_changed()
        elif self._membership is None:
            self._membership = self._new_membership()
            self._membership.start()
        else:
            self._membership.request_rejoin("the subscription changed")

    def _new_membership(self) -> Membership:
        assert self._cluster is not None and self._fetcher is not None
        assert self._group_config is not None
        kwargs: dict[str, Any] = {
            "offsets": self._offsets,
            "commit_positions": self._commit_positions if self._enable_auto_commit else None,
            "discard_buffered": self._discard,
        }
        if self._group_protocol == "consumer":
            from aiokafkawire.consumer.group.consumer_protocol import ConsumerProtocolMembership

            return ConsumerProtocolMembership(
                self._cluster, self._subs, self._group_config, **kwargs
            )
        return ClassicMembership(self._cluster, self._subs, self._group_config, **kwargs)

    def unsubscribe(self) -> None:
        """Leave the group (revoking partitions in the background) and drop the assignment."""
        _, subs, fetcher = self._require_started()
        membership = self._membership
        self._membership = None
        if membership is not None:
            self._tasks.start("leave", membership.close())
        no_group = self._no_group
        self._no_group = None
        if no_group is not None:
            self._tasks.start("no-group-stop", no_group.close())
        fetcher.discard(list(subs.assignment))
        self._iter_records.clear()
        subs.unsubscribe()
        cluster = self._cluster
        assert cluster is not None
        cluster.set_awaited_topics(())
        cluster.want_all_topics(False)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions, without group management.

        Before :meth:`start` the assignment takes effect at start.
        """
        if self._closed:
            raise errors.ClientClosedError("the consumer is closed")
        self._subs.assign_manually([TopicPartition(*tp) for tp in partitions])
        if self._started:
            self._follow_assignment()

    def _follow_assignment(self) -> None:
        cluster = self._cluster
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

    async def wait_for_assignment(self, timeout_ms: int | None = None) -> set[TopicPartition]:
        """Wait until partitions are assigned; raises KafkaTimeoutError after ``timeout_ms``."""
        _, subs, _ = self._require_started()
        deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        while not subs.assignment:
            if self._membership is not None:
                await self._membership.on_poll()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise errors.KafkaTimeoutError("no partitions were assigned in time")
            await wait_event(
                subs.assignment_event, 0.5 if remaining is None else min(remaining, 0.5)
            )
        return set(subs.assignment)

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
        self._flush_iterator()
        deadline = time.monotonic() + timeout_ms / 1000
        wanted = partitions or None
        while True:
            if self._membership is not None:
                await self._membership.on_poll()
            if self._deserializers is None:
                data, _ = fetcher.drain(limit, wanted)
            else:
                data, ends = fetcher.drain(limit, wanted, advance=False)
                await deserialize_drained(self._deserializers, data, ends, self._subs, fetcher)
                for tp, update in ends.items():
                    fetcher.apply_position(tp, update)
            if data:
                self._records_consumed += sum(map(len, data.values()))
                return data
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._closed:
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
        pending = self._iter_records
        if pending:
            record = pending.popleft()
            self._advance_iterated(record)
            return record
        _, _, fetcher = self._require_started()
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._membership is not None:
                await self._membership.on_poll()
            data, ends = fetcher.drain(self._max_poll_records, advance=False)
            if self._deserializers is not None and data:
                await deserialize_drained(self._deserializers, data, ends, self._subs, fetcher)
            if data or ends:
                self._iter_ends = ends
                for tp, update in ends.items():
                    if tp not in data:
                        fetcher.apply_position(tp, update)
                for records in data.values():
                    pending.extend(records)
                self._records_consumed += len(pending)
                if pending:
                    record = pending.popleft()
                    self._advance_iterated(record)
                    return record
                continue
            event = fetcher.data_event()
            if event.is_set():
                await asyncio.sleep(0.005)
                continue
            await wait_event(event, 1.0)
