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
