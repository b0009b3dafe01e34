"""Per-item results: how every admin call turns an answer's error codes into its results."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from aiokafkawire import errors

K = TypeVar("K")
R = TypeVar("R")
V = TypeVar("V")


def item_results(
    operation: str,
    results: dict[K, R],
    raise_on_error: bool,
    error_of: Callable[[Any], errors.KafkaError | None] = lambda result: result.error,
) -> dict[K, R]:
    """``results``, unless some item failed and the caller wants an exception for that."""
    if raise_on_error:
        failures = {item: error for item, r in results.items() if (error := error_of(r))}
        if failures:
            raise errors.AdminOperationError(operation, results, failures)
    return results


def itself(error: errors.KafkaError | None) -> errors.KafkaError | None:
    """For results that are the item's error (or None) themselves."""
    return error


def error_or_none(code: int, message: str | None = None) -> errors.BrokerResponseError | None:
    """The exception instance for an item's error code, or None for success."""
    if not code:
        return None
    return errors.error_for_code(code)(message or "")


def unless_negative(value: int) -> int | None:
    """None for the protocol's "not known" values (-1), else the value."""
    return None if value < 0 else value


def by_topic(pairs: Iterable[tuple[str, V]]) -> dict[str, list[V]]:
    """``(topic, value)`` pairs grouped per topic, in first-seen order (requests nest that way)."""
    grouped: dict[str, list[V]] = {}
    for topic, value in pairs:
        grouped.setdefault(topic, []).append(value)
    return grouped
