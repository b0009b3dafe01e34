"""The release artefacts: ``python -m build`` makes an sdist and a wheel that ``twine check
--strict`` accepts, and the wheel works in a fresh virtual environment (not this one's packages):
``aiokafkawire --version`` agrees with ``__version__`` and the installed metadata, every public
module imports, the pytest plugin is opt-in, and the pure-Python build
(``AIOKAFKAWIRE_NO_EXTENSIONS=1``) and a build whose compiler fails both work, the latter saying so.

Needs ``build`` and ``twine`` (the ``dev`` extra) and pip's access to PyPI for the wheel's
dependencies (pip's cache keeps repeated runs quick).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import aiokafkawire
from aiokafkawire import _compiled

REPO = Path(__file__).resolve().parent.parent

# Every public module; ``aiokafkawire.testing.pytest_plugin`` also needs pytest (the testing extra).
PUBLIC_MODULES = (
    "aiokafkawire",
    "aiokafkawire.admin",
    "aiokafkawire.cli",
    "aiokafkawire.client_config",
    "aiokafkawire.consumer",
    "aiokafkawire.consumer.share",
    "aiokafkawire.errors",
    "aiokafkawire.metrics",
    "aiokafkawire.producer",
    "aiokafkawire.protocol",
    "aiokafkawire.protocol.records",
    "aiokafkawire.spark",
    "aiokafkawire.structs",
    "aiokafkawire.testing",
)

# Run inside the fresh environment: what the installed copy says about itself, as JSON.
PROBE = """
import importlib, importlib.metadata, json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import aiokafkawire
for name in sys.argv[1:]:
    importlib.import_module(name)
from aiokafkawire.protocol.records import RecordBatchBuilder, iter_batches
builder = RecordBatchBuilder()
builder.append(1, b"k", b"v")
(batch,) = iter_batches(builder.build())
print(json.dumps({
    "file": aiokafkawire.__file__,
    "version": aiokafkawire.__version__,
    "metadata": importlib.metadata.version("aiokafkawire"),
    "accelerated": aiokafkawire.accelerated(),
    "warnings": [str(w.message) for w in caught],
    "pytest11": [ep.value for ep in importlib.metadata.entry_points(group="pytest11")],
    "records": [(r.key.decode(), r.value.decode()) for r in batch],
}))
"""


@dataclass
class Built:
    sdist: Path
    wheel: Path
    pure_wheel: Path
    failed_wheel: Path


def _run(cmd: list[str | Path], *, timeout: float, **kwargs: object) -> str:
    result = subprocess.run(
        [str(part) for part in cmd], capture_output=True, text=True, timeout=timeout, **kwargs
    )  # type: ignore[call-overload]
    assert result.returncode == 0, f"{cmd}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return str(result.stdout)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without this checkout on the path (the fresh venv must use the wheel)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AIOKAFKAWIRE_"))}
    return {**env, **extra}


def _build_env(**extra: str) -> dict[str, str]:
    """For ``python -m build``: this environment (where build and twine are), clean otherwise."""
    env = _clean_env(**extra)
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _build_cmd(outdir: Path, *args: str | Path) -> list[str | Path]:
    """``python -m build``; without build isolation (no download of setuptools for each of the
    three builds) when this environment has a setuptools that reads the project's metadata."""
    cmd: list[str | Path] = [sys.executable, "-m", "build", "--outdir", outdir, *args]
    try:
        import setuptools

        if int(setuptools.__version__.split(".")[0]) >= 77:
            cmd.append("--no-isolation")
    except (ImportError, ValueError):
        pass
    return cmd


def _source_copy(dest: Path) -> Path:
    """The files git would put in a release (tracked or new, not ignored), copied to ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    for name in listed.stdout.decode().split("\0"):
        path = REPO / name
        if name and path.is_file() and not name.startswith("benchmarks/results/"):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / name)
    return dest


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    pytest.importorskip("build", reason="python -m build needs the build package (dev extra)")
    root = tmp_path_factory.mktemp("packaging")
    source = _source_copy(root / "src")
    dist = root / "dist"
    _run(_build_cmd(dist, source), timeout=300, env=_build_env())
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    wheels = {}
    for kind, extra in (("pure", {"AIOKAFKAWIRE_NO_EXTENSIONS": "1"}), ("failed", {"CC": "false"})):
        out = root / kind
        _run(_build_cmd(out, "--wheel", source), timeout=300, env=_build_env(**extra))
        (wheels[kind],) = out.glob("*.whl")
    yield Built(sdist, wheel, wheels["pure"], wheels["failed"])


@pytest.fixture(scope="module")
def venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment (no system site-packages) with the wheel and its dependencies."""
    path = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", path], timeout=120, env=_clean_env())
    _run(
        [
            path / "bin" / "python",
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            built.wheel,
        ],
        timeout=300,
        env=_clean_env(),
        cwd=path,
    )
    return path


def _probe(venv: Path, **env: str) -> dict[str, object]:
    out = _run(
        [venv / "bin" / "python", "-c", PROBE, *PUBLIC_MODULES],
        timeout=120,
        env=_clean_env(**env),
        cwd=venv,
    )
    return dict(json.loads(out))


def _install(venv: Path, wheel: Path) -> None:
    _run(
        [
            venv / "bin" / "python",
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            "--force-reinstall",
            wheel,
        ],
        timeout=300,
        env=_clean_env(),
        cwd=venv,
    )


@pytest.mark.slow
def test_twine_accepts_the_sdist_and_the_wheel(built: Built) -> None:
    pytest.importorskip("twine", reason="twine check needs the twine package (dev extra)")
    _run(
        [sys.executable, "-m", "twine", "check", "--strict", built.sdist, built.wheel],
        timeout=120,
        env=_build_env(),
    )


@pytest.mark.slow
def test_the_artefacts_hold_the_licence_and_the_sources(built: Built) -> None:
    with tarfile.open(built.sdist) as sdist:
        names = {name.split("/", 1)[-1] for name in sdist.getnames()}
    assert {"LICENSE", "setup.py", "aiokafkawire/protocol/records/_crecords.c"} <= names
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = wheel.read(metadata).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in text
    assert "aiokafkawire/py.typed" in names
    assert not any(n.startswith(("tests/", "specs/")) for n in names)


@pytest.mark.slow
def test_the_wheel_works_in_a_fresh_environment(venv: Path) -> None:
    info = _probe(venv)
    assert str(info["file"]).startswith(str(venv)), info["file"]
    assert info["version"] == info["metadata"]
    version = _run([venv / "bin" / "aiokafkawire", "--version"], timeout=60, env=_clean_env())
    assert version.strip() == f"aiokafkawire {info['version']}"  # without rich: plain output
    assert info["records"] == [["k", "v"]]
    # This machine has a compiler: every accelerator was built and is used, without a warning.
    assert info["accelerated"] and all(dict(info["accelerated"]).values()), info  # type: ignore[call-overload]
    assert info["warnings"] == []
    # The pytest plugin is opt-in: installing the package registers nothing with pytest.
    assert info["pytest11"] == []
    forced = _probe(venv, AIOKAFKAWIRE_PURE_PYTHON="1")
    assert not any(dict(forced["accelerated"]).values())  # type: ignore[call-overload]


@pytest.mark.slow
def test_pure_python_and_failed_compile_wheels(built: Built, venv: Path) -> None:
    assert built.pure_wheel.name.endswith("-py3-none-any.whl"), built.pure_wheel.name
    _install(venv, built.pure_wheel)
    info = _probe(venv)
    assert info["records"] == [["k", "v"]]
    assert not any(dict(info["accelerated"]).values())  # type: ignore[call-overload]
    assert info["warnings"] == []  # pure Python was chosen: nothing to warn about

    _install(venv, built.failed_wheel)
    info = _probe(venv)
    assert info["records"] == [["k", "v"]]
    assert not any(dict(info["accelerated"]).values())  # type: ignore[call-overload]
    (warning,) = info["warnings"]  # type: ignore[misc]
    assert "without some of its C accelerators" in warning
    assert "aiokafkawire.protocol.records._crecords" in warning


def test_version_is_written_once() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "aiokafkawire.__version__" }' in pyproject
    assert "\nversion =" not in pyproject.split("[tool.setuptools.dynamic]")[0]
    out = subprocess.run(
        [sys.executable, "-m", "aiokafkawire", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.strip() == f"aiokafkawire {aiokafkawire.__version__}"


def test_the_pytest_plugin_is_opt_in() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "pytest11" not in pyproject.split("[tool.pytest.ini_options]")[0]
    conftest = (REPO / "tests" / "conftest.py").read_text(encoding="utf-8")
    assert 'pytest_plugins = ["aiokafkawire.testing.pytest_plugin"]' in conftest


def test_cli_version_needs_no_rich() -> None:
    code = (
        "import sys; sys.modules['rich'] = None\n"
        "from aiokafkawire.cli import main\n"
        "sys.exit(main(['--version']))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"aiokafkawire {aiokafkawire.__version__}"


def test_accelerated_names_every_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    active = aiokafkawire.accelerated()
    assert set(active) == set(_compiled.ACCELERATORS)
    assert all(isinstance(value, bool) for value in active.values())
    monkeypatch.setenv("AIOKAFKAWIRE_PURE_PYTHON", "1")
    assert not any(aiokafkawire.accelerated().values())


def test_a_failed_compile_warns_on_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIOKAFKAWIRE_PURE_PYTHON", raising=False)
    record = tmp_path / "_build_failures.txt"
    monkeypatch.setattr(_compiled, "_BUILD_FAILURES", record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _compiled.warn_about_build_failures()  # nothing recorded: silent
    assert _compiled.build_failures() == []
    record.write_text("aiokafkawire.producer._cmurmur2: command 'false' failed\n")
    with pytest.warns(RuntimeWarning, match=r"_cmurmur2: command 'false' failed"):
        _compiled.warn_about_build_failures()
    monkeypatch.setenv("AIOKAFKAWIRE_PURE_PYTHON", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _compiled.warn_about_build_failures()
