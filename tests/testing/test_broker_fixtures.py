"""The pytest plugin's fixtures, used directly and inside a separate pytest run.

The plugin is opt-in: the repository's ``tests/conftest.py`` loads it with ``pytest_plugins``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aiokafkawire.testing import MockCluster, TansuBroker, probe_api_versions
from aiokafkawire.testing.pytest_plugin import (
    EXTERNAL_BOOTSTRAP_ENV_VAR,
    TEST_BROKERS_ENV_VAR,
    KafkaBootstrap,
    enabled_broker_kinds,
)

REPO_ROOT = Path(__file__).resolve().parents[2]

INNER_TESTS = textwrap.dedent(
    """
    import os

    from aiokafkawire.testing import probe_api_versions

    SEEN = []


    def test_bootstrap(kafka_bootstrap, request):
        host, port = kafka_bootstrap.split(",")[0].rsplit(":", 1)
        assert probe_api_versions(host, int(port)).error_code == 0
        line = f"{kafka_bootstrap.kind} {kafka_bootstrap}"
        if kafka_bootstrap.kind == "tansu":
            line += f" {request.getfixturevalue('tansu_broker').pid}"
        with open(os.environ["FIXTURE_RECORD"], "a") as record:
            record.write(line + "\\n")


    def test_factory(mock_cluster_factory):
        SEEN.extend([mock_cluster_factory(1), mock_cluster_factory(2)])
        assert [c.broker_ids for c in SEEN] == [[1], [1, 2]]


    def test_fixture(mock_cluster):
        SEEN.append(mock_cluster)
        assert mock_cluster.broker_ids == [1, 2, 3]


    def test_earlier_clusters_were_closed_by_teardown():
        assert all(cluster.closed for cluster in SEEN)
        with open(os.environ["FIXTURE_RECORD"], "a") as record:
            record.write(f"closed {len(SEEN)}\\n")
    """
)


def test_mock_cluster_fixture(mock_cluster: MockCluster, request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("integration") is not None  # added by the plugin
    assert mock_cluster.broker_ids == [1, 2, 3]
    assert probe_api_versions(*mock_cluster.broker_address(2)).error_code == 0


def test_tansu_fixture_is_shared(
    tansu_broker: TansuBroker, kafka_bootstrap: KafkaBootstrap
) -> None:
    assert tansu_broker.running
    if kafka_bootstrap.kind == "tansu":
        assert kafka_bootstrap == tansu_broker.bootstrap_servers
    else:
        assert kafka_bootstrap != tansu_broker.bootstrap_servers


def test_tests_without_broker_fixtures_are_not_marked(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("integration") is None


def test_kafka_bootstrap_is_tagged(kafka_bootstrap: KafkaBootstrap) -> None:
    assert kafka_bootstrap.kind in {"tansu", "mock", "kafka", "kafka39", "external"}
    assert isinstance(kafka_bootstrap, str) and ":" in kafka_bootstrap


def _run_inner_session(
    tmp_path: Path, *extra_args: str, env: dict[str, str] | None = None
) -> tuple[dict[str, int], list[str]]:
    """Run INNER_TESTS in a fresh pytest process; return outcome counts and recorded lines.

    A separate process because the plugin's parametrization depends on the environment at
    import time, and to prove the session-scoped broker is stopped when the session ends.
    """
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(INNER_TESTS)
    record = tmp_path / "record.txt"
    record.unlink(missing_ok=True)
    child_env = {
        k: v
        for k, v in os.environ.items()
        if k not in (EXTERNAL_BOOTSTRAP_ENV_VAR, "AIOKAFKAWIRE_BOOTSTRAP", TEST_BROKERS_ENV_VAR)
    }
    child_env.update(env or {})
    child_env["FIXTURE_RECORD"] = str(record)
    child_env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), child_env.get("PYTHONPATH")])
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(test_file),
            "-q",
            "-p",
            "no:cacheprovider",
            # Block the installed entry point (if any) so the module loads exactly once.
            "-p",
            "no:aiokafkawire",
            "-p",
            "aiokafkawire.testing.pytest_plugin",
            "--rootdir",
            str(tmp_path),
            *extra_args,
        ],
        cwd=tmp_path,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    counts = {
        word: int(n)
        for n, word in re.findall(r"(\d+) (passed|failed|skipped|deselected|error)", summary)
    }
    assert "failed" not in counts and "error" not in counts, result.stdout + result.stderr
    lines = record.read_text().splitlines() if record.exists() else []
    return counts, lines


def test_default_backends_in_a_fresh_session(tmp_path: Path) -> None:
    # Apache Kafka's kinds are left out here (a JVM start each): they are chosen away through
    # $AIOKAFKAWIRE_TEST_BROKERS, which is itself under test.
    counts, lines = _run_inner_session(tmp_path, env={TEST_BROKERS_ENV_VAR: "tansu,mock"})
    assert counts == {"passed": 5, "skipped": 2}
    assert lines[-1] == "closed 3"  # the factory's two clusters and mock_cluster's one
    kinds = sorted(line.split()[0] for line in lines[:-1])
    assert kinds == ["mock", "tansu"]
    (tansu_line,) = [line for line in lines if line.startswith("tansu ")]
    tansu_pid = int(tansu_line.split()[2])
    assert not os.path.exists(f"/proc/{tansu_pid}"), "session fixture left Tansu running"


def test_external_bootstrap_replaces_embedded_backends(tmp_path: Path) -> None:
    with MockCluster(1) as external:
        counts, lines = _run_inner_session(
            tmp_path, env={EXTERNAL_BOOTSTRAP_ENV_VAR: external.bootstrap_servers}
        )
    assert counts == {"passed": 4, "skipped": 4}
    assert lines == [f"external {external.bootstrap_servers}", "closed 3"]


def test_every_broker_kind_runs_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TEST_BROKERS_ENV_VAR, raising=False)
    assert enabled_broker_kinds() == ("tansu", "mock", "kafka", "kafka39")
    monkeypatch.setenv(TEST_BROKERS_ENV_VAR, "kafka, tansu")
    assert enabled_broker_kinds() == ("kafka", "tansu")
