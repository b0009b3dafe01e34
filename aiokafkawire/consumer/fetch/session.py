"""The client side of a KIP-227 incremental fetch session with one broker."""

from __future__ import annotations

from aiokafkawire.structs import TopicPartition

__all__ = ["FetchSession", "PartitionPlan"]

#: Per partition: (fetch offset, current leader epoch, last fetched epoch, max bytes).
PartitionPlan = tuple[int, int, int, int]


class FetchSession:
    """Session id and epoch, and what the broker caches of our partitions."""

    __slots__ = ("epoch", "id", "sent")

    def __init__(self) -> None:
        self.id = 0
        self.epoch = 0
        self.sent: dict[TopicPartition, PartitionPlan] = {}

    def reset(self) -> None:
        """Start over with a full fetch request (a new session)."""
        self.id = 0
        self.epoch = 0
        self.sent = {}

    def plan(
        self, wanted: dict[TopicPartition, PartitionPlan]
    ) -> tuple[dict[TopicPartition, PartitionPlan], list[TopicPartition]]:
        """What to put in the next request: (partitions to send, partitions to forget)."""
        if self.id == 0:
            return dict(wanted), []
        changed = {tp: v for tp, v in wanted.items() if self.sent.get(tp) != v}
        forgotten = [tp for tp in self.sent if tp not in wanted]
        return changed, forgotten

    def completed(
        self, response_session_id: int, wanted: dict[TopicPartition, PartitionPlan]
    ) -> None:
        """A response arrived: remember the session and what the broker now caches."""
        if response_session_id == 0:
            self.reset()
            return
        if self.id != response_session_id:
            self.id = response_session_id
            self.epoch = 1
        else:
            self.epoch = self.epoch + 1 if self.epoch < 2**31 - 1 else 1
        self.sent = dict(wanted)
