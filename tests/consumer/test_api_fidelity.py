"""One unit per timeout argument and one return type per method family (issue 20).

Every timeout argument of the native API is ``timeout``, in seconds; a ``*_ms`` argument of a
public method is allowed only with a reason (``getmany(timeout_ms=...)``: aiokafka's name).
The list in ``docs/api.md`` ("Timeout arguments") must name each of them.
"""

from __future__ import annotations

import inspect
import re
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import aiokafkawire
import aiokafkawire.admin
import aiokafkawire.consumer
import aiokafkawire.consumer.share
import aiokafkawire.producer
from aiokafkawire import errors
from aiokafkawire.consumer import Consumer
from aiokafkawire.consumer.share import ShareConsumer
from aiokafkawire.testing.mock_cluster import MockCluster

API_PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
MODULES = (
    aiokafkawire,
    aiokafkawire.producer,
    aiokafkawire.consumer,
    aiokafkawire.consumer.share,
    aiokafkawire.admin,
)

# "Class.method(argument)": why this millisecond (or otherwise named) argument may stay.
ALLOWED_MS = {
    "Consumer.getmany(timeout_ms)": "aiokafka's name and unit, the one exception",
    "ShareConsumer.getmany(timeout_ms)": "the same family as Consumer.getmany",
    "Consumer.wait_for_assignment(timeout_ms)": "deprecated (one release), warns",
    "Consumer.wait_for_assignment(legacy_timeout_ms)": "deprecated positional ms, warns",
    "ShareConsumer.close(timeout_ms)": "deprecated (one release), warns",
    "ShareConsumer.close(legacy_timeout_ms)": "deprecated positional ms, warns",
    "Admin.create_topics(timeout_ms)": "the request's broker-side TimeoutMs field",
    "Admin.create_partitions(timeout_ms)": "the request's broker-side TimeoutMs field",
    "Admin.delete_topics(timeout_ms)": "the request's broker-side TimeoutMs field",
    "Admin.delete_records(timeout_ms)": "the request's broker-side TimeoutMs field",
    "Admin.list_transactions(min_duration_ms)": "a filter (a duration), not a wait",
    "OffsetSpec.for_timestamp(timestamp_ms)": "a point in time, not a wait",
}


def _public_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for module in MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                found[obj.__name__] = obj
    return found


def _methods(cls: type) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not callable(member):
            continue
        try:
            found[name] = inspect.signature(member)
        except (TypeError, ValueError):  # builtins (int.conjugate, ...)
            continue
    return found


def _timeout_arguments() -> dict[str, inspect.Parameter]:
    """Every timeout-like argument of a public method: ``"Class.method(argument)"``."""
    found: dict[str, inspect.Parameter] = {}
    for cls_name, cls in _public_classes().items():
        for method, sig in _methods(cls).items():
            for param in sig.parameters.values():
                if "timeout" in param.name or param.name.endswith("_ms"):
                    found[f"{cls_name}.{method}({param.name})"] = param
    return found


def test_every_timeout_argument_is_seconds_or_allowed_with_a_reason() -> None:
    arguments = _timeout_arguments()
    assert "Consumer.getmany(timeout_ms)" in arguments  # the scan sees the public clients
    wrong = []
    for key, param in arguments.items():
        if key in ALLOWED_MS:
            continue
        if param.name != "timeout" or "float" not in str(param.annotation):
            wrong.append(f"{key}: {param.annotation}")
    assert not wrong, (
        f"timeout arguments must be `timeout: float | None` in seconds: {wrong} "
        "(or add them to ALLOWED_MS with a reason and to docs/api.md)"
    )
    stale = set(ALLOWED_MS) - set(arguments)
    assert not stale, f"ALLOWED_MS names arguments that no longer exist: {stale}"


def test_the_api_page_lists_every_timeout_argument() -> None:
    page = API_PAGE.read_text()
    section = page[page.index("## Timeout arguments") :]
    section = section[: section.index("\n## ", 1)]
    missing = []
    for key in _timeout_arguments():
        method, argument = key[:-1].split("(")
        if key.endswith("(legacy_timeout_ms)"):
            continue  # positional-only: no name a caller can use
        if "timestamp_ms" in key or "min_duration_ms" in key:
            continue  # not waits
        row = next((line for line in section.splitlines() if f"`{method}`" in line), "")
        if f"`{argument}`" not in row:
            missing.append(key)
    assert not missing, f"docs/api.md 'Timeout arguments' does not list: {missing}"


async def test_wait_for_assignment_takes_seconds_and_warns_on_milliseconds(
    mock: MockCluster,
) -> None:
    async with Consumer(bootstrap_servers=mock.bootstrap_servers) as consumer:
        started = time.monotonic()
        with pytest.raises(errors.KafkaTimeoutError):
            await consumer.wait_for_assignment(timeout=0.05)
        for call in (
            lambda: consumer.wait_for_assignment(timeout_ms=50),
            lambda: consumer.wait_for_assignment(50),  # positional: milliseconds, as before
        ):
            with pytest.warns(DeprecationWarning, match=r"timeout=0\.05"):
                with pytest.raises(errors.KafkaTimeoutError):
                    await call()
        assert time.monotonic() - started < 10  # 50 was not read as seconds
        with pytest.raises(errors.KafkaValueError, match="once"):
            await consumer.wait_for_assignment(50, timeout=1)
        with pytest.raises(errors.KafkaTypeError):
            await consumer.wait_for_assignment(timeout="1")  # type: ignore[arg-type]
        with pytest.raises(errors.KafkaValueError):
            await consumer.wait_for_assignment(timeout=-1)


async def test_share_consumer_waits_in_seconds_and_keeps_the_old_alias(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    consumer = ShareConsumer("t", group_id="g")
    # The waiting logic alone: a started member that is never assigned anything.
    monkeypatch.setattr(consumer, "_require_started", lambda: None)
    with pytest.raises(errors.KafkaTimeoutError, match=r"0\.05 s"):
        await consumer.wait_for_assignment(timeout=0.05)
    with pytest.warns(DeprecationWarning, match="wait_for_assignment"):
        assert await consumer.wait_assignment(0.05) == set()


async def test_share_consumer_close_takes_seconds_and_warns_on_milliseconds() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await ShareConsumer("t", group_id="g").close(timeout=1.5)
    with pytest.warns(DeprecationWarning, match=r"timeout_ms= is deprecated.*timeout=1\.5"):
        await ShareConsumer("t", group_id="g").close(timeout_ms=1500)
    with pytest.warns(DeprecationWarning, match=r"positional.*timeout=1\.5"):
        await ShareConsumer("t", group_id="g").close(1500)
    with pytest.raises(errors.KafkaValueError, match="once"):
        await ShareConsumer("t", group_id="g").close(timeout=1, timeout_ms=1000)


def _normalized_return(sig: inspect.Signature) -> str:
    """The return annotation with the record class named generically (the families differ
    only in the record type they hand out)."""
    text = str(sig.return_annotation)
    return re.sub(r"\b(ConsumerRecord|ShareRecord)\b(\[[^\]]*\])?", "Record", text)


# Methods both consumers have whose returns differ on purpose, with the reason.
RETURNS_DIFFER = {
    "commit": "as the Java clients: Consumer.commit returns nothing (it raises); "
    "ShareConsumer.commit returns the broker's verdict per partition (acknowledgements "
    "succeed or fail one partition at a time)",
}


def test_methods_shared_by_both_consumers_return_the_same_type() -> None:
    ours = _methods(Consumer)
    share = _methods(ShareConsumer)
    shared = sorted((set(ours) & set(share)) - set(RETURNS_DIFFER))
    assert {"assignment", "subscription", "close", "wait_for_assignment"} <= set(shared)
    differ = {
        name: (_normalized_return(ours[name]), _normalized_return(share[name]))
        for name in shared
        if _normalized_return(ours[name]) != _normalized_return(share[name])
    }
    assert not differ, f"Consumer vs ShareConsumer return types differ: {differ}"


def test_share_consumer_subscription_is_a_set_as_the_consumers() -> None:
    consumer = ShareConsumer("b", "a", group_id="g")
    assert consumer.subscription() == {"a", "b"}
    assert isinstance(consumer.subscription(), set)
    assert Consumer("b", "a").subscription() == {"a", "b"}
