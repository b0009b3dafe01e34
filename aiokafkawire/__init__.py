"""aiokafkawire: an asyncio client for Apache Kafka — complete, exact on the wire, fast."""

from __future__ import annotations

from aiokafkawire import errors
from aiokafkawire.errors import KafkaError

__version__ = "0.1.0.dev0"

__all__ = ["KafkaError", "__version__", "errors"]
