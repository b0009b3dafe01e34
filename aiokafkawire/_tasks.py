"""Supervised background tasks: every loop has an owner that starts, watches and stops it.

A :class:`TaskSupervisor` keeps strong references to its tasks (so none is garbage collected
mid-flight), reports a task that ends unexpectedly to its owner instead of letting it vanish, and
cancels and awaits all of them on :meth:`TaskSupervisor.stop`.

"Unexpectedly" covers two endings: an exception, and a cancellation that did not come from the
supervisor.  The second happens when a task awaits a future shared with someone else and that
future is cancelled on the other's behalf: the task ends "cancelled" although nobody meant to
stop it, and without this check it would simply be gone.  The owner then decides: restart the
task (:meth:`TaskSupervisor.restart`, with exponential backoff so a task that fails at once does
not spin), or keep the error and raise it from the next user call.

One cancellation from outside is no failure: the loop's last pass.  When ``main()`` ends,
``asyncio.run`` (as a test harness closing its loop) cancels every task left, e.g. those of a
client nobody stopped, waits for them, and closes the loop.  A restart then would be a new task
after that pass, left pending at the close ("Task was destroyed but it is pending!").  So a task
cancelled itself (``task.cancel()``, not a future it awaited) while every task of the loop is
done or being cancelled too is not reported, and the supervisor restarts nothing until its
:meth:`TaskSupervisor.stop`.  A program that cancels all *other* tasks and goes on (to stop its
clients, say) still has its own task running: that is reported, and restarted, as before.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
import weakref
from collections.abc import Callable, Coroutine, Hashable
from typing import Any

from aiokafkawire import errors

log = logging.getLogger("aiokafkawire")

#: What a task serves: a name, or a tuple such as ``("writer", node_id)``.  The owner gets the
#: same key back in ``on_error``, so it never parses a task's name to know what it served.
TaskKey = Hashable
ErrorHandler = Callable[[Any, BaseException], None]
LastPassHandler = Callable[[Any], None]
CoroutineFactory = Callable[[], Coroutine[Any, Any, Any]]

DEFAULT_RESTART_BACKOFF = (0.05, 5.0)  # seconds: first restart delay, cap
DEFAULT_HEALTHY_AFTER = 30.0  # seconds a restarted task must live before the delay resets


class TaskSupervisor:
    """Owns a set of background tasks, each under a key naming what it serves.

    A key is any hashable: a string, or a tuple such as ``("fetch", node_id)``.
    ``on_error(key, exc)`` is called (from the event loop) when a task ends with an exception,
    or is cancelled by anything but this supervisor (``exc`` is then a
    :class:`~aiokafkawire.errors.BackgroundTaskError`); the owner decides whether that is fatal
    or the task should be restarted.  Without ``on_error`` the failure is logged at ERROR.

    ``restart_backoff`` is ``(first, cap)`` in seconds for :meth:`restart`: the delay doubles
    with each restart of the same name, with +-25% jitter, up to ``cap``, and starts again from
    ``first`` once a restarted task began more than ``healthy_after`` seconds before it failed.

    ``on_last_pass(key)`` is called when a task was cancelled in the event loop's last pass
    (see the module's docstring): not restarted, and not an error, but an owner whose close is
    under way in a task of that pass may still need it (and :meth:`start` it again).
    """

    def __init__(
        self,
        owner: str,
        on_error: ErrorHandler | None = None,
        *,
        restart_backoff: tuple[float, float] = DEFAULT_RESTART_BACKOFF,
        healthy_after: float = DEFAULT_HEALTHY_AFTER,
        on_last_pass: LastPassHandler | None = None,
    ) -> None:
        first, cap = restart_backoff
        if not 0 < first <= cap:
            raise ValueError(f"restart_backoff must be 0 < first <= cap, not {restart_backoff}")
        self._owner = owner
        self._on_error = on_error
        self._on_last_pass = on_last_pass
        self._tasks: dict[asyncio.Task[Any], TaskKey] = {}
        self._cancelled_by_us: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self._loop_closing = False  # a task was cancelled in the loop's last pass
        self._restart_first = first
        self._restart_cap = cap
        self._healthy_after = healthy_after
        self._restarts: dict[TaskKey, int] = {}  # consecutive restarts by key
        self._began: dict[TaskKey, float] = {}  # loop time a restarted body last began, by key

    def start(self, name: TaskKey, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Start ``coro`` as a supervised task under key ``name``."""
        if self._stopping:
            coro.close()
            raise RuntimeError(f"{self._owner}: cannot start {name!r} while stopping")
        # Started by a close under way in the loop's last pass: not a program that goes on.
        in_last_pass = self._loop_closing or _started_from_the_last_pass()
        task = _create_task(coro, f"{self._owner}:{_label(name)}")
        if in_last_pass:
            _STARTED_IN_LAST_PASS.add(task)
        self._tasks[task] = name
        task.add_done_callback(self._task_done)
        return task

    def restart(self, name: TaskKey, factory: CoroutineFactory) -> asyncio.Task[Any] | None:
        """Start ``factory()`` as task ``name`` after a backoff delay; returns that task.

        Meant for ``on_error`` handlers.  The task counts as running (:meth:`running`) while it
        waits out its delay, and :meth:`stop` cancels it then like any other.  Does nothing
        (returns None) while the supervisor is stopping, or once one of its tasks was cancelled
        in the loop's last pass (see the module's docstring), until :meth:`stop`.
        """
        if self._stopping or self._loop_closing:
            return None
        now = asyncio.get_running_loop().time()
        began = self._began.get(name)
        if began is not None and now - began >= self._healthy_after:
            self._restarts[name] = 0  # it lived long enough: this failure is a new story
        count = self._restarts.get(name, 0)
        self._restarts[name] = count + 1
        delay = min(self._restart_first * 2**count, self._restart_cap)
        delay *= random.uniform(0.75, 1.25)
        log.warning("%s: restarting task %s in %.2fs", self._owner, _label(name), delay)
        return self.start(name, self._after(name, delay, factory))

    async def _after(self, name: TaskKey, delay: float, factory: CoroutineFactory) -> None:
        await asyncio.sleep(delay)
        self._began[name] = asyncio.get_running_loop().time()
        await factory()

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        name = self._tasks.pop(task, "?")
        exc: BaseException | None
        if task.cancelled():
            if task in self._cancelled_by_us:
                self._cancelled_by_us.discard(task)
                return
            if _cancel_was_requested(task) and (self._loop_closing or _every_task_is_ending()):
                # asyncio.run's last pass: not a failure, and a restart would outlive the loop.
                self._loop_closing = True
                log.debug("%s: task %s cancelled as the loop closes", self._owner, _label(name))
                if self._on_last_pass is not None:
                    self._on_last_pass(name)
                return
            exc = errors.BackgroundTaskError(
                f"{self._owner}: task {_label(name)} was cancelled by something other than its "
                "owner "
                "(a shared future cancelled on another caller's behalf?)"
            )
        else:
            exc = task.exception()
            if exc is None:
                return
        if self._on_error is not None:
            self._on_error(name, exc)
        else:
            log.error("%s: background task %s failed", self._owner, _label(name), exc_info=exc)

    def cancel(self, task: asyncio.Task[Any]) -> None:
        """Cancel one of its tasks for its owner (not reported to ``on_error``)."""
        if task in self._tasks and not task.done():
            self._cancelled_by_us.add(task)
            task.cancel()

    def running(self, name: TaskKey) -> bool:
        """Whether a task under key ``name`` is alive (or waiting to be restarted)."""
        return any(n == name and not t.done() for t, n in self._tasks.items())

    def __len__(self) -> int:
        return len(self._tasks)

    async def stop(self, timeout: float = 5.0) -> None:
        """Cancel every task and wait (bounded) until all have ended."""
        self._stopping = True
        tasks = list(self._tasks)
        for task in tasks:
            self._cancelled_by_us.add(task)
            task.cancel()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            for task in pending:
                log.warning(
                    "%s: task %s did not stop within %.1fs", self._owner, task.get_name(), timeout
                )
        # A task that ignored cancellation and ended normally is no longer ours to track.
        self._cancelled_by_us.intersection_update(self._tasks)
        self._stopping = False
        self._loop_closing = False

    def cancel_all(self) -> int:
        """Cancel every task now, without waiting for them; returns how many were cancelled.

        For an owner dropped without :meth:`stop` (its ``__del__``): the tasks end in the
        loop's next iterations instead of staying pending until the loop closes.
        """
        tasks = [task for task in self._tasks if not task.done()]
        for task in tasks:
            self._cancelled_by_us.add(task)
            task.cancel()
        return len(tasks)


if sys.version_info >= (3, 11):

    def _create_task(coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        return asyncio.get_running_loop().create_task(coro, name=name)

    def _cancel_was_requested(task: asyncio.Task[Any]) -> bool:
        """Whether ``task.cancel()`` was called (not merely a future it awaited cancelled)."""
        return task.cancelling() > 0

else:  # Python 3.10: no Task.cancelling(); a Task that notes its cancel() calls instead

    class _CancelNotingTask(asyncio.Task[Any]):
        cancel_requested = False

        def cancel(self, msg: Any = None) -> bool:
            self.cancel_requested = True
            return super().cancel(msg)

    def _create_task(coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        return _CancelNotingTask(coro, loop=asyncio.get_running_loop(), name=name)

    def _cancel_was_requested(task: asyncio.Task[Any]) -> bool:
        """Whether ``task.cancel()`` was called (not merely a future it awaited cancelled).

        A task not made here only tells until it runs again: a cancel() not yet delivered, or the
        future it waits on cancelled by it (asyncio.run's last pass has not run it yet then).
        """
        if getattr(task, "cancel_requested", False) or getattr(task, "_must_cancel", False):
            return True
        waiter = getattr(task, "_fut_waiter", None)
        return waiter is not None and waiter.cancelled()


#: Tasks a supervisor started after it saw the loop's last pass (a closing owner's), which do
#: not make the program one that goes on.
_STARTED_IN_LAST_PASS: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()


def _every_task_is_ending() -> bool:
    """Whether every task of the running loop is done or being cancelled: the last pass of
    ``asyncio.run`` (or of a harness closing its loop), not a program that goes on."""
    return all(
        task.done() or _cancel_was_requested(task) or task in _STARTED_IN_LAST_PASS
        for task in asyncio.all_tasks()
    )


def _started_from_the_last_pass() -> bool:
    """Whether the current task is being cancelled, as every other: a task of the loop's last
    pass (e.g. closing a client in a ``finally``)."""
    current = asyncio.current_task()
    return current is not None and _cancel_was_requested(current) and _every_task_is_ending()


def _label(key: TaskKey) -> str:
    """A task key as text for task names and logs: ``("writer", 3)`` -> ``writer-3``."""
    if isinstance(key, tuple):
        return "-".join(str(part) for part in key)
    return str(key)
