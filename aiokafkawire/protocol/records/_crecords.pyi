"""Type stub of the C extension built from _crecords.c."""

from collections.abc import Callable
from typing import Any

from aiokafkawire.protocol.records._types import Buffer, Headers, Record

def decode_records(
    buf: Buffer,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    timestamp_type: object,
    log_append_time: int | None,
    record_cls: type[Record],
    /,
) -> list[Record] | None: ...
def decode_consumer_records(
    buf: Buffer,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    record_cls: type[Any],
    topic: str,
    partition: int,
    timestamp_type: int,
    leader_epoch: int | None,
    min_offset: int,
    key_deserializer: Callable[[bytes | None], Any] | None,
    value_deserializer: Callable[[bytes | None], Any] | None,
    /,
) -> list[Any] | None: ...
def decode_share_records(
    buf: Buffer,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    record_cls: type[Any],
    topic: str,
    partition: int,
    timestamp_type: int,
    leader_epoch: int | None,
    min_offset: int,
    max_offset: int,
    delivery_count: int,
    /,
) -> list[Any] | None: ...
def share_ack_held(
    acquired_by_tp: dict[Any, dict[int, Any]],
    pending_by_tp: dict[Any, dict[int, Any]],
    record: tuple[Any, ...],
    ack_type: object,
    clock: Callable[[], float],
    /,
) -> bool: ...
def reclaim_buffer(buffer: bytearray, length: int, /) -> bool: ...
def move_into_buffer(source: bytearray, target: bytearray, /) -> bool: ...
def encode_record(
    buffer: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | bytearray | None,
    value: bytes | bytearray | None,
    headers: Headers | None,
    batch_size: int,
    /,
) -> bool | None: ...
def builder_append(
    self: object,
    timestamp_ms: int | None,
    key: bytes | None,
    value: bytes | None,
    headers: Headers | None = None,
) -> bool: ...
def _setup_builder(builder_cls: type, pure_append: object, now_ms: object, /) -> bool: ...
def _setup(
    record_cls: type[Record], control_record_cls: type[Record], corrupt_record_error: type, /
) -> bool: ...
def fields_as_members(cls: type, /) -> None: ...
