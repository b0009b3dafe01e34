#!/usr/bin/env python3
"""Vendor the Kafka protocol specs of one Apache Kafka release into ``specs/kafka-<version>/``.

Usage::

    python tools/refresh_kafka_specs.py 4.4.0

Resolves ``org.apache.kafka:kafka-clients:<version>`` with Maven (``mvn dependency:get``, so the
jar lands in the local repository, ``~/.m2/repository`` unless ``--maven-repo`` says otherwise),
then writes:

* ``message/*.json`` — the jar's ``common/message/*.json`` message specs, byte for byte;
* ``errors.tsv`` — Kafka's ``Errors`` enum (code, name, retriable, invalid_metadata, description),
  printed by
  ``tools/DumpKafkaErrors.java`` run with ``java`` against the jar (the enum is compiled code, not
  JSON, so it is read through the JVM rather than parsed);
* ``LICENSE`` and ``NOTICE`` — Apache Kafka's, from the root of the jar.

``--legacy`` vendors the message specs (with LICENSE and NOTICE) but no error table: that is how
``specs/kafka-3.9.2/`` was made, the last release whose specs still describe the old versions
Kafka 4.0 removed (KIP-896), which this client keeps for old brokers.

After a refresh, point ``tools/gen_messages.py`` (``CURRENT_SPECS``) and ``tools/gen_errors.py``
(``DEFAULT_TABLE``) at the new directory, regenerate with both, and review the diff.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"
GROUP = "org.apache.kafka"
ARTIFACT = "kafka-clients"


def artifact_path(repo: Path, group: str, artifact: str, version: str, ext: str) -> Path:
    """Where Maven keeps ``group:artifact:version`` in the local repository ``repo``."""
    return repo.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.{ext}")


def resolve(repo: Path, version: str) -> tuple[Path, Path]:
    """The kafka-clients jar of ``version`` and the slf4j-api jar it depends on (downloaded)."""
    jar = artifact_path(repo, GROUP, ARTIFACT, version, "jar")
    if not jar.exists():
        subprocess.run(
            ["mvn", "-q", "dependency:get", f"-Dartifact={GROUP}:{ARTIFACT}:{version}"],
            check=True,
        )
    pom = artifact_path(repo, GROUP, ARTIFACT, version, "pom").read_text(encoding="utf-8")
    # Errors' static initialiser creates a slf4j logger, so slf4j-api must be on the classpath.
    match = re.search(r"<artifactId>slf4j-api</artifactId>\s*<version>([^<]+)</version>", pom)
    if match is None:
        raise SystemExit(f"no slf4j-api dependency in the {ARTIFACT} {version} pom")
    slf4j_version = match.group(1)
    slf4j = artifact_path(repo, "org.slf4j", "slf4j-api", slf4j_version, "jar")
    if not slf4j.exists():
        subprocess.run(
            ["mvn", "-q", "dependency:get", f"-Dartifact=org.slf4j:slf4j-api:{slf4j_version}"],
            check=True,
        )
    return jar, slf4j


def dump_errors(jar: Path, slf4j: Path) -> str:
    """Kafka's error table as TSV, read from the ``Errors`` enum in ``jar``."""
    program = Path(__file__).resolve().parent / "DumpKafkaErrors.java"
    classpath = f"{jar}{':' if sys.platform != 'win32' else ';'}{slf4j}"
    result = subprocess.run(
        ["java", "-cp", classpath, str(program)],
        check=True,
        capture_output=True,
        text=True,
    )
    lines = result.stdout.splitlines()
    header = "code\tname\tretriable\tinvalid_metadata\tdescription"
    if not lines or lines[0] != header or len(lines) < 100:
        raise SystemExit(f"unexpected output from DumpKafkaErrors: {result.stdout[:200]!r}")
    return "\n".join(lines) + "\n"


def extract(jar: Path, dest: Path) -> int:
    """Write the message specs, LICENSE and NOTICE of ``jar`` into ``dest``; return spec count."""
    count = 0
    with zipfile.ZipFile(jar) as archive:
        for name in sorted(archive.namelist()):
            if name.startswith("common/message/") and name.endswith(".json"):
                target = dest / "message" / Path(name).name
                target.write_bytes(archive.read(name))
                count += 1
        # Kafka's own LICENSE and NOTICE sit at the jar's root; META-INF/*.txt belong to a
        # library shaded into the jar.
        (dest / "LICENSE").write_bytes(archive.read("LICENSE"))
        (dest / "NOTICE").write_bytes(archive.read("NOTICE"))
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("version", help="Apache Kafka version, e.g. 4.4.0")
    parser.add_argument(
        "--maven-repo",
        type=Path,
        default=Path.home() / ".m2" / "repository",
        help="Maven local repository (default: ~/.m2/repository)",
    )
    parser.add_argument(
        "--legacy",
        action="store_true",
        help="message specs, LICENSE and NOTICE only (no errors.tsv): an older release kept for "
        "the versions newer releases dropped",
    )
    args = parser.parse_args(argv)
    version: str = args.version
    jar, slf4j = resolve(args.maven_repo, version)
    dest = SPECS / f"kafka-{version}"
    with tempfile.TemporaryDirectory(dir=SPECS.parent) as tmp:
        staging = Path(tmp) / dest.name
        (staging / "message").mkdir(parents=True)
        count = extract(jar, staging)
        if not args.legacy:
            (staging / "errors.tsv").write_text(dump_errors(jar, slf4j), encoding="utf-8")
        readme = dest / "README.md"
        if readme.exists():
            shutil.copy2(readme, staging / "README.md")
        if dest.exists():
            shutil.rmtree(dest)
        SPECS.mkdir(exist_ok=True)
        shutil.move(str(staging), dest)
    table = "" if args.legacy else ", errors.tsv"
    print(f"wrote {count} message specs{table}, LICENSE and NOTICE to {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
