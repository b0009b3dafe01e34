"""Filter pushdown of the batch source: Spark filters on ``topic``, ``partition``, ``offset`` and
``timestamp`` as bounds on the offset ranges to read.

Nothing here imports pyspark: filters are matched by their class name and fields
(``attribute``, ``value``), so this module is testable without Spark.  All pushed filters are
applied exactly, so none of them goes back to Spark.  What a filter becomes:

- ``topic`` ``=`` / ``IN``: only those topics are read (exact: the filter leaves Spark);
- ``partition`` ``=`` / ``IN`` / ``<`` / ``<=`` / ``>`` / ``>=``: only those partitions (exact);
- ``offset`` ``=`` / ``<`` / ``<=`` / ``>`` / ``>=``: each range is cut to those offsets (exact);
- ``timestamp`` ``=`` / ``<`` / ``<=`` / ``>`` / ``>=``: exact too.  A lower bound starts each
  partition at the first offset whose timestamp is at or after it (ListOffsets by time: every
  earlier record is older).  Record timestamps need not grow with offsets, so the tasks also
  drop the rows of their range outside the bounds (:meth:`PushedBounds.filter_rows`); an upper
  bound cannot cut a range (a later record may be older again), only rows.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from aiokafkawire.structs import TopicPartition

__all__ = ["PushedBounds", "push_filters"]

_INT_COLUMNS = ("partition", "offset")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass
class PushedBounds:
    """The conjunction of the filters pushed so far (all bounds inclusive, ``None``: open)."""

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    partition_low: int | None = None
    partition_high: int | None = None
    offset_low: int | None = None
    offset_high: int | None = None
    #: Timestamp bounds in microseconds (Spark's unit), inclusive.
    timestamp_low_us: int | None = None
    timestamp_high_us: int | None = None
    #: Human-readable form of every filter taken, for logs and tests.
    described: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Whether the filters exclude every record before anything is looked up."""
        if self.topics is not None and not self.topics:
            return True
        if self.partitions is not None and not self.partitions:
            return True
        if _crossed(self.partition_low, self.partition_high):
            return True
        if _crossed(self.timestamp_low_us, self.timestamp_high_us):
            return True
        return _crossed(self.offset_low, self.offset_high)

    @property
    def timestamp_low_ms(self) -> int | None:
        """The lower timestamp bound in Kafka's milliseconds, rounded down (None: none)."""
        return None if self.timestamp_low_us is None else self.timestamp_low_us // 1000

    def filter_rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows of ``batch`` inside the timestamp bounds (all of them without bounds)."""
        low, high = self.timestamp_low_us, self.timestamp_high_us
        if low is None and high is None:
            return batch
        import pyarrow.compute as pc  # 50 ms to import: only tasks with timestamp bounds need it

        stamps = batch.column(batch.schema.get_field_index("timestamp")).cast(pa.int64())
        keep = None
        if low is not None:
            keep = pc.greater_equal(stamps, low)
        if high is not None:
            below = pc.less_equal(stamps, high)
            keep = below if keep is None else pc.and_(keep, below)
        return batch.filter(keep)

    def keeps(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` may hold matching records."""
        if self.topics is not None and tp.topic not in self.topics:
            return False
        if self.partitions is not None and tp.partition not in self.partitions:
            return False
        if self.partition_low is not None and tp.partition < self.partition_low:
            return False
        return self.partition_high is None or tp.partition <= self.partition_high

    def cut(self, start: int, end: int) -> tuple[int, int]:
        """``[start, end)`` narrowed to the offset bounds (an empty range stays at ``start``)."""
        low = start if self.offset_low is None else max(start, self.offset_low)
        high = end if self.offset_high is None else min(end, self.offset_high + 1)
        return (low, high) if high > low else (start, start)

    def filter_partitions(self, partitions: Iterable[TopicPartition]) -> set[TopicPartition]:
        """The partitions of ``partitions`` the filters keep."""
        return {tp for tp in partitions if self.keeps(tp)}

    def narrow(
        self,
        starts: Mapping[TopicPartition, int],
        ends: Mapping[TopicPartition, int],
        by_time: Mapping[TopicPartition, int] | None = None,
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """Starts and ends cut to the offset bounds and, with ``by_time``, to the first offset
        at or after the timestamp bound (``-1``: no such record, nothing to read)."""
        new_starts: dict[TopicPartition, int] = {}
        new_ends: dict[TopicPartition, int] = {}
        for tp, end in ends.items():
            if tp not in starts:
                continue
            start = starts[tp]
            if by_time is not None:
                first = by_time.get(tp, start)
                start = end if first < 0 else max(start, min(first, end))
            new_starts[tp], new_ends[tp] = self.cut(start, end)
        return new_starts, new_ends


def _crossed(low: int | None, high: int | None) -> bool:
    return low is not None and high is not None and low > high


def _column(item: Any) -> str | None:
    attribute = getattr(item, "attribute", None)
    if isinstance(attribute, tuple) and len(attribute) == 1 and isinstance(attribute[0], str):
        return attribute[0].lower()
    return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _timestamp_us(value: Any) -> int | None:
    """A Spark timestamp literal as epoch microseconds (None: not a timestamp)."""
    if not isinstance(value, datetime.datetime):
        return None
    if value.tzinfo is None:
        # pyspark hands timestamps over as naive local times (as it converts them to Python).
        value = value.astimezone()
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _lower(current: int | None, value: int) -> int:
    return value if current is None else max(current, value)


def _upper(current: int | None, value: int) -> int:
    return value if current is None else min(current, value)


def _push_int(bounds: PushedBounds, column: str, kind: str, item: Any) -> bool:
    """Apply one comparison on ``partition`` or ``offset``; whether it was taken (exactly)."""
    if kind == "In":
        values = [_as_int(v) for v in item.value]
        if column != "partition" or any(v is None for v in values):
            return False
        taken = frozenset(v for v in values if v is not None)
        bounds.partitions = taken if bounds.partitions is None else bounds.partitions & taken
        return True
    value = _as_int(item.value)
    if value is None:
        return False
    low, high = {
        "EqualTo": (value, value),
        "GreaterThan": (value + 1, None),
        "GreaterThanOrEqual": (value, None),
        "LessThan": (None, value - 1),
        "LessThanOrEqual": (None, value),
    }.get(kind, (None, None))
    if low is None and high is None:
        return False
    prefix = "partition" if column == "partition" else "offset"
    if low is not None:
        setattr(bounds, f"{prefix}_low", _lower(getattr(bounds, f"{prefix}_low"), low))
    if high is not None:
        setattr(bounds, f"{prefix}_high", _upper(getattr(bounds, f"{prefix}_high"), high))
    return True


def _push_one(bounds: PushedBounds, item: Any) -> tuple[bool, bool]:
    """(taken, exact) for one filter: exact ones leave Spark, inexact ones stay with it too."""
    column = _column(item)
    kind = type(item).__name__
    if not hasattr(item, "value"):
        return False, False  # IsNull, IsNotNull, Not(...): left to Spark
    if column == "topic":
        if kind == "EqualTo" and isinstance(item.value, str):
            taken = frozenset([item.value])
        elif kind == "In" and all(isinstance(v, str) for v in item.value):
            taken = frozenset(item.value)
        else:
            return False, False
        bounds.topics = taken if bounds.topics is None else bounds.topics & taken
        return True, True
    if column in _INT_COLUMNS:
        taken_int = _push_int(bounds, column, kind, item)
        return taken_int, taken_int
    if column == "timestamp":
        us = _timestamp_us(item.value)
        low, high = {
            "EqualTo": (us, us),
            "GreaterThan": (None if us is None else us + 1, None),
            "GreaterThanOrEqual": (us, None),
            "LessThan": (None, None if us is None else us - 1),
            "LessThanOrEqual": (None, us),
        }.get(kind, (None, None))
        if low is None and high is None:
            return False, False
        if low is not None:
            bounds.timestamp_low_us = _lower(bounds.timestamp_low_us, low)
        if high is not None:
            bounds.timestamp_high_us = _upper(bounds.timestamp_high_us, high)
        return True, True
    return False, False


def push_filters(bounds: PushedBounds, filters: Iterable[Any]) -> list[Any]:
    """Take what ``filters`` allow into ``bounds``; return the filters Spark must still apply.

    The returned filters are the given objects (Spark requires them by reference).
    """
    remaining = []
    for item in filters:
        taken, exact = _push_one(bounds, item)
        if taken:
            bounds.described.append(f"{item}")
        if not exact:
            remaining.append(item)
    return remaining
