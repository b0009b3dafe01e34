"""``stop_until_stopped`` (behind ``KafkaCluster.pause_broker``) returns only once every thread of
the child has stopped: a paused broker must not answer a request sent right after the pause."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiokafkawire.testing._errors import BrokerStartError
from aiokafkawire.testing._process import stop_until_stopped

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")

# Busy threads outnumber the cores: most wait for a CPU when the signal comes, and each stops
# only once it runs again, so right after kill() some are still runnable.
SPINNERS = 8
CHILD = f"""
import sys, threading
def spin():
    while True:
        pass
for _ in range({SPINNERS}):
    threading.Thread(target=spin, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""


def thread_states(pid: int) -> list[str]:
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        states.append(stat[stat.rindex(")") + 2])  # the field after "(comm)"
    return states


def test_every_thread_is_stopped_when_it_returns() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        for _ in range(10):
            stop_until_stopped(child, timeout=10)
            states = thread_states(child.pid)
            assert len(states) == SPINNERS + 1
            assert set(states) == {"T"}, states
            child.send_signal(signal.SIGCONT)
            time.sleep(0.02)
        assert child.poll() is None  # stopped and continued, never reaped
    finally:
        child.send_signal(signal.SIGCONT)
        child.kill()
        child.wait(timeout=10)


def test_a_child_that_exited_is_an_error() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    time.sleep(0.2)  # exited, not yet reaped
    try:
        with pytest.raises(BrokerStartError, match="exited"):
            stop_until_stopped(child, timeout=10)
        assert child.poll() == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
