"""``demo`` (the README's first command) and ``bench``, as subprocesses.

Issue 14: the demo printed four plain lines with a raw ``TopicPartition(...)`` repr, and
``demo --records 0`` ended in an ``IndexError`` traceback.
"""

from __future__ import annotations

from cli_helpers import column, run_aiokafkawire

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
