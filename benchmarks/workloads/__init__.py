"""Workload definitions of the side-by-side suite (issue 6), shared by ``run.py`` and the workers.

Each :class:`Workload` says what the child process does (``kind``: produce, consume, latency,
senders, scale), with which settings, and which figure of its result is the headline metric.
Sizes scale with ``records`` (1,000,000 by default, the issue's sizes; ``--quick`` uses 100,000).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_RECORDS = 1_000_000
BUFFER_MEMORY = 32 * 1024 * 1024

# Workload 1's producer settings; the other produce workloads start from them.
BASE_PRODUCE: dict[str, Any] = {
    "value_size": 100,
    "key_size": 8,
    "acks": 1,
    "compression": "lz4",
    "linger_ms": 5,
}


@dataclass(frozen=True)
class Workload:
    id: str  # "1" ... "8"; workload 4 has two: "4m" (manual assignment) and "4g" (group)
    title: str
    kind: str
    metric: str  # key of the result dict compared across clients
    unit: str
    higher_is_better: bool
    partitions: int
    settings: dict[str, Any] = field(default_factory=dict)
    # Clients without an equivalent of the workload (not run; "-" in the tables).
    without: tuple[str, ...] = ()

    @property
    def number(self) -> str:
        """The issue's workload number (what ``--workloads`` selects)."""
        return self.id.rstrip("mg")

    def sizes(self, records: int) -> dict[str, Any]:
        """Record counts etc. for a run where workload 1 produces ``records`` records."""
        scale = records / DEFAULT_RECORDS
        if self.id == "3":
            return {"records": max(10, round(20_000 * scale))}
        if self.id == "5":
            return {"records": max(200, round(50_000 * scale)), "rate": 5_000}
        if self.id == "6":
            return {"senders": 1_000, "per_sender": max(1, round(100 * scale))}
        if self.id == "7":
            return {"topic_count": 100}
        if self.id == "9":  # the 50,000 records from --quick on; fewer on tiny runs
            return {"tasks": 500, "records": min(50_000, max(1_000, records // 2))}
        return {"records": records}


WORKLOADS: list[Workload] = [
    Workload(
        "1",
        "produce 100 B, acks=1, lz4",
        "produce",
        "records_per_s",
        "records/s",
        True,
        3,
        dict(BASE_PRODUCE),
    ),
    Workload(
        "2",
        "produce 100 B, acks=all, idempotent",
        "produce",
        "records_per_s",
        "records/s",
        True,
        3,
        dict(BASE_PRODUCE, acks="all", idempotence=True),
    ),
    Workload(
        "3",
        "produce 10 KB, no compression",
        "produce",
        "records_per_s",
        "records/s",
        True,
        3,
        dict(BASE_PRODUCE, value_size=10_240, compression=None),
    ),
    Workload(
        "4m",
        "consume, manual assignment",
        "consume",
        "records_per_s_after_first",
        "records/s",
        True,
        3,
        {"value_size": 100, "key_size": 8},
    ),
    Workload(
        "4g",
        "consume, consumer group (rate after the join)",
        "consume",
        "records_per_s_after_first",
        "records/s",
        True,
        3,
        {"value_size": 100, "key_size": 8, "group": True},
    ),
    Workload(
        "5",
        "end-to-end latency at 5,000 records/s (p99)",
        "latency",
        "p99_ms",
        "ms",
        False,
        3,
        # Tansu 0.6 does not answer a waiting Fetch as soon as records arrive (measured with
        # aiokafkawire: p50/p99 133/256 ms at the default fetch_max_wait_ms=500, 29/56 at 100,
        # 7/13 at 10), so every client's consumer waits at most 10 ms: otherwise the broker's
        # wait hides the clients' own latency.
        dict(BASE_PRODUCE, compression=None, fetch_max_wait_ms=10),
        without=("confluent-kafka-aio",),  # not written yet
    ),
    Workload(
        "6",
        "1,000 concurrent senders",
        "senders",
        "records_per_s",
        "records/s",
        True,
        3,
        dict(BASE_PRODUCE),
    ),
    Workload(
        "7",
        "cold client, 100 topics x 10 partitions",
        "scale",
        "seconds",
        "s",
        False,
        10,
        dict(BASE_PRODUCE),
    ),
    Workload(
        "8",
        "peak RSS growth, buffer_memory 32 MiB",
        "produce",
        "rss_growth_mib",
        "MiB",
        False,
        3,
        dict(BASE_PRODUCE, buffer_memory=BUFFER_MEMORY),
    ),
    Workload(
        "9",
        "web-service pattern: 500 tasks each awaiting send_and_wait, 200 B",
        "websvc",
        "records_per_s",
        "records/s",
        True,
        3,
        dict(BASE_PRODUCE, value_size=200, key_size=0),
        # A synchronous client has no awaitable send: its equivalent is a thread per handler.
        without=("confluent-kafka", "kafka-python"),
    ),
]

BY_ID = {workload.id: workload for workload in WORKLOADS}


def select(numbers: list[str] | None) -> list[Workload]:
    """The workloads whose number (or id) is in ``numbers`` (all when ``None``)."""
    if not numbers:
        return list(WORKLOADS)
    wanted = {n.strip() for n in numbers if n.strip()}
    unknown = wanted - {w.number for w in WORKLOADS} - set(BY_ID)
    if unknown:
        raise ValueError(f"unknown workloads: {sorted(unknown)}")
    return [w for w in WORKLOADS if w.number in wanted or w.id in wanted]
