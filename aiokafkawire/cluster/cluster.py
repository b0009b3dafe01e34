"""The cluster manager: bootstrap, metadata cache and refresh, routing, coordinator lookup.

Metadata is refreshed on demand (a stale-metadata error, a socket error to a leader, an unknown
topic) and every ``metadata_max_age_ms``; concurrent triggers coalesce into one request.  A
refresh for topics the client has not asked about yet goes out at once, as the Java client's
``requestUpdateForNewTopics`` does, and asks for those topics only (the others keep their
entries); other refreshes ask for every tracked topic, and they and any refresh after a failed
one wait ``retry_backoff_ms`` since the previous one.  While an *awaited* topic (one a consumer
subscribed to) is missing, refreshes repeat with exponential backoff from ``retry_backoff_ms`` up to
``retry_backoff_max_ms``, as the Java client does; while all topics are wanted (pattern
subscriptions) an interval shorter than ``metadata_max_age_ms`` may bound how late a new topic is
seen.  Coordinators (group and transaction) are cached until a coordinator error invalidates them.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable
from typing import Any

from aiokafkawire import errors
from aiokafkawire._retry import Backoff, Deadline, retry
from aiokafkawire._tasks import TaskKey, TaskSupervisor
from aiokafkawire._waits import timeout_after
from aiokafkawire.cluster.coordinators import COORDINATOR_KEY_TYPES, CoordinatorCache
from aiokafkawire.cluster.metadata import (
    BrokerInfo,
    ClusterMetadata,
    TopicInfo,
    parse_bootstrap,
)
from aiokafkawire.cluster.recovery import MetadataRecovery
from aiokafkawire.errors.actions import COORDINATOR_ERRORS  # re-exported for older importers
from aiokafkawire.net.connection import BrokerConnection, ConnectionConfig
from aiokafkawire.net.pool import ConnectionPool
from aiokafkawire.protocol.messages import ApiVersionsRequest, MetadataRequest
from aiokafkawire.protocol.messages.metadata import MetadataRequestTopic

log = logging.getLogger("aiokafkawire.cluster")

__all__ = ["COORDINATOR_ERRORS", "COORDINATOR_KEY_TYPES", "Cluster"]

# The cluster's background tasks, by the key its supervisor reports them under.
_PERIODIC_REFRESH: TaskKey = "metadata-refresh"
_REFRESH_REQUEST: TaskKey = "metadata-request"


class _TopicNotYet(Exception):
    """wait_for_topic: the topic is not (yet) in the metadata; ``code`` is what the broker said."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Cluster:  # long: refresh scheduling, recovery, routing, coordinators: one metadata view
    """Owns the connection pool and the metadata cache of one client."""

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        config: ConnectionConfig | None = None,
        *,
        metadata_max_age_ms: int = 300_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        allow_auto_topic_creation: bool = False,
        topic_wait_ms: int = 10_000,
        metadata_recovery_strategy: str = "rebootstrap",
        metadata_recovery_rebootstrap_trigger_ms: int = 300_000,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.config = config or ConnectionConfig()
        self.pool = ConnectionPool(self.config)
        self.metadata = ClusterMetadata()
        # Called after each new `metadata` (the producer's compiled append drops what it cached).
        self.metadata_listeners: list[Callable[[], None]] = []
        self.metadata_max_age_ms = metadata_max_age_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = max(retry_backoff_max_ms, retry_backoff_ms)
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.topic_wait_ms = topic_wait_ms
        self._topics: set[str] = set()
        self._want_all_topics = False
        self._all_topics_refresh_s: float | None = None
        self._awaited: frozenset[str] = frozenset()
        # While an awaited topic is missing: refresh after _missing_delay, doubling up to the max.
        self._missing_backoff = Backoff(retry_backoff_ms, self.retry_backoff_max_ms, jitter=0)
        self._missing_delay = self._missing_backoff.next_delay()
        self._reschedule: asyncio.Future[None] | None = None
        self._refresh: asyncio.Future[ClusterMetadata] | None = None
        self._last_refresh = 0.0
        # Topics added since the last request was sent: the next refresh skips the backoff and,
        # unless a full update is due too, asks for these only (Java's ProducerMetadata does the
        # same), so that N new topics cost N small answers rather than N growing ones.
        self._new_topics: set[str] = set()
        # A refresh not only for new topics was asked for (stale metadata, periodic, start):
        # the next request asks for every tracked topic.
        self._full_update_due = True
        self._last_refresh_failed = False
        # The topics the request under way asked for (None: not sent yet, or all topics).
        self._asked: frozenset[str] | None = None
        self._updated: asyncio.Condition | None = None
        self.coordinators = CoordinatorCache(
            self.any_connection,
            request_timeout_ms=self.config.request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            retry_backoff_max_ms=self.retry_backoff_max_ms,
        )
        self._tasks = TaskSupervisor("cluster", self._task_failed)
        self._started = False
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop start() ran on
        self.recovery = MetadataRecovery(
            metadata_recovery_strategy, metadata_recovery_rebootstrap_trigger_ms
        )

    def __repr__(self) -> str:
        return (
            f"<Cluster {len(self.metadata.brokers)} brokers, "
            f"{len(self.metadata.topics)} topics, id={self.metadata.cluster_id}>"
        )

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Bootstrap: fetch metadata from the first bootstrap address that answers."""
        if self._started:
            return
        self._loop = asyncio.get_running_loop()
        self._updated = asyncio.Condition()
        await self.refresh_metadata()
        self._started = True
        self._tasks.start(_PERIODIC_REFRESH, self._periodic_refresh())

    async def close(self) -> None:
        """Stop background work and close every connection."""
        if self._closed:
            return
        self._closed = True
        await self._tasks.stop()
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        await self.pool.close()

    def abandon(self) -> None:
        """Stop background work and close every connection, without waiting: for an owner
        collected without :meth:`close` (from its ``__del__``, on any thread).

        Done on the cluster's loop if that is still open; once it is closed, ``asyncio.run`` has
        cancelled the tasks already and nothing is left to stop.
        """
        loop = self._loop
        if self._closed or loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._abandon_now)
        except RuntimeError:  # the loop closed in the meantime
            pass

    def _abandon_now(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._tasks.cancel_all()
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        self.pool.close_all()

    async def __aenter__(self) -> Cluster:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _task_failed(self, key: TaskKey, exc: BaseException) -> None:
        log.error("cluster task %s failed", key, exc_info=exc)
        if not self._closed and key == _PERIODIC_REFRESH:
            self._tasks.restart(key, self._periodic_refresh)

    async def _periodic_refresh(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = self._next_refresh_due()
            delay = max(due - time.monotonic(), 0.05)
            # Sleep until due, or until the schedule changes (new awaited topics, a refresh).
            waiter: asyncio.Future[None] = loop.create_future()
            self._reschedule = waiter
            timer = loop.call_later(delay, _resolve, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._reschedule = None
            if time.monotonic() >= self._next_refresh_due():
                try:
                    await self.refresh_metadata()
                except errors.KafkaError as exc:
                    log.warning("periodic metadata refresh failed: %s", exc)

    def _next_refresh_due(self) -> float:
        """When the background loop refreshes next (monotonic seconds)."""
        period = self.metadata_max_age_ms / 1000
        if self._want_all_topics and self._all_topics_refresh_s is not None:
            period = min(period, self._all_topics_refresh_s)
        if self.missing_awaited_topics():
            period = min(period, self._missing_delay)
        return self._last_refresh + period

    def _wake_scheduler(self) -> None:
        waiter = self._reschedule
        if waiter is not None:
            _resolve(waiter)

    def missing_awaited_topics(self) -> set[str]:
        """Awaited topics that the last metadata did not show with partitions."""
        topics = self.metadata.topics
        return {
            name
            for name in self._awaited
            if (info := topics.get(name)) is None or info.error_code or not info.partitions
        }

    # ---------------------------------------------------------------- topics of interest

    def add_topics(self, topics: Iterable[str]) -> bool:
        """Track more topics; returns True when any was new (a refresh is then due)."""
        known = self._topics
        added = [topic for topic in topics if topic not in known]
        if added:
            known.update(added)
            self._new_topics.update(added)
        return bool(added)

    def set_topics(self, topics: Iterable[str]) -> None:
        """Replace the tracked topics."""
        self._topics = set(topics)
        self._new_topics &= self._topics

    def want_all_topics(self, value: bool = True, *, refresh_ms: float | None = None) -> None:
        """Ask for every topic on each refresh (pattern subscriptions, admin listing).

        ``refresh_ms`` refreshes at least that often while all topics are wanted, so that new
        topics are seen within a bounded time (pattern subscriptions).
        """
        self._want_all_topics = value
        self._all_topics_refresh_s = refresh_ms / 1000 if value and refresh_ms else None
        self._wake_scheduler()

    def set_awaited_topics(self, topics: Iterable[str]) -> None:
        """Topics to look for promptly: while any is missing, refresh with backoff.

        The consumer awaits the topics it subscribes to, so that a topic created after the
        subscription is picked up within about ``retry_backoff_max_ms``.
        """
        self._awaited = frozenset(topics)
        self.add_topics(self._awaited)
        self._reset_missing_delay()
        self._wake_scheduler()

    def _reset_missing_delay(self) -> None:
        self._missing_backoff.reset()
        self._missing_delay = self._missing_backoff.next_delay()

    # ---------------------------------------------------------------- metadata

    async def refresh_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Refresh now (or join a refresh already under way); returns the new snapshot.

        A request already sent without some of ``topics`` is waited out, then one new refresh
        asks for them (and for whatever other callers added meanwhile).
        """
        wanted = frozenset(topics) if topics is not None else frozenset()
        self.add_topics(wanted)
        if self._closed:
            raise errors.ClientClosedError("the cluster client is closed")
        refresh = self._refresh
        asked = self._asked
        if not wanted or not (
            wanted <= self._new_topics
            or (refresh is not None and not refresh.done() and (asked is None or wanted <= asked))
        ):
            # Neither a first lookup nor one under way: the next request asks for every topic.
            self._full_update_due = True
        if refresh is not None and not refresh.done() and asked is not None and wanted - asked:
            await asyncio.wait([refresh])  # its outcome is its own waiters'; ours comes next
            refresh = self._refresh
        if refresh is None or refresh.done():
            refresh = self._start_refresh()
        return await asyncio.shield(refresh)

    def request_topics(self, topics: Iterable[str]) -> None:
        """Look ``topics`` up soon, without waiting: new ones join the refresh not sent yet, or
        start one (no backoff), or get the one after the refresh under way.  For callers that
        queue work for a topic and learn of its metadata later (``wait_for_topic`` shares the
        same requests)."""
        if self._closed or not self.add_topics(topics):
            return
        refresh = self._refresh
        if refresh is None or refresh.done():
            self._start_refresh()
        elif self._asked is not None:
            refresh.add_done_callback(self._refresh_new_topics)

    def _refresh_new_topics(self, _done: object = None) -> None:
        refresh = self._refresh
        if self._new_topics and not self._closed and (refresh is None or refresh.done()):
            self._start_refresh()

    def request_update(self) -> None:
        """Schedule a refresh without waiting (e.g. after a NotLeaderOrFollower error)."""
        if self._closed:
            return
        self._full_update_due = True
        if self._refresh is not None and not self._refresh.done():
            return
        self._start_refresh()

    def _start_refresh(self) -> asyncio.Future[ClusterMetadata]:
        refresh: asyncio.Future[ClusterMetadata] = asyncio.get_running_loop().create_future()
        self._refresh = refresh
        self._asked = None  # until its request is sent, it takes every topic added
        self._tasks.start(_REFRESH_REQUEST, self._run_refresh(refresh))
        return refresh

    async def _run_refresh(self, result: asyncio.Future[ClusterMetadata]) -> None:
        try:
            # New topics go out at once (Java's requestUpdateForNewTopics); a retry after a
            # failure or a stale-metadata error waits out the backoff since the last request.
            if self._last_refresh_failed or not self._new_topics:
                wait = self.retry_backoff_ms / 1000 - (time.monotonic() - self._last_refresh)
                if wait > 0:
                    await asyncio.sleep(wait)
            metadata = await self._fetch_metadata()
        except BaseException as exc:
            self._last_refresh_failed = True
            self._last_refresh = time.monotonic()
            if not result.done():
                # Waiters get a typed error, never a CancelledError that is not theirs.
                failure: BaseException = exc
                if isinstance(exc, asyncio.CancelledError):
                    failure = (
                        errors.ClientClosedError("the cluster client closed during a refresh")
                        if self._closed
                        else errors.BackgroundTaskError("the metadata refresh was cancelled")
                    )
                if isinstance(failure, Exception):
                    result.set_exception(failure)
                    result.exception()
                else:
                    result.cancel()
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        self._last_refresh_failed = False
        if not result.done():
            result.set_result(metadata)

    async def _fetch_metadata(self) -> ClusterMetadata:
        full = self._want_all_topics
        only_new = not full and not self._full_update_due and bool(self._new_topics)
        topics = sorted(self._new_topics if only_new else self._topics)
        self._new_topics = set()
        self._full_update_due = False
        self._asked = None if full else frozenset(topics)
        recovery = self.recovery
        recovery.attempt_started()
        known = self._known_candidates()
        if known and not recovery.bootstrapping:
            metadata, last_error = await self._ask_each(known, full, topics)
            if metadata is not None:
                return metadata
            if not recovery.enabled:
                self._last_refresh = time.monotonic()
                raise self._no_broker_answered(known, last_error)
            # Every known broker failed (KIP-899), one asked for it, or nothing came for too
            # long (KIP-1102): start over from the bootstrap addresses.
            self._rebootstrap(recovery.due() or f"no known broker answered ({last_error})")
        bootstrap = self._bootstrap_candidates()
        metadata, last_error = await self._ask_each(bootstrap, full, topics)
        if metadata is not None:
            return metadata
        self._last_refresh = time.monotonic()
        raise self._no_broker_answered(bootstrap, last_error)

    async def _ask_each(
        self, candidates: list[tuple[str, int, int | None]], full: bool, topics: list[str]
    ) -> tuple[ClusterMetadata | None, Exception | None]:
        """Ask the candidates in turn; the new metadata, or None and the last error.  A known
        broker's round stops early when a rebootstrap is due.

        A candidate that has not answered within ``retry_backoff_max_ms`` is not waited for
        alone: the next one is asked too, and the first answer wins (a live broker answers
        Metadata in milliseconds, a frozen one, connected and silent, only ever times out; when
        every broker left a Produce unanswered, waiting on acks=all replicas of the frozen one,
        nothing else tells them apart).
        """
        last_error: Exception | None = None
        waiting = list(candidates)
        asking: dict[asyncio.Task[tuple[Any, BrokerConnection]], tuple[str, int]] = {}
        hedge = self.retry_backoff_max_ms / 1000
        loop = asyncio.get_running_loop()
        next_now = True
        try:
            while waiting or asking:
                if waiting and next_now:
                    host, port, node_id = waiting.pop(0)
                    if node_id is not None and self.recovery.due():
                        waiting.clear()
                    else:
                        task = loop.create_task(self._ask_one(host, port, node_id, full, topics))
                        asking[task] = (host, port)
                if not asking:
                    continue
                done, _ = await asyncio.wait(
                    asking, timeout=hedge if waiting else None, return_when=asyncio.FIRST_COMPLETED
                )
                next_now = not done  # no answer in time: ask the next one as well
                for task in done:
                    host, port = asking.pop(task)
                    try:
                        response, connection = task.result()
                    except errors.KafkaError as exc:
                        # As Java's NetworkClient: a broker gone, slow, or whose answer cannot
                        # be read (its connection is closed) leaves the request to the next one.
                        if not errors.retriable_in_background(exc):
                            raise
                        last_error = exc
                        log.debug("metadata from %s:%d failed: %s", host, port, exc)
                        if isinstance(exc, errors.MisroutedConnectionError):
                            self.recovery.request(str(exc))
                        next_now = True
                        continue
                    # Metadata v13+ carries a top-level error (KIP-1102): REBOOTSTRAP_REQUIRED
                    # means this broker's view is not to be trusted: rebootstrap (or, with the
                    # strategy "none", ask the next one); anything else is the request's failure.
                    if response.error_code == errors.RebootstrapRequiredError.code:
                        last_error = errors.RebootstrapRequiredError(f"from {host}:{port}")
                        log.debug("metadata from %s:%d: rebootstrap required", host, port)
                        self.recovery.request(f"{host}:{port} answered REBOOTSTRAP_REQUIRED")
                        next_now = True
                        continue
                    errors.raise_for_code(response.error_code, f"metadata from {host}:{port}")
                    # KIP-1242 needs ApiVersions v5: a broker that does not advertise it may not
                    # parse the identity (Tansu 0.6 drops the connection), so none is sent to
                    # its cluster.
                    versions = connection.versions
                    checks = (
                        versions.supports(ApiVersionsRequest.API_KEY)
                        and versions.version_for(ApiVersionsRequest.API_KEY) >= 5
                    )
                    return await self._apply_metadata(response, full or not topics, checks), None
            return None, last_error
        finally:
            # The slower askers are not waited for (a late answer only frees its slot).
            for task in asking:
                task.cancel()
            if asking:
                await asyncio.wait(asking)
                for task in asking:
                    if not task.cancelled():
                        task.exception()  # retrieved: an answer or error nobody waits for

    async def _ask_one(
        self, host: str, port: int, node_id: int | None, full: bool, topics: list[str]
    ) -> tuple[Any, BrokerConnection]:
        """One broker's Metadata answer, and the connection it came on."""
        connection = await self.pool.get(host, port, node_id=node_id)
        version = connection.versions.version_for(MetadataRequest.API_KEY)
        request = self._metadata_request(version, None if full else topics)
        return await connection.send(request, version), connection

    async def _apply_metadata(
        self, response: Any, full: bool, checks_identity: bool
    ) -> ClusterMetadata:
        self._last_refresh = time.monotonic()
        old = self.metadata
        # From a bootstrap address the answer replaces what was known (it may be another
        # cluster's by now); from a known broker it updates it.
        base = ClusterMetadata(version=old.version) if self.recovery.bootstrapping else old
        self.metadata = base.merged(response, full=full)
        for listener in self.metadata_listeners:
            listener()
        self.recovery.succeeded()
        self._drop_gone_brokers(old)
        # KIP-1242: connections to known nodes ask the broker to confirm this cluster, where
        # the client can recover from a refusal (as the Java client: not with strategy "none").
        checked = self.recovery.enabled and checks_identity
        self.pool.cluster_id = self.metadata.cluster_id if checked else None
        if self._awaited:
            missing = self.missing_awaited_topics()
            if missing:
                log.debug("awaited topics not in the metadata yet: %s", sorted(missing))
                self._missing_delay = self._missing_backoff.next_delay()
            else:
                self._reset_missing_delay()
        self._wake_scheduler()
        assert self._updated is not None
        async with self._updated:
            self._updated.notify_all()
        return self.metadata

    def _rebootstrap(self, reason: str) -> None:
        """Forget the brokers: close every connection (the next ones resolve the bootstrap
        names again) and ask only the bootstrap addresses until one answers."""
        self.recovery.begin(reason)
        self.pool.cluster_id = None
        self.pool.close_all()

    def _no_broker_answered(
        self, tried: list[tuple[str, int, int | None]], last_error: Exception | None
    ) -> errors.NoBrokersAvailableError:
        error = errors.NoBrokersAvailableError(
            "no broker answered a metadata request (tried "
            + ", ".join(f"{h}:{p}" for h, p, _ in tried)
            + ")"
            + (f"; last error: {last_error}" if last_error else "")
        )
        error.__cause__ = last_error
        return error

    async def list_all_topics(self) -> dict[str, TopicInfo]:
        """Every topic of the cluster, from a Metadata request for all topics.

        The cache is left as it is unless all topics are wanted anyway: a client that tracks a
        few topics keeps tracking only those.
        """
        if self._want_all_topics:
            metadata = await self.refresh_metadata()
            return dict(metadata.topics)
        connection = await self.any_connection()
        version = connection.versions.version_for(MetadataRequest.API_KEY)
        response = await connection.send(self._metadata_request(version, None), version)
        snapshot = ClusterMetadata().merged(response, full=True)
        return {name: info for name, info in snapshot.topics.items() if not info.error_code}

    def _metadata_request(self, version: int, topics: list[str] | None) -> Any:
        wanted: list[MetadataRequestTopic] | None
        if topics is None:
            # Version 0 asks for all topics with an empty list; later versions with null.
            wanted = [] if version == 0 else None
        else:
            wanted = [MetadataRequestTopic(name=t) for t in topics]
        request = MetadataRequest(topics=wanted)
        if version >= 4:
            request.allow_auto_topic_creation = self.allow_auto_topic_creation
        return request

    def _known_candidates(self) -> list[tuple[str, int, int | None]]:
        known: list[tuple[str, int, int | None]] = [
            (b.host, b.port, b.node_id) for b in self.metadata.brokers.values()
        ]
        random.shuffle(known)
        # Prefer brokers we already hold a connection to, and ask a broker that left a request
        # unanswered past its timeout last (Java's leastLoadedNode avoids it likewise): a frozen
        # broker accepts connections and answers nothing, so each request to it costs a whole
        # request timeout, while the others already know who replaced it.
        pool = self.pool
        known.sort(
            key=lambda c: (pool.stopped_answering(c[0], c[1]), pool.cached(c[0], c[1]) is None)
        )
        return known

    def _bootstrap_candidates(self) -> list[tuple[str, int, int | None]]:
        return [(h, p, None) for h, p in self.bootstrap]

    def _metadata_candidates(self) -> list[tuple[str, int, int | None]]:
        """Any broker to ask something of: the known ones, then the bootstrap addresses."""
        return self._known_candidates() + self._bootstrap_candidates()

    def _drop_gone_brokers(self, old: ClusterMetadata) -> None:
        for node_id, broker in old.brokers.items():
            current = self.metadata.brokers.get(node_id)
            if current is None or (current.host, current.port) != (broker.host, broker.port):
                self.pool.close_node(broker.host, broker.port)

    async def wait_for_topic(self, topic: str, timeout_ms: int | None = None) -> TopicInfo:
        """Metadata for ``topic``; refreshes as needed, and raises ``UnknownTopicError`` once
        ``timeout_ms`` (default ``topic_wait_ms``) has passed, even while a refresh is under way.
        """
        info = self.metadata.topics.get(topic)
        if info is not None and info.error_code == 0 and info.partitions:
            return info
        timeout = (self.topic_wait_ms if timeout_ms is None else timeout_ms) / 1000
        self.add_topics([topic])
        last_code = 0  # what the broker last said about the topic

        async def look() -> TopicInfo:
            nonlocal last_code
            info = (await self.refresh_metadata([topic])).topics.get(topic)
            if info is not None:
                if info.error_code == 0 and info.partitions:
                    return info
                last_code = info.error_code
                # Not there yet (unknown topic, no leader yet): the table says refresh and wait.
                if (
                    last_code
                    and errors.action_for(last_code) is not errors.ErrorAction.REFRESH_METADATA
                ):
                    errors.raise_for_code(last_code, f"metadata for topic {topic!r}")
            raise _TopicNotYet(last_code)

        # The deadline also cuts short a refresh slower than what is left of it (a slow answer,
        # a slow connect): only this wait ends, the refresh goes on for its other waiters
        # (refresh_metadata shields it), as Java's waitOnMetadata stops at max.block.ms.
        try:
            async with timeout_after(timeout):
                return await retry(
                    look,
                    should_retry=lambda exc: isinstance(exc, _TopicNotYet),
                    deadline=Deadline.after(timeout),
                    backoff=Backoff(self.retry_backoff_ms, self.retry_backoff_ms, jitter=0),
                    what=f"waiting for topic {topic!r}",
                )
        except _TopicNotYet:
            pass
        except (TimeoutError, asyncio.TimeoutError) as exc:
            if isinstance(exc, errors.KafkaError):
                raise  # a request's own timeout (KafkaTimeoutError), not this wait's
        said = errors.error_for_code(last_code).name if last_code else ""
        raise errors.UnknownTopicError(
            f"topic {topic!r} is not available after {timeout:.1f}s"
            + (f" (broker said {said})" if said else "")
        )

    # ---------------------------------------------------------------- routing

    def broker(self, node_id: int) -> BrokerInfo:
        """The address of a broker by id (KeyError when unknown)."""
        return self.metadata.brokers[node_id]

    async def connection(self, node_id: int, purpose: str = "default") -> BrokerConnection:
        """An open connection to broker ``node_id`` for ``purpose``."""
        broker = self.metadata.brokers.get(node_id)
        if broker is None:
            await self.refresh_metadata()
            broker = self.metadata.brokers.get(node_id)
            if broker is None:
                raise errors.KafkaConnectionError(f"broker {node_id} is not in the cluster")
        try:
            return await self.pool.get(broker.host, broker.port, node_id=node_id, purpose=purpose)
        except errors.KafkaConnectionError as exc:
            if isinstance(exc, errors.MisroutedConnectionError):
                self.recovery.request(str(exc))  # KIP-1242: the address leads elsewhere
            self.request_update()  # the broker may be gone or moved
            raise

    async def send(
        self,
        node_id: int,
        request: Any,
        version: int | None = None,
        *,
        purpose: str = "default",
        timeout_ms: float | None = None,
    ) -> Any:
        """Send to one broker; a connection error schedules a metadata refresh and re-raises."""
        connection = await self.connection(node_id, purpose)
        try:
            return await connection.send(request, version, timeout_ms=timeout_ms)
        except errors.KafkaConnectionError:
            self.request_update()
            raise

    async def any_connection(self) -> BrokerConnection:
        """A connection to any reachable broker."""
        last: Exception | None = None
        for host, port, node_id in self._metadata_candidates():
            try:
                return await self.pool.get(host, port, node_id=node_id)
            except errors.KafkaConnectionError as exc:
                last = exc
        raise errors.NoBrokersAvailableError(f"no broker reachable: {last}") from last

    # ---------------------------------------------------------------- coordinators

    async def coordinator(
        self, key: str, kind: str = "group", *, timeout_ms: int | None = None
    ) -> BrokerInfo:
        """The coordinator broker for a group id or transactional id (cached, retried)."""
        return await self.coordinators.get(key, kind, timeout_ms=timeout_ms)

    def invalidate_coordinator(self, key: str, kind: str = "group") -> None:
        """Forget a cached coordinator (after NOT_COORDINATOR and friends)."""
        self.coordinators.invalidate(key, kind)

    async def coordinator_connection(
        self, key: str, kind: str = "group", purpose: str = "group"
    ) -> BrokerConnection:
        """An open connection to the coordinator for ``key``."""
        broker = await self.coordinator(key, kind)
        try:
            return await self.pool.get(
                broker.host, broker.port, node_id=broker.node_id, purpose=purpose
            )
        except errors.KafkaConnectionError:
            self.invalidate_coordinator(key, kind)
            raise

    async def send_to_coordinator(
        self,
        key: str,
        request: Any,
        version: int | None = None,
        *,
        kind: str = "group",
        purpose: str = "group",
    ) -> Any:
        """Send to the coordinator; coordinator/connection errors invalidate the cache."""
        connection = await self.coordinator_connection(key, kind, purpose)
        try:
            return await connection.send(request, version)
        except errors.KafkaConnectionError:
            self.invalidate_coordinator(key, kind)
            raise


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
