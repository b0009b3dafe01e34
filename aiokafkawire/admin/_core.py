"""The admin client's core: its lifecycle, and where each request goes.

Every family of calls (topics, configs, groups, ...) is a mixin over :class:`AdminCore` and
sends through its routes: any broker, one broker, every broker, the controller, a group's
coordinator, or each partition's leader.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from aiokafkawire import errors
from aiokafkawire.client_config import split_common_options, unknown_options_error
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.cluster.metadata import BrokerInfo
from aiokafkawire.structs import TopicPartition

_RETRY_LIMIT = 5

T = TypeVar("T")
_Self = TypeVar("_Self", bound="AdminCore")


class AdminCore:
    """The cluster, the lifecycle and the request routes every family of admin calls uses."""

    def __init__(self, **options: Any) -> None:
        common, rest = split_common_options(dict(options))
        if rest:
            raise unknown_options_error("Admin", rest)
        self._config = common
        self._cluster: Cluster = common.build_cluster()
        self._started = False
        self._closed = False

    def __repr__(self) -> str:
        return f"<Admin {self._config.bootstrap_servers!r}>"

    @property
    def cluster(self) -> Cluster:
        """The underlying cluster manager."""
        return self._cluster

    async def start(self) -> None:
        """Connect and fetch metadata."""
        if self._closed:
            raise errors.ClientClosedError("the admin client is closed")
        if not self._started:
            self._cluster.want_all_topics()
            await self._cluster.start()
            self._started = True

    async def close(self) -> None:
        """Close every connection."""
        self._closed = True
        await self._cluster.close()

    async def stop(self) -> None:
        """The same as :meth:`close` (aiokafka's name)."""
        await self.close()

    def metrics(self) -> dict[str, Any]:
        """A snapshot of this client's per-broker counters (see :mod:`aiokafkawire.metrics`)."""
        return {"brokers": self._config.metrics.snapshot()}

    async def find_coordinator(self, key: str, kind: str = "group") -> BrokerInfo:
        """The broker coordinating a group (``kind="group"``) or transactional id
        (``kind="transaction"``), looked up with FindCoordinator (retried while the coordinator
        is not available, up to ``request_timeout_ms``)."""
        self._check()
        if kind not in ("group", "transaction"):
            raise errors.ConfigError(f"kind must be 'group' or 'transaction', got {kind!r}")
        if not isinstance(key, str) or not key:
            raise errors.KafkaTypeError(f"key must be a non-empty str, got {key!r}")
        self._cluster.invalidate_coordinator(key, kind)  # a fresh answer, not the cache
        return await self._cluster.coordinator(key, kind)

    async def __aenter__(self: _Self) -> _Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _check(self) -> None:
        if self._closed:
            raise errors.ClientClosedError("the admin client is closed")
        if not self._started:
            raise errors.IllegalStateError("call start() (or use 'async with') first")

    @property
    def _timeout_ms(self) -> int:
        return self._config.request_timeout_ms

    # ---------------------------------------------------------------- routes

    async def _send_any(self, request: Any, version: int | None = None) -> Any:
        """Send to whichever broker is connected (requests any broker can serve)."""
        return await (await self._cluster.any_connection()).send(request, version)

    async def _send_to(self, node_id: int | None, request: Any) -> Any:
        """Send to broker ``node_id``, or to any broker when it is None."""
        if node_id is None:
            return await self._send_any(request)
        return await self._cluster.send(node_id, request)

    async def _ask_each_broker(
        self, ask: Callable[[int], Awaitable[T]], node_ids: Iterable[int] | None = None
    ) -> dict[int, T]:
        """``ask(node_id)`` of each broker at once (all brokers of fresh metadata by default)."""
        metadata = await self._cluster.refresh_metadata()
        nodes = list(metadata.brokers) if node_ids is None else list(dict.fromkeys(node_ids))
        answers = await asyncio.gather(*(ask(n) for n in nodes))
        return dict(zip(nodes, answers, strict=True))

    async def _send_controller(self, request: Any, version: int | None = None) -> Any:
        """Send to the controller, following it when it moves (NOT_CONTROLLER)."""
        for _ in range(_RETRY_LIMIT):
            controller = self._cluster.metadata.controller_id
            if controller < 0 or controller not in self._cluster.metadata.brokers:
                return await self._send_any(request, version)
            try:
                return await self._cluster.send(controller, request, version)
            except errors.KafkaConnectionError:
                await self._cluster.refresh_metadata()
        raise errors.KafkaTimeoutError("the controller could not be reached")

    async def _coordinator_call(
        self, group_id: str, request: Any, version: int | None = None
    ) -> tuple[Any, int]:
        """Send to a group's coordinator, retrying on coordinator errors."""
        for attempt in range(_RETRY_LIMIT):
            broker = await self._cluster.coordinator(group_id)
            try:
                response = await self._cluster.send_to_coordinator(group_id, request, version)
            except errors.KafkaConnectionError:
                if attempt == _RETRY_LIMIT - 1:
                    raise
                continue
            if _coordinator_error(response):
                self._cluster.invalidate_coordinator(group_id)
                await asyncio.sleep(self._config.retry_backoff_ms / 1000 * (attempt + 1))
                continue
            return response, broker.node_id
        raise errors.KafkaTimeoutError(f"the coordinator of group {group_id!r} is not available")

    async def _by_leader(
        self, partitions: Iterable[TopicPartition]
    ) -> tuple[dict[int, list[TopicPartition]], dict[TopicPartition, errors.KafkaError]]:
        """The partitions per leader, and the error of each partition without a known leader."""
        leaders: dict[int, list[TopicPartition]] = defaultdict(list)
        failed: dict[TopicPartition, errors.KafkaError] = {}
        for tp in partitions:
            try:
                await self._cluster.wait_for_topic(tp.topic)
            except errors.KafkaError as exc:
                failed[tp] = exc
                continue
            leader = self._cluster.metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                failed[tp] = errors.LeaderNotAvailableError(f"no leader for {tp}")
            else:
                leaders[leader].append(tp)
        return leaders, failed


_COORDINATOR_ERRORS = frozenset(
    {
        errors.NotCoordinatorError.code,
        errors.CoordinatorNotAvailableError.code,
        errors.CoordinatorLoadInProgressError.code,
    }
)


def _coordinator_error(response: Any) -> bool:
    """Whether the answer says its broker cannot act as the group's coordinator (yet).

    Some answers carry that at the top (or per group); OffsetCommit and the older OffsetFetch
    only per partition, e.g. COORDINATOR_LOAD_IN_PROGRESS from a broker just started.
    """
    if _top_level_error(response) in _COORDINATOR_ERRORS:
        return True
    return any(
        getattr(partition, "error_code", 0) in _COORDINATOR_ERRORS
        for topic in getattr(response, "topics", None) or ()
        for partition in getattr(topic, "partitions", None) or ()
    )


def _top_level_error(response: Any) -> int:
    """The error code that concerns the coordinator itself, where a response has one."""
    code = getattr(response, "error_code", 0)
    if code:
        return int(code)
    for attr in ("groups", "results"):
        items = getattr(response, attr, None)
        if items:
            first = items[0]
            return int(getattr(first, "error_code", 0))
    return 0
