"""Progress and rate of long ``produce -f`` and ``consume`` runs (issue 21): shown live at a
terminal (stderr a tty), silent in a pipe, where the summary line alone says how it went."""

from __future__ import annotations

import os
import select
import subprocess
import time

from cli_helpers import REPO_ROOT, cli_command, cli_environment


def _run_at_a_terminal(*args: str, timeout: float = 60) -> tuple[int, str, str]:
    """Run the command with stderr on a pseudo-terminal; returns (status, stdout, terminal)."""
    controller, terminal = os.openpty()
    process = subprocess.Popen(
        cli_command(*args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=cli_environment({"COLUMNS": "120"}),
        cwd=REPO_ROOT,
    )
    os.close(terminal)
    seen = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # the terminal's other end closed: the process ended
                    break
                if not chunk:
                    break
                seen += chunk
            elif process.poll() is not None:
                break
        out, _ = process.communicate(timeout=30)
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    return process.returncode, out.decode(), seen.decode("utf-8", "replace")


def test_produce_file_and_consume_show_progress_at_a_terminal(
    tansu_broker, cli, name, tmp_path
) -> None:
    servers = ("-b", tansu_broker.bootstrap_servers)
    topic = name("progress")
    data = tmp_path / "records.txt"
    data.write_bytes(b"".join(b"record %d\n" % i for i in range(5000)))
    status, _, terminal = _run_at_a_terminal(
        "produce", topic, "--create", "--partitions", "1", "-f", str(data), *servers
    )
    assert status == 0, terminal
    assert "producing" in terminal and "records" in terminal and "/s" in terminal, terminal
    assert "produced 5,000 record(s)" in terminal
    status, out, terminal = _run_at_a_terminal("consume", topic, "-e", *servers)
    assert status == 0, terminal
    assert len(out.splitlines()) == 5000
    assert "consuming" in terminal and "/s" in terminal, terminal
    # In a pipe: the summary line only.
    piped = cli("consume", topic, "-e")
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr.splitlines() == [
        line for line in piped.stderr.splitlines() if line.startswith("consumed 5,000 record(s)")
    ]
