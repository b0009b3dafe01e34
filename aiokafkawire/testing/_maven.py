"""Resolve JVM test dependencies (Apache Kafka's broker, Spark's Kafka connector) with Maven.

Jars are copied by ``mvn dependency:copy-dependencies`` from a small pom shipped in
``aiokafkawire/testing/maven/`` into a cache directory (``~/.cache/aiokafkawire/<name>/<version>/``,
or under ``$XDG_CACHE_HOME``), so only the first run downloads anything. Resolution happens under a
file lock and lands by an atomic rename, so concurrent test processes neither race nor see a
half-copied directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path

from aiokafkawire.testing._errors import BrokerUnavailableError

__all__ = ["cache_root", "find_java", "locked_directory", "resolve_jars"]

_COMPLETE_MARKER = ".complete"
_MAVEN_TIMEOUT_S = 900.0


def cache_root() -> Path:
    """The directory holding every resolved jar set (``$XDG_CACHE_HOME/aiokafkawire``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "aiokafkawire"


def find_java() -> str:
    """Path of the ``java`` launcher (``$JAVA_HOME/bin/java`` first); raises if there is none."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise BrokerUnavailableError("no Java runtime: install a JDK 17+ (java not on PATH)")
    return found


@contextlib.contextmanager
def locked_directory(directory: Path) -> Iterator[None]:
    """Hold an exclusive file lock on ``directory`` (created if missing) for the block."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def resolve_jars(pom_name: str, name: str, version: str, properties: Mapping[str, str]) -> Path:
    """Return a directory holding every jar of the pom ``pom_name`` at ``version``.

    ``name`` names the cache subdirectory (``kafka``, ``spark-kafka``); ``properties`` are passed
    to Maven as ``-Dkey=value`` (the pom's version properties). Raises
    :class:`BrokerUnavailableError` when Maven is missing or cannot resolve the artifacts (an
    unknown version, no registry), naming the command and Maven's last output lines.
    """
    target = cache_root() / name / version
    if (target / _COMPLETE_MARKER).exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerUnavailableError("no Maven: install maven (mvn) to fetch the broker's jars")
    with locked_directory(target.parent):
        if (target / _COMPLETE_MARKER).exists():
            return target
        pom = resources.files("aiokafkawire.testing") / "maven" / pom_name
        with (
            resources.as_file(pom) as pom_path,
            tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{version}-") as staging,
        ):
            libs = Path(staging) / "libs"
            command = [
                mvn,
                "-B",
                "-q",
                "-f",
                str(pom_path),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={libs}",
                *(f"-D{key}={value}" for key, value in properties.items()),
            ]
            try:
                done = subprocess.run(
                    command,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=_MAVEN_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                raise BrokerUnavailableError(
                    f"Maven did not resolve {name} {version} within {_MAVEN_TIMEOUT_S:.0f}s"
                ) from exc
            if done.returncode != 0 or not any(libs.glob("*.jar")):
                output = (done.stdout + done.stderr).decode(errors="replace").strip()
                tail = "\n".join(output.splitlines()[-15:])
                raise BrokerUnavailableError(
                    f"Maven could not resolve {name} {version} (exit {done.returncode}): "
                    f"{' '.join(command)}\n{tail}"
                )
            (libs / _COMPLETE_MARKER).write_text(version)
            if target.exists():  # a stale, incomplete attempt
                shutil.rmtree(target)
            libs.rename(target)
    return target
