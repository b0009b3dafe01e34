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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.client_config import (
    check_choice,
    check_int,
    check_number,
    check_type,
    split_common_options,
    unknown_options_error,
)
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.consumer._waits import wait_event
from aiokafkawire.consumer.fetch import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, FetchConfig, Fetcher
from aiokafkawire.consumer.group.assignors import PartitionAssignor, create_assignor
from aiokafkawire.consumer.group.classic import ClassicMembership
from aiokafkawire.consumer.group.membership import GroupConfig, Membership
from aiokafkawire.consumer.group.offsets import GroupOffsets, MemberIdentity, RebalanceNeeded
from aiokafkawire.consumer.group.states import GroupState
from aiokafkawire.consumer.records import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
)
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.metrics import Rate
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer")

__all__ = ["Consumer", "ConsumerRebalanceListener"]

_RESETS = ("earliest", "latest", "none")
_FETCH_KEY = 1  # the Fetch API: its latency is the consumer's fetch latency
_ISOLATION = ("read_uncommitted", "read_committed")
CommitOffsets = Mapping[TopicPartition, "OffsetAndMetadata | int | tuple[int, str]"]


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


class Consumer:
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
    - ``key_deserializer`` / ``value_deserializer``: ``bytes | None -> Any``.
    """

    def __init__(
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
        key_deserializer: Callable[[bytes | None], Any] | None = None,
        value_deserializer: Callable[[bytes | None], Any] | None = None,
        **options: Any,
    ) -> None:
        """Configure the consumer; nothing connects until :meth:`start` (or ``async with``).

        Wrong option types raise :class:`~aiokafkawire.errors.ConfigTypeError`, bad values
        :class:`~aiokafkawire.errors.ConfigError`, naming the option.
        """
        common, rest = split_common_options(dict(options))
        if rest:
            raise unknown_options_error("Consumer", rest)
        for topic in topics:
            check_type("topic", topic, str)
        check_type("group_id", group_id, str, none_ok=True)
        if group_id is not None and not group_id.strip():
            # The Java client refuses it too: such a group never gets an assignment.
            raise errors.ConfigError(
                "group_id must not be empty; pass group_id=None to consume without a group"
            )
        check_type("group_instance_id", group_instance_id, str, none_ok=True)
        check_choice("auto_offset_reset", auto_offset_reset, _RESETS)
        check_choice("isolation_level", isolation_level, _ISOLATION)
        check_choice("group_protocol", group_protocol, ("classic", "consumer"))
        check_int("max_poll_records", max_poll_records, minimum=1)
        for name, value, minimum in (
            ("session_timeout_ms", session_timeout_ms, 1),
            ("heartbeat_interval_ms", heartbeat_interval_ms, 1),
            ("max_poll_interval_ms", max_poll_interval_ms, 1),
            ("auto_commit_interval_ms", auto_commit_interval_ms, 1),
            ("fetch_max_wait_ms", fetch_max_wait_ms, 0),
            ("pattern_refresh_interval_ms", pattern_refresh_interval_ms, 1),
        ):
            check_number(name, value, minimum=minimum)
        check_number("rebalance_timeout_ms", rebalance_timeout_ms, minimum=1, none_ok=True)
        for name, value, minimum in (
            ("fetch_min_bytes", fetch_min_bytes, 0),
            ("fetch_max_bytes", fetch_max_bytes, 1),
            ("max_partition_fetch_bytes", max_partition_fetch_bytes, 1),
        ):
            check_int(name, value, minimum=minimum)
        for name, flag in (
            ("enable_auto_commit", enable_auto_commit),
            ("check_crcs", check_crcs),
            ("fetch_sessions", fetch_sessions),
        ):
            check_type(name, flag, bool)
        for name, function in (
            ("key_deserializer", key_deserializer),
            ("value_deserializer", value_deserializer),
        ):
            if function is not None and not callable(function):
                raise errors.ConfigTypeError(
                    f"{name} must be a callable taking bytes or None, got {type(function).__name__}"
                )
        if heartbeat_interval_ms >= session_timeout_ms:
            raise errors.ConfigError("heartbeat_interval_ms must be below session_timeout_ms")
        self._pattern_refresh_ms = pattern_refresh_interval_ms
        self._common = common
        self._group_id = group_id
        self._group_protocol = group_protocol
        self._enable_auto_commit = enable_auto_commit and group_id is not None
        self._auto_commit_interval = auto_commit_interval_ms / 1000
        self._max_poll_records = max_poll_records
        self._assignors = [create_assignor(a) for a in partition_assignment_strategy]
        self._group_config = (
            GroupConfig(
                group_id=group_id,
                group_instance_id=group_instance_id,
                session_timeout_ms=session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                max_poll_interval_ms=max_poll_interval_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                retry_backoff_ms=common.retry_backoff_ms,
                request_timeout_ms=common.request_timeout_ms,
                client_rack=client_rack,
                assignors=self._assignors,
                group_remote_assignor=group_remote_assignor,
            )
            if group_id is not None
            else None
        )
        self._fetch_config = FetchConfig(
            auto_offset_reset=auto_offset_reset,
            check_crcs=check_crcs,
            client_rack=client_rack or "",
            fetch_max_bytes=fetch_max_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_min_bytes=fetch_min_bytes,
            fetch_sessions=fetch_sessions,
            isolation_level=isolation_level,
            key_deserializer=key_deserializer,
            value_deserializer=value_deserializer,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            request_timeout_ms=common.request_timeout_ms,
            retry_backoff_ms=common.retry_backoff_ms,
        )
        self._initial_topics = list(topics)
        self._cluster: Cluster | None = None
        self._subs: SubscriptionState | None = None
        self._fetcher: Fetcher | None = None
        self._membership: Membership | None = None
        self._offsets: GroupOffsets | None = None
        self._tasks = TaskSupervisor("consumer", self._task_failed)
        self._iter_records: deque[ConsumerRecord] = deque()
        self._iter_ends: dict[TopicPartition, Any] = {}
        self._last_committed: dict[TopicPartition, int] = {}
        self._started = False
        self._closed = False
        self._records_consumed = 0
        self._consume_rate = Rate()

    def __repr__(self) -> str:
        return f"<Consumer group={self._group_id!r} state={self.state}>"

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Connect (bootstrap metadata), start fetching and, with topics given, join the group."""
        if self._started:
            return
        if self._closed:
            raise errors.ClientClosedError("the consumer is closed")
        self._cluster = self._common.build_cluster()
        self._subs = SubscriptionState(self._fetch_config.auto_offset_reset)
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
        self._started = True
        if self._enable_auto_commit:
            self._tasks.start("auto-commit", self._auto_commit_loop())
        if self._initial_topics:
            self.subscribe(topics=self._initial_topics)

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
            elif self._enable_auto_commit and self._subs is not None and self._subs.assignment:
                try:
                    await self._commit_positions(list(self._subs.assignment))
                except errors.KafkaError as exc:
                    log.warning("commit on close failed: %s", exc)
        finally:
            if self._fetcher is not None:
                await self._fetcher.close()
            if self._cluster is not None:
                await self._cluster.close()

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

    def _require_started(self) -> tuple[Cluster, SubscriptionState, Fetcher]:
        if self._closed:
            raise errors.ClientClosedError("the consumer is closed")
        if not self._started:
            raise errors.IllegalStateError("the consumer is not started; use `async with`")
        assert self._cluster is not None and self._subs is not None and self._fetcher is not None
        return self._cluster, self._subs, self._fetcher

    # ----------------------------------------------------------------- subscription

    def subscribe(
        self,
        topics: Iterable[str] = (),
        pattern: str | re.Pattern[str] | None = None,
        listener: Any = None,
    ) -> None:
        """Subscribe to topics (or a regex ``pattern``) as a member of ``group_id``.

        ``listener`` gets ``on_partitions_revoked/assigned/lost`` calls (see
        :class:`ConsumerRebalanceListener`).
        """
        cluster, subs, _ = self._require_started()
        if self._group_config is None:
            raise errors.IllegalStateError("subscribe() needs a group_id; use assign() without one")
        topics = [topics] if isinstance(topics, str) else list(topics)
        if pattern is not None:
            if topics:
                raise errors.ConfigError("give either topics or pattern, not both")
            if not isinstance(pattern, (str, re.Pattern)):
                raise errors.KafkaTypeError(
                    f"pattern must be a str or re.Pattern, got {type(pattern).__name__}"
                )
            subs.subscribe_pattern(pattern, listener)
            cluster.set_awaited_topics(())
            # New matching topics are seen within pattern_refresh_interval_ms.
            cluster.want_all_topics(True, refresh_ms=self._pattern_refresh_ms)
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
            cluster.want_all_topics(False)
            # A subscribed topic that does not exist yet is looked for with backoff.
            cluster.set_awaited_topics(topics)
        cluster.request_update()
        if self._membership is None:
            self._membership = self._new_membership()
            self._membership.start()
        else:
            self._membership.request_rejoin("the subscription changed")

    def _new_membership(self) -> Membership:
        assert self._cluster is not None and self._subs is not None and self._fetcher is not None
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

    def _discard(self, partitions: Iterable[TopicPartition]) -> None:
        partitions = set(partitions)
        assert self._fetcher is not None
        self._fetcher.discard(partitions)
        if self._iter_records:
            self._iter_records = deque(
                r for r in self._iter_records if (r.topic, r.partition) not in partitions
            )

    def unsubscribe(self) -> None:
        """Leave the group (revoking partitions in the background) and drop the assignment."""
        _, subs, fetcher = self._require_started()
        membership = self._membership
        self._membership = None
        if membership is not None:
            self._tasks.start("leave", membership.close())
        fetcher.discard(list(subs.assignment))
        self._iter_records.clear()
        subs.unsubscribe()
        cluster = self._cluster
        assert cluster is not None
        cluster.set_awaited_topics(())
        cluster.want_all_topics(False)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions, without group management."""
        cluster, subs, _ = self._require_started()
        partitions = [TopicPartition(*tp) for tp in partitions]
        subs.assign_manually(partitions)
        if cluster.add_topics({tp.topic for tp in partitions}):
            cluster.request_update()

    def assignment(self) -> set[TopicPartition]:
        """The partitions currently assigned."""
        if self._subs is None:
            return set()
        return set(self._subs.assignment)

    def subscription(self) -> set[str]:
        """The subscribed topics."""
        return set(self._subs.topics) if self._subs is not None else set()

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

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When the last fetch response for ``partition`` arrived (ms since the epoch).

        The :meth:`highwater` seen then is that fresh; None before the first response.
        """
        _, subs, _ = self._require_started()
        return subs.state(partition).last_poll_ms

    def metrics(self) -> dict[str, Any]:
        """A snapshot of this consumer's counters (see :mod:`aiokafkawire.metrics`).

        ``brokers``: per broker request counts, latency percentiles per API, in-flight requests,
        bytes in/out, throttle time.  ``consumer``: records consumed and their rate since the
        previous call, the fetch latency over all brokers (it includes the broker's long-poll
        wait, up to ``fetch_max_wait_ms``), lag per assigned partition (high watermark minus
        position, None until both are known), rebalances and their duration.
        """
        lag: dict[str, int | None] = {}
        if self._subs is not None:
            for tp, state in self._subs.assignment.items():
                known = state.highwater is not None and state.position is not None
                lag[f"{tp.topic}-{tp.partition}"] = (
                    max(state.highwater - state.position, 0) if known else None  # type: ignore[operator]
                )
        membership = self._membership
        return {
            "brokers": self._common.metrics.snapshot(),
            "consumer": {
                "records_consumed": self._records_consumed,
                "records_per_sec": self._consume_rate.per_second(self._records_consumed),
                "fetch_latency": self._common.metrics.api_latency(_FETCH_KEY),
                "assigned_partitions": len(lag),
                "lag": lag,
                "lag_total": sum(v for v in lag.values() if v is not None),
                "state": self.state,
                "rebalances": membership.rebalances if membership else 0,
                "rebalance_time_total_s": round(membership.rebalance_time_total_s, 3)
                if membership
                else 0.0,
                "last_rebalance_s": round(membership.last_rebalance_s, 3) if membership else 0.0,
            },
        }

    @property
    def state(self) -> str:
        """One of "unjoined", "rebalancing", "stable", "fatal", "manual", "closed"."""
        if self._closed:
            return "closed"
        if self._membership is not None:
            return self._membership.state.value
        if self._subs is not None and self._subs.manual:
            return "manual"
        return "unjoined"

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
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
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
            data, _ = fetcher.drain(limit, wanted)
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

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord:
        """The next record (waiting as long as needed); its position advances past it."""
        if partitions:
            while True:
                data = await self.getmany(*partitions, timeout_ms=1000, max_records=1)
                for records in data.values():
                    return records[0]
        return await self.__anext__()

    def __aiter__(self) -> Consumer:
        return self

    async def __anext__(self) -> ConsumerRecord:
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

    def _advance_iterated(self, record: ConsumerRecord) -> None:
        """Move the partition's position past a record handed out by the iterator."""
        subs = self._subs
        assert subs is not None
        tp = TopicPartition(record.topic, record.partition)
        state = subs.assignment.get(tp)
        end = self._iter_ends.get(tp)
        if state is None or end is None or state.version != end.version:
            return
        if record.offset + 1 >= end.offset or not self._more_pending(tp):
            state.position = end.offset
            state.leader_epoch = end.leader_epoch
        else:
            state.position = record.offset + 1
            state.leader_epoch = record.leader_epoch

    def _more_pending(self, tp: TopicPartition) -> bool:
        # Cheap check: the next pending record usually belongs to the same partition.
        pending = self._iter_records
        if pending:
            head = pending[0]
            if head.topic == tp.topic and head.partition == tp.partition:
                return True
        return any(r.topic == tp.topic and r.partition == tp.partition for r in pending)

    def _flush_iterator(self) -> None:
        """Records taken by the iterator but not handed out are dropped: rewind to them."""
        if not self._iter_records:
            return
        assert self._subs is not None and self._fetcher is not None
        first: dict[TopicPartition, ConsumerRecord] = {}
        for record in self._iter_records:
            first.setdefault(TopicPartition(record.topic, record.partition), record)
        self._iter_records.clear()
        for tp, record in first.items():
            state = self._subs.assignment.get(tp)
            end = self._iter_ends.get(tp)
            if state is not None and end is not None and state.version == end.version:
                state.seek(record.offset, record.leader_epoch)
                self._fetcher.discard([tp])
        self._subs.notify()

    # ----------------------------------------------------------------- positions

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` from ``offset`` next."""
        _, subs, _ = self._require_started()
        if offset < 0:
            raise errors.ConfigError("offset must be >= 0")
        subs.state(partition).seek(offset)
        self._discard([partition])
        subs.notify()

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Read from the earliest available offset (all assigned partitions by default)."""
        await self._seek_to_timestamp(partitions, EARLIEST_TIMESTAMP)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Read only records written from now on (all assigned partitions by default)."""
        await self._seek_to_timestamp(partitions, LATEST_TIMESTAMP)

    async def _seek_to_timestamp(self, partitions: Sequence[TopicPartition], ts: int) -> None:
        _, subs, fetcher = self._require_started()
        tps = list(partitions) or list(subs.assignment)
        for tp in tps:
            subs.state(tp)
        offsets = await fetcher.list_offsets(dict.fromkeys(tps, ts))
        for tp, (offset, _, epoch) in offsets.items():
            if offset is not None and tp in subs.assignment:
                self.seek(tp, offset)
                subs.assignment[tp].leader_epoch = epoch

    async def seek_to_committed(
        self, *partitions: TopicPartition
    ) -> dict[TopicPartition, int | None]:
        """Read from the committed offsets; returns them (``None``: nothing committed)."""
        _, subs, _ = self._require_started()
        tps = list(partitions) or list(subs.assignment)
        committed = await self._group_offsets().fetch(tps)
        result: dict[TopicPartition, int | None] = {}
        for tp in tps:
            found = committed.get(tp)
            result[tp] = found.offset if found is not None else None
            if found is not None:
                self.seek(tp, found.offset)
        return result

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record to be handed out (looked up when not yet known)."""
        _, subs, _ = self._require_started()
        state = subs.state(partition)
        deadline = time.monotonic() + self._common.request_timeout_ms / 1000
        while state.position is None:
            if state.pending_error is not None:
                raise state.pending_error
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.KafkaTimeoutError(f"position of {partition} not known in time")
            await wait_event(subs.change_event(), min(remaining, 0.2))
            state = subs.state(partition)
        return state.position

    def highwater(self, partition: TopicPartition) -> int | None:
        """The high watermark last seen in a fetch response."""
        _, subs, _ = self._require_started()
        return subs.state(partition).highwater

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The last stable offset last seen in a fetch response (v4+)."""
        _, subs, _ = self._require_started()
        return subs.state(partition).last_stable_offset

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop handing out (and fetching) records of these partitions."""
        _, subs, _ = self._require_started()
        for tp in partitions:
            subs.state(tp).paused = True

    def resume(self, *partitions: TopicPartition) -> None:
        """Undo :meth:`pause`."""
        _, subs, _ = self._require_started()
        for tp in partitions:
            subs.state(tp).paused = False
        subs.notify()

    def paused(self) -> set[TopicPartition]:
        """The paused partitions."""
        if self._subs is None:
            return set()
        return {tp for tp, st in self._subs.assignment.items() if st.paused}

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The earliest offset of each partition."""
        _, _, fetcher = self._require_started()
        found = await fetcher.list_offsets(dict.fromkeys(partitions, EARLIEST_TIMESTAMP))
        return {tp: v[0] for tp, v in found.items() if v[0] is not None}

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record (the LSO with read_committed)."""
        _, _, fetcher = self._require_started()
        found = await fetcher.list_offsets(dict.fromkeys(partitions, LATEST_TIMESTAMP))
        return {tp: v[0] for tp, v in found.items() if v[0] is not None}

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset whose timestamp is at or after each given timestamp (ms)."""
        _, _, fetcher = self._require_started()
        for ts in timestamps.values():
            if ts < 0:
                raise errors.ConfigError("timestamps must be >= 0")
        found = await fetcher.list_offsets(dict(timestamps))
        return {
            tp: OffsetAndTimestamp(v[0], v[1] if v[1] is not None else -1, v[2])
            if v[0] is not None
            else None
            for tp, v in found.items()
        }

    # ----------------------------------------------------------------- commits

    def _identity(self) -> MemberIdentity:
        if self._membership is not None:
            return self._membership.identity()
        return MemberIdentity()

    def _group_offsets(self) -> GroupOffsets:
        if self._offsets is None:
            raise errors.IllegalStateError("commits and committed offsets need a group_id")
        return self._offsets

    async def _committed_lookup(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return await self._group_offsets().fetch(partitions)

    async def committed(self, partition: TopicPartition) -> int | None:
        """The committed offset of ``partition`` in this group (``None`` when none)."""
        self._require_started()
        found = (await self._group_offsets().fetch([partition])).get(partition)
        return found.offset if found is not None else None

    async def committed_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets with metadata and leader epoch."""
        self._require_started()
        return await self._group_offsets().fetch(list(partitions))

    def _positions(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Any]:
        subs = self._subs
        assert subs is not None
        out = {}
        for tp in partitions:
            state = subs.assignment.get(tp)
            if state is not None and state.position is not None:
                out[tp] = OffsetAndMetadata(state.position, "", state.leader_epoch)
        return out

    async def _commit_positions(self, partitions: Iterable[TopicPartition]) -> None:
        """Commit the current positions (auto-commit, revocation, close)."""
        offsets = self._positions(partitions)
        if offsets:
            await self._commit(offsets, retry_rebalance=False)

    async def commit(self, offsets: CommitOffsets | None = None) -> None:
        """Commit the positions of all assigned partitions, or the given offsets.

        ``offsets`` maps partitions to the offset of the next record to read: an int, an
        ``(offset, metadata)`` tuple or an :class:`OffsetAndMetadata`.  Raises
        :class:`~aiokafkawire.errors.CommitFailedError` when the group moved on without us.
        """
        _, subs, _ = self._require_started()
        if offsets is None:
            normalized = self._positions(subs.assignment)
        else:
            normalized = {tp: _as_offset(value) for tp, value in offsets.items()}
        await self._commit(normalized, retry_rebalance=True)

    async def _commit(
        self, offsets: dict[TopicPartition, OffsetAndMetadata], *, retry_rebalance: bool
    ) -> None:
        group = self._group_offsets()
        membership = self._membership
        for _ in range(5):
            try:
                await group.commit(offsets)
            except RebalanceNeeded:
                if membership is None:
                    raise errors.RebalanceInProgressClientError(
                        "the coordinator reports a rebalance in progress"
                    ) from None
                membership.request_rejoin("a commit found the group rebalancing")
                if not retry_rebalance or membership.in_callback:
                    raise errors.RebalanceInProgressClientError(
                        "the group is rebalancing; commit again after it completes"
                    ) from None
                timeout = (
                    self._group_config.effective_rebalance_timeout_ms
                    if (self._group_config is not None)
                    else 30_000
                )
                if not await membership.wait_stable(timeout / 1000):
                    raise errors.RebalanceInProgressClientError(
                        "the group did not finish rebalancing in time"
                    ) from None
                assert self._subs is not None
                offsets = {tp: o for tp, o in offsets.items() if tp in self._subs.assignment}
                continue
            for tp, value in offsets.items():
                self._last_committed[tp] = value.offset
            return
        raise errors.RebalanceInProgressClientError("the group kept rebalancing")

    async def _auto_commit_loop(self) -> None:
        while True:
            await asyncio.sleep(self._auto_commit_interval)
            subs = self._subs
            if subs is None or not subs.assignment:
                continue
            if self._membership is not None and self._membership.state is not GroupState.STABLE:
                continue
            changed = {
                tp: v
                for tp, v in self._positions(subs.assignment).items()
                if self._last_committed.get(tp) != v.offset
            }
            if not changed:
                continue
            try:
                await self._commit(changed, retry_rebalance=False)
            except errors.KafkaError as exc:
                log.warning("auto-commit failed: %s", exc)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group membership, for ``Producer.send_offsets_to_transaction``."""
        if self._group_id is None:
            raise errors.IllegalStateError("group_metadata() needs a group_id")
        identity = self._identity()
        return ConsumerGroupMetadata(
            self._group_id,
            identity.generation,
            identity.member_id,
            self._group_config.group_instance_id if self._group_config else None,
        )


def _as_offset(value: Any) -> OffsetAndMetadata:
    if isinstance(value, OffsetAndMetadata):
        return value
    if isinstance(value, int):
        return OffsetAndMetadata(value)
    if isinstance(value, tuple):
        return OffsetAndMetadata(*value)
    offset = getattr(value, "offset", None)
    if isinstance(offset, int):
        return OffsetAndMetadata(offset, getattr(value, "metadata", "") or "")
    raise errors.ConfigError(f"not an offset: {value!r}")
