"""Type stub of the optional C extension ``aiokafkawire.producer._cproducer``."""

from collections.abc import Callable
from typing import Any

from aiokafkawire.producer._batch import DeliveryHandle

class FastSend:
    """The common case of ``Producer.send``; ``send`` returns None for the Python path."""

    def __init__(
        self,
        producer: Any,
        batches: dict[Any, Any],
        partition_cache: dict[str, Any],
        cluster: Any,
        txn: Any,
        keyed: Callable[[bytes, int], int],
        sticky: dict[str, int],
        clock: Callable[[], float],
        batch_type: type,
        handle_type: type,
        max_record_size: int,
        overhead: int,
    ) -> None: ...
    def send(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp: int | None,
        headers: Any,
        /,
    ) -> DeliveryHandle | None: ...

def untracked_handle_type(metadata_type: type[tuple[Any, ...]], batch_type: type) -> type:
    """A new DeliveryHandle type outside the cyclic GC (slots and a C ``__await__`` only)."""
