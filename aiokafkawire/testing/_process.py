"""What every broker run as a child process shares: start/stop from sync and async code, and
stopping the children whatever happens to the test process.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import subprocess
import threading
from types import TracebackType
from typing import TypeVar

__all__ = ["ChildProcessServer", "die_with_this_process", "terminate"]

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


class ChildProcessServer:
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

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self: _Server) -> _Server:
        return await self.start_async()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop_async()
