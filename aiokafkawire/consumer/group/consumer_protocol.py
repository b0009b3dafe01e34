"""KIP-848 membership (``group_protocol="consumer"``): the broker computes the assignment.

One supervised loop sends ConsumerGroupHeartbeat every ``heartbeat_interval_ms`` (the broker's
value), carrying the subscription and the partitions this member owns.  When the broker's target
assignment differs, the member revokes what it must give up (commit + listener), adds what is new,
and acknowledges at once with its new owned set.  Leaving sends member epoch -1 (-2 for a static
member, which keeps its assignment for the session timeout).
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from aiokafkawire import errors
from aiokafkawire._waits import wait_event
from aiokafkawire.consumer.group.membership import Membership
from aiokafkawire.consumer.group.states import GroupEvent, GroupState
from aiokafkawire.protocol.messages import ConsumerGroupHeartbeatRequest
from aiokafkawire.protocol.messages.consumer_group_heartbeat import TopicPartitions
from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer.group")

__all__ = ["ConsumerProtocolMembership"]

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
_HEARTBEAT = "heartbeat"
_LEAVE_TIMEOUT_S = 5.0


class ConsumerProtocolMembership(Membership):
    """A member of a KIP-848 consumer group."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # From ConsumerGroupHeartbeat v1 the member chooses its own id (KIP-1082).
        self.member_id = uuid.uuid4().hex
        self.generation = 0  # the member epoch; 0 = (re)joining
        self._interval = 0.0
        self._pending_target: set[TopicPartition] | None = None

    def start(self) -> None:
        """Start the heartbeat loop."""
        self._start_loop(_HEARTBEAT, self._heartbeat_loop)

    def _leaves_on_close(self) -> bool:
        return self.generation > 0

    async def _leave(self, reason: str) -> None:
        """A heartbeat with epoch -1 (-2 for a static member, which keeps its assignment)."""
        epoch = LEAVE_EPOCH if self.config.group_instance_id is None else STATIC_LEAVE_EPOCH
        await self._send(epoch)

    def _membership_error_from_commit(self, code: int) -> None:
        """A commit refused for the membership: heartbeat now, keep the epoch.

        The heartbeat decides the membership: STALE_MEMBER_EPOCH means a newer epoch is on its
        way (the commit is tried again with it); FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID come
        back on the heartbeat too, which then rejoins with epoch 0 and the same member id.
        Setting the epoch to -1 here, as a classic member forgets its generation, would make
        the next heartbeat a leave.
        """
        self.request_rejoin(f"commit answered {errors.error_for_code(code).name}")

    def request_rejoin(self, reason: str = "") -> None:
        """Heartbeat now (the subscription changed or an acknowledgement is due)."""
        if reason:
            log.info("group %r: heartbeat now (%s)", self.group_id, reason)
        self._wakeup.set()

    # ----------------------------------------------------------------- the loop

    async def _heartbeat_loop(self) -> None:
        # Java's heartbeat request state: after a failure the next heartbeat waits the retry
        # policy's backoff (doubling), after an answer the interval the coordinator gave.
        backoff = self._backoff()
        while True:
            await wait_event(self._wakeup, self._interval)
            self._wakeup.clear()
            if self._poll_timed_out:
                self._interval = 1.0
                continue
            if self.state is GroupState.STABLE and self._poll_expired() and not self._in_callback:
                await self._poll_timeout()
                continue
            if self._partitions_lost_pending:
                await self._lose_partitions()
            try:
                response = await self._send(self.generation)
            except errors.KafkaError as exc:
                if not errors.retriable_in_background(exc):
                    raise
                log.debug("group %r: heartbeat failed: %s", self.group_id, exc)
                self._cluster.invalidate_coordinator(self.group_id)
                self._interval = backoff.next_delay()
                continue
            code = response.error_code
            if errors.action_for(code) is errors.ErrorAction.FIND_COORDINATOR:
                self._cluster.invalidate_coordinator(self.group_id)
                self._interval = backoff.next_delay()
                continue
            if code in errors.MEMBER_FENCED_CODES:
                log.info(
                    "group %r: fenced (%s); rejoining",
                    self.group_id,
                    errors.error_for_code(code).name,
                )
                self.generation = 0
                self._move(GroupEvent.FENCED)
                await self._lose_partitions()
                self._interval = 0.0
                continue
            if code:
                error = errors.error_for_code(code)(
                    response.error_message or "ConsumerGroupHeartbeat failed"
                )
                if errors.retriable_in_background(error):
                    self._interval = backoff.next_delay()
                    continue
                raise error
            backoff.reset()
            if response.member_id:
                self.member_id = response.member_id
            self.generation = response.member_epoch
            self._interval = max(response.heartbeat_interval_ms, 1) / 1000
            if response.assignment is not None:
                self._pending_target = await self._resolve(response.assignment.topic_partitions)
            if self._pending_target is not None:
                await self._reconcile(self._pending_target)

    async def _resolve(self, topic_partitions: list[Any]) -> set[TopicPartition] | None:
        """Topic ids -> names (refreshing metadata for unknown ids); None until all are known."""
        names = self._names_by_id()
        if any(tp.topic_id not in names for tp in topic_partitions):
            await self._cluster.refresh_metadata()
            names = self._names_by_id()
        target: set[TopicPartition] = set()
        missing = False
        for entry in topic_partitions:
            name = names.get(entry.topic_id)
            if name is None:
                missing = True
                continue
            target.update(TopicPartition(name, p) for p in entry.partitions)
        if missing:
            self._interval = min(self._interval, 0.2)
        return target

    def _names_by_id(self) -> dict[Any, str]:
        return {
            info.topic_id: name
            for name, info in self._cluster.metadata.topics.items()
            if info.topic_id is not None
        }

    async def _reconcile(self, target: set[TopicPartition]) -> None:
        owned = set(self._subs.assignment)
        revoked = owned - target
        added = target - owned
        self._pending_target = None
        if revoked:
            await self._revoke(revoked)
        if added:
            self._cluster.add_topics({tp.topic for tp in added})
        self._move(GroupEvent.ASSIGNED)
        if revoked or added:
            log.info(
                "group %r epoch %d: assigned %s (added %d, revoked %d)",
                self.group_id,
                self.generation,
                sorted(target),
                len(added),
                len(revoked),
            )
            await self._assign(added)
            self._interval = 0.0  # acknowledge the new assignment at once
        self._stable.set()

    async def _send(self, epoch: int) -> Any:
        config = self.config
        connection = await self._cluster.coordinator_connection(self.group_id, purpose="heartbeat")
        version = connection.versions.version_for(ConsumerGroupHeartbeatRequest.API_KEY)
        subs = self._subs
        ids = {
            name: info.topic_id
            for name, info in self._cluster.metadata.topics.items()
            if info.topic_id is not None
        }
        owned: dict[str, list[int]] = {}
        for tp in subs.assignment:
            owned.setdefault(tp.topic, []).append(tp.partition)
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=config.group_instance_id,
            rack_id=config.client_rack or None,
            rebalance_timeout_ms=config.effective_rebalance_timeout_ms if epoch == 0 else -1,
            server_assignor=config.group_remote_assignor,
            topic_partitions=[
                TopicPartitions(topic_id=ids[t], partitions=sorted(p))
                for t, p in owned.items()
                if t in ids
            ],
        )
        if subs.pattern is not None and version >= 1:
            request.subscribed_topic_regex = subs.pattern.pattern
            request.subscribed_topic_names = None
        else:
            topics = (
                subs.matching_topics(self._cluster.metadata.topics)
                if subs.pattern is not None
                else subs.topics
            )
            request.subscribed_topic_names = sorted(topics)
            if version >= 1:
                # An empty regex says "no regex subscription" (KIP-848); some brokers insist on
                # both fields being present together.
                request.subscribed_topic_regex = ""
        return await connection.send(request, version)

    async def _leave_after_poll_timeout(self) -> None:
        await self._try_leave("consumer poll timeout has expired", _LEAVE_TIMEOUT_S)
        self.generation = 0

    async def on_poll(self) -> None:
        """Note the poll; after a poll timeout, give the partitions up and join again."""
        was_out = self._poll_timed_out
        await super().on_poll()
        if was_out:
            self._interval = 0.0
            self._last_poll = time.monotonic()
            self._wakeup.set()
