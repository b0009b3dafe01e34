"""Building one Fetch request from a fetch plan and the broker's fetch session."""

from __future__ import annotations

from typing import Any

from aiokafkawire.consumer.fetch.config import FetchConfig
from aiokafkawire.consumer.fetch.session import FetchSession, PartitionPlan
from aiokafkawire.protocol.messages import FetchRequest
from aiokafkawire.protocol.messages.fetch import FetchPartition, FetchTopic, ForgottenTopic
from aiokafkawire.structs import TopicPartition

__all__ = ["SESSION_VERSION", "TOPIC_ID_VERSION", "build_fetch_request"]

#: First Fetch version with fetch sessions (KIP-227).
SESSION_VERSION = 7
#: First Fetch version naming topics by id.
TOPIC_ID_VERSION = 13


def build_fetch_request(
    config: FetchConfig,
    version: int,
    to_send: dict[TopicPartition, PartitionPlan],
    forgotten: list[TopicPartition],
    session: FetchSession | None,
    topic_ids: dict[str, Any],
) -> FetchRequest:
    """The request for ``to_send`` (and ``forgotten``, in ``session``; None: sessionless)."""
    by_topic: dict[str, list[FetchPartition]] = {}
    for tp, (offset, current_epoch, last_epoch, max_bytes) in to_send.items():
        by_topic.setdefault(tp.topic, []).append(
            FetchPartition(
                partition=tp.partition,
                current_leader_epoch=current_epoch,
                fetch_offset=offset,
                last_fetched_epoch=last_epoch,
                log_start_offset=-1,
                partition_max_bytes=max_bytes,
            )
        )
    with_ids = version >= TOPIC_ID_VERSION
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=config.fetch_max_wait_ms,
        min_bytes=config.fetch_min_bytes,
        max_bytes=config.fetch_max_bytes,
        isolation_level=1 if config.read_committed else 0,
        rack_id=config.client_rack,
    )
    request.topics = [
        FetchTopic(topic=t, topic_id=topic_ids[t], partitions=p)
        if with_ids
        else FetchTopic(topic=t, partitions=p)
        for t, p in by_topic.items()
    ]
    if session is not None:
        request.session_id = session.id
        request.session_epoch = session.epoch
        forgotten_by_topic: dict[str, list[int]] = {}
        for tp in forgotten:
            forgotten_by_topic.setdefault(tp.topic, []).append(tp.partition)
        request.forgotten_topics_data = [
            ForgottenTopic(topic=t, topic_id=topic_ids[t], partitions=p)
            if with_ids
            else ForgottenTopic(topic=t, partitions=p)
            for t, p in forgotten_by_topic.items()
            if not with_ids or t in topic_ids
        ]
    elif version >= SESSION_VERSION:
        request.session_epoch = -1  # sessionless full fetch
    return request
