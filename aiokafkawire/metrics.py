"""Client metrics and event hooks.

Every client (``Producer``, ``Consumer``, ``Admin``) keeps cheap counters: per broker (requests,
responses, errors, bytes in/out, in-flight requests, throttle time, latency percentiles per API),
plus the producer's and consumer's own (records, batches, compression, retries, lag,
rebalances).  ``client.metrics()`` returns a snapshot as plain dicts and numbers.

Counters are plain integer attributes bumped once per request, response, batch or fetch, never per
record; latencies go into a ring of the last :data:`LATENCY_WINDOW` samples per broker and API, from
which the snapshot computes percentiles.

Hooks: pass ``hooks=`` (one object or a list) to any client.  A hook is any object with some of the
methods of :class:`ClientHooks` (``on_connect``, ``on_disconnect``, ``on_request``, ``on_batch``,
``on_rebalance``); each gets one event dataclass.  Hooks run inline on the event loop: keep them
short (increment a counter, record a histogram).  An exception in a hook is logged and dropped.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LATENCY_MASK",
    "LATENCY_WINDOW",
    "BatchEvent",
    "BrokerStats",
    "ClientHooks",
    "ClientMetrics",
    "ConnectionEvent",
    "ProducerStats",
    "Rate",
    "RebalanceEvent",
    "RequestEvent",
    "api_name",
    "latency_summary",
]

log = logging.getLogger("aiokafkawire.metrics")

LATENCY_WINDOW = 1024
"""Latency samples kept per broker and API (the percentiles cover the most recent ones)."""
LATENCY_MASK = LATENCY_WINDOW - 1  # a power of two: the ring index is ``count & LATENCY_MASK``

_API_NAMES: dict[int, str] | None = None


def api_name(api_key: int) -> str:
    """The name of an API key, e.g. ``0 -> "Produce"``."""
    global _API_NAMES
    if _API_NAMES is None:
        # From the ApiKey names (LIST_OFFSETS -> ListOffsets), not the classes: looking those
        # up would import every message module.
        from aiokafkawire.protocol.messages import ApiKey

        _API_NAMES = {
            int(key): "".join(part.capitalize() for part in key.name.split("_")) for key in ApiKey
        }
    return _API_NAMES.get(api_key, f"Api{api_key}")


# ------------------------------------------------------------------------------------- events


@dataclass(frozen=True)
class ConnectionEvent:
    """A connection to a broker was opened, or closed (``error`` says why, None when asked to)."""

    node_id: int | None
    host: str
    port: int
    purpose: str
    error: BaseException | None = None


@dataclass(frozen=True)
class RequestEvent:
    """A request got its response (``error`` None) or failed with its connection (``error``)."""

    node_id: int | None
    host: str
    port: int
    api_key: int
    api_name: str
    correlation_id: int
    latency_s: float
    error: BaseException | None = None


@dataclass(frozen=True)
class BatchEvent:
    """The producer delivered (or gave up on) one batch of records for one partition."""

    topic: str
    partition: int
    records: int
    size_bytes: int
    uncompressed_bytes: int
    attempts: int
    latency_s: float
    base_offset: int = -1
    error: BaseException | None = None


@dataclass(frozen=True)
class RebalanceEvent:
    """A consumer group member's assignment changed.

    ``kind`` is ``"assigned"``, ``"revoked"`` or ``"lost"``; ``duration_s`` is the rebalance's
    duration (from the start of the join to the assignment) for ``"assigned"``, else 0.
    """

    group_id: str
    kind: str
    partitions: frozenset[Any]
    generation: int
    duration_s: float = 0.0


class ClientHooks:
    """Base class for hooks; override the methods you need (all do nothing here)."""

    def on_connect(self, event: ConnectionEvent) -> None:
        """A connection to a broker is ready (connected, versions negotiated, authenticated)."""

    def on_disconnect(self, event: ConnectionEvent) -> None:
        """A connection ended."""

    def on_request(self, event: RequestEvent) -> None:
        """A request completed (answered, timed out or failed)."""

    def on_batch(self, event: BatchEvent) -> None:
        """A producer batch was delivered or failed for good."""

    def on_rebalance(self, event: RebalanceEvent) -> None:
        """A consumer's assignment changed."""


# ------------------------------------------------------------------------------------- counters


def latency_summary(samples: list[float], count: int) -> dict[str, float | int]:
    """``count`` and the p50/p90/p99/max of ``samples`` (seconds) in milliseconds."""
    kept = sorted(samples)
    if not kept:
        return {"count": 0}

    def at(q: float) -> float:
        return round(kept[min(int(q * len(kept)), len(kept) - 1)] * 1000, 3)

    return {
        "count": count,
        "p50_ms": at(0.50),
        "p90_ms": at(0.90),
        "p99_ms": at(0.99),
        "max_ms": round(kept[-1] * 1000, 3),
    }


class _LatencyRing:
    """The last :data:`LATENCY_WINDOW` latencies (seconds) of one API on one broker."""

    __slots__ = ("count", "samples")

    def __init__(self) -> None:
        self.samples: list[float] = [0.0] * LATENCY_WINDOW
        self.count = 0

    def add(self, seconds: float) -> None:
        """Keep one sample (the connection's receive path inlines this)."""
        self.samples[self.count & LATENCY_MASK] = seconds
        self.count += 1

    def kept(self) -> list[float]:
        """The samples in the ring (the last :data:`LATENCY_WINDOW`)."""
        return self.samples[: min(self.count, LATENCY_WINDOW)]

    def summary(self) -> dict[str, float | int]:
        """Count, p50/p90/p99 and max in milliseconds."""
        return latency_summary(self.kept(), self.count)


class BrokerStats:
    """Counters of one broker, summed over every connection a client has to it."""

    __slots__ = (
        "bytes_received",
        "bytes_sent",
        "connections",
        "connections_closed",
        "connections_opened",
        "host",
        "latencies",
        "node_id",
        "port",
        "request_errors",
        "requests",
        "responses",
        "throttle_time_ms_max",
        "throttle_time_ms_total",
    )

    def __init__(self, host: str, port: int, node_id: int | None) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self.requests = 0
        self.responses = 0
        self.request_errors = 0
        self.bytes_sent = 0
        self.bytes_received = 0
        self.connections_opened = 0
        self.connections_closed = 0
        self.throttle_time_ms_total = 0
        self.throttle_time_ms_max = 0
        self.latencies: dict[int, _LatencyRing] = {}
        self.connections: set[Any] = set()  # the live BrokerConnection objects

    def latency(self, api_key: int) -> _LatencyRing:
        """The latency ring of ``api_key`` (made on first use)."""
        ring = self.latencies.get(api_key)
        if ring is None:
            ring = self.latencies[api_key] = _LatencyRing()
        return ring

    def throttled(self, throttle_ms: int) -> None:
        """A response asked the client to wait ``throttle_ms`` (quota exceeded)."""
        self.throttle_time_ms_total += throttle_ms
        if throttle_ms > self.throttle_time_ms_max:
            self.throttle_time_ms_max = throttle_ms

    def snapshot(self) -> dict[str, Any]:
        """These counters as plain data."""
        return {
            "node_id": self.node_id,
            "address": f"{self.host}:{self.port}",
            "connections": len(self.connections),
            "connections_opened": self.connections_opened,
            "connections_closed": self.connections_closed,
            "requests": self.requests,
            "responses": self.responses,
            "request_errors": self.request_errors,
            "in_flight": sum(c.in_flight for c in self.connections),
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
            "throttle_time_ms_total": self.throttle_time_ms_total,
            "throttle_time_ms_max": self.throttle_time_ms_max,
            "latency": {
                api_name(key): ring.summary() for key, ring in sorted(self.latencies.items())
            },
        }


class ClientMetrics:
    """The counters and hooks of one client; its connections report here."""

    def __init__(self, hooks: Any = None) -> None:
        self.hooks: tuple[Any, ...] = _as_hooks(hooks)
        self.brokers: dict[tuple[str, int], BrokerStats] = {}
        self.started = time.monotonic()

    def broker(self, host: str, port: int, node_id: int | None) -> BrokerStats:
        """The counters of the broker at ``host:port`` (bootstrap connections included)."""
        stats = self.brokers.get((host, port))
        if stats is None:
            stats = self.brokers[(host, port)] = BrokerStats(host, port, node_id)
        elif node_id is not None and stats.node_id is None:
            stats.node_id = node_id
        return stats

    def snapshot(self) -> dict[str, Any]:
        """Per-broker counters, keyed ``"node <id>"`` (or the address before the id is known)."""
        out: dict[str, Any] = {}
        for stats in self.brokers.values():
            name = (
                f"node {stats.node_id}"
                if stats.node_id is not None
                else (f"{stats.host}:{stats.port}")
            )
            out[name] = stats.snapshot()
        return out

    def api_latency(self, api_key: int) -> dict[str, float | int]:
        """One API's latency summary over every broker (e.g. the consumer's fetch latency)."""
        samples: list[float] = []
        count = 0
        for stats in self.brokers.values():
            ring = stats.latencies.get(api_key)
            if ring is not None:
                samples += ring.kept()
                count += ring.count
        return latency_summary(samples, count)

    def emit(self, method: str, event: Any) -> None:
        """Call ``method(event)`` on every hook that has it; errors are logged, never raised."""
        for hook in self.hooks:
            function = getattr(hook, method, None)
            if function is None:
                continue
            try:
                function(event)
            except Exception:
                log.exception("hook %r.%s failed", hook, method)


def _as_hooks(hooks: Any) -> tuple[Any, ...]:
    if hooks is None:
        return ()
    if isinstance(hooks, (list, tuple)):
        return tuple(hooks)
    if isinstance(hooks, Iterable) and not hasattr(hooks, "on_request"):
        return tuple(hooks)
    return (hooks,)


class ProducerStats:
    """The producer's counters, bumped once per batch outcome."""

    __slots__ = (
        "batch_errors",
        "batches",
        "bytes",
        "records",
        "records_failed",
        "retries",
        "uncompressed_bytes",
    )

    def __init__(self) -> None:
        self.records = 0
        self.batches = 0
        self.bytes = 0
        self.uncompressed_bytes = 0
        self.retries = 0
        self.batch_errors = 0
        self.records_failed = 0


#: Seconds a ``*_per_sec`` figure covers (the Java client's rates cover about as much).
RATE_WINDOW_S = 30.0


class Rate:
    """Events per second of a growing total over the last :data:`RATE_WINDOW_S` seconds
    (since creation, until that long has passed).

    The figure does not depend on who asks or how often: each call keeps a snapshot of the
    total (at most one per thirtieth of the window), and the rate is measured from the newest
    snapshot at least a window old.  So a health probe calling ``metrics()`` every second does
    not turn a Prometheus scraper's rate into "the last second".
    """

    __slots__ = ("_samples", "_spacing", "_window")

    def __init__(self, window: float = RATE_WINDOW_S) -> None:
        self._window = window
        self._spacing = window / 30
        self._samples: deque[tuple[float, int]] = deque([(time.monotonic(), 0)])

    def per_second(self, total: int) -> float:
        """The rate over the window ending now (see the class docstring)."""
        now = time.monotonic()
        samples = self._samples
        while len(samples) > 1 and samples[1][0] <= now - self._window:
            samples.popleft()
        start_time, start_total = samples[0]
        if now - samples[-1][0] >= self._spacing:
            samples.append((now, total))
        elapsed = now - start_time
        return round((total - start_total) / elapsed, 3) if elapsed > 0 else 0.0
