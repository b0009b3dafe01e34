"""The documentation: the site builds with warnings as errors, generated pages are fresh, and the
aiokafka migration guide maps every aiokafka option and method."""

from __future__ import annotations

import inspect
import os
import re
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
    missing = [name for name in _public_names() if not re.search(rf'id="[\w.]*\.{name}"', api_page)]
    assert not missing, f"public names missing from docs/api.md: {missing}"
    # The clients' private building blocks (mixins, per-family call classes) are not shown.
    private = ["PositionsMixin", "CommitsMixin", "ConsumerCore", "AdminCore", "TopicCalls"]
    assert [name for name in private if name in api_page] == []


# Modules whose public classes and functions (``__all__``) the API reference documents.
PUBLIC_MODULES = (
    "aiokafkawire",
    "aiokafkawire.admin",
    "aiokafkawire.consumer",
    "aiokafkawire.consumer.share",
    "aiokafkawire.producer",
    "aiokafkawire.metrics",
    "aiokafkawire.testing",
    "aiokafkawire.spark",
    "aiokafkawire.compat",
    "aiokafkawire.serialization",
    "aiokafkawire.schema_registry",
    "aiokafkawire.schema_registry.avro",
    "aiokafkawire.schema_registry.json_schema",
    "aiokafkawire.schema_registry.protobuf",
    "aiokafkawire.otel",
)


def _public_names() -> list[str]:
    import importlib

    names = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                names.append(name)
    return sorted(set(names))


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


def _table_rows(page: str) -> list[list[str]]:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    return [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith(("| option ", "| code ", "| error "))
    ]


def test_configuration_gives_each_option_its_own_description() -> None:
    rows = _table_rows("configuration.md")
    assert len(rows) > 60
    by_text: dict[str, set[str]] = {}
    for name, _, _, text in rows:
        assert text, f"{name} has no description"
        by_text.setdefault(text, set()).add(name)
    shared = {text: names for text, names in by_text.items() if len(names) > 1}
    assert not shared, f"options sharing one description: {shared}"
    (buffer_memory,) = [text for name, _, _, text in rows if name == "`buffer_memory`"]
    assert "before `send` blocks" in buffer_memory


def test_error_reference_lists_every_broker_error_with_advice() -> None:
    from aiokafkawire import errors

    rows = _table_rows("errors.md")
    broker = {int(row[0]): row for row in rows if row[0].lstrip("-").isdigit()}
    assert set(broker) == set(errors.ERRORS_BY_CODE)
    for code, (_, name, retriable, description, client, advice) in broker.items():
        cls = errors.ERRORS_BY_CODE[code]
        assert f"`{cls.__name__}`" in name and f"`{cls.name}`" in name
        assert retriable == ("yes" if cls.retriable else "no")
        assert description and client and advice, code
    client_side = {row[0].strip("`") for row in rows if not row[0].lstrip("-").isdigit()}
    assert {"KafkaTimeoutError", "ConfigError", "BufferFullError"} <= client_side
    (timeout_row,) = [row for row in rows if row[0] == "`KafkaTimeoutError`"]
    assert "`TimeoutError`" in timeout_row[2]


def test_changelog_is_a_keep_a_changelog() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.M)
    assert versions[0] == ("Unreleased", "") and ("0.1.0", "2026-11-26") in versions
    assert all(date for name, date in versions[1:]), versions
    for name, _ in versions:
        assert re.search(rf"^\[{re.escape(name)}\]: https://\S+$", text, re.M), name
    allowed = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    assert set(re.findall(r"^### (.+)$", text, re.M)) <= allowed
    unreleased = text.split("## [Unreleased]")[1].split("\n## [")[0]
    assert re.findall(r"^### (.+)$", unreleased, re.M) == ["Added", "Changed", "Fixed"]
    assert len(text.splitlines()) < 250  # user-facing lines, not a diary
