"""aiokafkawire: an asyncio client for Apache Kafka — complete, exact on the wire, fast.

The clients (:class:`Producer`, :class:`Consumer`, :class:`Admin`) are imported on first use, so
``import aiokafkawire`` stays cheap for code that only needs the protocol layer or the errors.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from aiokafkawire import errors
from aiokafkawire._compiled import accelerated, warn_about_build_failures
from aiokafkawire.errors import KafkaError
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from aiokafkawire.admin import Admin, ConfigResource, NewTopic, OffsetSpec
    from aiokafkawire.consumer import (
        Consumer,
        ConsumerGroupMetadata,
        ConsumerRebalanceListener,
        ConsumerRecord,
        OffsetAndMetadata,
        OffsetAndTimestamp,
    )
    from aiokafkawire.consumer.share import (
        AcknowledgementOutcome,
        AcknowledgeType,
        ShareConsumer,
        ShareRecord,
    )
    from aiokafkawire.producer import DeliveryHandle, Producer, RecordMetadata

# The one place the version is written: pyproject.toml reads it (``[tool.setuptools.dynamic]``),
# and ``aiokafkawire --version`` prints it.
__version__ = "0.1.0.dev0"

# Quiet by default, as a library should be: records go to the application's handlers once it
# configures logging (every logger is under "aiokafkawire"), and nowhere before that.
logging.getLogger("aiokafkawire").addHandler(logging.NullHandler())
warn_about_build_failures()

_LAZY = {
    "Admin": "aiokafkawire.admin",
    "ConfigResource": "aiokafkawire.admin",
    "NewTopic": "aiokafkawire.admin",
    "OffsetSpec": "aiokafkawire.admin",
    "Consumer": "aiokafkawire.consumer",
    "ConsumerGroupMetadata": "aiokafkawire.consumer",
    "ConsumerRebalanceListener": "aiokafkawire.consumer",
    "ConsumerRecord": "aiokafkawire.consumer",
    "OffsetAndMetadata": "aiokafkawire.consumer",
    "OffsetAndTimestamp": "aiokafkawire.consumer",
    "AcknowledgeType": "aiokafkawire.consumer.share",
    "AcknowledgementOutcome": "aiokafkawire.consumer.share",
    "ShareConsumer": "aiokafkawire.consumer.share",
    "ShareRecord": "aiokafkawire.consumer.share",
    "DeliveryHandle": "aiokafkawire.producer",
    "Producer": "aiokafkawire.producer",
    "RecordMetadata": "aiokafkawire.producer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'aiokafkawire' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AcknowledgeType",
    "AcknowledgementOutcome",
    "Admin",
    "ConfigResource",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "DeliveryHandle",
    "KafkaError",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "OffsetSpec",
    "Producer",
    "RecordMetadata",
    "ShareConsumer",
    "ShareRecord",
    "TopicPartition",
    "__version__",
    "accelerated",
    "errors",
]
