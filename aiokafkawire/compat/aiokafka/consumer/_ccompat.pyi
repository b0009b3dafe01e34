"""Type stub of the C extension built from _ccompat.c."""

from collections.abc import Callable
from typing import Any

def compat_records(
    cls: type[Any],
    records: list[Any],
    key_deserializer: Callable[[Any], Any] | None,
    value_deserializer: Callable[[Any], Any] | None,
    /,
) -> list[Any]: ...
def compat_record(
    cls: type[Any],
    record: Any,
    key_deserializer: Callable[[Any], Any] | None,
    value_deserializer: Callable[[Any], Any] | None,
    /,
) -> Any: ...
