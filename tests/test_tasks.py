"""TaskSupervisor: a background task never vanishes; restarts back off; stop() ends everything."""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor


class Reports:
    """An owner's error handler that records what it is told."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, BaseException]] = []
        self.event = asyncio.Event()

    def __call__(self, name: str, exc: BaseException) -> None:
        self.seen.append((name, exc))
        self.event.set()


async def test_a_task_cancelled_by_something_else_than_its_owner_is_reported() -> None:
    # E.g. a future shared with another caller, cancelled on that caller's behalf: the task
    # ends "cancelled" although nobody meant to stop it.
    reports = Reports()
    supervisor = TaskSupervisor("owner", reports)
    shared: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def waits_on_shared() -> None:
        await shared

    supervisor.start("writer", waits_on_shared())
    await asyncio.sleep(0)
    shared.cancel()
    await asyncio.wait_for(reports.event.wait(), 2)
    [(name, exc)] = reports.seen
    assert name == "writer"
    assert isinstance(exc, errors.BackgroundTaskError)
    assert "writer" in str(exc) and "cancelled" in str(exc)
    await supervisor.stop()


async def test_tasks_cancelled_by_stop_are_not_reported() -> None:
    reports = Reports()
    supervisor = TaskSupervisor("owner", reports)
    supervisor.start("loop", asyncio.sleep(3600))
    supervisor.start("other", asyncio.sleep(3600))
    await asyncio.sleep(0)
    await supervisor.stop()
    await asyncio.sleep(0)
    assert reports.seen == []
    assert len(supervisor) == 0


async def test_a_failing_task_is_restarted_with_growing_delays() -> None:
    starts: list[float] = []
    six_starts = asyncio.Event()
    loop = asyncio.get_running_loop()
    supervisor: TaskSupervisor

    async def always_fails() -> None:
        starts.append(loop.time())
        if len(starts) >= 6:
            six_starts.set()
        raise RuntimeError("boom")

    def restart(name: str, exc: BaseException) -> None:
        supervisor.restart(name, always_fails)

    supervisor = TaskSupervisor("owner", restart, restart_backoff=(0.02, 0.2))
    supervisor.start("loop", always_fails())
    await asyncio.wait_for(six_starts.wait(), 5)
    await supervisor.stop()
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps[0] >= 0.015  # never an immediate busy loop
    assert gaps[3] > gaps[0]  # backs off
    assert max(gaps) < 0.2 * 1.25 + 0.1  # capped (jitter and scheduling allowed for)


async def test_stop_cancels_a_restart_waiting_for_its_backoff() -> None:
    runs: list[int] = []

    async def body() -> None:
        runs.append(1)

    supervisor = TaskSupervisor("owner", restart_backoff=(10.0, 10.0))
    supervisor.restart("loop", body)
    assert supervisor.running("loop")  # waiting out its backoff counts as running
    await asyncio.wait_for(supervisor.stop(), 2)
    assert runs == []
    assert not supervisor.running("loop")


async def test_a_restarted_task_that_ran_long_enough_starts_again_from_the_base_delay() -> None:
    loop = asyncio.get_running_loop()
    supervisor = TaskSupervisor("owner", restart_backoff=(0.05, 5.0), healthy_after=0.2)
    began: list[float] = []

    async def body() -> None:
        began.append(loop.time())

    async def restart_and_measure() -> float:
        asked = loop.time()
        task = supervisor.restart("loop", body)
        assert task is not None
        await task
        return began[-1] - asked

    # Five failures in a row (each right after the previous start): the delay grows.
    delays = [await restart_and_measure() for _ in range(5)]
    assert delays[-1] > 4 * delays[0]
    await asyncio.sleep(0.3)  # the last start is now longer ago than healthy_after
    assert await restart_and_measure() < delays[-1] / 2
    await supervisor.stop()


@pytest.mark.parametrize("bad", [(0.0, 1.0), (1.0, 0.5)])
def test_restart_backoff_must_be_positive_and_ordered(bad: tuple[float, float]) -> None:
    with pytest.raises(ValueError):
        TaskSupervisor("owner", restart_backoff=bad)


async def test_a_task_keyed_by_what_it_serves_reports_that_key() -> None:
    failures: list[tuple[object, BaseException]] = []
    supervisor = TaskSupervisor("owner", lambda key, exc: failures.append((key, exc)))

    async def boom() -> None:
        raise errors.KafkaConnectionError("gone")

    task = supervisor.start(("writer", 3), boom())
    await asyncio.gather(task, return_exceptions=True)
    await asyncio.sleep(0)
    assert task.get_name() == "owner:writer-3"
    assert [key for key, _ in failures] == [("writer", 3)]
    assert isinstance(failures[0][1], errors.KafkaConnectionError)
    assert not supervisor.running(("writer", 3))
    await supervisor.stop()


async def test_a_task_cancelled_by_a_program_that_goes_on_is_reported() -> None:
    # A program cancelling all other tasks and going on (to stop its clients, say) needs them
    # restarted: that is not the loop's last pass.
    reports = Reports()
    supervisor = TaskSupervisor("owner", reports)
    task = supervisor.start("loop", asyncio.sleep(3600))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.wait_for(reports.event.wait(), 2)
    [(name, exc)] = reports.seen
    assert name == "loop" and isinstance(exc, errors.BackgroundTaskError)
    assert supervisor.restart("loop", lambda: asyncio.sleep(0)) is not None
    await supervisor.stop()


def test_tasks_cancelled_in_the_last_pass_of_asyncio_run_are_neither_reported_nor_restarted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reports: list[object] = []
    last_pass: list[object] = []
    refused: list[object] = []
    supervisor: TaskSupervisor

    def on_error(key: object, exc: BaseException) -> None:
        reports.append(key)
        supervisor.restart(key, lambda: asyncio.sleep(3600))

    def on_last_pass(key: object) -> None:
        last_pass.append(key)
        refused.append(supervisor.restart(key, lambda: asyncio.sleep(3600)))

    async def main() -> None:
        nonlocal supervisor
        supervisor = TaskSupervisor("owner", on_error, on_last_pass=on_last_pass)
        supervisor.start("a", asyncio.sleep(3600))
        supervisor.start("b", asyncio.sleep(3600))
        await asyncio.sleep(0)
        # main() ends with the tasks running: asyncio.run cancels them, then closes the loop

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())
        gc.collect()
    assert reports == []
    assert sorted(last_pass) == ["a", "b"]  # type: ignore[type-var]
    assert refused == [None, None]
    assert "Task was destroyed" not in caplog.text


def test_a_task_started_by_a_close_in_the_last_pass_does_not_count_as_a_program_going_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A task being cancelled with the others closes a client in its ``finally``, which starts a
    # task again (a producer's flush needs its sender): the others' cancellations are still the
    # loop's last pass.
    reports: list[object] = []
    last_pass: list[object] = []

    async def main() -> None:
        supervisor = TaskSupervisor(
            "owner", lambda key, exc: reports.append(key), on_last_pass=last_pass.append
        )

        async def closes_in_finally() -> None:
            try:
                await asyncio.sleep(3600)
            finally:
                supervisor.start("for-the-close", asyncio.sleep(0.01))
                await asyncio.sleep(0.05)
                await supervisor.stop()

        supervisor.start("a", asyncio.sleep(3600))
        asyncio.get_running_loop().create_task(closes_in_finally())
        await asyncio.sleep(0)

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())
        gc.collect()
    assert reports == []
    assert last_pass == ["a"]
    assert "Task was destroyed" not in caplog.text


async def test_cancel_all_cancels_without_waiting_and_reports_nothing() -> None:
    reports = Reports()
    supervisor = TaskSupervisor("owner", reports)
    tasks = [supervisor.start(name, asyncio.sleep(3600)) for name in ("a", "b")]
    await asyncio.sleep(0)
    assert supervisor.cancel_all() == 2
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(0)
    assert all(task.cancelled() for task in tasks)
    assert reports.seen == []
    assert len(supervisor) == 0


RESTARTING_OWNER = """
import asyncio
from aiokafkawire._tasks import TaskSupervisor

async def forever():
    await asyncio.sleep(3600)

async def main():
    supervisor = TaskSupervisor("owner", lambda key, exc: supervisor.restart(key, forever))
    supervisor.start("loop", forever())
    await asyncio.sleep(0.05)
    raise RuntimeError("the program ends without stopping its client")

try:
    asyncio.run(main())
except RuntimeError:
    print("ended")
"""


def test_asyncio_run_ending_with_running_tasks_leaves_none_pending() -> None:
    # asyncio.run cancels the remaining tasks and then closes the loop: an owner that restarts
    # its task on that cancellation used to leave the restart pending ("Task was destroyed").
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", RESTARTING_OWNER],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ended"
    assert "Task was destroyed" not in result.stderr, result.stderr
    assert result.stderr == "", result.stderr
