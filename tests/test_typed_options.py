"""Client options are typed: mypy rejects a misspelt or mistyped option (issue 20, item 3),
and at run time an unknown option names the nearest valid one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiokafkawire import Admin, Consumer, Producer
from aiokafkawire.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent

CLIENT_CODE = """
from aiokafkawire import Admin, Consumer, Producer

Producer(bootstrap_servers="localhost:9092", linger_ms=5)
Producer(bootstrap_server="localhost:9092")
Consumer("t", group_id="g", request_timeout_ms="30s")
Admin(client_id="ok", security_protocol="SSL")
Admin(sasl_mechanisms="PLAIN")
"""


@pytest.mark.slow
def test_mypy_rejects_a_misspelt_option_and_a_wrong_option_type(tmp_path: Path) -> None:
    client = tmp_path / "client.py"
    client.write_text(CLIENT_CODE, encoding="utf-8")
    env = dict(os.environ, MYPYPATH=str(REPO))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-error-summary",
            "--hide-error-context",
            "--python-version",
            "3.11",
            "--follow-imports",
            "silent",
            str(client),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    lines = sorted(int(line.split(":")[1]) for line in errors)
    assert lines == [5, 6, 8], done.stdout + done.stderr
    assert "bootstrap_server" in done.stdout and "sasl_mechanisms" in done.stdout
    assert "request_timeout_ms" in done.stdout


def test_an_unknown_option_names_the_nearest_valid_one() -> None:
    with pytest.raises(ConfigError, match="did you mean 'bootstrap_servers'"):
        Producer(bootstrap_server="localhost:9092")  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="did you mean 'linger_ms'"):
        Producer(linger_msec=5)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="did you mean 'session_timeout_ms'"):
        Consumer("t", session_timeout=5)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match=r"use Admin\.from_config"):
        Admin(**{"bootstrap.servers": "h:1"})  # type: ignore[arg-type]
