"""The consumer's metrics snapshot."""

from __future__ import annotations

from typing import Any

from aiokafkawire.consumer._state import ConsumerState
from aiokafkawire.protocol.messages import FetchRequest


class MetricsMixin(ConsumerState):
    """:meth:`metrics`: counters of the consumer and of its connections."""

    def metrics(self) -> dict[str, Any]:
        """A snapshot of this consumer's counters (see :mod:`aiokafkawire.metrics`).

        ``brokers``: per broker request counts, latency percentiles per API, in-flight requests,
        bytes in/out, throttle time.  ``consumer``: records consumed and their rate since the
        previous call, the fetch latency over all brokers (it includes the broker's long-poll
        wait, up to ``fetch_max_wait_ms``), lag per assigned partition (high watermark minus
        position, None until both are known), rebalances and their duration.
        """
        lag: dict[str, int | None] = {}
        for tp, state in self._subs.assignment.items():
            known = state.highwater is not None and state.position is not None
            lag[f"{tp.topic}-{tp.partition}"] = (
                max(state.highwater - state.position, 0) if known else None  # type: ignore[operator]
            )
        membership = self._membership
        return {
            "brokers": self._common.metrics.snapshot(),
            "consumer": {
                "records_consumed": self._records_consumed,
                "records_per_sec": self._consume_rate.per_second(self._records_consumed),
                "fetch_latency": self._common.metrics.api_latency(FetchRequest.API_KEY),
                "assigned_partitions": len(lag),
                "lag": lag,
                "lag_total": sum(v for v in lag.values() if v is not None),
                "state": self.state,
                "rebalances": membership.rebalances if membership else 0,
                "rebalance_time_total_s": round(membership.rebalance_time_total_s, 3)
                if membership
                else 0.0,
                "last_rebalance_s": round(membership.last_rebalance_s, 3) if membership else 0.0,
            },
        }
