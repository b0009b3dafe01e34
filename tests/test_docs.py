"""The documentation: the site builds with warnings as errors, generated pages are fresh, and the
aiokafka migration guide maps every aiokafka option and method."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_docs_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    api_page = (tmp_path / "api" / "index.html").read_text(encoding="utf-8")
    assert "send_batch" in api_page and "AdminOperationError" in api_page


def test_generated_reference_pages_are_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_migration_guide_maps_every_aiokafka_option_and_method() -> None:
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.admin import AIOKafkaAdminClient

    guide = (REPO / "docs" / "migrating-from-aiokafka.md").read_text(encoding="utf-8")
    missing = []
    for cls in (aiokafka.AIOKafkaProducer, aiokafka.AIOKafkaConsumer, AIOKafkaAdminClient):
        options = list(inspect.signature(cls.__init__).parameters)[1:]
        methods = [
            name
            for name, value in vars(cls).items()
            if not name.startswith("_") and (callable(value) or isinstance(value, property))
        ]
        missing += [
            f"{cls.__name__}.{name}"
            for name in options + methods
            if f"`{name}`" not in guide and f"`{name}(" not in guide
        ]
    assert not missing, f"not in docs/migrating-from-aiokafka.md: {missing}"


def test_every_docs_page_is_in_the_site_navigation() -> None:
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    assert pages and all(page in config for page in pages), pages
