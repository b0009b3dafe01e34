"""Type stub of the C extension built from _carrow.c."""

from typing import Any

def record_columns(
    records: list[Any], /
) -> tuple[
    bytes,
    bytes,
    bytes,
    bytes | None,
    bytes,
    bytes,
    int,
    bytes | None,
    bytes,
    bytes,
    int,
]: ...
