"""The Spark format on a Spark standalone cluster (master and two workers, separate processes).

Drivers run as their own processes (:mod:`_eos_driver`); one cluster serves
the whole module and is stopped at its end.  Nothing may rely on driver and executors sharing a
process: options, offsets and transactions travel only through pickles and Kafka.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _spark_helpers import create_topic, unique
from test_spark_exactly_once import (
    committed_transactional_ids,
    open_transactions,
    produce_values,
    read_committed,
)

from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing.pytest_plugin import skip_or_fail_unavailable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    from aiokafkawire.testing.spark import StandaloneCluster

    try:
        started = StandaloneCluster(workers=2, cores=1, distinct_hosts=True).start()
    except BrokerUnavailableError as exc:
        skip_or_fail_unavailable("a Spark standalone cluster", exc)
    try:
        yield started
    finally:
        started.stop()


def _run(*args: str, timeout: float = 600) -> str:
    result = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result.stdout


@pytest.mark.timeout(1500)
def test_exactly_once_on_the_cluster(cluster: Any, bootstrap: str, tmp_path: Path) -> None:
    """A batch write, then a streaming drain, in one driver; every task's first attempt dies.
    (Two runs of the former tests in one: twice their time limit.)"""
    source = create_topic(bootstrap, 2, "cluster-eos-in")
    sinks = [create_topic(bootstrap, 2, f"cluster-eos-out-{mode}") for mode in ("batch", "drain")]
    expected = produce_values(bootstrap, source, 300)
    prefixes = [unique(f"cluster-eos-{mode}") for mode in ("batch", "drain")]
    _run(
        str(HERE / "_eos_driver.py"), "batch+drain", bootstrap, source, ",".join(sinks),
        str(tmp_path / "ckpt"), ",".join(prefixes), "--fail-first", "--master", cluster.url,
        "--conf", "spark.task.maxFailures=4", "--conf", "spark.executor.memory=512m",
        "--conf", "spark.cores.max=2",
        timeout=1200,
    )  # fmt: skip
    for sink, prefix in zip(sinks, prefixes, strict=True):
        assert sorted(read_committed(bootstrap, sink)) == sorted(expected), sink
        assert open_transactions(bootstrap, prefix) == []


def _task_events(event_dir: Path, kind: str) -> list[dict[str, Any]]:
    """Every ``SparkListener<kind>`` event of the (one) application logged in ``event_dir``."""
    found = []
    for log in event_dir.rglob("events_*"):  # Spark 4 rolls logs: <dir>/eventlog_v2_<app>/
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("Event") == f"SparkListener{kind}":
                found.append(event)
    return found


def test_exactly_once_speculative_copy_wins(cluster: Any, bootstrap: str, tmp_path: Path) -> None:
    """Also the test that a read's tasks run on both workers (task 0's two copies ran on two).

    Speculation on; the first attempt of task 0 sleeps at every row (``--slow-first-partition``,
    50 s), the other task is quick, so Spark starts a copy of task 0 on the other worker
    (another host: ``distinct_hosts``), the copy finishes first and the first attempt is killed.
    Spark's event log shows both copies and which won; the commit log shows that the driver
    committed the copy's transaction; the output holds every record once and the killed
    attempt's transaction is not left open."""
    source = create_topic(bootstrap, 2, "cluster-spec-in")
    sink = create_topic(bootstrap, 2, "cluster-spec-out")
    expected = produce_values(bootstrap, source, 100)
    prefix = unique("cluster-spec")
    events = tmp_path / "events"
    events.mkdir()
    _run(
        str(HERE / "_eos_driver.py"), "batch", bootstrap, source, sink, str(tmp_path / "ckpt"),
        prefix, "--slow", "1.0", "--slow-first-partition", "--master", cluster.url,
        "--conf", "spark.speculation=true", "--conf", "spark.speculation.interval=100ms",
        "--conf", "spark.speculation.quantile=0.5", "--conf", "spark.speculation.multiplier=1.5",
        "--conf", "spark.speculation.minTaskRuntime=1s", "--conf", "spark.cores.max=2",
        # Spark 4 otherwise speculates only tasks slow at reading input, not at a slow UDF.
        "--conf", "spark.speculation.efficiency.enabled=false",
        "--conf", "spark.executor.memory=512m",
        "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events.as_uri()}",
        "--conf", "spark.eventLog.compress=false", "--conf", "spark.eventLog.rolling.enabled=true",
    )  # fmt: skip
    assert sorted(read_committed(bootstrap, sink)) == sorted(expected)
    assert open_transactions(bootstrap, prefix) == []
    # The job has one stage (read, UDF, write). Both copies of task 0 started, on two hosts;
    # only the speculative copy succeeded (the first one's end, TaskKilled, may come after the
    # driver stopped).
    starts = [e["Task Info"] for e in _task_events(events, "TaskStart") if e["Stage ID"] == 0]
    assert sorted((t["Index"], t["Attempt"], t["Speculative"]) for t in starts) == [
        (0, 0, False),
        (0, 1, True),
        (1, 0, False),
    ], starts
    assert len({t["Host"] for t in starts if t["Index"] == 0}) == 2, starts
    won = [
        (e["Task Info"]["Index"], e["Task Info"]["Attempt"])
        for e in _task_events(events, "TaskEnd")
        if e["Task End Reason"]["Reason"] == "Success"
    ]
    assert sorted(won) == [(0, 1), (1, 0)], won
    committed = committed_transactional_ids(bootstrap, prefix, "aiokafkawire-spark-commits")
    assert committed == {f"{prefix}-0-1", f"{prefix}-1-0"}, committed
