"""Type stub of the optional C extension ``aiokafkawire.producer._cproducer``.

The record accumulator's hot path: the C bases of ``ProducerBatch`` and ``DeliveryHandle``, and
``Appender``, the accumulator's common case of appending a record, and ``SendMethod``,
``Producer.send``'s compiled call (see ``_cproducer.c``).
"""

from collections.abc import Callable, Generator
from typing import Any

class BatchCore:
    """The fields of a producer batch that the hot path reads and writes (C struct members)."""

    topic: str
    partition: int
    builder: Any
    outcome: tuple[int, int] | None
    count: int
    closed: bool

class HandleCore:
    """A record's delivery: its batch, index and timestamp; not tracked by the cyclic GC.

    ``__await__`` answers a delivered record in C and waits for a pending one in C (on the
    future of the batch's ``add_waiter()``); a failed one goes to the subclass's
    ``_await_pending()``.
    """

    _batch: Any
    _index: int
    _timestamp: int

    def __init__(self, batch: BatchCore, index: int, timestamp: int) -> None: ...
    def __await__(self) -> Generator[Any, None, Any]: ...

class Appender:
    """The accumulator's common case of appending a record; ``append`` returns None to decline.

    It holds only what the accumulator pushed: per topic a lane (partition count, sticky
    partition, open batch per partition), dropped or replaced when it stops being true.  Pushes
    for a topic without a lane are ignored.
    """

    enabled: bool

    def __init__(
        self,
        keyed: Callable[[bytes, int], int],
        clock: Callable[[], float],
        handle_type: type[HandleCore],
        max_record_size: int,
        overhead: int,
    ) -> None: ...
    def append(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp: int | None,
        headers: Any,
        /,
    ) -> HandleCore | None: ...
    def add_topic(self, topic: str, partitions: int, /) -> None:
        """A lane for ``topic``: ``partitions`` partitions, no sticky one, no open batch."""
    def set_sticky(self, topic: str, partition: int | None, /) -> None:
        """The partition of ``topic``'s keyless records (None or out of range: none)."""
    def set_open(self, batch: BatchCore, /) -> None:
        """``batch`` is the open batch of its partition."""
    def forget(self) -> None:
        """Drop every lane (new metadata)."""

class SendMethod:
    """``Producer.send`` without a coroutine frame per call (wraps the ``async def``).

    A call with the usual argument shapes returns a coroutine of its own (``send``, ``throw``,
    ``close``, ``__await__``): awaited, it calls the instance's ``_fast_append`` and, if that
    declines, the wrapped function's coroutine.  Other attributes are the wrapped function's.
    """

    def __init__(self, function: Callable[..., Any], /) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, instance: object, owner: type | None = None) -> Any: ...

def set_metadata_type(metadata_type: type[tuple[Any, ...]], /) -> None:
    """The tuple type (RecordMetadata) a delivered handle's ``__await__`` builds."""

def handles_outside_gc(handle_type: type[HandleCore], /) -> None:
    """Instances of ``handle_type`` (a class adding nothing to HandleCore) without a GC header;
    called before any instance exists."""
