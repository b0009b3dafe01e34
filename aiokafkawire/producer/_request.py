"""Produce requests: building one for some batches, and reading its answer by partition."""

from __future__ import annotations

import uuid
from typing import Any

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.producer._batch import ProducerBatch
from aiokafkawire.producer._txn import TransactionManager
from aiokafkawire.protocol.messages import ProduceRequest
from aiokafkawire.protocol.messages.produce import PartitionProduceData, TopicProduceData

__all__ = ["ProduceRequestBuilder", "partition_results", "too_large"]

PRODUCE_KEY = ProduceRequest.API_KEY
# Newest Produce version whose semantics we implement.  v12 is v11 outside transactions; inside one
# it adds the partition to the transaction (transactions v2, KIP-890 part 2), so a transactional
# producer sends it only under transactions v2 and at most v11 otherwise.  v13 names topics by id
# (KIP-516).
PRODUCE_MAX_VERSION = 13
PRODUCE_MAX_TRANSACTIONAL_VERSION = 11
PRODUCE_TRANSACTION_V2_VERSION = 12
PRODUCE_TOPIC_ID_VERSION = 13
# Produce versions able to carry each record format: v3+ requires magic 2.
_MAX_VERSION_FOR_MAGIC = {0: 1, 1: 2, 2: PRODUCE_MAX_VERSION}


class ProduceRequestBuilder:
    """Builds the Produce request of a flight for the connection it is written on."""

    def __init__(
        self, cluster: Cluster, txn: TransactionManager, *, acks: int, request_timeout_ms: int
    ) -> None:
        self.cluster = cluster
        self.txn = txn
        self.acks = acks
        self.request_timeout_ms = request_timeout_ms

    def __call__(
        self, node: int, batches: list[ProducerBatch], connection: Any
    ) -> tuple[ProduceRequest, int, dict[uuid.UUID, str]]:
        """The Produce request carrying ``batches`` to ``node`` (each counts one more attempt).

        Also returns the names of the topics it names by id (v13+), to read its answer by.
        """
        version = self._version(node, batches[0].magic, connection)
        by_topic: dict[str, list[PartitionProduceData]] = {}
        for batch in batches:
            if batch.payload is None:
                batch.encode(-1, -1, -1)
            # The payload may be a read-only view of the built batch: the encoders take any
            # buffer, and the frame references it (KafkaFraming.send_request_parts).
            records: Any = batch.payload
            by_topic.setdefault(batch.topic, []).append(
                PartitionProduceData(index=batch.partition, records=records)
            )
            batch.attempts += 1
        topic_ids: dict[str, uuid.UUID] = {}
        if version >= PRODUCE_TOPIC_ID_VERSION:
            topics = self.cluster.metadata.topics
            for name in by_topic:
                info = topics.get(name)
                if info is None or info.topic_id is None:
                    # A topic without a known id: name every topic, as v12 does.
                    version = PRODUCE_TOPIC_ID_VERSION - 1
                    topic_ids = {}
                    break
                topic_ids[name] = info.topic_id
        if topic_ids:
            topic_data = [
                TopicProduceData(topic_id=topic_ids[t], partition_data=p)
                for t, p in by_topic.items()
            ]
            topic_names = {topic_id: name for name, topic_id in topic_ids.items()}
        else:
            topic_data = [TopicProduceData(name=t, partition_data=p) for t, p in by_topic.items()]
            topic_names = {}
        request = ProduceRequest(
            transactional_id=self.txn.transactional_id,
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            topic_data=topic_data,
        )
        return request, version, topic_names

    def _version(self, node: int, magic: int, connection: Any) -> int:
        """The Produce version to speak with ``connection`` for record format ``magic``."""
        max_version = _MAX_VERSION_FOR_MAGIC[magic]
        min_version = 0
        if self.txn.transactional:
            if self.txn.transaction_v2:
                min_version = PRODUCE_TRANSACTION_V2_VERSION  # adds the partition (KIP-890)
            else:
                max_version = min(max_version, PRODUCE_MAX_TRANSACTIONAL_VERSION)
        version: int = connection.versions.version_for(
            PRODUCE_KEY, max_version=max_version, min_version=min_version
        )
        if magic == 2 and version < 3:
            raise errors.UnsupportedVersionForBrokerError(
                f"broker {node} speaks Produce v{version}, too old for record batch v2"
            )
        return version


def partition_results(
    response: Any, topic_names: dict[uuid.UUID, str]
) -> dict[tuple[str, int], Any]:
    """A Produce answer's partition results by (topic name, partition)."""
    results: dict[tuple[str, int], Any] = {}
    for topic in response.responses:
        # v13+ answers by topic id (the ids this request used), older versions by name.
        name = topic_names.get(topic.topic_id, topic.name) if topic_names else topic.name
        for part in topic.partition_responses:
            results[(name, part.index)] = part
    return results


def too_large(batch: ProducerBatch, cause: errors.KafkaError) -> errors.RecordTooLargeError:
    """MESSAGE_TOO_LARGE as the client's typed error (not retried: it would be refused again)."""
    size = len(batch.payload) if batch.payload is not None else 0
    error = errors.RecordTooLargeError(
        f"the broker refused a batch of {batch.count} record(s) ({size} bytes) for "
        f"{batch.topic}-{batch.partition}: larger than the topic's max.message.bytes "
        f"(MESSAGE_TOO_LARGE)"
    )
    error.__cause__ = cause
    return error
