"""aiokafka 0.14's public API on aiokafkawire's engine.

Import from here (``from aiokafkawire.compat.aiokafka import AIOKafkaConsumer``), or call
:func:`aiokafkawire.compat.install_as_aiokafka` once so that ``import aiokafka`` (in your code
and in frameworks such as FastStream) gets these modules.  What differs from aiokafka, and why:
docs/migrating-from-aiokafka.md.
"""

from __future__ import annotations

from aiokafkawire.compat.aiokafka.abc import ConsumerRebalanceListener
from aiokafkawire.compat.aiokafka.consumer import AIOKafkaConsumer
from aiokafkawire.compat.aiokafka.errors import ConsumerStoppedError, IllegalOperation
from aiokafkawire.compat.aiokafka.producer import AIOKafkaProducer
from aiokafkawire.compat.aiokafka.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)

#: The aiokafka release whose API this package reproduces (frameworks check it).
__version__ = "0.14.0"

__all__ = [
    "AIOKafkaConsumer",
    "AIOKafkaProducer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerStoppedError",
    "IllegalOperation",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "TopicPartition",
]
