"""The producer: accumulator, sender loop, partitioners, idempotence and transactions."""

from aiokafkawire.producer._batch import DeliveryHandle, RecordMetadata
from aiokafkawire.producer.producer import BatchBuilder, PreparedTransaction, Producer
from aiokafkawire.structs import OffsetAndMetadata

__all__ = [
    "BatchBuilder",
    "DeliveryHandle",
    "OffsetAndMetadata",
    "PreparedTransaction",
    "Producer",
    "RecordMetadata",
]
