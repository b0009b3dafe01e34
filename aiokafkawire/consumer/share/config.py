"""The fetch-related share consumer options (apart from the fetcher, which the session requests and
the codec helpers would otherwise import in a circle)."""

from __future__ import annotations

__all__ = ["ShareFetchConfig"]


class ShareFetchConfig:
    """The fetch-related share consumer options."""

    __slots__ = (
        "acquire_mode",
        "check_crcs",
        "fetch_max_bytes",
        "fetch_max_wait_ms",
        "fetch_min_bytes",
        "group_id",
        "max_poll_records",
        "request_timeout_ms",
        "retry_backoff_max_ms",
        "retry_backoff_ms",
    )

    def __init__(
        self,
        *,
        group_id: str,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52_428_800,
        max_poll_records: int = 500,
        acquire_mode: int = 0,
        check_crcs: bool = True,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
    ) -> None:
        self.group_id = group_id
        #: ShareFetch v2 ``ShareAcquireMode``: 0 batch-optimized, 1 record-limit (KIP-1206).
        self.acquire_mode = acquire_mode
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.max_poll_records = max_poll_records
        self.check_crcs = check_crcs
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
