"""The producer: accumulator, sender loop, partitioners, idempotence and transactions."""

from aiokafkawire.producer._batch import DeliveryHandle, RecordMetadata
from aiokafkawire.producer._transactions import PreparedTransaction
from aiokafkawire.producer.producer import BatchBuilder, Producer
from aiokafkawire.structs import OffsetAndMetadata

__all__ = [
    "BatchBuilder",
    "DeliveryHandle",
    "OffsetAndMetadata",
    "PreparedTransaction",
    "Producer",
    "RecordMetadata",
]
