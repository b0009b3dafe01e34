"""The consumer's metrics: its own counters and the snapshot :meth:`Consumer.metrics` returns."""

from __future__ import annotations

from typing import Any

from aiokafkawire.client_config import CommonConfig
from aiokafkawire.consumer._state import ConsumerParts
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.metrics import Rate
from aiokafkawire.protocol.messages import FetchRequest


class ConsumerMetrics:
    """Counts the records handed out (``records_consumed``) and builds the metrics snapshot."""

    __slots__ = ("_common", "_parts", "_rate", "_subs", "records_consumed")

    def __init__(self, common: CommonConfig, subs: SubscriptionState, parts: ConsumerParts) -> None:
        self._common = common
        self._subs = subs
        self._parts = parts
        self._rate = Rate()
        self.records_consumed = 0

    def snapshot(self) -> dict[str, Any]:
        """See :meth:`Consumer.metrics`."""
        lag: dict[str, int | None] = {}
        for tp, state in self._subs.assignment.items():
            known = state.highwater is not None and state.position is not None
            lag[f"{tp.topic}-{tp.partition}"] = (
                max(state.highwater - state.position, 0) if known else None  # type: ignore[operator]
            )
        membership = self._parts.membership
        return {
            "brokers": self._common.metrics.snapshot(),
            "consumer": {
                "records_consumed": self.records_consumed,
                "records_per_sec": self._rate.per_second(self.records_consumed),
                "fetch_latency": self._common.metrics.api_latency(FetchRequest.API_KEY),
                "assigned_partitions": len(lag),
                "lag": lag,
                "lag_total": sum(v for v in lag.values() if v is not None),
                "state": self._parts.state(self._subs),
                "rebalances": membership.rebalances if membership else 0,
                "rebalance_time_total_s": round(membership.rebalance_time_total_s, 3)
                if membership
                else 0.0,
                "last_rebalance_s": round(membership.last_rebalance_s, 3) if membership else 0.0,
            },
        }
