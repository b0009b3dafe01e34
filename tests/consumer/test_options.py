"""The consumer's keyword options reach its options object one by one (an explicit mapping,
issue 24: a parameter added to the signature but not passed on fails here)."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from aiokafkawire.consumer import Consumer
from aiokafkawire.consumer._options import ConsumerOptions


def _key(raw: bytes | None) -> Any:
    return raw


def _value(raw: bytes | None) -> Any:
    return raw


GIVEN: dict[str, Any] = {
    "group_id": "g",
    "group_instance_id": "instance",
    "group_protocol": "consumer",
    "group_remote_assignor": "uniform",
    "partition_assignment_strategy": ("roundrobin",),
    "session_timeout_ms": 10_000,
    "heartbeat_interval_ms": 1_000,
    "max_poll_interval_ms": 1_500,
    "rebalance_timeout_ms": 2_500,
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    "auto_commit_interval_ms": 123,
    "isolation_level": "read_committed",
    "fetch_min_bytes": 2,
    "fetch_max_wait_ms": 11,
    "fetch_max_bytes": 1_000,
    "max_partition_fetch_bytes": 100,
    "max_poll_records": 7,
    "check_crcs": False,
    "client_rack": "rack-1",
    "fetch_sessions": False,
    "pattern_refresh_interval_ms": 9,
    "key_deserializer": _key,
    "value_deserializer": _value,
}


def test_every_keyword_option_reaches_the_options_as_given() -> None:
    parameters = inspect.signature(Consumer.__init__).parameters.values()
    keywords = {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    fields = {f.name for f in dataclasses.fields(ConsumerOptions)}
    assert keywords == fields - {"topics", "common", "assignors"} == set(GIVEN)
    consumer = Consumer("t", bootstrap_servers="localhost:1", **GIVEN)
    options = consumer._options
    for name, value in GIVEN.items():
        assert getattr(options, name) == value, name
    assert options.topics == ("t",)
    assert [a.name for a in options.assignors] == ["roundrobin"]
