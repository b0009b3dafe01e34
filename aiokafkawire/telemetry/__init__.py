"""KIP-714 client telemetry: the client pushes its metrics to the broker when asked.

Every producer, consumer and share consumer does this by default (``enable_metrics_push=True``,
as Java's ``enable.metrics.push``) when the broker supports GetTelemetrySubscriptions and
PushTelemetry and a client-metrics subscription selects some of its metrics (the admin client
never pushes, as Java's; it only asks for its client instance id).  See ``docs/observability.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from aiokafkawire import errors
from aiokafkawire.telemetry.collect import (
    MetricsCollector,
    Value,
    consumer_values,
    producer_values,
    share_consumer_values,
)
from aiokafkawire.telemetry.otlp import MetricPoint, encode_metrics_data
from aiokafkawire.telemetry.reporter import TelemetryReporter, metric_selector

__all__ = [
    "MetricPoint",
    "MetricsCollector",
    "TelemetryReporter",
    "Value",
    "client_instance_id",
    "consumer_values",
    "encode_metrics_data",
    "metric_selector",
    "producer_values",
    "share_consumer_values",
    "start_reporter",
]


def start_reporter(
    config: Any,
    cluster: Any,
    tasks: Any,
    kind: str,
    values: Callable[[], list[Any]],
    resource: dict[str, str | None],
) -> TelemetryReporter | None:
    """Start ``kind``'s (``"producer"``, ``"consumer"``, ``"consumer.share"``) push loop under
    ``tasks``: its metric names start with ``org.apache.kafka.<kind>.``.

    ``config`` is the client's :class:`~aiokafkawire.client_config.CommonConfig`; None (nothing
    started) when its ``enable_metrics_push`` is off.  ``resource`` entries that are None
    (no group id...) are left out.
    """
    if not config.enable_metrics_push:
        return None
    collector = MetricsCollector(f"org.apache.kafka.{kind}.", config.metrics, values)
    reporter = TelemetryReporter(
        cluster,
        collector,
        resource={"client_id": config.client_id}
        | {k: v for k, v in resource.items() if v is not None},
        request_timeout_ms=config.request_timeout_ms,
        retry_backoff_max_ms=config.retry_backoff_max_ms,
    )
    reporter.start(tasks)
    return reporter


async def client_instance_id(
    reporter: TelemetryReporter | None, enabled: bool, client: str, timeout: float
) -> UUID | None:
    """What a pushing client's ``client_instance_id(timeout)`` does: typed errors when
    telemetry is off (``enabled``) or the ``client`` is not started (no ``reporter``), else
    the id, waiting at most ``timeout`` seconds."""
    if not enabled:
        raise errors.IllegalStateError("client telemetry is off (enable_metrics_push=False)")
    if reporter is None:
        raise errors.IllegalStateError(f"the {client} is not started")
    return await reporter.client_instance_id(timeout)
