"""The share consumer's metrics: its own counters and the snapshot
:meth:`ShareConsumer.metrics() <aiokafkawire.consumer.share.ShareConsumer.metrics>` returns.

The keys it shares with :meth:`Consumer.metrics() <aiokafkawire.consumer.Consumer.metrics>`
(``brokers``; ``consumer``'s ``records_consumed``, ``records_per_sec``, ``fetch_latency``,
``assigned_partitions``, ``state``) mean the same thing; the rest are the share group's own:
acknowledgements by type, refused acknowledgements and the records held under an acquisition
lock.  Counters are bumped once per poll or per acknowledgement outcome (one partition of one
request), never per record in Python.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from aiokafkawire.client_config import CommonConfig
from aiokafkawire.consumer.share.records import AcknowledgementOutcome, AcknowledgeType
from aiokafkawire.metrics import Rate
from aiokafkawire.protocol.messages import ShareAcknowledgeRequest, ShareFetchRequest

#: The snapshot key of each acknowledgement type the broker applied (GAP offsets, which held no
#: record for the application, are not counted by type).
_BY_TYPE = (
    ("records_accepted", AcknowledgeType.ACCEPT),
    ("records_released", AcknowledgeType.RELEASE),
    ("records_rejected", AcknowledgeType.REJECT),
    ("records_renewed", AcknowledgeType.RENEW),
)


class ShareConsumerMetrics:
    """Counts the records handed out and the acknowledgement outcomes; builds the snapshot."""

    __slots__ = (
        "_applied",
        "_common",
        "_rate",
        "acknowledgements_failed",
        "acknowledgements_sent",
        "records_consumed",
    )

    def __init__(self, common: CommonConfig) -> None:
        self._common = common
        self._rate = Rate()
        self._applied: Counter[int] = Counter()
        self.records_consumed = 0
        #: Acknowledged offsets the broker answered (one per offset, GAPs included).
        self.acknowledgements_sent = 0
        #: ... of which the broker refused (the outcome carried an error).
        self.acknowledgements_failed = 0

    def outcome(self, outcome: AcknowledgementOutcome) -> None:
        """Count one acknowledgement outcome (the broker's answer for one partition)."""
        offsets = outcome.offsets
        self.acknowledgements_sent += len(offsets)
        if outcome.error is not None:
            self.acknowledgements_failed += len(offsets)
        else:
            self._applied.update(offsets.values())  # C loop: no Python work per record

    def snapshot(self, state: str, assigned: int, acquired: int) -> dict[str, Any]:
        """See :meth:`ShareConsumer.metrics`."""
        client = self._common.metrics
        share: dict[str, Any] = {
            "records_consumed": self.records_consumed,
            "records_per_sec": self._rate.per_second(self.records_consumed),
            "fetch_latency": client.api_latency(ShareFetchRequest.API_KEY),
            "acknowledge_latency": client.api_latency(ShareAcknowledgeRequest.API_KEY),
            "assigned_partitions": assigned,
            "state": state,
            "records_acquired": acquired,
        }
        for key, ack_type in _BY_TYPE:
            share[key] = self._applied[ack_type]
        share["acknowledgements_sent"] = self.acknowledgements_sent
        share["acknowledgements_failed"] = self.acknowledgements_failed
        return {"brokers": client.snapshot(), "consumer": share}
