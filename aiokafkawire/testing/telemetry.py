"""A broker-side KIP-714 receiver for tests: what did the clients push?

:class:`TelemetryRecorder` compiles ``java/TelemetryRecorder.java`` (a ``MetricsReporter`` and
``ClientTelemetryExporterProvider``) with ``javac`` against a Kafka version's broker jars,
once per version and source (cached under ``~/.cache/aiokafkawire/telemetry-recorder/``).  Give
its :attr:`~TelemetryRecorder.classpath` and :meth:`~TelemetryRecorder.broker_config` to a
:class:`~aiokafkawire.testing.kafka.KafkaCluster`; every PushTelemetry the broker accepts is then
appended as one JSON line to :attr:`~TelemetryRecorder.output` (the OTLP payload decoded by
Kafka's own shaded OpenTelemetry classes), read back with :meth:`~TelemetryRecorder.pushes`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing._maven import cache_root, locked_directory
from aiokafkawire.testing.kafka import kafka_jars

__all__ = ["RECORDER_CLASS", "TelemetryRecorder"]

RECORDER_CLASS = "aiokafkawire.testing.TelemetryRecorder"
_SOURCE = Path(__file__).with_name("java") / "TelemetryRecorder.java"


def _compile(version: str) -> Path:
    """The classes directory of the recorder for Kafka ``version`` (compiled on first use)."""
    source = _SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:12]
    target = cache_root() / "telemetry-recorder" / f"{version}-{digest}"
    marker = target / "aiokafkawire" / "testing" / "TelemetryRecorder.class"
    if marker.exists():
        return target
    javac = shutil.which("javac")
    if javac is None:
        raise BrokerUnavailableError("javac is not installed (needed for the telemetry recorder)")
    jars = kafka_jars(version)
    target.mkdir(parents=True, exist_ok=True)
    with locked_directory(target):
        if marker.exists():
            return target
        done = subprocess.run(
            [javac, "-nowarn", "-d", str(target), "-cp", str(jars / "*"), str(_SOURCE)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise BrokerUnavailableError(
                f"javac could not compile the telemetry recorder: {done.stderr[-2000:]}"
            )
    return target


class TelemetryRecorder:
    """The compiled receiver for Kafka ``version`` and the file it writes to."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.classpath = str(_compile(version))
        handle, name = tempfile.mkstemp(prefix="aiokafkawire-telemetry-", suffix=".jsonl")
        os.close(handle)
        self.output = Path(name)

    def broker_config(self) -> dict[str, str]:
        """The broker properties that install the recorder."""
        return {"metric.reporters": RECORDER_CLASS, "aiokafkawire.telemetry.file": str(self.output)}

    def pushes(self) -> list[dict[str, Any]]:
        """Every push received so far, oldest first (one dict per PushTelemetry)."""
        text = self.output.read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def close(self) -> None:
        """Remove the output file."""
        self.output.unlink(missing_ok=True)
