"""The fetch-related consumer options, and the reset timestamps ListOffsets understands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiokafkawire._retry import Backoff

__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "RESET_TIMESTAMPS", "FetchConfig"]

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
#: ``auto_offset_reset`` strategies that ListOffsets can answer.
RESET_TIMESTAMPS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}


class FetchConfig:
    """The fetch-related consumer options."""

    __slots__ = (
        "auto_offset_reset",
        "check_crcs",
        "client_rack",
        "fetch_max_bytes",
        "fetch_max_wait_ms",
        "fetch_min_bytes",
        "fetch_sessions",
        "isolation_level",
        "key_deserializer",
        "max_partition_fetch_bytes",
        "request_timeout_ms",
        "retry_backoff_max_ms",
        "retry_backoff_ms",
        "value_deserializer",
    )

    def __init__(
        self,
        *,
        auto_offset_reset: str = "latest",
        check_crcs: bool = True,
        client_rack: str = "",
        fetch_max_bytes: int = 52_428_800,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_sessions: bool = True,
        isolation_level: str = "read_uncommitted",
        key_deserializer: Callable[[bytes | None], Any] | None = None,
        value_deserializer: Callable[[bytes | None], Any] | None = None,
        max_partition_fetch_bytes: int = 1_048_576,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
    ) -> None:
        self.auto_offset_reset = auto_offset_reset
        self.check_crcs = check_crcs
        self.client_rack = client_rack
        self.fetch_max_bytes = fetch_max_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_sessions = fetch_sessions
        self.isolation_level = isolation_level
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms

    @property
    def read_committed(self) -> bool:
        """Whether aborted transactional records are filtered out."""
        return self.isolation_level == "read_committed"

    @property
    def retry_backoff_s(self) -> float:
        """``retry_backoff_ms`` in seconds."""
        return self.retry_backoff_ms / 1000

    def backoff(self) -> Backoff:
        """The client's retry policy: ``retry_backoff_ms`` doubling to ``retry_backoff_max_ms``."""
        return Backoff(self.retry_backoff_ms, self.retry_backoff_max_ms)
