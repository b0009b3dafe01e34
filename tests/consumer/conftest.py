"""Fixtures of the consumer tests (defined in ``_consumer_helpers``)."""

from _consumer_helpers import broker, mock

__all__ = ["broker", "mock"]
