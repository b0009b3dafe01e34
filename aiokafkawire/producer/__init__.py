"""The producer: accumulator, sender loop, partitioners, idempotence and transactions."""

from aiokafkawire.producer._batch import DeliveryHandle, RecordMetadata
from aiokafkawire.producer._txn import OffsetAndMetadata
from aiokafkawire.producer.producer import Producer

__all__ = ["DeliveryHandle", "OffsetAndMetadata", "Producer", "RecordMetadata"]
