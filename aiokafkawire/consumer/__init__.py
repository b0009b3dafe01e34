"""aiokafkawire.consumer: the asyncio Kafka consumer."""

from aiokafkawire.consumer.consumer import Consumer, ConsumerRebalanceListener
from aiokafkawire.consumer.value_types import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
)

__all__ = [
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
]
