"""``aiokafka.abc``: the rebalance listener and token provider base classes."""

from __future__ import annotations

import abc
from typing import Any

from aiokafkawire.structs import TopicPartition

__all__ = ["AbstractTokenProvider", "ConsumerRebalanceListener"]


class ConsumerRebalanceListener(abc.ABC):
    """Called when a group rebalance moves partitions to or from this consumer.

    Either method may be a coroutine function.  The consumer fetches nothing for newly assigned
    partitions before ``on_partitions_assigned`` returns (so a seek there is where reading
    starts), and commits nothing for revoked ones after ``on_partitions_revoked`` returns.
    """

    @abc.abstractmethod
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        """Partitions this consumer gives up; commit their offsets here if you manage them."""

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        """Partitions this consumer now owns; seek here to start somewhere of your choosing."""


class AbstractTokenProvider(abc.ABC):
    """Supplies OAUTHBEARER tokens: ``async def token() -> str`` and optional ``extensions()``."""

    def __init__(self, **config: Any) -> None:  # noqa: B027  (aiokafka's optional hook)
        """Providers may take configuration; the base class keeps none."""

    @abc.abstractmethod
    async def token(self) -> str:
        """An access token for the SASL OAUTHBEARER exchange."""

    def extensions(self) -> dict[str, str]:
        """SASL extensions sent with the token (none by default)."""
        return {}
