"""``demo`` (the README's first command) and ``bench``, as subprocesses.

Issue 14: the demo printed four plain lines with a raw ``TopicPartition(...)`` repr, and
``demo --records 0`` ended in an ``IndexError`` traceback.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_helpers import REPO_ROOT, cli_environment, column, run_aiokafkawire

from aiokafkawire.cli.exit_codes import ExitCode


def _row(stdout: str, first_cell: str) -> str:
    return next(
        line
        for line in stdout.splitlines()
        if line.startswith("│") and column(line, 0) == first_cell
    )


def test_demo_runs_to_its_table_on_an_embedded_broker() -> None:
    result = run_aiokafkawire("demo", "--records", "20000", timeout=120)
    assert result.returncode == 0, result.stderr
    out, err = result.stdout, result.stderr
    assert "TopicPartition(" not in out + err
    assert column(_row(out, "produce"), 1) == "20,000"
    assert column(_row(out, "consume"), 1) == "20,000"
    assert column(_row(out, "produce"), 3).endswith("/s")
    latency = _row(out, "send to acknowledgement")
    assert float(column(latency, 1)) <= float(column(latency, 2))  # p50 <= p99
    members = [_row(out, f"consumer {i}") for i in (1, 2, 3)]
    assert [column(row, 1) for row in members] == ["2", "2", "2"]  # 6 partitions, 3 members
    assert sum(int(column(row, 2).replace(",", "")) for row in members) == 20_000
    # Every wait longer than a second says what it waits for.
    assert "waiting: forming a group of 3 consumer(s)" in err
    assert "producing: 20,000" in err and "consuming: 20,000" in err


def test_demo_with_no_records_is_a_usage_error_not_a_traceback() -> None:
    result = run_aiokafkawire("demo", "--records", "0")
    assert result.returncode == ExitCode.USAGE
    assert "--records: must be at least 1, not 0" in result.stderr
    assert "Traceback" not in result.stderr


def test_bench_against_a_cluster_cleans_up_after_itself(cli) -> None:
    result = cli("bench", "--records", "5000", "--members", "0", "--partitions", "2", timeout=90)
    assert result.returncode == 0, result.stderr
    assert column(_row(result.stdout, "consume"), 1) == "5,000"
    assert column(_row(result.stdout, "consumer 1"), 1) == "2"
    assert "aiokafkawire-bench-" not in cli("topics", "list").stdout


@pytest.mark.slow
def test_demo_against_apache_kafka_with_bootstrap_servers(kafka_cluster) -> None:
    servers = kafka_cluster.bootstrap_servers
    result = run_aiokafkawire("demo", "--records", "3000", "-b", servers, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "embedded" not in result.stderr
    assert column(_row(result.stdout, "consume"), 1) == "3,000"
    assert [column(_row(result.stdout, f"consumer {i}"), 1) for i in (1, 2, 3)] == ["2"] * 3
    assert "aiokafkawire-bench-" not in run_aiokafkawire("topics", "list", "-b", servers).stdout


def test_the_readme_snippet_runs_promptly_on_the_embedded_broker(tansu_broker, name) -> None:
    # Issue 14: run against the embedded broker, it waited 23 s in silence for its group join.
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    using_it = readme[readme.index("## Using it") :]
    snippet = using_it.split("```python\n", 1)[1].split("```", 1)[0]
    snippet = (
        snippet.replace("localhost:9092", tansu_broker.bootstrap_servers)
        .replace('"orders"', repr(name("readme")))
        .replace('"billing"', repr(name("readme-group")))
    )
    # Timed after the imports: on a loaded machine they alone can take seconds.
    timed = (
        "import time, sys\nimport aiokafkawire.admin, aiokafkawire.consumer, aiokafkawire.producer"
        f"\n_started = time.monotonic()\n{snippet}\n"
        "print(f'{time.monotonic() - _started:.1f}', file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", timed],
        capture_output=True,
        text=True,
        env=cli_environment(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ["b'key'", "b'value'"]
    assert float(result.stderr.split()[-1]) < 12  # the join: ~3 s with a 6 s session timeout
