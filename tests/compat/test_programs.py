"""Programs written against aiokafka's API run unchanged on aiokafkawire (issue 20).

Each program in ``programs/`` imports only ``aiokafka`` and checks its own results.  It runs
twice against the same Apache Kafka broker, each time in its own interpreter: on the real
aiokafka (so the program itself is right) and after ``install_as_aiokafka()``.

Programs that need a TLS listener (``TLS_PROGRAMS``) run against a broker of their own, with an
``SSL`` listener that requires client certificates, started once for the module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing.pytest_plugin import (
    TEST_BROKERS_ENV_VAR,
    enabled_broker_kinds,
)

pytest.importorskip("aiokafka")

HERE = Path(__file__).parent
TLS_PROGRAMS = ["ssl_produce_consume"]
PROGRAMS = sorted(
    p.stem
    for p in (HERE / "programs").glob("*.py")
    if not p.stem.startswith("_") and p.stem not in TLS_PROGRAMS
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        "kafka" not in enabled_broker_kinds(), reason=f"kafka not in ${TEST_BROKERS_ENV_VAR}"
    ),
]


def run_program(
    name: str, bootstrap: str, *, compat: bool, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``programs/<name>.py`` in a fresh interpreter; aiokafkawire's layer if ``compat``."""
    repo = HERE.parent.parent
    env = dict(os.environ, BOOTSTRAP=bootstrap, **(env_extra or {}))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    command = [sys.executable, str(HERE / "run_program.py")]
    command += ["--compat"] if compat else []
    command.append(str(HERE / "programs" / f"{name}.py"))
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=100)


@pytest.mark.parametrize("engine", ["aiokafka", "aiokafkawire"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_program_runs_unchanged(kafka_cluster: KafkaCluster, program: str, engine: str) -> None:
    done = run_program(program, kafka_cluster.bootstrap_servers, compat=engine == "aiokafkawire")
    _check(done, program, engine)


def _check(done: subprocess.CompletedProcess[str], program: str, engine: str) -> None:
    assert done.returncode == 0, f"{program} on {engine}:\n{done.stdout}\n{done.stderr[-4000:]}"
    assert done.stdout.strip().endswith("ok")
    if engine == "aiokafkawire":
        assert "Task was destroyed but it is pending" not in done.stderr, done.stderr
        assert "Future exception was never retrieved" not in done.stderr, done.stderr


@pytest.mark.parametrize("engine", ["aiokafka", "aiokafkawire"])
@pytest.mark.parametrize("program", TLS_PROGRAMS)
def test_tls_program_runs_unchanged(
    kafka_tls_cluster: KafkaCluster, program: str, engine: str
) -> None:
    """Over the SSL listener, which requires a client certificate (CA, cert and key as PEM)."""
    tls_cluster = kafka_tls_cluster
    assert tls_cluster.ca_path and tls_cluster.client_cert_path and tls_cluster.client_key_path
    files = {
        "CAFILE": tls_cluster.ca_path,
        "CERTFILE": tls_cluster.client_cert_path,
        "KEYFILE": tls_cluster.client_key_path,
    }
    bootstrap = tls_cluster.bootstrap_for("SSL")
    done = run_program(program, bootstrap, compat=engine == "aiokafkawire", env_extra=files)
    _check(done, program, engine)
