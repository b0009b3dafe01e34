"""The package stays ruff- and mypy-clean, and the public API imports as documented."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_public_api_imports() -> None:
    import aiokafkawire
    from aiokafkawire import (  # noqa: F401
        Admin,
        Consumer,
        ConsumerRecord,
        KafkaError,
        NewTopic,
        OffsetAndMetadata,
        Producer,
        RecordMetadata,
        TopicPartition,
    )

    for name in aiokafkawire.__all__:
        assert getattr(aiokafkawire, name) is not None
    with pytest.raises(AttributeError):
        aiokafkawire.NoSuchThing  # noqa: B018


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_is_clean() -> None:
    result = subprocess.run(
        ["ruff", "check", "aiokafkawire", "tools", "tests", "benchmarks", "examples"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


def test_no_merge_conflict_markers_are_committed() -> None:
    # Several branches merge into main: a marker left in a file that is not Python (docs,
    # configuration) would slip past ruff and mypy.
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    marked = []
    for name in listed.stdout.decode().split("\0"):
        path = REPO / name
        if not name or name.startswith("specs/") or not path.is_file():
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for line in text.splitlines():
            if line.startswith(("<<<<<<< ", ">>>>>>> ")):
                marked.append(name)
                break
    assert not marked, f"merge conflict markers in {marked}"
