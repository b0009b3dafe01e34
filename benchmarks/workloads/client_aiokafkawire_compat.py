"""The aiokafka workloads, unchanged, on aiokafkawire's aiokafka compat layer.

What a user who moves in one line gets: ``install_as_aiokafka()`` runs first, then
``workloads.client_aiokafka`` is imported, so its ``from aiokafka import ...`` takes
``aiokafkawire.compat.aiokafka``'s classes and the very same workload code runs on them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafkawire.compat import install_as_aiokafka

install_as_aiokafka()
# A worker runs one client, but import the aiokafka module afresh all the same: an earlier
# import would hold the real aiokafka's classes.
sys.modules.pop("workloads.client_aiokafka", None)
_aiokafka_workloads = importlib.import_module("workloads.client_aiokafka")

ASYNC = True


def _on_compat(function: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]) -> Any:
    """``function`` of the aiokafka module, its result naming the producer class it ran on."""

    async def run(spec: dict[str, Any]) -> dict[str, Any]:
        result = await function(spec)
        producer = _aiokafka_workloads.AIOKafkaProducer
        result["producer_class"] = f"{producer.__module__}.{producer.__qualname__}"
        return result

    return run


produce = _on_compat(_aiokafka_workloads.produce)
consume = _on_compat(_aiokafka_workloads.consume)
latency = _on_compat(_aiokafka_workloads.latency)
senders = _on_compat(_aiokafka_workloads.senders)
scale = _on_compat(_aiokafka_workloads.scale)
websvc = _on_compat(_aiokafka_workloads.websvc)
