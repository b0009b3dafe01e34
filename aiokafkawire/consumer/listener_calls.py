"""Calling the user's rebalance listener: plain functions or coroutines, failures logged."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Iterable
from typing import Any

from aiokafkawire.structs import TopicPartition

log = logging.getLogger("aiokafkawire.consumer")

__all__ = ["call_listener"]


async def call_listener(
    listener: Any, method: str, partitions: Iterable[TopicPartition], owner: str
) -> None:
    """``listener.<method>(partitions)``, awaited when it returns an awaitable.

    ``on_partitions_lost`` falls back to ``on_partitions_revoked`` on a listener without it.
    An exception of the listener is logged (naming ``owner``) and goes no further: the
    rebalance completes, as the listener's partitions are assigned or gone either way.
    """
    if listener is None:
        return
    callback = getattr(listener, method, None)
    if callback is None and method == "on_partitions_lost":
        callback = getattr(listener, "on_partitions_revoked", None)
    if callback is None:
        return
    try:
        result = callback(set(partitions))
        if inspect.isawaitable(result):
            await result
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("%s: rebalance listener %s failed", owner, method)
