"""ShareFetch / ShareAcknowledge to and from the wire: building requests, reading answers,
decoding the acquired records.  Pure functions: the sending and the session bookkeeping stay in
:mod:`~aiokafkawire.consumer.share.session_requests` and
:mod:`~aiokafkawire.consumer.share.fetcher`."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from aiokafkawire import errors
from aiokafkawire.consumer.share.acknowledgements import Acknowledgements, build_batches
from aiokafkawire.consumer.share.records import (
    AcknowledgementOutcome,
    AcknowledgeType,
    ShareRecord,
)
from aiokafkawire.protocol.messages import ShareAcknowledgeRequest, ShareFetchRequest
from aiokafkawire.protocol.messages import share_acknowledge as m_ack
from aiokafkawire.protocol.messages import share_fetch as m_fetch
from aiokafkawire.protocol.records import iter_batches
from aiokafkawire.serialization import DeserializerPair, RecordDeserializationError
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from aiokafkawire.consumer.share.config import ShareFetchConfig

AckMap = dict[TopicPartition, dict[int, AcknowledgeType]]
TopicIdOf = Callable[[str], Any]

_new = tuple.__new__


def merge_acks(into: AckMap, more: Mapping[TopicPartition, Mapping[int, AcknowledgeType]]) -> None:
    """Add ``more``'s acknowledgements to ``into`` (later types win)."""
    for tp, offsets in more.items():
        into.setdefault(tp, {}).update(offsets)


def error_from(
    code: int, message: str | None, tp: TopicPartition | None
) -> errors.KafkaError | None:
    """The error an answer's ``code`` stands for (None for 0), worded for ``tp``."""
    if not code:
        return None
    where = f"{tp.topic}-{tp.partition}" if tp is not None else "share request"
    return errors.error_for_code(code)(message or where)


def _wire_batches(cls: Any, acks: Mapping[int, AcknowledgeType] | None) -> list[Any]:
    if not acks:
        return []
    return [
        cls(first_offset=b.first_offset, last_offset=b.last_offset, acknowledge_types=list(b.types))
        for b in build_batches(acks)
    ]


def build_share_fetch(
    config: ShareFetchConfig,
    *,
    member_id: str,
    epoch: int,
    topic_id: TopicIdOf,
    to_add: Iterable[TopicPartition],
    to_forget: Iterable[TopicPartition],
    acks: AckMap,
) -> ShareFetchRequest:
    """One ShareFetch: partitions added to the session (and those acknowledged), forgotten ones."""
    topics: dict[Any, list[m_fetch.FetchPartition]] = {}
    for tp in sorted(set(to_add) | set(acks)):
        topics.setdefault(topic_id(tp.topic), []).append(
            m_fetch.FetchPartition(
                partition_index=tp.partition,
                acknowledgement_batches=_wire_batches(m_fetch.AcknowledgementBatch, acks.get(tp)),
            )
        )
    forgotten: dict[Any, list[int]] = {}
    for tp in to_forget:
        forgotten.setdefault(topic_id(tp.topic), []).append(tp.partition)
    return ShareFetchRequest(
        group_id=config.group_id,
        member_id=member_id,
        share_session_epoch=epoch,
        max_wait_ms=config.fetch_max_wait_ms,
        min_bytes=config.fetch_min_bytes,
        max_bytes=config.fetch_max_bytes,
        max_records=config.max_poll_records,
        batch_size=config.max_poll_records,
        share_acquire_mode=config.acquire_mode,
        topics=[m_fetch.FetchTopic(topic_id=t, partitions=p) for t, p in topics.items()],
        forgotten_topics_data=[
            m_fetch.ForgottenTopic(topic_id=t, partitions=p) for t, p in forgotten.items()
        ],
    )


def build_share_acknowledge(
    group_id: str, *, member_id: str, epoch: int, topic_id: TopicIdOf, acks: AckMap
) -> ShareAcknowledgeRequest:
    """One ShareAcknowledge carrying ``acks`` (``IsRenewAck`` set when one is a RENEW)."""
    topics: dict[Any, list[m_ack.AcknowledgePartition]] = {}
    for tp in sorted(acks):
        topics.setdefault(topic_id(tp.topic), []).append(
            m_ack.AcknowledgePartition(
                partition_index=tp.partition,
                acknowledgement_batches=_wire_batches(m_ack.AcknowledgementBatch, acks[tp]),
            )
        )
    return ShareAcknowledgeRequest(
        group_id=group_id,
        member_id=member_id,
        share_session_epoch=epoch,
        is_renew_ack=has_renewals(acks),
        topics=[m_ack.AcknowledgeTopic(topic_id=t, partitions=p) for t, p in topics.items()],
    )


def has_renewals(acks: AckMap) -> bool:
    """Whether ``acks`` hold a RENEW (KIP-1222: only a ShareAcknowledge v2+ may carry one)."""
    renew = AcknowledgeType.RENEW
    return any(renew in offsets.values() for offsets in acks.values())


def without_renewals(acks: AckMap) -> AckMap:
    """``acks`` without their RENEWs (partitions left with nothing are dropped)."""
    renew = AcknowledgeType.RENEW
    out: AckMap = {}
    for tp, offsets in acks.items():
        kept = {offset: t for offset, t in offsets.items() if t is not renew}
        if kept:
            out[tp] = kept
    return out


def renewed_offsets(offsets: Mapping[int, AcknowledgeType]) -> list[int]:
    """The offsets of one partition's acknowledgements that are RENEWs."""
    renew = AcknowledgeType.RENEW
    return [offset for offset, ack_type in offsets.items() if ack_type is renew]


def unanswered_outcomes(
    acks: AckMap, answered: set[TopicPartition]
) -> list[AcknowledgementOutcome]:
    """Acknowledgements sent for partitions the answer does not name: they count as accepted."""
    return [
        AcknowledgementOutcome(tp, dict(sent), None)
        for tp, sent in acks.items()
        if tp not in answered
    ]


def answered_partitions(
    response: Any, names: Mapping[Any, str]
) -> Iterator[tuple[TopicPartition, Any]]:
    """Each partition an answer names, with its part of the answer (topics the metadata does
    not know by id are skipped)."""
    for topic in response.responses:
        name = names.get(topic.topic_id)
        if name is not None:
            for part in topic.partitions:
                yield TopicPartition(name, part.partition_index), part


def acknowledge_outcomes(
    response: Any, names: Mapping[Any, str], acks: AckMap, on_stale_metadata: Callable[[], None]
) -> list[AcknowledgementOutcome]:
    """The verdicts of a ShareAcknowledge answer, one per acknowledged partition."""
    outcomes: list[AcknowledgementOutcome] = []
    answered: set[TopicPartition] = set()
    for tp, part in answered_partitions(response, names):
        sent = acks.get(tp)
        if sent is None:
            continue
        answered.add(tp)
        outcomes.append(
            AcknowledgementOutcome(
                tp, dict(sent), error_from(part.error_code, part.error_message, tp)
            )
        )
        if errors.action_for(part.error_code) is errors.ErrorAction.REFRESH_METADATA:
            on_stale_metadata()
    outcomes.extend(unanswered_outcomes(acks, answered))
    return outcomes


def delivered_records(
    acks: Acknowledgements,
    config: ShareFetchConfig,
    tp: TopicPartition,
    raw: bytes | None,
    acquired: list[Any],
    lock_timeout_ms: int,
) -> list[ShareRecord]:
    """Records of the acquired ranges (with their delivery counts); the rest are gaps."""
    ranges = sorted((a.first_offset, a.last_offset, a.delivery_count) for a in acquired)
    for first, last, count in ranges:
        acks.acquire(tp, first, last, count, lock_timeout_ms)
    out = _records_in_ranges(config, tp, raw, ranges) if raw else []
    if len(out) < sum(last - first + 1 for first, last, _ in ranges):
        delivered = {record.offset for record in out}
        acks.acknowledge_gaps(
            tp,
            [
                offset
                for first, last, _ in ranges
                for offset in range(first, last + 1)
                if offset not in delivered
            ],
        )
    return out


def _records_in_ranges(
    config: ShareFetchConfig, tp: TopicPartition, raw: bytes, ranges: list[tuple[int, int, int]]
) -> list[ShareRecord]:
    """The records of ``raw`` inside the acquired ``ranges`` (ascending, disjoint), each decoded
    straight into a :class:`ShareRecord` with its range's delivery count; keys and values raw
    (the share consumer applies the deserializers when it hands the records out, so that a
    failing one is released and raised at its position).  Batches outside the ranges are not
    decoded."""
    topic, partition = tp
    lowest, highest = ranges[0][0], ranges[-1][1]
    out: list[ShareRecord] = []
    for batch in iter_batches(raw, check_crcs=config.check_crcs):
        if batch.last_offset < lowest or batch.base_offset > highest or batch.magic != 2:
            continue
        if len(ranges) == 1:
            first, last, count = ranges[0]
            out.extend(batch.share_records(ShareRecord, topic, partition, first, last, count))
            continue
        inside = [r for r in ranges if r[1] >= batch.base_offset and r[0] <= batch.last_offset]
        if len(inside) == 1:
            first, last, count = inside[0]
            out.extend(batch.share_records(ShareRecord, topic, partition, first, last, count))
        elif inside:
            out.extend(_split_by_ranges(batch, topic, partition, inside))
    return out


def _split_by_ranges(
    batch: Any, topic: str, partition: int, ranges: list[tuple[int, int, int]]
) -> list[ShareRecord]:
    """One batch spanning several acquired ranges: decoded once, then each record kept with its
    own range's delivery count (records between the ranges are left out)."""
    decoded = batch.share_records(
        ShareRecord, topic, partition, ranges[0][0], ranges[-1][1], ranges[0][2]
    )
    firsts = [first for first, _, _ in ranges]
    out: list[ShareRecord] = []
    for record in decoded:
        _, last, count = ranges[bisect_right(firsts, record[2]) - 1]
        if record[2] > last:
            continue
        out.append(record if record[9] == count else _new(ShareRecord, (*record[:9], count)))
    return out


Runs = list[tuple[TopicPartition, list[ShareRecord]]]


async def deserialize_runs(
    pair: DeserializerPair,
    runs: Runs,
    acks: Acknowledgements,
    on_failure: AcknowledgeType = AcknowledgeType.RELEASE,
) -> tuple[Runs, Runs, RecordDeserializationError | None]:
    """Drained runs of records with their keys and values deserialized: ``(runs, held,
    error)``.

    A record a deserializer fails on is acknowledged with ``on_failure``: released by default,
    as the Java share consumer does (delivered again, to any member, until the group's delivery
    attempt limit archives it), or rejected; the records before it are returned, those after it
    are ``held`` for the next poll, and ``error`` is to be raised when nothing precedes it.
    """
    out: Runs = []
    for index, (tp, records) in enumerate(runs):
        good, error = await pair.apply(records)
        if good:
            out.append((tp, good))
        if error is None:
            continue
        failed = records[len(good)]
        acks.acknowledge(tp, failed.offset, on_failure, failed.delivery_count)
        rest = records[len(good) + 1 :]
        held: Runs = [(tp, rest)] if rest else []
        return out, held + runs[index + 1 :], error
    return out, [], None
