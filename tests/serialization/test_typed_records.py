"""Records are typed by the deserializers (issue 22, item 3): under mypy, ``record.value`` has
the value deserializer's return type, ``record.key`` the key deserializer's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CLIENT_CODE = """
from aiokafkawire import Consumer
from aiokafkawire.consumer.share import ShareConsumer
from aiokafkawire.serialization import SerializationContext

def to_str(data: bytes | None) -> str:
    return (data or b"").decode()

def to_int(data: bytes | None) -> int:
    return int(data or b"0")

def with_context(data: bytes | None, ctx: SerializationContext) -> list[str]:
    return []

def parsed(data: bytes | None, ctx: SerializationContext) -> dict[str, int]:
    return {}

async def main() -> None:
    consumer = Consumer("t", key_deserializer=to_str, value_deserializer=to_int)
    record = await consumer.getone()
    reveal_type(record.key)
    reveal_type(record.value)
    for records in (await consumer.getmany()).values():
        reveal_type(records[0].value)
    async for item in Consumer("t", value_deserializer=with_context):
        reveal_type(item.value)
    share = ShareConsumer("t", group_id="g", value_deserializer=parsed)
    async for shared in share:
        reveal_type(shared.value)
    raw = await Consumer("t").getone()
    reveal_type(raw.value)
"""


@pytest.mark.slow
def test_mypy_types_record_values_by_the_deserializers(tmp_path: Path) -> None:
    client = tmp_path / "client.py"
    client.write_text(CLIENT_CODE, encoding="utf-8")
    env = dict(os.environ, MYPYPATH=str(REPO))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-error-summary",
            "--hide-error-context",
            "--python-version",
            "3.10",
            "--follow-imports",
            "silent",
            str(client),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    revealed = [
        line.split("Revealed type is ")[1].strip('"')
        for line in done.stdout.splitlines()
        if "Revealed type is" in line
    ]
    assert [name.replace("builtins.", "") for name in revealed] == [
        "str",
        "int",
        "int",
        "list[str]",
        "dict[str, int]",
        "Any",  # no deserializer: Any, as before
    ], done.stdout + done.stderr
    assert ": error:" not in done.stdout, done.stdout
