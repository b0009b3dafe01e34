"""Timeout arguments of the consumers' public methods: seconds, one name (``timeout``).

Every timeout argument of the native API is a ``float`` number of seconds named ``timeout``
(``getmany(timeout_ms=...)`` is the one exception, kept under aiokafka's name).  Two methods
took milliseconds before (``Consumer.wait_for_assignment(timeout_ms)``,
``ShareConsumer.close(timeout_ms)``); for one release they still accept the old keyword, and a
positional number keeps its old meaning (milliseconds), each with a ``DeprecationWarning``.
"""

from __future__ import annotations

import warnings

from aiokafkawire import errors


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
