"""What every broker run as a child process shares: start/stop from sync and async code, and
stopping the children whatever happens to the test process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

from aiokafkawire.errors import KafkaTimeoutError
from aiokafkawire.testing._errors import BrokerStartError

__all__ = [
    "ChildProcessServer",
    "EndsOnExit",
    "die_with_this_process",
    "stop_until_stopped",
    "terminate",
    "time_left_to_start",
]

_Server = TypeVar("_Server", bound="ChildProcessServer")


def die_with_this_process() -> list[str]:
    """A command prefix that kills the child if this process dies without stopping it.

    A test run that is killed (a timeout, Ctrl-C twice) runs no fixture teardown; Linux's
    parent-death signal, set by util-linux ``setpriv``, then stops the child too.  The signal is
    tied to the thread that starts the child, so it is only used from the main thread (the
    fixtures'); ``start_async`` starts from a worker thread that may end before the child should.
    """
    if threading.current_thread() is not threading.main_thread():
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def stop_until_stopped(process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """SIGSTOP ``process`` and return once the kernel reports it stopped (every thread).

    ``kill()`` only queues the signal: each thread of the child stops when it next gets the
    CPU, so on a loaded machine a JVM's network and request threads can still read a request
    and answer it after ``kill()`` returned.  The parent's ``waitpid(WUNTRACED)`` reports the
    stop once the last thread has stopped (it reaps nothing: ``Popen`` still sees the child).
    Raises :class:`BrokerStartError` if the child exits, ``KafkaTimeoutError`` past ``timeout``.
    """
    process.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        try:
            pid, status = os.waitpid(process.pid, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:  # reaped elsewhere: it has exited
            raise BrokerStartError(f"process {process.pid} exited before it stopped") from None
        if pid == process.pid:
            if os.WIFSTOPPED(status):
                return
            process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: tell Popen
            raise BrokerStartError(f"process {process.pid} exited ({process.returncode})")
        if time.monotonic() > deadline:
            raise KafkaTimeoutError(f"process {process.pid} did not stop within {timeout:.0f}s")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def terminate(process: subprocess.Popen[bytes], grace: float) -> None:
    """Stop ``process`` (SIGTERM, bounded wait, then SIGKILL) and reap it."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGCONT)  # a paused (SIGSTOP) child cannot act on SIGTERM
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


def time_left_to_start(
    process: subprocess.Popen[bytes],
    deadline: float,
    exited: Callable[[int], str],
    timed_out: Callable[[], str],
) -> float:
    """Seconds left before ``deadline`` (``time.monotonic()``) for a starting ``process``.

    Raises :class:`BrokerStartError` with ``exited(status)`` when the process has exited, and
    ``KafkaTimeoutError`` with ``timed_out()`` once the deadline has passed.
    """
    code = process.poll()
    if code is not None:
        raise BrokerStartError(exited(code))
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise KafkaTimeoutError(timed_out())
    return remaining


class EndsOnExit:
    """Context manager exits (``with`` and ``async with``) that end the object: a subclass
    defines :meth:`_end` and :meth:`_end_async` (stop or close; idempotent)."""

    def _end(self) -> None:
        raise NotImplementedError

    async def _end_async(self) -> None:
        raise NotImplementedError

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._end_async()


class ChildProcessServer(EndsOnExit):
    """Base of the brokers run as child processes: subclasses define ``start`` (returning
    ``self``) and ``stop`` (idempotent); this adds the async variants and context managers."""

    def start(self: _Server) -> _Server:
        """Start the server and block until it serves clients."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the server; idempotent."""
        raise NotImplementedError

    async def start_async(self: _Server) -> _Server:
        """:meth:`start` without blocking the running event loop.

        If the caller is cancelled meanwhile, the start (bounded by its own timeout) is allowed to
        finish and the server is stopped before the cancellation propagates, so no process
        outlives a cancelled ``async with``.
        """
        starting = asyncio.ensure_future(asyncio.to_thread(self.start))
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await starting
            await asyncio.to_thread(self.stop)
            raise

    async def stop_async(self) -> None:
        """:meth:`stop` without blocking the running event loop."""
        await asyncio.to_thread(self.stop)

    def __enter__(self: _Server) -> _Server:
        return self.start()

    async def __aenter__(self: _Server) -> _Server:
        return await self.start_async()

    def _end(self) -> None:
        self.stop()

    async def _end_async(self) -> None:
        await self.stop_async()
