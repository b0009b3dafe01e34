"""The producer: accumulator, sender loop, partitioners, idempotence and transactions."""

from aiokafkawire.producer._batch import DeliveryHandle, RecordMetadata
from aiokafkawire.producer.producer import Producer
from aiokafkawire.structs import OffsetAndMetadata

__all__ = ["DeliveryHandle", "OffsetAndMetadata", "Producer", "RecordMetadata"]
