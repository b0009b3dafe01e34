"""Helpers shared by the client modules: payloads, clocks, memory figures, percentiles."""

from __future__ import annotations

import os
import random
import resource
import time
from typing import Any

POOL_SIZE = 1024  # distinct keys/values cycled through (index & POOL_MASK)
POOL_MASK = POOL_SIZE - 1
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def payloads(value_size: int, key_size: int) -> tuple[list[bytes], list[bytes]]:
    """1,024 distinct values and keys.

    Each value is half random bytes, half repeated text, so lz4 compresses it roughly like a
    typical payload (never all identical, which would flatter compressed throughput).  Keys are
    distinct big-endian integers of ``key_size`` bytes.
    """
    rng = random.Random(1234)
    text = b"aiokafkawire benchmark payload; "
    values = []
    for _ in range(POOL_SIZE):
        head = rng.randbytes(value_size // 2)
        tail = (text * (value_size // len(text) + 1))[: value_size - len(head)]
        values.append(head + tail)
    keys = [i.to_bytes(key_size, "big") if key_size else b"" for i in range(POOL_SIZE)]
    return values, keys


def now() -> float:
    """Wall-clock seconds on a monotonic clock (perf_counter)."""
    return time.perf_counter()


def stamp_ns() -> int:
    """The send timestamp carried in latency records (monotonic, same process only)."""
    return time.perf_counter_ns()


def latency_value(value_size: int) -> tuple[bytes, int]:
    """Padding for a latency record: 8 bytes of timestamp + padding = ``value_size`` bytes."""
    return b"x" * max(0, value_size - 8), 8


def cpu_s() -> float:
    """CPU seconds this process has used so far: user + system, all its threads (getrusage)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_user_sys() -> tuple[float, float]:
    """CPU seconds this process has used so far in user space and in the kernel, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def warm_up_count(records: int) -> int:
    """Records a producing workload sends (and flushes) before its clock and CPU meter start."""
    return min(records, max(1_000, records // 20))


class CpuMeter:
    """The client process's CPU time: at start-up, and per record once warm.

    ``ready()`` marks the end of start-up (client imported, started, first connection and the
    topic's metadata in hand): CPU since the process began.  ``start(done)`` starts the steady-
    state meter when ``done`` records are already behind it (the warm-up); ``figures(total)``
    stops it and gives CPU per record over the records after the warm-up, in total and split
    into user space (``cpu_user_us_per_record``: the client's own code, the interpreter,
    libraries) and the kernel (``cpu_sys_us_per_record``: system calls, the socket's copies
    and, on loopback, the TCP work the send triggers).  getrusage's RUSAGE_SELF counts every
    thread of the process, so librdkafka's threads and executor threads are included.
    """

    def __init__(self) -> None:
        self.ready_s: float | None = None
        self.started: tuple[float, float] | None = None
        self.started_records = 0

    @property
    def started_s(self) -> float | None:
        """CPU seconds (user + system) at :meth:`start`; ``None`` before it."""
        return None if self.started is None else self.started[0] + self.started[1]

    def ready(self) -> None:
        self.ready_s = cpu_s()

    def start(self, done: int = 0) -> None:
        self.started = cpu_user_sys()
        self.started_records = done

    def figures(self, total: int) -> dict[str, Any]:
        user, system = cpu_user_sys()
        out: dict[str, Any] = {}
        if self.ready_s is not None:
            out["startup_cpu_s"] = self.ready_s
        if self.started is not None:
            measured = total - self.started_records
            user -= self.started[0]
            system -= self.started[1]
            out["cpu_s"] = user + system
            out["cpu_user_s"] = user
            out["cpu_sys_s"] = system
            out["cpu_records"] = measured
            if measured > 0:
                out["cpu_us_per_record"] = (user + system) / measured * 1e6
                out["cpu_user_us_per_record"] = user / measured * 1e6
                out["cpu_sys_us_per_record"] = system / measured * 1e6
        return out


def rss_kb() -> int:
    """The current resident set size in KiB (from /proc/self/statm)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_KB
    except OSError:
        return peak_rss_kb()


def peak_rss_kb() -> int:
    """The peak resident set size of this process so far (ru_maxrss, KiB on Linux)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already-sorted values, nearest rank."""
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]


def latency_summary(latencies_ns: list[int]) -> dict[str, Any]:
    """p50/p99/max in milliseconds of send-to-receipt latencies."""
    values = sorted(latencies_ns)
    return {
        "samples": len(values),
        "p50_ms": percentile(values, 0.50) / 1e6,
        "p99_ms": percentile(values, 0.99) / 1e6,
        "max_ms": (values[-1] / 1e6) if values else float("nan"),
    }


def throughput(records: int, payload_bytes: int, seconds: float) -> dict[str, Any]:
    """records/s and MB/s (10**6 bytes of key + value payload, uncompressed)."""
    seconds = max(seconds, 1e-9)
    return {
        "records": records,
        "seconds": seconds,
        "records_per_s": records / seconds,
        "mb_per_s": payload_bytes / seconds / 1e6,
    }


class Pacer:
    """Tells a producer how many records are due at a fixed rate since :meth:`start`."""

    def __init__(self, rate: float, total: int) -> None:
        self.rate = rate
        self.total = total
        self.sent = 0
        self.started = 0.0

    def start(self) -> None:
        self.started = now()

    def due(self) -> int:
        """How many records should be sent right now (0 when ahead of schedule)."""
        target = min(self.total, int((now() - self.started) * self.rate) + 1)
        return max(0, target - self.sent)

    def wait_s(self) -> float:
        """Seconds until the next record is due."""
        return max(0.0, self.started + self.sent / self.rate - now())

    @property
    def done(self) -> bool:
        return self.sent >= self.total


# The same session timeout for every client in the group workload: Tansu 0.6 answers the first
# JoinGroup only after about half the session timeout (23 s with librdkafka's default of 45 s,
# 5 s with aiokafka's 10 s), so equal settings keep the join phase comparable.
GROUP_SESSION_TIMEOUT_MS = 10_000


def consumed(
    records: int, payload: int, seconds: float, first: float | None, first_count: int | None
) -> dict[str, Any]:
    """Consumer throughput over the whole run, and after the first batch arrived.

    ``first`` is when the first records arrived (seconds after the clock started) and
    ``first_count`` how many came with them; the rate "after first" excludes both, so client
    start-up, the offset lookup or the group join do not count (when everything came in the
    first batch, it is the whole-run rate).
    """
    result = throughput(records, payload, seconds)
    steady = seconds - first if first is not None else 0.0
    rest = records - (first_count or 0)
    share = rest / records if records else 0.0
    result["first_record_s"] = first
    if steady > 0 and rest > 0:
        result["records_per_s_after_first"] = rest / steady
        result["mb_per_s_after_first"] = payload * share / steady / 1e6
    else:  # everything came at once (tiny runs): only the whole-run rate is meaningful
        result["records_per_s_after_first"] = result["records_per_s"]
        result["mb_per_s_after_first"] = result["mb_per_s"]
    return result
