"""Sans-I/O Kafka protocol layer: wire primitives, generated messages, framing, record formats.

``ApiKey``, ``SUPPORTED_VERSIONS``, ``REQUEST_TYPES`` and ``RESPONSE_TYPES`` come from the generated
:mod:`aiokafkawire.protocol.messages` package.  They are loaded on first access so that importing a
light submodule (``aiokafkawire.protocol.primitives``) does not compile every message codec.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiokafkawire.protocol.messages import (
        REQUEST_TYPES,
        RESPONSE_TYPES,
        SUPPORTED_VERSIONS,
        ApiKey,
    )

__all__ = ["REQUEST_TYPES", "RESPONSE_TYPES", "SUPPORTED_VERSIONS", "ApiKey"]

_FROM_MESSAGES = frozenset(__all__)


def __getattr__(name: str) -> Any:
    if name in _FROM_MESSAGES:
        messages = importlib.import_module("aiokafkawire.protocol.messages")
        value = getattr(messages, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
