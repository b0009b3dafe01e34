"""Group and transaction coordinators: FindCoordinator lookups, retried and cached.

A coordinator is cached by (kind, key) until a coordinator or connection error invalidates it;
a lookup retries through the shared policy (:func:`aiokafkawire._retry.retry`) the errors that say
"ask again" (:data:`~aiokafkawire.errors.COORDINATOR_ERRORS`, a lost connection).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiokafkawire import errors
from aiokafkawire._retry import Backoff, Deadline, retry
from aiokafkawire.cluster.metadata import BrokerInfo
from aiokafkawire.errors.actions import COORDINATOR_LOOKUP_ERRORS
from aiokafkawire.net.connection import BrokerConnection
from aiokafkawire.protocol.messages import FindCoordinatorRequest

__all__ = ["COORDINATOR_KEY_TYPES", "CoordinatorCache"]

COORDINATOR_KEY_TYPES = {"group": 0, "transaction": 1}


class CoordinatorCache:
    """Coordinators by (kind, key); ``any_connection`` reaches a broker to ask."""

    def __init__(
        self,
        any_connection: Callable[[], Awaitable[BrokerConnection]],
        *,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        retry_backoff_max_ms: int,
    ) -> None:
        self._any_connection = any_connection
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._retry_backoff_max_ms = retry_backoff_max_ms
        self._cached: dict[tuple[str, str], BrokerInfo] = {}

    async def get(
        self, key: str, kind: str = "group", *, timeout_ms: int | None = None
    ) -> BrokerInfo:
        """The coordinator for ``key`` (cached; looked up, with retries, within ``timeout_ms``)."""
        cached = self._cached.get((kind, key))
        if cached is not None:
            return cached
        timeout_ms = self._request_timeout_ms if timeout_ms is None else timeout_ms
        broker = await retry(
            lambda: self._lookup(key, kind),
            should_retry=lambda exc: isinstance(exc, COORDINATOR_LOOKUP_ERRORS),
            deadline=Deadline.after_ms(timeout_ms),
            backoff=Backoff(self._retry_backoff_ms, self._retry_backoff_max_ms),
            what=f"coordinator lookup for {kind} {key!r}",
        )
        self._cached[(kind, key)] = broker
        return broker

    def invalidate(self, key: str, kind: str = "group") -> None:
        """Forget a cached coordinator (after NOT_COORDINATOR and friends)."""
        self._cached.pop((kind, key), None)

    async def _lookup(self, key: str, kind: str) -> BrokerInfo:
        connection = await self._any_connection()
        version = connection.versions.version_for(FindCoordinatorRequest.API_KEY)
        if kind != "group" and version < 1:
            raise errors.UnsupportedVersionForBrokerError(
                "transaction coordinators need FindCoordinator v1+"
            )
        request = FindCoordinatorRequest()
        if version >= 1:
            request.key_type = COORDINATOR_KEY_TYPES[kind]
        if version >= 4:
            request.coordinator_keys = [key]
        else:
            request.key = key
        response = await connection.send(request, version)
        if version >= 4:
            entry = response.coordinators[0]
            code, node_id, host, port = entry.error_code, entry.node_id, entry.host, entry.port
            message = entry.error_message
        else:
            code, node_id, host, port = (
                response.error_code,
                response.node_id,
                response.host,
                response.port,
            )
            message = getattr(response, "error_message", None)
        errors.raise_for_code(code, message or f"FindCoordinator for {kind} {key!r}")
        return BrokerInfo(node_id, host, port)
