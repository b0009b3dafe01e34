"""``aiokafka.producer``."""

from __future__ import annotations

from aiokafkawire.compat.aiokafka.producer.producer import AIOKafkaProducer

__all__ = ["AIOKafkaProducer"]
