"""Timeout arguments of the consumers' public methods: seconds, one name (``timeout``).

:class:`CloseBudget` is the one way a consumer's ``close(timeout=...)`` bounds its steps.

Every timeout argument of the native API is a ``float`` number of seconds named ``timeout``
(``getmany(timeout_ms=...)`` is the one exception, kept under aiokafka's name).  Two methods
took milliseconds before (``Consumer.wait_for_assignment(timeout_ms)``,
``ShareConsumer.close(timeout_ms)``); for one release they still accept the old keyword, and a
positional number keeps its old meaning (milliseconds), each with a ``DeprecationWarning``.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Awaitable

from aiokafkawire import errors
from aiokafkawire._waits import timeout_after

log = logging.getLogger("aiokafkawire.consumer")


def timeout_seconds(
    method: str,
    timeout: float | None,
    timeout_ms: float | None,
    positional_ms: float | None,
    *,
    stacklevel: int = 3,
) -> float | None:
    """The timeout in seconds from the new ``timeout`` or a deprecated millisecond form.

    ``positional_ms`` is a number passed positionally (milliseconds, as before); giving more
    than one form raises :class:`~aiokafkawire.errors.KafkaValueError`.
    """
    given = [v is not None for v in (timeout, timeout_ms, positional_ms)]
    if sum(given) > 1:
        raise errors.KafkaValueError(
            f"{method}(): give the timeout once, as timeout= (seconds); "
            "timeout_ms= and a positional number (milliseconds) are deprecated"
        )
    if timeout is not None:
        _check_number(method, "timeout", timeout)
        return float(timeout)
    legacy = timeout_ms if timeout_ms is not None else positional_ms
    if legacy is None:
        return None
    form = "timeout_ms=" if timeout_ms is not None else "a positional timeout (milliseconds)"
    warnings.warn(
        f"{method}(): {form} is deprecated and will be removed in the next release; "
        f"pass timeout= in seconds (timeout={legacy / 1000:g})",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    _check_number(method, "timeout_ms", legacy)
    return legacy / 1000


def _check_number(method: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise errors.KafkaTypeError(
            f"{method}(): {name} must be a number, got {type(value).__name__}"
        )
    if value < 0:
        raise errors.KafkaValueError(f"{method}(): {name} must be >= 0, got {value!r}")


class CloseBudget:
    """The seconds a consumer's ``close(timeout=...)`` may take, shared by its steps.

    Each :meth:`step` runs within what is left of the budget (``None``: unbounded); a step cut
    short is cancelled and logged (a warning naming it), and the close goes on with the next
    one, so the client still ends closed with every task stopped.  An error of the step's own
    (including a :class:`~aiokafkawire.errors.KafkaTimeoutError` raised before the budget ran
    out) propagates as it is.
    """

    def __init__(self, client: str, seconds: float | None) -> None:
        self._client = client
        self._seconds = seconds
        self._end = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None when the close is unbounded."""
        if self._end is None:
            return None
        return max(0.0, self._end - time.monotonic())

    async def step(self, what: str, step: Awaitable[object]) -> bool:
        """Await ``step`` within the remaining budget; False when it was cut short."""
        try:
            async with timeout_after(self.remaining()):
                await step
        except TimeoutError:
            if self._end is None or time.monotonic() < self._end:
                raise  # the step's own timeout, not the close budget's
            log.warning(
                "%s close: %s did not finish within the close timeout (%g s); cut short",
                self._client,
                what,
                self._seconds,
            )
            return False
        return True
