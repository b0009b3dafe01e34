"""No loop sleeps by hand between attempts (docs/DESIGN.md, "shared policies"): a retry waits
through the one policy of ``aiokafkawire/_retry.py`` (``retry()``, ``retry_until_stopped()``,
``Backoff``), and what is worth another try comes from the error table (``errors/actions.py``).

The scan reads every module of ``aiokafkawire/`` (ast, no import) and lists each function that
calls ``asyncio.sleep`` (or a ``sleep`` imported from asyncio) with a non-zero delay, outside
``_retry.py``.  A function on the list must be in :data:`PACING` (a sleep that keeps a
schedule or waits for a known moment, not a retry: each with its reason) or in
:data:`RETRY_SLEEPS_LEFT` (hand-written retries of other rooms not converted yet, issue 24
room 6).  A new hand-written retry sleep fails the test; so does an entry that no longer sleeps.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from aiokafkawire import errors

PACKAGE = Path(errors.__file__).resolve().parents[1]

#: Sleeps that are not a retry's pause: "module::function" -> why.
PACING: dict[str, str] = {
    "_tasks.py::TaskSupervisor._after": (
        "the supervisor's restart delay for a task that crashed (its own restart policy, "
        "not a retry of a request)"
    ),
    "cli/output.py::Reporter.waiting_if_slow.announce": "shows a spinner once a block is slow",
    "cluster/cluster.py::Cluster._run_refresh": (
        "spaces metadata requests retry_backoff_ms apart (a rate limit on refreshes, as Java's "
        "Metadata refresh backoff); the callers' retries go through retry()"
    ),
    "consumer/_commits.py::Commits.auto_commit_loop": "the auto_commit_interval_ms schedule",
    "consumer/consumer.py::Consumer.getmany": (
        "data is buffered for other (or paused) partitions only: a short pause instead of a spin"
    ),
    "consumer/consumer.py::Consumer.__anext__": "as getmany: no spin on other partitions' data",
    "consumer/group/classic.py::ClassicMembership._heartbeat_loop": (
        "the heartbeat's clock: heartbeat_interval_ms after an answer, the retry policy's "
        "Backoff after a failure (Java's Heartbeat.failHeartbeat)"
    ),
    "consumer/share/consumer.py::ShareConsumer.wait_for_assignment": (
        "polls the assignment within the caller's timeout"
    ),
    "net/core.py::ConnectionCore._wait_throttle": "the broker's throttle time (KIP-219)",
    "net/handshake.py::SaslSession._reauthenticate": (
        "polls until the requests in flight are answered, before re-authenticating (KIP-368), "
        "within request_timeout_ms"
    ),
    "net/pool.py::ConnectionPool._connect": (
        "reconnect_backoff_ms between connects to one broker (KIP-144's per-broker policy)"
    ),
}

#: Hand-written retry sleeps of other rooms, still to move onto _retry (issue 24, room 6): none
#: left (the share consumer's loops were the last); a new one fails the scan.
RETRY_SLEEPS_LEFT: dict[str, str] = {}


def _sleeps_in(source: str) -> list[tuple[int, str]]:
    """``(line, qualified function name)`` of each non-zero ``asyncio.sleep`` call."""
    found: list[tuple[int, str]] = []
    if "sleep" not in source:
        return found
    tree = ast.parse(source)
    imported_sleep = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "asyncio"
        and any(alias.name == "sleep" and alias.asname is None for alias in node.names)
        for node in tree.body
    )

    def is_sleep(call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute):
            named = func.attr == "sleep" and ast.unparse(func.value) == "asyncio"
        else:
            named = imported_sleep and isinstance(func, ast.Name) and func.id == "sleep"
        if not named:
            return False
        delay = call.args[0] if call.args else None
        return not (isinstance(delay, ast.Constant) and delay.value == 0)  # a yield: no wait

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, (*scope, child.name))
                continue
            if isinstance(child, ast.Call) and is_sleep(child):
                found.append((child.lineno, ".".join(scope) or "<module>"))
            visit(child, scope)

    visit(tree, ())
    return found


@functools.cache
def _all_sleeps() -> dict[str, list[int]]:
    sleeps: dict[str, list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == "_retry.py":
            continue
        for line, where in _sleeps_in(path.read_text(encoding="utf-8")):
            sleeps.setdefault(f"{relative}::{where}", []).append(line)
    return sleeps


def test_the_scan_finds_the_shapes_it_looks_for() -> None:
    source = """
import asyncio
from asyncio import sleep

class Loop:
    async def run(self):
        while True:
            try:
                await self.step()
            except KafkaConnectionError:
                await asyncio.sleep(backoff.next_delay())

    async def pump(self):
        await asyncio.sleep(0)

async def helper():
    async def inner():
        await sleep(0.1)
    await inner()
"""
    assert _sleeps_in(source) == [(11, "Loop.run"), (18, "helper.inner")]


def test_no_function_sleeps_by_hand_between_attempts() -> None:
    sleeps = _all_sleeps()
    unexplained = {
        f"aiokafkawire/{key} (line {lines})"
        for key, lines in sleeps.items()
        if key not in PACING and key not in RETRY_SLEEPS_LEFT
    }
    assert not unexplained, (
        "a retry waits through aiokafkawire/_retry.py (retry(), retry_until_stopped(), "
        "Backoff) and asks the error table what is retriable; a sleep that only keeps a "
        f"schedule goes into PACING with its reason: {sorted(unexplained)}"
    )


def test_every_listed_sleep_is_still_there() -> None:
    sleeps = _all_sleeps()
    stale = sorted(key for key in (*PACING, *RETRY_SLEEPS_LEFT) if key not in sleeps)
    assert not stale, f"no longer sleeps: drop them from the lists: {stale}"


def test_the_rooms_converted_keep_no_hand_written_retry_sleep() -> None:
    # Issue 24 room 6: the group loop, the producer's InitProducerId and AddPartitionsToTxn,
    # the fetcher's dispatch loop and sources, Spark's offset lookups.
    sleeps = _all_sleeps()
    converted = [
        "consumer/group/classic.py::ClassicMembership._group_loop",
        "producer/_sender.py::Sender._init_producer_id",
        "producer/_txn.py::TransactionManager.add_pending_partitions",
        "consumer/fetch/dispatch.py::Fetcher._dispatch_loop",
        "consumer/fetch/source.py::BrokerSource.run",
        "spark/_kafka_io.py::OffsetResolver._list",
        "consumer/share/fetcher.py::ShareFetcher._node_loop",
        "consumer/share/membership.py::ShareMembership._heartbeat_loop",
    ]
    assert [key for key in converted if key in sleeps] == []
