"""Running the ``aiokafkawire`` command as a subprocess, the way a person or a script runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
# What the test run's own environment must not give the commands (a test gives it with env=).
_OUTER_SETTINGS = (
    "AIOKAFKAWIRE_BOOTSTRAP_SERVERS",
    "AIOKAFKAWIRE_BOOTSTRAP",
    "AIOKAFKAWIRE_CONFIG",
    "AIOKAFKAWIRE_PROFILE",
)


def cli_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a CLI subprocess: this checkout first on the path."""
    environment = {k: v for k, v in os.environ.items() if k not in _OUTER_SETTINGS}
    return {**environment, "PYTHONPATH": str(REPO_ROOT), **(extra or {})}


def cli_command(*args: str) -> list[str]:
    """The command line of ``python -m aiokafkawire ARGS``."""
    return [sys.executable, "-m", "aiokafkawire", *args]


def run_aiokafkawire(
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m aiokafkawire ARGS`` to its end, bounded in time."""
    return subprocess.run(
        cli_command(*args),
        input=input,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=cli_environment(env),
        timeout=timeout,
        cwd=REPO_ROOT,
        check=False,
    )


def column(row: str, index: int) -> str:
    """Cell ``index`` (0-based) of a row of a table the CLI printed."""
    return row.split("│")[index + 1].strip()


def make_topic(
    bootstrap: str, topic: str, partitions: int, records: int, *, create: bool = True
) -> None:
    """Create ``topic`` (unless ``create`` is false) and write ``records`` records through the
    library, not the CLI: record ``i`` goes to partition ``i % partitions`` with key ``key-i``
    and value ``value-i``."""
    import asyncio

    from aiokafkawire import Admin, NewTopic, Producer

    async def make() -> None:
        if create:
            async with Admin(bootstrap_servers=bootstrap) as admin:
                created = await admin.create_topics(
                    [NewTopic(topic, partitions, 1)], raise_on_error=False
                )
                assert created[topic].error is None, created[topic].error
        async with Producer(bootstrap_servers=bootstrap) as producer:
            handles = [
                await producer.send(
                    topic, b"value-%d" % i, key=b"key-%d" % i, partition=i % partitions
                )
                for i in range(records)
            ]
            for handle in handles:
                await handle

    asyncio.run(make())


def run_in_process(
    *args: str, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the command in this process (no interpreter start-up, no re-import), with its own
    stdin, stdout and stderr, and return what a subprocess run would.

    For the variants of a command whose subprocess run another test already covers: each
    subprocess pays ~0.5 s of CPU importing the library.
    """
    import contextlib
    import io
    from unittest import mock

    from aiokafkawire.cli import main

    def stream(data: bytes = b"") -> io.TextIOWrapper:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", write_through=True)

    stdin, stdout, stderr = stream((input or "").encode()), stream(), stream()
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ))
        for variable in _OUTER_SETTINGS:
            os.environ.pop(variable, None)
        os.environ.update(env or {})
        stack.enter_context(mock.patch.object(sys, "stdin", stdin))
        stack.enter_context(mock.patch.object(sys, "stdout", stdout))
        stack.enter_context(mock.patch.object(sys, "stderr", stderr))
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(
        ["aiokafkawire", *args],
        code,
        stdout.buffer.getvalue().decode("utf-8", "replace"),  # type: ignore[attr-defined]
        stderr.buffer.getvalue().decode("utf-8", "replace"),  # type: ignore[attr-defined]
    )
