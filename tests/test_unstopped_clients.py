"""A program that never stops a started client ends without asyncio's "Task was destroyed".

Each case runs a script as a subprocess against the session's Tansu broker: it starts a client
and lets an exception end ``asyncio.run(main())`` without stopping it (or drops it while the
loop runs).  ``asyncio.run`` cancels the client's tasks at exit; they must end there, not be
restarted by their supervisor after that pass and left pending when the loop closes.  What the
program is told instead is a ResourceWarning (as aiokafka's "Unclosed AIOKafkaProducer") naming
the client and how to stop it, and, for a producer, the records it never delivered.  The share
consumer's case is in ``tests/consumer/test_share_kafka.py`` (share groups need Apache Kafka).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from aiokafkawire.testing import TansuBroker

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import asyncio, gc, logging, sys, uuid

logging.basicConfig(level=logging.WARNING)  # a "restarting task" at exit would show
bootstrap, kind, mode, topic = sys.argv[1:5]


def make():
    if kind == "Producer":
        from aiokafkawire import Producer
        return Producer(bootstrap_servers=bootstrap, linger_ms=60_000)
    if kind == "AIOKafkaProducer":
        from aiokafkawire.compat.aiokafka import AIOKafkaProducer
        return AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=60_000)
    if kind == "Consumer":
        from aiokafkawire import Consumer
        return Consumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{uuid.uuid4().hex}")
    if kind == "AIOKafkaConsumer":
        from aiokafkawire.compat.aiokafka import AIOKafkaConsumer
        return AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=f"g-{uuid.uuid4().hex}"
        )
    if kind == "Admin":
        from aiokafkawire import Admin
        return Admin(bootstrap_servers=bootstrap)
    raise SystemExit(f"unknown kind {kind}")


async def main():
    client = make()
    if mode == "async-with":
        async with client:
            await asyncio.sleep(0.3)
            raise RuntimeError("boom")
    await client.start()
    await asyncio.sleep(0.3)  # the background tasks are under way
    if mode == "pending":
        for _ in range(3):
            await client.send(topic, b"never delivered")  # lingers: not sent before the end
    if mode == "dropped":
        del client
        gc.collect()
        await asyncio.sleep(0.2)
        names = sorted(t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task())
        print(f"tasks after the drop: {names}")
        return
    raise RuntimeError("boom")


async def closed_in_the_last_pass():
    # A worker closes its producer in a finally; main() returns without waiting for it, so the
    # close runs in asyncio.run's last pass, while the producer's own tasks are cancelled too.
    async def worker(ready):
        producer = make()
        await producer.start()
        try:
            handles.extend([await producer.send(topic, b"delivered") for _ in range(3)])
            ready.set()
            await asyncio.sleep(3600)
        finally:
            await producer.stop()

    ready = asyncio.Event()
    asyncio.get_running_loop().create_task(worker(ready))
    await ready.wait()


async def stopped_after_cancelling_the_others():
    # A program cancels every other task, then stops its producer: that needs the sender.
    producer = make()
    await producer.start()
    handles.extend([await producer.send(topic, b"delivered") for _ in range(3)])
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            task.cancel()
    await asyncio.sleep(0.1)
    await producer.stop()


handles = []
if mode in ("last-pass", "cancel-others"):
    body = closed_in_the_last_pass if mode == "last-pass" else stopped_after_cancelling_the_others
    asyncio.run(body())
    print("offsets", [handle.result()[2] for handle in handles])  # raises if one was not sent
    raise SystemExit(0)
if mode == "uncaught":
    asyncio.run(main())
try:
    asyncio.run(main())
except RuntimeError as exc:
    print(f"ended by {exc}")
"""


@pytest.fixture(scope="module")
def topic(tansu_broker: TansuBroker) -> str:
    """A topic of one partition (a producer's send needs it to exist)."""
    import asyncio

    from aiokafkawire import Admin, NewTopic

    name = f"unstopped-{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        async with Admin(bootstrap_servers=tansu_broker.bootstrap_servers) as admin:
            created = await admin.create_topics([NewTopic(name, 1, 1)])
            assert all(r.error is None for r in created.values()), created

    asyncio.run(create())
    return name


def _run(
    tmp_path: Path, broker: TansuBroker, topic: str, kind: str, mode: str
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "unstopped.py"
    script.write_text(SCRIPT)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-W", "always", str(script), broker.bootstrap_servers, kind, mode, topic],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _assert_no_task_destroyed(result: subprocess.CompletedProcess[str]) -> None:
    err = result.stderr
    assert "Task was destroyed but it is pending" not in err, err
    assert "Exception ignored" not in err, err  # e.g. a __del__ or a done-callback raising
    assert "restarting" not in err, err  # the loop's cancellation is no failure to recover from


CLIENTS = ["Producer", "AIOKafkaProducer", "Consumer", "AIOKafkaConsumer", "Admin"]


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_client_never_stopped_ends_with_the_loop_and_a_resource_warning(
    tmp_path: Path, tansu_broker: TansuBroker, topic: str, kind: str
) -> None:
    result = _run(tmp_path, tansu_broker, topic, kind, "raise")
    assert result.returncode == 0, result.stderr
    assert "ended by boom" in result.stdout
    _assert_no_task_destroyed(result)
    assert f"ResourceWarning: unclosed {kind} " in result.stderr, result.stderr
    stop = "close" if kind == "Admin" else "stop"
    assert f".{stop}()` before dropping it, or use `async with {kind}(...)`" in result.stderr


def test_an_exception_that_ends_the_program_leaves_no_pending_task(
    tmp_path: Path, tansu_broker: TansuBroker, topic: str
) -> None:
    result = _run(tmp_path, tansu_broker, topic, "AIOKafkaProducer", "uncaught")
    assert result.returncode == 1
    assert "RuntimeError: boom" in result.stderr
    _assert_no_task_destroyed(result)
    assert "ResourceWarning: unclosed AIOKafkaProducer " in result.stderr, result.stderr


@pytest.mark.parametrize("kind", ["Producer", "AIOKafkaProducer"])
def test_a_dropped_producer_says_how_many_records_it_never_delivered(
    tmp_path: Path, tansu_broker: TansuBroker, topic: str, kind: str
) -> None:
    result = _run(tmp_path, tansu_broker, topic, kind, "pending")
    assert result.returncode == 0, result.stderr
    _assert_no_task_destroyed(result)
    lost = "3 record(s) were still pending delivery and were never sent"
    assert f"ResourceWarning: unclosed {kind} " in result.stderr, result.stderr
    assert lost in result.stderr
    # Logged too (a ResourceWarning is hidden by default; a loss must not be).
    assert any(
        line.startswith("ERROR:aiokafkawire:") and lost in line
        for line in result.stderr.splitlines()
    ), result.stderr


@pytest.mark.parametrize("kind", CLIENTS)
def test_async_with_ended_by_an_exception_is_clean(
    tmp_path: Path, tansu_broker: TansuBroker, topic: str, kind: str
) -> None:
    result = _run(tmp_path, tansu_broker, topic, kind, "async-with")
    assert result.returncode == 0, result.stderr
    assert "ended by boom" in result.stdout
    _assert_no_task_destroyed(result)
    assert "unclosed" not in result.stderr, result.stderr


@pytest.mark.parametrize("mode", ["last-pass", "cancel-others"])
def test_a_producer_closed_as_its_tasks_are_cancelled_still_delivers(
    tmp_path: Path, tansu_broker: TansuBroker, topic: str, mode: str
) -> None:
    # Its close needs the sender loop: not restarting tasks cancelled in the loop's last pass
    # must not leave a close in that pass (or after a program cancelled all others) waiting.
    result = _run(tmp_path, tansu_broker, topic, "Producer", mode)
    assert result.returncode == 0, result.stderr
    assert "offsets [" in result.stdout, result.stdout
    assert "Task was destroyed but it is pending" not in result.stderr, result.stderr
    assert "unclosed" not in result.stderr, result.stderr


def test_an_admin_collected_while_the_loop_runs_stops_its_tasks(
    tmp_path: Path, tansu_broker: TansuBroker, topic: str
) -> None:
    # Nothing of its cluster refers back to an Admin: it is collected while the loop runs, and
    # its metadata refresh and connections must not outlive it.
    result = _run(tmp_path, tansu_broker, topic, "Admin", "dropped")
    assert result.returncode == 0, result.stderr
    assert "tasks after the drop: []" in result.stdout, result.stdout
    _assert_no_task_destroyed(result)
    assert "ResourceWarning: unclosed Admin " in result.stderr, result.stderr
    assert "unclosed <socket" not in result.stderr, result.stderr  # its connections were closed
