"""``aiokafka.admin.new_topic``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aiokafkawire.admin import NewTopic as NativeNewTopic
from aiokafkawire.errors import KafkaValueError

__all__ = ["NewTopic"]


class NewTopic:
    """A topic to create: partitions and replication factor, or an explicit assignment."""

    def __init__(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        replica_assignments: Mapping[int, Sequence[int]] | None = None,
        topic_configs: Mapping[str, str] | None = None,
    ) -> None:
        if not ((num_partitions == -1 or replication_factor == -1) ^ (replica_assignments is None)):
            raise KafkaValueError(
                "either num_partitions/replication_factor or replica_assignment must be specified"
            )
        self.name = name
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.replica_assignments = dict(replica_assignments or {})
        self.topic_configs = dict(topic_configs or {})

    def native(self) -> NativeNewTopic:
        """aiokafkawire's :class:`~aiokafkawire.NewTopic` for the same topic."""
        return NativeNewTopic(
            self.name,
            num_partitions=self.num_partitions,
            replication_factor=self.replication_factor,
            replica_assignments=self.replica_assignments or None,
            configs=self.topic_configs,
        )
