"""``aiokafka.consumer``."""

from __future__ import annotations

from aiokafkawire.compat.aiokafka.consumer.consumer import AIOKafkaConsumer

__all__ = ["AIOKafkaConsumer"]
