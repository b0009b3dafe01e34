"""Errors of the embedded test brokers.

They derive from :class:`aiokafkawire.errors.KafkaError` like everything the library raises; they
live here because only the testing harness raises them.
"""

from __future__ import annotations

from aiokafkawire.errors import KafkaError

__all__ = [
    "BrokerStartError",
    "BrokerUnavailableError",
    "EmbeddedBrokerError",
    "MockClusterError",
]


class EmbeddedBrokerError(KafkaError):
    """An embedded test broker (Tansu process or librdkafka mock cluster) failed."""


class BrokerStartError(EmbeddedBrokerError):
    """An embedded broker could not be started (missing binary, early exit, bind failure)."""


class BrokerUnavailableError(BrokerStartError):
    """The broker software is not installed here (no Tansu binary, no usable librdkafka)."""


class MockClusterError(EmbeddedBrokerError):
    """A librdkafka mock-cluster call failed; ``code``/``name`` are librdkafka's error."""

    def __init__(self, message: str = "", code: int = 0, name: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.name = name
