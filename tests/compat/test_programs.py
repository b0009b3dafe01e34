"""Programs written against aiokafka's API run unchanged on aiokafkawire (issue 20).

Each program in ``programs/`` imports only ``aiokafka`` and checks its own results.  It runs
twice against the same Apache Kafka broker, each time in its own interpreter: on the real
aiokafka (so the program itself is right) and after ``install_as_aiokafka()``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing.pytest_plugin import TEST_BROKERS_ENV_VAR, enabled_broker_kinds

pytest.importorskip("aiokafka")

HERE = Path(__file__).parent
PROGRAMS = sorted(p.stem for p in (HERE / "programs").glob("*.py") if not p.stem.startswith("_"))

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        "kafka" not in enabled_broker_kinds(), reason=f"kafka not in ${TEST_BROKERS_ENV_VAR}"
    ),
]


def run_program(name: str, bootstrap: str, *, compat: bool) -> subprocess.CompletedProcess[str]:
    """Run ``programs/<name>.py`` in a fresh interpreter; aiokafkawire's layer if ``compat``."""
    repo = HERE.parent.parent
    env = dict(os.environ, BOOTSTRAP=bootstrap)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    command = [sys.executable, str(HERE / "run_program.py")]
    command += ["--compat"] if compat else []
    command.append(str(HERE / "programs" / f"{name}.py"))
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=100)


@pytest.mark.parametrize("engine", ["aiokafka", "aiokafkawire"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_program_runs_unchanged(kafka_cluster: KafkaCluster, program: str, engine: str) -> None:
    done = run_program(program, kafka_cluster.bootstrap_servers, compat=engine == "aiokafkawire")
    assert done.returncode == 0, f"{program} on {engine}:\n{done.stdout}\n{done.stderr[-4000:]}"
    assert done.stdout.strip().endswith("ok")
    if engine == "aiokafkawire":
        assert "Task was destroyed but it is pending" not in done.stderr, done.stderr
        assert "Future exception was never retrieved" not in done.stderr, done.stderr
