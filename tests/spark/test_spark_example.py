"""``examples/spark_pipeline.py`` runs as the README says, on its embedded broker (the mock)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing.pytest_plugin import skip_or_fail_unavailable
from aiokafkawire.testing.spark import require_java

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_spark_pipeline_example_runs() -> None:
    try:
        require_java()
    except BrokerUnavailableError as exc:
        skip_or_fail_unavailable("Spark", exc)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "spark_pipeline.py"), "--clicks", "600"],
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "ok: 600 clicks of 12 users, as produced" in result.stdout
    assert "user-00" in result.stdout
