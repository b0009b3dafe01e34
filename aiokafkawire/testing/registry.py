"""A real schema registry for tests: Apicurio Registry, serving the Confluent API in memory.

Apicurio Registry 3 runs from Maven Central (``io.apicurio:apicurio-registry-app``, classifier
``all``, a tar.gz of a Quarkus application) with in-memory storage, and answers the Confluent
Schema Registry REST API at ``/apis/ccompat/v7``: what confluent-kafka's and aiokafkawire's
registry clients speak.  It needs Java 21 or newer (found through ``$AIOKAFKAWIRE_JAVA21``,
``$JAVA_HOME`` or the JDKs under ``/usr/lib/jvm``); the archive is fetched once into
``~/.cache/aiokafkawire/apicurio/<version>/``.

Notes on Apicurio 3.3.3 as a Confluent registry (checked by ``tests/schema_registry/``):

- Protobuf: it accepts a schema as .proto text or, as confluent-kafka-python (2.x) and
  aiokafkawire send it, as the base64 of a serialized ``FileDescriptorProto``; it stores and
  returns either as sent.  ``GET /schemas/ids/N?format=serialized`` (what confluent-kafka's
  ``ProtobufDeserializer`` asks for when given a registry client) fails with HTTP 500 for a
  base64 schema and returns unencoded descriptor bytes for a text schema: confluent-kafka's
  deserializer works against it only without a registry client.
- It serves no associations API: confluent-kafka's (2.16) serializers and deserializers ask
  for the topic's associated subject first and take the 404 as "none"; with
  ``subject.name.strategy.type: TOPIC`` they skip the call, and its deserializers need it when
  they look subjects up.  confluent-kafka's registry client has no request timeout unless given
  ``timeout``: a request Apicurio never answers (seen once, in a CI run under load) waits forever.
- Quarkus's management interface binds ``*:9000`` unless told otherwise: the server moves it to
  a free loopback port so that several registries can run on one machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from typing import IO

from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing._maven import cache_root, locked_directory
from aiokafkawire.testing._process import (
    ChildProcessServer,
    die_with_this_process,
    terminate,
    time_left_to_start,
)
from aiokafkawire.testing.tansu import find_free_port

__all__ = ["APICURIO_VERSION", "SchemaRegistryServer", "apicurio_home", "find_java"]

APICURIO_VERSION = "3.3.3"
_ARTIFACT = "io.apicurio:apicurio-registry-app:{version}:tar.gz:all"
_MAVEN_TIMEOUT_S = 900.0
_COMPLETE = ".complete"


def _java_major(java: str) -> int:
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return 0
    found = re.search(r'version "(\d+)', done.stderr + done.stdout)
    return int(found.group(1)) if found else 0


def find_java(minimum: int = 21) -> str:
    """A ``java`` launcher of version ``minimum`` or newer; raises BrokerUnavailableError."""
    candidates = []
    for variable in ("AIOKAFKAWIRE_JAVA21", "JAVA_HOME"):
        home = os.environ.get(variable)
        if home:
            candidates.append(str(Path(home) / "bin" / "java"))
    candidates += sorted(str(p) for p in Path("/usr/lib/jvm").glob("*/bin/java"))
    which = shutil.which("java")
    if which:
        candidates.append(which)
    for java in candidates:
        if os.access(java, os.X_OK) and _java_major(java) >= minimum:
            return java
    raise BrokerUnavailableError(
        f"Apicurio Registry needs Java {minimum}+; none found (set AIOKAFKAWIRE_JAVA21 to a JDK)"
    )


def apicurio_home(version: str = APICURIO_VERSION) -> Path:
    """The unpacked Apicurio Registry ``version`` (fetched by Maven on first use)."""
    target = cache_root() / "apicurio" / version
    if (target / _COMPLETE).exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerUnavailableError("no Maven: install maven (mvn) to fetch Apicurio Registry")
    with locked_directory(target.parent):
        if (target / _COMPLETE).exists():
            return target
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{version}-") as staging:
            command = [
                mvn, "-B", "-q", "dependency:copy",
                f"-Dartifact={_ARTIFACT.format(version=version)}",
                f"-DoutputDirectory={staging}",
            ]  # fmt: skip
            try:
                done = subprocess.run(
                    command, stdin=subprocess.DEVNULL, capture_output=True,
                    timeout=_MAVEN_TIMEOUT_S, check=False,
                )  # fmt: skip
            except subprocess.TimeoutExpired as exc:
                raise BrokerUnavailableError(f"Maven did not fetch Apicurio {version}") from exc
            archives = list(Path(staging).glob("*.tar.gz"))
            if done.returncode != 0 or not archives:
                tail = (done.stdout + done.stderr).decode(errors="replace").strip()[-2000:]
                raise BrokerUnavailableError(
                    f"Maven could not fetch Apicurio Registry {version}: {' '.join(command)}\n"
                    f"{tail}"
                )
            unpacked = Path(staging) / "app"
            with tarfile.open(archives[0]) as archive:
                archive.extractall(unpacked, filter="data")
            (unpacked / _COMPLETE).write_text(version)
            if target.exists():
                shutil.rmtree(target)
            unpacked.rename(target)
    return target


class SchemaRegistryServer(ChildProcessServer):
    """Apicurio Registry on a loopback port, in memory; ``url`` is its Confluent-API base URL.

    ``with SchemaRegistryServer() as registry: AsyncSchemaRegistryClient({"url": registry.url})``.
    """

    def __init__(
        self,
        *,
        version: str = APICURIO_VERSION,
        startup_timeout: float = 180.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.version = version
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._finalizer: weakref.finalize[..., SchemaRegistryServer] | None = None

    @property
    def url(self) -> str:
        """The Confluent Schema Registry API's base URL (``.../apis/ccompat/v7``)."""
        if self.port is None:
            raise BrokerUnavailableError("the schema registry is not started")
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    def start(self) -> SchemaRegistryServer:
        """Start the registry and block until it answers."""
        if self._process is not None:
            return self
        java = find_java(21)
        home = apicurio_home(self.version)
        self.port = find_free_port()
        management_port = find_free_port()
        self._log = tempfile.TemporaryFile()
        command = [
            *die_with_this_process(), java,
            f"-Dquarkus.http.port={self.port}", "-Dquarkus.http.host=127.0.0.1",
            # Quarkus's management interface listens on *:9000 by default: two registries on
            # one machine would collide (and it must not leave loopback)
            f"-Dquarkus.management.port={management_port}", "-Dquarkus.management.host=127.0.0.1",
            "-Dquarkus.log.level=WARN", "-jar", str(home / "quarkus-run.jar"),
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command, cwd=home, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )
        self._finalizer = weakref.finalize(self, terminate, self._process, self.stop_timeout)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            remaining = time_left_to_start(
                self._process,
                deadline,
                lambda code: f"Apicurio Registry exited with {code}: {self._log_tail()}",
                lambda: f"Apicurio Registry did not answer within {self.startup_timeout}s",
            )
            try:
                with urllib.request.urlopen(f"{self.url}/subjects", timeout=min(remaining, 5)):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(min(0.5, max(remaining, 0)))

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-2000:]

    def stop(self) -> None:
        """Stop the registry; idempotent."""
        process, self._process = self._process, None
        if process is not None:
            terminate(process, self.stop_timeout)
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._log is not None:
            self._log.close()
            self._log = None
