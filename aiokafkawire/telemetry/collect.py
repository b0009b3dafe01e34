"""What a client pushes: its counters under the KIP-714 metric names.

Names follow the Java client's convention (KIP-714 "Metric naming"): ``org.apache.kafka.``,
the client type, the Java metric group without its ``producer-``/``consumer-`` prefix and
``-metrics`` suffix, then the metric name, dashes turned into dots; e.g. the consumer's
``fetch-manager-metrics`` / ``fetch-latency-avg`` is
``org.apache.kafka.consumer.fetch.manager.fetch.latency.avg``.  Per-broker values carry a
``node_id`` attribute.  Everything is read from counters the client keeps anyway; nothing here
runs on a send or fetch path.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from aiokafkawire.metrics import ClientMetrics
from aiokafkawire.telemetry.otlp import MetricPoint

__all__ = [
    "MetricsCollector",
    "Value",
    "consumer_values",
    "producer_values",
    "share_consumer_values",
]

#: ``(name after the client prefix, "sum" or "gauge", value)``
Value = tuple[str, str, "int | float"]

# KIP-714's required client metrics that aiokafkawire does not measure (see docs/observability.md).
NOT_MEASURED = {
    "producer": ("record.queue.time.avg", "record.queue.time.max"),
    "consumer": ("poll.idle.ratio.avg", "coordinator.rebalance.latency.max"),
}


def _ms(samples: list[float]) -> tuple[float, float]:
    """Average and maximum of latency samples (seconds) in milliseconds."""
    if not samples:
        return 0.0, 0.0
    return sum(samples) * 1000 / len(samples), max(samples) * 1000


def producer_values(
    stats: Any, buffered: int, buffer_memory: int, client: ClientMetrics
) -> list[Value]:
    """The producer's own values (``stats`` is its :class:`~aiokafkawire.metrics.ProducerStats`)."""
    brokers = list(client.brokers.values())
    responses = sum(b.responses for b in brokers)
    throttle_total = sum(b.throttle_time_ms_total for b in brokers)
    throttle_max = max((b.throttle_time_ms_max for b in brokers), default=0)
    values: list[Value] = [
        ("produce.throttle.time.avg", "gauge", throttle_total / responses if responses else 0.0),
        ("produce.throttle.time.max", "gauge", float(throttle_max)),
        ("record.send.total", "sum", stats.records),
        ("record.error.total", "sum", stats.records_failed),
        ("batch.size.avg", "gauge", stats.bytes / stats.batches if stats.batches else 0.0),
        ("buffer.total.bytes", "gauge", buffer_memory),
        ("buffer.available.bytes", "gauge", buffer_memory - buffered),
    ]
    if stats.uncompressed_bytes:
        values.append(("compression.rate.avg", "gauge", stats.bytes / stats.uncompressed_bytes))
    return values


def consumer_values(
    records_consumed: int,
    lags: Iterable[int | None],
    assigned: int,
    rebalances: int,
    rebalance_time_total_s: float,
    client: ClientMetrics,
) -> list[Value]:
    """The consumer's own values, from its counters and subscription state."""
    fetch_avg, fetch_max = _ms(_samples(client, 1))  # Fetch
    commit_avg, commit_max = _ms(_samples(client, 8))  # OffsetCommit
    known = [lag for lag in lags if lag is not None]
    rebalance_ms = rebalance_time_total_s * 1000
    return [
        ("fetch.manager.fetch.latency.avg", "gauge", fetch_avg),
        ("fetch.manager.fetch.latency.max", "gauge", fetch_max),
        ("fetch.manager.records.consumed.total", "sum", records_consumed),
        ("fetch.manager.records.lag.max", "gauge", max(known, default=0)),
        ("coordinator.commit.latency.avg", "gauge", commit_avg),
        ("coordinator.commit.latency.max", "gauge", commit_max),
        ("coordinator.assigned.partitions", "gauge", assigned),
        ("coordinator.rebalance.total", "sum", rebalances),
        ("coordinator.rebalance.latency.total", "sum", round(rebalance_ms)),
        (
            "coordinator.rebalance.latency.avg",
            "gauge",
            rebalance_ms / rebalances if rebalances else 0.0,
        ),
    ]


def share_consumer_values(
    acknowledgements_sent: int, acknowledgements_failed: int, client: ClientMetrics
) -> list[Value]:
    """The share consumer's own values (Java's ``consumer-share-fetch-manager-metrics``):
    ShareFetch latency, and the acknowledgements (one per record) sent and refused."""
    fetch_avg, fetch_max = _ms(_samples(client, 78))  # ShareFetch
    return [
        ("fetch.manager.fetch.latency.avg", "gauge", fetch_avg),
        ("fetch.manager.fetch.latency.max", "gauge", fetch_max),
        ("fetch.manager.acknowledgements.send.total", "sum", acknowledgements_sent),
        ("fetch.manager.acknowledgements.error.total", "sum", acknowledgements_failed),
    ]


def _samples(client: ClientMetrics, api_key: int) -> list[float]:
    samples: list[float] = []
    for stats in client.brokers.values():
        ring = stats.latencies.get(api_key)
        if ring is not None:
            samples += ring.kept()
    return samples


class MetricsCollector:
    """Turns a client's counters into :class:`MetricPoint` lists, one list per push.

    ``prefix`` is ``"org.apache.kafka.producer."``, ``"...consumer."`` or
    ``"...consumer.share."``; ``values`` returns
    the client's own values; the connection counters every client has are added here.  With
    ``delta=True`` (the subscription's ``DeltaTemporality``) sums are the change since the
    previous :meth:`collect`, else totals since the client started.
    """

    def __init__(
        self, prefix: str, client: ClientMetrics, values: Callable[[], list[Value]]
    ) -> None:
        self.prefix = prefix
        self.client = client
        self.values = values
        self.started_ns = time.time_ns()
        self._last_ns = self.started_ns
        self._last_sums: dict[tuple[str, tuple[tuple[str, Any], ...]], int | float] = {}

    def _common(self, elapsed_s: float) -> list[tuple[str, str, int | float, dict[str, Any]]]:
        brokers = list(self.client.brokers.values())
        opened = sum(b.connections_opened for b in brokers)
        before = self._last_sums.get(("connection.creation.total", ()), 0)
        out: list[tuple[str, str, int | float, dict[str, Any]]] = [
            ("connection.creation.total", "sum", opened, {}),
            ("connection.creation.rate", "gauge", (opened - before) / elapsed_s, {}),
            ("request.total", "sum", sum(b.requests for b in brokers), {}),
            ("response.total", "sum", sum(b.responses for b in brokers), {}),
            ("outgoing.byte.total", "sum", sum(b.bytes_sent for b in brokers), {}),
            ("incoming.byte.total", "sum", sum(b.bytes_received for b in brokers), {}),
        ]
        for stats in brokers:
            if stats.node_id is None or stats.node_id < 0:
                continue  # a bootstrap address: its requests are not a node's
            samples = [s for ring in stats.latencies.values() for s in ring.kept()]
            avg, top = _ms(samples)
            attrs = {"node_id": str(stats.node_id)}
            out.append(("node.request.latency.avg", "gauge", avg, attrs))
            out.append(("node.request.latency.max", "gauge", top, attrs))
        return out

    def collect(self, selected: Callable[[str], bool], *, delta: bool) -> list[MetricPoint]:
        """The points whose full name ``selected`` accepts, stamped now."""
        now = time.time_ns()
        elapsed_s = max((now - self._last_ns) / 1e9, 1e-3)
        rows = self._common(elapsed_s) + [(n, k, v, {}) for n, k, v in self.values()]
        points: list[MetricPoint] = []
        for name, kind, value, attrs in rows:
            key = (name, tuple(sorted(attrs.items())))
            start = 0  # a gauge has no start time
            if kind == "sum":
                start = self.started_ns
                previous = self._last_sums.get(key, 0)
                self._last_sums[key] = value
                if delta:
                    value, start = value - previous, self._last_ns
            full = self.prefix + name
            if selected(full):
                points.append(MetricPoint(full, kind, value, now, start, attrs))
        self._last_ns = now
        return points
