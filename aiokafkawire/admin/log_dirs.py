"""Brokers' log directories: space, and the replicas in each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore
from aiokafkawire.admin._items import error_or_none, item_results, unless_negative
from aiokafkawire.protocol.messages import DescribeLogDirsRequest
from aiokafkawire.structs import TopicPartition


@dataclass(frozen=True)
class ReplicaInfo:
    """A replica in a log directory: its size, lag, and whether it is a future (moving) replica."""

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    """One log directory of a broker, or the error describing it."""

    path: str
    replicas: Mapping[TopicPartition, ReplicaInfo] = field(default_factory=dict)
    total_bytes: int | None = None  # None: the broker does not say (before v4)
    usable_bytes: int | None = None
    error: errors.KafkaError | None = None


def _log_dir(result: Any) -> LogDirDescription:
    """A DescribeLogDirs answer's directory as a :class:`LogDirDescription`."""
    return LogDirDescription(
        result.log_dir,
        {
            TopicPartition(t.name, p.partition_index): ReplicaInfo(
                p.partition_size, p.offset_lag, p.is_future_key
            )
            for t in result.topics
            for p in t.partitions
        },
        unless_negative(result.total_bytes),
        unless_negative(result.usable_bytes),
        error_or_none(result.error_code),
    )


def _first_error(dirs: Mapping[str, LogDirDescription]) -> errors.KafkaError | None:
    """A broker's error: that of its first failed (e.g. offline) log directory."""
    return next((d.error for d in dirs.values() if d.error is not None), None)


class LogDirCalls(AdminCore):
    """Admin calls about log directories."""

    async def describe_log_dirs(
        self, brokers: Iterable[int] | None = None, *, raise_on_error: bool = True
    ) -> dict[int, dict[str, LogDirDescription]]:
        """Each broker's log directories: error, space, and the size of each replica in them.

        A broker fails with the error of its first failed (e.g. offline) log directory.
        """
        self._check()

        async def ask(node_id: int) -> dict[str, LogDirDescription]:
            response = await self._cluster.send(node_id, DescribeLogDirsRequest(topics=None))
            errors.raise_for_code(
                getattr(response, "error_code", 0), f"DescribeLogDirs on broker {node_id}"
            )
            return {r.log_dir: _log_dir(r) for r in response.results}

        results = await self._ask_each_broker(ask, brokers)
        return item_results("describe_log_dirs", results, raise_on_error, _first_error)
