"""The consumer's own options: checked once, kept in one dataclass, turned into the configs of
the fetcher and the group membership."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire.client_config import (
    CommonConfig,
    check_choice,
    check_int,
    check_number,
    check_type,
    split_common_options,
    unknown_options_error,
)
from aiokafkawire.consumer.fetch import FetchConfig
from aiokafkawire.consumer.group.assignors import PartitionAssignor, create_assignor
from aiokafkawire.consumer.group.membership import GroupConfig

_RESETS = ("earliest", "latest", "none")
_ISOLATION = ("read_uncommitted", "read_committed")
Deserializer = Callable[[bytes | None], Any]


@dataclass(frozen=True)
class ConsumerOptions:
    """Every option of :class:`~aiokafkawire.consumer.Consumer`, as given (already checked)."""

    topics: tuple[str, ...]
    common: CommonConfig
    group_id: str | None
    group_instance_id: str | None
    group_protocol: str
    group_remote_assignor: str | None
    partition_assignment_strategy: Sequence[str | PartitionAssignor | type]
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    rebalance_timeout_ms: int | None
    auto_offset_reset: str
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    isolation_level: str
    fetch_min_bytes: int
    fetch_max_wait_ms: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    max_poll_records: int
    check_crcs: bool
    client_rack: str | None
    fetch_sessions: bool
    pattern_refresh_interval_ms: int
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None
    # Made once the rest is checked, group or not: a bad assignor name fails at construction.
    assignors: list[PartitionAssignor] = field(init=False, default_factory=list)

    def group_config(self) -> GroupConfig | None:
        """The group membership's config (``None`` without a ``group_id``)."""
        if self.group_id is None:
            return None
        return GroupConfig(
            group_id=self.group_id,
            group_instance_id=self.group_instance_id,
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            max_poll_interval_ms=self.max_poll_interval_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            retry_backoff_ms=self.common.retry_backoff_ms,
            retry_backoff_max_ms=self.common.retry_backoff_max_ms,
            request_timeout_ms=self.common.request_timeout_ms,
            client_rack=self.client_rack,
            assignors=self.assignors,
            group_remote_assignor=self.group_remote_assignor,
        )

    def fetch_config(self) -> FetchConfig:
        """The fetcher's config."""
        return FetchConfig(
            auto_offset_reset=self.auto_offset_reset,
            check_crcs=self.check_crcs,
            client_rack=self.client_rack or "",
            fetch_max_bytes=self.fetch_max_bytes,
            fetch_max_wait_ms=self.fetch_max_wait_ms,
            fetch_min_bytes=self.fetch_min_bytes,
            fetch_sessions=self.fetch_sessions,
            isolation_level=self.isolation_level,
            key_deserializer=self.key_deserializer,
            value_deserializer=self.value_deserializer,
            max_partition_fetch_bytes=self.max_partition_fetch_bytes,
            request_timeout_ms=self.common.request_timeout_ms,
            retry_backoff_ms=self.common.retry_backoff_ms,
            retry_backoff_max_ms=self.common.retry_backoff_max_ms,
        )


def consumer_options(
    topics: Sequence[str], named: dict[str, Any], extra: dict[str, Any]
) -> ConsumerOptions:
    """Check the consumer's options: ``named`` are its own keyword arguments, ``extra`` the
    common connection options (anything else is refused)."""
    common, rest = split_common_options(dict(extra))
    if rest:
        raise unknown_options_error("Consumer", rest, named)
    for topic in topics:
        check_type("topic", topic, str)
    options = ConsumerOptions(topics=tuple(topics), common=common, **named)
    _check_group(options)
    _check_values(options)
    options.assignors.extend(create_assignor(a) for a in options.partition_assignment_strategy)
    return options


def _check_group(o: ConsumerOptions) -> None:
    check_type("group_id", o.group_id, str, none_ok=True)
    if o.group_id is not None and not o.group_id.strip():
        # The Java client refuses it too: such a group never gets an assignment.
        raise errors.ConfigError(
            "group_id must not be empty; pass group_id=None to consume without a group"
        )
    check_type("group_instance_id", o.group_instance_id, str, none_ok=True)


def _check_values(o: ConsumerOptions) -> None:
    check_choice("auto_offset_reset", o.auto_offset_reset, _RESETS)
    check_choice("isolation_level", o.isolation_level, _ISOLATION)
    check_choice("group_protocol", o.group_protocol, ("classic", "consumer"))
    check_int("max_poll_records", o.max_poll_records, minimum=1)
    for name, value, minimum in (
        ("session_timeout_ms", o.session_timeout_ms, 1),
        ("heartbeat_interval_ms", o.heartbeat_interval_ms, 1),
        ("max_poll_interval_ms", o.max_poll_interval_ms, 1),
        ("auto_commit_interval_ms", o.auto_commit_interval_ms, 1),
        ("fetch_max_wait_ms", o.fetch_max_wait_ms, 0),
        ("pattern_refresh_interval_ms", o.pattern_refresh_interval_ms, 1),
    ):
        check_number(name, value, minimum=minimum)
    check_number("rebalance_timeout_ms", o.rebalance_timeout_ms, minimum=1, none_ok=True)
    for name, size, least in (
        ("fetch_min_bytes", o.fetch_min_bytes, 0),
        ("fetch_max_bytes", o.fetch_max_bytes, 1),
        ("max_partition_fetch_bytes", o.max_partition_fetch_bytes, 1),
    ):
        check_int(name, size, minimum=least)
    for name, flag in (
        ("enable_auto_commit", o.enable_auto_commit),
        ("check_crcs", o.check_crcs),
        ("fetch_sessions", o.fetch_sessions),
    ):
        check_type(name, flag, bool)
    for name, function in (
        ("key_deserializer", o.key_deserializer),
        ("value_deserializer", o.value_deserializer),
    ):
        if function is not None and not callable(function):
            raise errors.ConfigTypeError(
                f"{name} must be a callable taking bytes or None, got {type(function).__name__}"
            )
    if o.heartbeat_interval_ms >= o.session_timeout_ms:
        raise errors.ConfigError("heartbeat_interval_ms must be below session_timeout_ms")
