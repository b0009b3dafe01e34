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

async def fetched(data: bytes | None, ctx: SerializationContext) -> dict[str, float]:
    return {}

async def looked_up(data: bytes | None, ctx: SerializationContext) -> tuple[int, str]:
    return (0, "")

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
    both = Consumer("t", key_deserializer=looked_up, value_deserializer=fetched)
    async for pair in both:
        reveal_type(pair.key)
        reveal_type(pair.value)
    mixed = Consumer("t", key_deserializer=to_str, value_deserializer=fetched, group_id="g")
    mixed_record = await mixed.getone()
    reveal_type(mixed_record.key)
    reveal_type(mixed_record.value)
    keyed = Consumer("t", key_deserializer=looked_up, value_deserializer=with_context)
    keyed_record = await keyed.getone()
    reveal_type(keyed_record.key)
    reveal_type(keyed_record.value)
    share_async = ShareConsumer("t", group_id="g", value_deserializer=fetched)
    async for async_shared in share_async:
        reveal_type(async_shared.value)
    share_both = ShareConsumer(
        "t", group_id="g", key_deserializer=looked_up, value_deserializer=fetched
    )
    async for both_shared in share_both:
        reveal_type(both_shared.key)
        reveal_type(both_shared.value)
    Consumer("t", value_deserializer=fetched, group_idd="g")  # E: unknown option
    ShareConsumer("t", value_deserializer=fetched)  # E: group_id is required
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
        # async deserializers: their awaited result type
        "tuple[int, str]",
        "dict[str, float]",
        "str",  # one sync, one async
        "dict[str, float]",
        "tuple[int, str]",
        "list[str]",
        "dict[str, float]",
        "tuple[int, str]",
        "dict[str, float]",
    ], done.stdout + done.stderr
    # The async overloads still check the other options: exactly the two marked lines fail.
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    marked = [
        number for number, line in enumerate(CLIENT_CODE.splitlines(), start=1) if "# E:" in line
    ]
    assert sorted({int(line.split(":")[1]) for line in errors}) == marked, done.stdout
