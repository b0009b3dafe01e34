"""The admin client's core: its lifecycle, and where each request goes.

Every family of calls (topics, configs, groups, ...) is a mixin over :class:`AdminCore` and
sends through its routes: any broker, one broker, every broker, the controller, a group's
coordinator, or each partition's leader.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from aiokafkawire import errors
from aiokafkawire._retry import Backoff, Deadline, retry
from aiokafkawire._unclosed import warn_unclosed
from aiokafkawire.client_config import CommonOptions, split_common_options, unknown_options_error
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.cluster.metadata import BrokerInfo
from aiokafkawire.protocol.messages import GetTelemetrySubscriptionsRequest
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from typing_extensions import Unpack

# Attempts of one call's request (besides its deadline, request_timeout_ms): a few, as the
# admin calls always made.
ATTEMPTS = 5

T = TypeVar("T")
R = TypeVar("R")
_Self = TypeVar("_Self", bound="AdminCore")


class AdminCore:
    """The cluster, the lifecycle and the request routes every family of admin calls uses."""

    def __init__(self, **options: Unpack[CommonOptions]) -> None:
        """Configure the client (the common options only); nothing connects before start()."""
        common, rest = split_common_options(dict(options))
        if rest:
            raise unknown_options_error("Admin", rest)
        self._config = common
        self._cluster: Cluster = common.build_cluster()
        self._started = False
        self._closed = False
        self._instance_id: uuid.UUID | None = None  # KIP-714, asked for by client_instance_id

    def __repr__(self) -> str:
        return f"<Admin {self._config.bootstrap_servers!r}>"

    #: What a dropped client's warning names: its class, how to stop it (compat sets its own).
    _dropped_as = ("Admin", "admin.close()")

    def __del__(self) -> None:
        # Started and dropped without close() (as aiokafka's "Unclosed AIOKafkaProducer").
        if getattr(self, "_started", False) and not getattr(self, "_closed", True):
            warn_unclosed(self, *self._dropped_as)
            # Nothing of the cluster refers back to this client, so it can be collected while
            # the loop runs: then its refresh task and connections would outlive it.
            self._cluster.abandon()

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

    async def client_instance_id(self, timeout: float = 5.0) -> uuid.UUID | None:
        """The client instance id the cluster gives this client (KIP-714), as Java's
        ``Admin.clientInstanceId(timeout)``: one GetTelemetrySubscriptions request (the answer
        is kept).  None when the broker does not support client telemetry or did not answer
        within ``timeout`` seconds.  The admin client asks only for the id: it pushes no
        metrics (as Java's admin client).

        Raises :class:`~aiokafkawire.errors.IllegalStateError` with ``enable_metrics_push=False``
        or before :meth:`start`, and the broker's error (a
        :class:`~aiokafkawire.errors.BrokerResponseError`) if it refuses the request.
        """
        self._check()
        if not self._config.enable_metrics_push:
            raise errors.IllegalStateError("client telemetry is off (enable_metrics_push=False)")
        if timeout < 0:
            raise errors.ConfigError(f"timeout must be >= 0, not {timeout}")
        if self._instance_id is None:
            try:
                self._instance_id = await asyncio.wait_for(self._ask_instance_id(), timeout)
            except TimeoutError:
                return None
        return self._instance_id

    async def _ask_instance_id(self) -> uuid.UUID | None:
        connection = await self._cluster.any_connection()
        if not connection.versions.supports(GetTelemetrySubscriptionsRequest.API_KEY):
            return None
        request = GetTelemetrySubscriptionsRequest(client_instance_id=uuid.UUID(int=0))
        response = await connection.send(request, timeout_ms=self._timeout_ms)
        if response.error_code:
            raise errors.error_for_code(response.error_code)(
                "GetTelemetrySubscriptions (the client instance id)"
            )
        return response.client_instance_id if response.client_instance_id.int else None

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

    async def _retried(
        self,
        op: Callable[[], Awaitable[T]],
        should_retry: Callable[[BaseException], bool],
        what: str,
        on_retry: Callable[[BaseException], Awaitable[None] | None] | None = None,
    ) -> T:
        """``op`` under the client's retry policy: ``retry_backoff_ms`` doubling up to
        ``retry_backoff_max_ms``, at most :data:`ATTEMPTS` tries within ``request_timeout_ms``."""
        return await retry(
            op,
            should_retry=should_retry,
            deadline=Deadline.after_ms(self._timeout_ms),
            backoff=Backoff(self._config.retry_backoff_ms, self._config.retry_backoff_max_ms),
            what=what,
            on_retry=on_retry,
            max_attempts=ATTEMPTS,
        )

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
        """Send to the controller, following it when it moves: a lost connection refreshes the
        metadata (which names the controller) and tries again."""

        async def attempt() -> Any:
            controller = self._cluster.metadata.controller_id
            if controller < 0 or controller not in self._cluster.metadata.brokers:
                return await self._send_any(request, version)  # any broker forwards it
            return await self._cluster.send(controller, request, version)

        async def refresh(_: BaseException) -> None:
            await self._cluster.refresh_metadata()

        try:
            return await self._retried(attempt, _connection_lost, "the controller", refresh)
        except errors.KafkaConnectionError as exc:
            raise errors.KafkaTimeoutError("the controller could not be reached") from exc

    async def _coordinator_call(
        self, group_id: str, request: Any, version: int | None = None
    ) -> tuple[Any, int]:
        """Send to a group's coordinator; a lost connection is tried again, and so is an answer
        saying that broker is not (yet) the coordinator, after looking the coordinator up again.
        """
        refusals: list[BaseException] = []  # raised here for an answer, not by the lookup

        async def attempt() -> tuple[Any, int]:
            broker = await self._cluster.coordinator(group_id)
            response = await self._cluster.send_to_coordinator(group_id, request, version)
            code = coordinator_error_code(response)
            if code:
                refusals.append(errors.error_for_code(code)(f"group {group_id!r}"))
                raise refusals[-1]
            return response, broker.node_id

        def forget_coordinator(exc: BaseException) -> None:
            if errors.action_of(exc) is errors.ErrorAction.FIND_COORDINATOR:
                self._cluster.invalidate_coordinator(group_id)

        try:
            return await self._retried(
                attempt, coordinator_retriable, f"group {group_id!r}", forget_coordinator
            )
        except errors.BrokerResponseError as exc:
            if refusals and exc is refusals[-1]:
                raise errors.KafkaTimeoutError(
                    f"the coordinator of group {group_id!r} is not available"
                ) from exc
            raise

    async def _ask_each_coordinator(
        self,
        group_ids: Iterable[str],
        request_for: Callable[[str], Any],
        results_of: Callable[[Any, int], Iterable[tuple[str, R]]],
    ) -> dict[str, R]:
        """One request per group to its coordinator, in turn; ``results_of(answer,
        coordinator)`` gives the answer's ``(group id, result)`` pairs."""
        results: dict[str, R] = {}
        for group_id in group_ids:
            response, node = await self._coordinator_call(group_id, request_for(group_id))
            results.update(results_of(response, node))
        return results

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


def _connection_lost(exc: BaseException) -> bool:
    return isinstance(exc, errors.KafkaConnectionError)


def coordinator_retriable(exc: BaseException) -> bool:
    """A lost connection, or a broker that is not (yet) the coordinator."""
    return _connection_lost(exc) or errors.action_of(exc) is errors.ErrorAction.FIND_COORDINATOR


def coordinator_error_code(response: Any) -> int:
    """The code by which an answer says its broker cannot act as the coordinator (yet), or 0.

    Some answers carry that at the top (or per group); OffsetCommit and the older OffsetFetch
    only per partition, e.g. COORDINATOR_LOAD_IN_PROGRESS from a broker just started.
    """
    top = _top_level_error(response)
    if top in errors.COORDINATOR_CODES:
        return top
    return next(
        (
            code
            for topic in getattr(response, "topics", None) or ()
            for partition in getattr(topic, "partitions", None) or ()
            if (code := getattr(partition, "error_code", 0)) in errors.COORDINATOR_CODES
        ),
        0,
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
