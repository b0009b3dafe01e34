"""Partitions' logs: look offsets up (by spec or time) and delete records, asking each leader."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore
from aiokafkawire.admin._items import by_topic, error_or_none, item_results
from aiokafkawire.protocol.messages import DeleteRecordsRequest, ListOffsetsRequest
from aiokafkawire.protocol.messages import delete_records as m_delete_records
from aiokafkawire.protocol.messages import list_offsets as m_list_offsets
from aiokafkawire.structs import TopicPartition

# ListOffsets takes an isolation level from v2.
_ISOLATION_VERSION = 2


class _PartitionsToRetry(Exception):
    """Some partitions of a ``list_offsets`` pass failed in a way worth another pass."""


@dataclass(frozen=True)
class OffsetSpec:
    """Which offset ``list_offsets`` looks up: earliest, latest, max timestamp, the tiered
    storage offsets, or by timestamp."""

    timestamp: int

    EARLIEST = -2
    LATEST = -1
    MAX_TIMESTAMP = -3
    EARLIEST_LOCAL = -4
    LATEST_TIERED = -5
    EARLIEST_PENDING_UPLOAD = -6

    @classmethod
    def earliest(cls) -> OffsetSpec:
        """The log start offset."""
        return cls(cls.EARLIEST)

    @classmethod
    def latest(cls) -> OffsetSpec:
        """The high watermark (next offset to be written)."""
        return cls(cls.LATEST)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        """The offset of the record with the largest timestamp (ListOffsets v7+)."""
        return cls(cls.MAX_TIMESTAMP)

    @classmethod
    def earliest_local(cls) -> OffsetSpec:
        """The first offset in the leader's local log (KIP-405; ListOffsets v8+): with tiered
        storage, the first offset not yet removed locally; without it, the log start."""
        return cls(cls.EARLIEST_LOCAL)

    @classmethod
    def latest_tiered(cls) -> OffsetSpec:
        """The highest offset copied to tiered storage (KIP-1005; ListOffsets v9+); offset -1
        when nothing was (and without tiered storage)."""
        return cls(cls.LATEST_TIERED)

    @classmethod
    def earliest_pending_upload(cls) -> OffsetSpec:
        """The first offset not yet copied to tiered storage (KIP-1023; ListOffsets v11+);
        offset -1 without tiered storage."""
        return cls(cls.EARLIEST_PENDING_UPLOAD)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        """The first offset whose timestamp is at or after ``timestamp_ms``."""
        if timestamp_ms < 0:
            raise errors.ConfigError("timestamp must be >= 0")
        return cls(timestamp_ms)


#: The first ListOffsets version that answers each special spec (as Java's
#: ``ListOffsetsRequest.Builder``): max timestamp v7 (KIP-734), earliest local v8 (KIP-405),
#: latest tiered v9 (KIP-1005), earliest pending upload v11 (KIP-1023).
_SPEC_MIN_VERSION = {
    OffsetSpec.MAX_TIMESTAMP: 7,
    OffsetSpec.EARLIEST_LOCAL: 8,
    OffsetSpec.LATEST_TIERED: 9,
    OffsetSpec.EARLIEST_PENDING_UPLOAD: 11,
}
_SPEC_NAMES = {
    OffsetSpec.MAX_TIMESTAMP: "max timestamp",
    OffsetSpec.EARLIEST_LOCAL: "earliest local",
    OffsetSpec.LATEST_TIERED: "latest tiered",
    OffsetSpec.EARLIEST_PENDING_UPLOAD: "earliest pending upload",
}


@dataclass(frozen=True)
class ListedOffset:
    """An offset found by ``list_offsets`` (``offset`` -1 when none matches)."""

    offset: int
    timestamp: int = -1
    leader_epoch: int = -1
    error: errors.KafkaError | None = None


def _listed(partition: Any, version: int) -> ListedOffset:
    """A ListOffsets answer's partition as a :class:`ListedOffset`."""
    if version == 0:
        offsets = list(partition.old_style_offsets)
        offset, timestamp = (offsets[0] if offsets else -1), -1
    else:
        offset, timestamp = partition.offset, partition.timestamp
    return ListedOffset(
        offset,
        timestamp,
        getattr(partition, "leader_epoch", -1),
        error_or_none(partition.error_code),
    )


class OffsetCalls(AdminCore):
    """Admin calls about partitions' offsets and records."""

    async def list_offsets(
        self,
        specs: Mapping[TopicPartition, OffsetSpec | int],
        *,
        isolation_level: str = "read_uncommitted",
        raise_on_error: bool = True,
    ) -> dict[TopicPartition, ListedOffset]:
        """Look up offsets by spec: earliest, latest, max timestamp, earliest local, latest
        tiered, earliest pending upload, or a timestamp.

        Each spec needs a ListOffsets version (as in Java's ``OffsetSpec``); a partition whose
        leader is too old for its spec gets an
        :class:`~aiokafkawire.errors.UnsupportedVersionForBrokerError` item."""
        self._check()
        wanted = {
            tp: (s if isinstance(s, OffsetSpec) else OffsetSpec(int(s))) for tp, s in specs.items()
        }
        results: dict[TopicPartition, ListedOffset] = {}
        pending = dict(wanted)
        passes = 0

        async def one_pass() -> None:
            nonlocal pending, passes
            passes += 1
            if passes > 1:
                await self._cluster.refresh_metadata()  # leaders may have moved
            pending = await self._list_offsets_pass(pending, isolation_level, results)
            if pending:
                raise _PartitionsToRetry

        def refresh_soon(_: BaseException) -> None:
            self._cluster.request_update()

        try:
            await self._retried(
                one_pass,
                lambda exc: isinstance(exc, _PartitionsToRetry),
                "ListOffsets",
                refresh_soon,
            )
        except _PartitionsToRetry:
            pass  # out of attempts: those partitions keep their last (retriable) errors
        return item_results("list_offsets", results, raise_on_error)

    async def _list_offsets_pass(
        self,
        pending: dict[TopicPartition, OffsetSpec],
        isolation_level: str,
        results: dict[TopicPartition, ListedOffset],
    ) -> dict[TopicPartition, OffsetSpec]:
        """Ask each leader once, filling ``results``; returns the partitions worth retrying."""
        leaders, failed = await self._by_leader(pending)
        for tp, exc in failed.items():
            results[tp] = ListedOffset(-1, error=exc)
        retry: dict[TopicPartition, OffsetSpec] = {}
        answers = await asyncio.gather(
            *(
                self._list_offsets_on(node, tps, pending, isolation_level)
                for node, tps in leaders.items()
            ),
            return_exceptions=True,
        )
        for tps, answer in zip(leaders.values(), answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, errors.KafkaError):
                    raise answer
                retry.update({tp: pending[tp] for tp in tps})
                continue
            for tp, listed in answer.items():
                if listed.error is not None and listed.error.retriable:
                    retry[tp] = pending[tp]
                results[tp] = listed
        return retry

    async def _list_offsets_on(
        self,
        node_id: int,
        partitions: list[TopicPartition],
        specs: Mapping[TopicPartition, OffsetSpec],
        isolation_level: str,
    ) -> dict[TopicPartition, ListedOffset]:
        connection = await self._cluster.connection(node_id)
        version = connection.versions.version_for(ListOffsetsRequest.API_KEY)
        refused: dict[TopicPartition, ListedOffset] = {}
        for tp in partitions:
            spec = specs[tp].timestamp
            needed = _SPEC_MIN_VERSION.get(spec, 0)
            if version < needed:
                refused[tp] = ListedOffset(
                    -1,
                    error=errors.UnsupportedVersionForBrokerError(
                        f"{tp.topic}-{tp.partition}: the {_SPEC_NAMES[spec]} offset needs "
                        f"ListOffsets v{needed}+, broker {node_id} speaks v{version}"
                    ),
                )
        partitions = [tp for tp in partitions if tp not in refused]
        if not partitions:
            return refused
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                m_list_offsets.ListOffsetsTopic(name=t, partitions=ps)
                for t, ps in by_topic(
                    (
                        tp.topic,
                        m_list_offsets.ListOffsetsPartition(
                            partition_index=tp.partition,
                            timestamp=specs[tp].timestamp,
                            max_num_offsets=1,
                        ),
                    )
                    for tp in partitions
                ).items()
            ],
            # v10+: how long the broker may wait for tiered storage (KIP-1075); 0 fails at once.
            timeout_ms=self._timeout_ms,
        )
        if version >= _ISOLATION_VERSION:
            request.isolation_level = 1 if isolation_level == "read_committed" else 0
        response = await connection.send(request, version)
        refused.update(
            (TopicPartition(topic.name, p.partition_index), _listed(p, version))
            for topic in response.topics
            for p in topic.partitions
        )
        return refused

    async def delete_records(
        self,
        before_offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: int | None = None,
        raise_on_error: bool = True,
    ) -> dict[TopicPartition, tuple[int, errors.KafkaError | None]]:
        """Delete records before the given offsets; returns each partition's new low watermark."""
        self._check()
        leaders, failed = await self._by_leader(before_offsets)
        results: dict[TopicPartition, tuple[int, errors.KafkaError | None]] = {
            tp: (-1, exc) for tp, exc in failed.items()
        }
        for node, tps in leaders.items():
            request = DeleteRecordsRequest(
                topics=[
                    m_delete_records.DeleteRecordsTopic(name=t, partitions=ps)
                    for t, ps in by_topic(
                        (
                            tp.topic,
                            m_delete_records.DeleteRecordsPartition(
                                partition_index=tp.partition, offset=before_offsets[tp]
                            ),
                        )
                        for tp in tps
                    ).items()
                ],
                timeout_ms=timeout_ms or self._timeout_ms,
            )
            response = await self._cluster.send(node, request)
            for topic in response.topics:
                for p in topic.partitions:
                    results[TopicPartition(topic.name, p.partition_index)] = (
                        p.low_watermark,
                        error_or_none(p.error_code),
                    )
        return item_results("delete_records", results, raise_on_error, lambda r: r[1])
