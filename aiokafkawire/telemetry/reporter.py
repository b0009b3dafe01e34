"""KIP-714 client telemetry: ask the broker what to push, push it, push once more on close.

One background task per client (owned by the client's :class:`~aiokafkawire._tasks.TaskSupervisor`)
alternates two requests to one broker: GetTelemetrySubscriptions (which metrics, how often, which
compression, the client instance id) and PushTelemetry (the selected metrics as an OTLP
``MetricsData``).  The first push waits the push interval times a random factor in [0.5, 1.5]
(KIP-714, so that clients started together do not push together); later pushes wait the interval.
Error handling is KIP-714's (and the Java client's ``ClientTelemetryUtils``):

- UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE: ask for the subscription again at once;
- TELEMETRY_TOO_LARGE, THROTTLING_QUOTA_EXCEEDED: ask again after the push interval;
- INVALID_REQUEST, INVALID_RECORD, UNSUPPORTED_VERSION and any other error: stop for good;
- no connection / a timeout: ask again after the push interval (or ``retry_backoff_max_ms``
  before any subscription is known).

A broker without the two APIs (Kafka before 3.7, Tansu, librdkafka's mock) simply ends the task.
Nothing here is awaited by a send or a fetch.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any
from uuid import UUID

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.protocol.messages import (
    GetTelemetrySubscriptionsRequest,
    PushTelemetryRequest,
)
from aiokafkawire.protocol.records.codecs import compress
from aiokafkawire.telemetry.collect import MetricsCollector
from aiokafkawire.telemetry.otlp import CUMULATIVE, DELTA, encode_metrics_data

__all__ = ["DEFAULT_PUSH_INTERVAL_MS", "TelemetryReporter", "metric_selector"]

log = logging.getLogger("aiokafkawire.telemetry")

DEFAULT_PUSH_INTERVAL_MS = 300_000  # when the broker gives none (Java's default)
_SUBSCRIBE, _PUSH = "subscribe", "push"
_TASK_KEY = "telemetry"


def metric_selector(requested: list[str]) -> Callable[[str], bool]:
    """KIP-714's selection: none selects nothing, ``""`` or ``"*"`` everything, else prefixes."""
    if not requested:
        return lambda name: False
    if "" in requested or "*" in requested:
        return lambda name: True
    prefixes = tuple(requested)
    return lambda name: name.startswith(prefixes)


def _compression_for(accepted: list[int]) -> int:
    """The first of the broker's accepted codecs whose library is present (none: 0)."""
    for codec in accepted:
        if codec in (1, 2, 3, 4):
            try:
                compress(codec, b"-")
            except errors.KafkaError:
                continue  # the library is missing: try the broker's next choice
            return codec
    return 0


class TelemetryReporter:
    """Pushes one client's metrics to the cluster as the broker asks (KIP-714).

    ``collector`` reads the client's counters; ``resource`` is the OTLP resource's attributes
    (client id, group id...).  :meth:`start` runs the loop under ``tasks``; :meth:`close` makes
    the terminating push (bounded by ``close_timeout_ms``) and ends it.
    """

    def __init__(
        self,
        cluster: Any,
        collector: MetricsCollector,
        *,
        resource: dict[str, str],
        request_timeout_ms: int = 30_000,
        retry_backoff_max_ms: int = 1_000,
        close_timeout_ms: int = 5_000,
    ) -> None:
        self._cluster = cluster
        self._collector = collector
        self._resource = resource
        self._timeout_ms = request_timeout_ms
        self._retry_ms = retry_backoff_max_ms
        self._close_timeout = close_timeout_ms / 1000
        self.instance_id: UUID | None = None
        self.subscription: Any = None  # the last successful GetTelemetrySubscriptions answer
        self.pushes = 0
        self.stopped_reason: str | None = None
        self._known = asyncio.Event()  # the instance id is known, or telemetry ended
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self, tasks: TaskSupervisor) -> None:
        """Start the push loop as ``tasks``' task ``"telemetry"``."""
        self._task = tasks.start(_TASK_KEY, self._run())

    async def client_instance_id(self, timeout: float) -> UUID | None:
        """The broker-assigned client instance id; None if not known within ``timeout``
        seconds."""
        if timeout < 0:
            raise errors.ConfigError(f"timeout must be >= 0, not {timeout}")
        if self.instance_id is None and timeout > 0:
            try:
                await asyncio.wait_for(self._known.wait(), timeout)
            except TimeoutError:
                pass
        return self.instance_id

    async def close(self) -> None:
        """Make the terminating push (if subscribed) and let the loop end, waiting at most the
        close timeout; a loop still in a request then is left to the owner's supervisor, whose
        ``stop()`` cancels it (a cancellation here would be reported as a task failure)."""
        self._closing.set()
        task = self._task
        if task is None or task.done():
            return
        done, _ = await asyncio.wait([task], timeout=self._close_timeout)
        if not done:
            log.info("telemetry: still waiting for a broker at close; the push is abandoned")

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        action: str | None = _SUBSCRIBE
        delay = 0.0
        while action is not None and not self._closing.is_set():
            if delay > 0:
                try:
                    await asyncio.wait_for(self._closing.wait(), delay)
                    break
                except TimeoutError:
                    pass
            if action == _SUBSCRIBE:
                action, delay = await self._subscribe()
            else:
                action, delay = await self._push(terminating=False)
        self._known.set()
        if action is not None and self._subscribed():
            try:
                await asyncio.wait_for(self._push(terminating=True), self._close_timeout)
            except TimeoutError:
                log.warning("telemetry: the terminating push timed out")

    def _subscribed(self) -> bool:
        return self.subscription is not None and bool(self.subscription.requested_metrics)

    def _interval(self) -> float:
        sub = self.subscription
        ms = sub.push_interval_ms if sub is not None and sub.push_interval_ms > 0 else 0
        return (ms or DEFAULT_PUSH_INTERVAL_MS) / 1000

    def _stop(self, reason: str) -> tuple[None, float]:
        self.stopped_reason = reason
        log.info("telemetry: stopped: %s", reason)
        return None, 0.0

    def _after_error(self, api: str, code: int) -> tuple[str | None, float]:
        """KIP-714's answer to an error code from either API: what next, and when."""
        name = getattr(errors.error_for_code(code), "name", f"error {code}")
        if code in errors.TELEMETRY_RESUBSCRIBE_NOW_CODES:
            log.debug("telemetry: %s answered %s: subscribing again", api, name)
            return _SUBSCRIBE, 0.0
        if code in errors.TELEMETRY_RESUBSCRIBE_LATER_CODES:
            log.info("telemetry: %s answered %s: next try after the interval", api, name)
            return _SUBSCRIBE, self._interval()
        log.warning("telemetry: %s answered %s: telemetry disabled for this client", api, name)
        return self._stop(f"{api} answered {name} (error {code})")

    async def _send(self, request: Any) -> Any:
        connection = await self._cluster.any_connection()
        if not connection.versions.supports(request.API_KEY):
            raise errors.UnsupportedVersionForBrokerError(
                f"broker does not support {type(request).__name__.removesuffix('Request')}"
            )
        return await connection.send(request, timeout_ms=self._timeout_ms)

    async def _request(self, request: Any) -> tuple[Any, tuple[str | None, float] | None]:
        """Send; on failure the second item says what to do next."""
        try:
            return await self._send(request), None
        except errors.KafkaError as exc:
            # As Java's ClientTelemetryReporter (handleFailedRequest): a retriable failure is
            # tried again later; any other (an unsupported version, an authorization or
            # authentication failure) disables telemetry for this client.
            if not errors.retriable_in_background(exc):
                return None, self._stop(str(exc))
            wait = self._interval() if self.subscription is not None else self._retry_ms / 1000
            log.debug(
                "telemetry: %s failed (%s); again in %.1fs", type(request).__name__, exc, wait
            )
            return None, (_SUBSCRIBE, wait)

    async def _subscribe(self) -> tuple[str | None, float]:
        first = self.subscription is None
        request = GetTelemetrySubscriptionsRequest(
            client_instance_id=self.instance_id or UUID(int=0)
        )
        response, failed = await self._request(request)
        if failed is not None:
            return failed
        if response.error_code:
            return self._after_error("GetTelemetrySubscriptions", response.error_code)
        if self.instance_id is None and response.client_instance_id.int:
            self.instance_id = response.client_instance_id
        self._known.set()
        self.subscription = response
        interval = self._interval()
        if not response.requested_metrics:
            return _SUBSCRIBE, interval  # nothing asked for: look again after the interval
        return _PUSH, interval * random.uniform(0.5, 1.5) if first else interval

    def payload(self) -> tuple[int, bytes]:
        """The compression type and the (compressed) OTLP bytes of the next push."""
        sub = self.subscription
        points = self._collector.collect(
            metric_selector(list(sub.requested_metrics)), delta=sub.delta_temporality
        )
        data = encode_metrics_data(
            points,
            resource=self._resource,
            temporality=DELTA if sub.delta_temporality else CUMULATIVE,
        )
        codec = _compression_for(list(sub.accepted_compression_types))
        if codec:
            try:
                data = compress(codec, data)
            except Exception as exc:  # as Java: a codec failure sends the data uncompressed
                log.warning(
                    "telemetry: compression %d failed (%s); sending uncompressed", codec, exc
                )
                codec = 0
        return codec, data

    async def _push(self, *, terminating: bool) -> tuple[str | None, float]:
        sub = self.subscription
        codec, data = self.payload()
        if sub.telemetry_max_bytes > 0 and len(data) > sub.telemetry_max_bytes:
            log.warning(
                "telemetry: %d bytes of metrics exceed the broker's limit of %d; sent anyway",
                len(data),
                sub.telemetry_max_bytes,
            )
        request = PushTelemetryRequest(
            client_instance_id=self.instance_id or UUID(int=0),
            subscription_id=sub.subscription_id,
            terminating=terminating,
            compression_type=codec,
            metrics=data,
        )
        response, failed = await self._request(request)
        if failed is not None:
            return failed
        self.pushes += 1
        if response.error_code:
            return self._after_error("PushTelemetry", response.error_code)
        return _PUSH, self._interval()
