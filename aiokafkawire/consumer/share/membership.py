"""Share-group membership: the ShareGroupHeartbeat loop (KIP-932).

The group coordinator assigns partitions; the member only heartbeats.  There is no join/sync
round and no stop-the-world rebalance: each heartbeat answer may carry a new assignment, which
the consumer follows at once (partitions added start fetching, partitions removed are forgotten
from the share sessions; records already acquired stay acknowledgeable).

The member id is generated here, once per consumer (KIP-1082 style: a Kafka UUID string), and
kept for the consumer's lifetime.  ``MemberEpoch`` 0 joins, -1 leaves.  Fencing
(UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH) drops the assignment and rejoins with epoch 0.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import NoReturn

from aiokafkawire import errors
from aiokafkawire._retry import Backoff, retry_until_stopped
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire._waits import timeout_after, wait_event
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.protocol.messages import ShareGroupHeartbeatRequest
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer.share")

__all__ = ["ShareMembership", "new_member_id", "share_groups_unsupported"]

SHARE_GROUP_HEARTBEAT_KEY = ShareGroupHeartbeatRequest.API_KEY  # for the consumer's checks
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
_HEARTBEAT = "heartbeat"


def new_member_id() -> str:
    """A member id as Kafka's clients make them: 16 random bytes, URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def share_groups_unsupported(where: str, detail: str = "") -> errors.ShareGroupsUnsupportedError:
    """The typed error for a cluster without share groups, saying how to enable them."""
    return errors.ShareGroupsUnsupportedError(
        f"{where} does not serve share groups (KIP-932){': ' + detail if detail else ''}. "
        "Share groups need Apache Kafka 4.1 or newer with the share.version feature finalized "
        "(check with `kafka-features.sh --bootstrap-server HOST:PORT describe`; enable with "
        "`kafka-features.sh --bootstrap-server HOST:PORT upgrade --feature share.version=1`). "
        "Kafka 4.0 only had an early-access version (group.share.enable=true, "
        "unstable.api.versions.enable=true) that this client does not speak."
    )


def _heartbeat_retriable(exc: BaseException) -> bool:
    """Whether the heartbeat loop tries again after ``exc``: what the error table retries in the
    background, and fencing (the member has rejoined with epoch 0 already)."""
    return errors.retriable_in_background(exc) or (
        isinstance(exc, errors.BrokerResponseError) and exc.code in errors.MEMBER_FENCED_CODES
    )


AssignmentCallback = Callable[[set[TopicPartition]], None]
FatalCallback = Callable[[errors.KafkaError], None]


class ShareMembership:
    """Heartbeats for one share-group member on its own supervised task."""

    def __init__(
        self,
        cluster: Cluster,
        group_id: str,
        *,
        on_assignment: AssignmentCallback,
        on_fatal: FatalCallback,
        rack_id: str | None = None,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        request_timeout_ms: int = 30_000,
    ) -> None:
        self._cluster = cluster
        self.group_id = group_id
        self.member_id = new_member_id()
        self.member_epoch = JOIN_EPOCH
        self.heartbeat_interval_ms = 5_000
        self.assignment: set[TopicPartition] = set()
        self._unresolved: list[object] | None = None
        self._on_assignment = on_assignment
        self._on_fatal = on_fatal
        self._rack_id = rack_id
        #: Heartbeat retries wait ``retry_backoff_ms`` doubling to ``retry_backoff_max_ms``
        #: (never below the first wait, however large).
        self._retry_backoff_ms = retry_backoff_ms
        self._retry_backoff_max_ms = retry_backoff_max_ms
        self._request_timeout_ms = request_timeout_ms
        self._topics: list[str] = []
        self._topics_sent: list[str] | None = None
        self._wake = asyncio.Event()
        self._tasks = TaskSupervisor("share-membership", self._task_failed)
        self._stopping = False

    def __repr__(self) -> str:
        return (
            f"<ShareMembership group={self.group_id!r} member={self.member_id} "
            f"epoch={self.member_epoch} partitions={len(self.assignment)}>"
        )

    # ----------------------------------------------------------------- control

    def subscribe(self, topics: Iterable[str]) -> None:
        """Set the subscribed topics (sent with the next heartbeat, at once)."""
        self._topics = sorted(set(topics))
        self._cluster.set_topics(self._topics)
        self._wake.set()

    @property
    def topics(self) -> list[str]:
        """The subscribed topics."""
        return list(self._topics)

    def start(self) -> None:
        """Start heartbeating (joins the group)."""
        if not self._tasks.running(_HEARTBEAT):
            self._tasks.start(_HEARTBEAT, self._heartbeat_loop())

    async def close(self, leave: bool = True) -> None:
        """Stop heartbeating and (by default) leave the group with epoch -1."""
        self._stopping = True
        await self._tasks.stop()
        if leave and self.member_epoch > 0:
            try:
                async with timeout_after(self._request_timeout_ms / 1000):
                    await self._send(LEAVE_EPOCH)
            except (errors.KafkaError, TimeoutError, asyncio.TimeoutError) as exc:
                log.info("share group %r: leaving failed: %s", self.group_id, exc)
        self.member_epoch = JOIN_EPOCH
        self._set_assignment(set())

    def _task_failed(self, name: str, exc: BaseException) -> None:
        """The heartbeat loop died: restart it after a retriable error (or a cancellation that
        was not ours), else hand the error to the consumer, whose next call raises it."""
        if self._stopping:
            return
        log.error("share group %r: %s failed", self.group_id, name, exc_info=exc)
        if isinstance(exc, errors.BackgroundTaskError) or (
            isinstance(exc, errors.KafkaError) and exc.retriable
        ):
            self._tasks.restart(name, self._heartbeat_loop)
        elif isinstance(exc, errors.KafkaError):
            self._on_fatal(exc)
        else:
            self._on_fatal(errors.KafkaError(f"share-group heartbeat loop failed: {exc!r}"))

    # ----------------------------------------------------------------- the loop

    async def _heartbeat_loop(self) -> None:
        # Failed heartbeats wait retry_backoff_ms doubling to retry_backoff_max_ms (never below
        # the first wait, however large); an answered one resets the backoff.  What is worth
        # another try is the error table's answer (errors.retriable_in_background), plus
        # fencing, which rejoins; anything else ends the loop and reaches the consumer
        # (_task_failed), whose next call raises it.
        backoff = Backoff(self._retry_backoff_ms, self._retry_backoff_max_ms)
        while True:
            self._wake.clear()
            interval_ms = await retry_until_stopped(
                self._heartbeat,
                should_retry=_heartbeat_retriable,
                backoff=backoff,
                what=f"share group {self.group_id!r} heartbeat",
                on_retry=self._heartbeat_failed,
            )
            await wait_event(self._wake, interval_ms / 1000)

    def _heartbeat_failed(self, exc: BaseException) -> None:
        """Before the backoff of a failed heartbeat: the next one sends the full state, and a
        heartbeat without an answer (the connection lost, a timeout) looks the coordinator up
        again, as Java's ``AbstractHeartbeatRequestManager.onFailure`` does."""
        log.info("share group %r: heartbeat failed: %s; retrying", self.group_id, exc)
        self._topics_sent = None
        if not isinstance(exc, errors.BrokerResponseError):
            self._cluster.invalidate_coordinator(self.group_id)

    async def _send(self, epoch: int) -> object:
        connection = await self._cluster.coordinator_connection(self.group_id, purpose="group")
        if not connection.versions.supports(SHARE_GROUP_HEARTBEAT_KEY):
            raise share_groups_unsupported(
                f"broker {connection.host}:{connection.port}",
                "it has no ShareGroupHeartbeat API",
            )
        request = ShareGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=epoch
        )
        if epoch == JOIN_EPOCH or self._topics_sent != self._topics:
            # Full state on join (and after errors), else only what changed.
            request.subscribed_topic_names = list(self._topics)
            request.rack_id = self._rack_id
        try:
            return await connection.send(request, timeout_ms=self._request_timeout_ms)
        except errors.KafkaConnectionError:
            self._cluster.invalidate_coordinator(self.group_id)
            raise

    async def _heartbeat(self) -> int:
        """One heartbeat; returns the interval to the next one.

        An error answer raises its typed error, after what it asks for (a coordinator lookup,
        a rejoin with epoch 0 after fencing): :func:`_heartbeat_retriable` says whether the
        loop tries again."""
        epoch = self.member_epoch
        topics = list(self._topics)
        response = await self._send(epoch)
        code = response.error_code  # type: ignore[attr-defined]
        message = response.error_message  # type: ignore[attr-defined]
        if code:
            self._answered_error(code, message)
        self._topics_sent = topics
        self.member_epoch = response.member_epoch  # type: ignore[attr-defined]
        self.heartbeat_interval_ms = response.heartbeat_interval_ms or 5_000  # type: ignore[attr-defined]
        assignment = response.assignment  # type: ignore[attr-defined]
        if assignment is not None:
            self._unresolved = assignment.topic_partitions
        if self._unresolved is not None:
            partitions = await self._resolve(self._unresolved)
            if partitions is None:
                # Topic ids not in the metadata yet: look again after the backoff's first wait.
                return min(self._retry_backoff_ms, self.heartbeat_interval_ms)
            self._unresolved = None
            self._set_assignment(partitions)
        return self.heartbeat_interval_ms

    def _answered_error(self, code: int, message: str | None) -> NoReturn:
        """Act on a heartbeat's error code and raise it, typed (as Java's
        ``ShareHeartbeatRequestManager``: coordinator errors look the coordinator up again,
        fencing rejoins with epoch 0, an unsupported version says how to enable share groups;
        retriable errors are tried again, the rest are fatal)."""
        action = errors.action_for(code)
        if action is errors.ErrorAction.FIND_COORDINATOR:
            self._cluster.invalidate_coordinator(self.group_id)
        elif code in errors.MEMBER_FENCED_CODES:  # KIP-848's rule: rejoin with epoch 0
            log.info("share group %r: member fenced (%s); rejoining", self.group_id, message)
            self.member_epoch = JOIN_EPOCH
            self._unresolved = None
            self._set_assignment(set())
        elif code == errors.UnsupportedVersionError.code:
            raise share_groups_unsupported(
                f"the group coordinator of {self.group_id!r}", message or ""
            )
        elif action.retriable:
            log.info("share group %r: heartbeat error %s (%s)", self.group_id, code, message)
        errors.raise_for_code(code, message or f"share group {self.group_id!r} heartbeat")
        raise AssertionError("raise_for_code returned for a non-zero code")  # pragma: no cover

    async def _resolve(self, topic_partitions: list[object]) -> set[TopicPartition] | None:
        """Topic ids to names through the metadata (refreshed once when an id is unknown)."""
        for attempt in range(2):
            names = {
                info.topic_id: name
                for name, info in self._cluster.metadata.topics.items()
                if info.topic_id is not None
            }
            missing = [tp.topic_id for tp in topic_partitions if tp.topic_id not in names]  # type: ignore[attr-defined]
            if not missing:
                return {
                    TopicPartition(names[tp.topic_id], p)  # type: ignore[attr-defined]
                    for tp in topic_partitions
                    for p in tp.partitions  # type: ignore[attr-defined]
                }
            if attempt == 0:
                await self._cluster.refresh_metadata()
        log.info(
            "share group %r: assigned topic ids %s are not in the metadata yet",
            self.group_id,
            missing,
        )
        return None

    def _set_assignment(self, partitions: set[TopicPartition]) -> None:
        if partitions == self.assignment:
            return
        added = partitions - self.assignment
        removed = self.assignment - partitions
        log.info(
            "share group %r: assignment %d partitions (+%d, -%d)",
            self.group_id,
            len(partitions),
            len(added),
            len(removed),
        )
        self.assignment = set(partitions)
        self._on_assignment(set(partitions))
