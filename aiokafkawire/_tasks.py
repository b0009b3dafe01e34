"""Supervised background tasks: every loop has an owner that starts, watches and stops it.

A :class:`TaskSupervisor` keeps strong references to its tasks (so none is garbage collected
mid-flight), reports a task that dies with an exception to its owner instead of letting it vanish,
and cancels and awaits all of them on :meth:`TaskSupervisor.stop`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger("aiokafkawire")

ErrorHandler = Callable[[str, BaseException], None]


class TaskSupervisor:
    """Owns a set of named background tasks.

    ``on_error(name, exc)`` is called (from the event loop) when a task ends with an exception other
    than cancellation; the owner decides whether that is fatal or the loop should be restarted.
    """

    def __init__(self, owner: str, on_error: ErrorHandler | None = None) -> None:
        self._owner = owner
        self._on_error = on_error
        self._tasks: dict[asyncio.Task[Any], str] = {}
        self._stopping = False

    def start(self, name: str, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Start ``coro`` as a supervised task called ``name``."""
        if self._stopping:
            coro.close()
            raise RuntimeError(f"{self._owner}: cannot start {name!r} while stopping")
        task = asyncio.get_running_loop().create_task(coro, name=f"{self._owner}:{name}")
        self._tasks[task] = name
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        name = self._tasks.pop(task, "?")
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        if self._on_error is not None:
            self._on_error(name, exc)
        else:
            log.error("%s: background task %s failed", self._owner, name, exc_info=exc)

    def running(self, name: str) -> bool:
        """Whether a task called ``name`` is alive."""
        return any(n == name and not t.done() for t, n in self._tasks.items())

    def __len__(self) -> int:
        return len(self._tasks)

    async def stop(self, timeout: float = 5.0) -> None:
        """Cancel every task and wait (bounded) until all have ended."""
        self._stopping = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            for task in pending:
                log.warning(
                    "%s: task %s did not stop within %.1fs", self._owner, task.get_name(), timeout
                )
        self._stopping = False
