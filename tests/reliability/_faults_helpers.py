"""Helpers of the fault tests on a real 3-broker Apache Kafka cluster.

Records carry their identity in the value, ``b"<stream>:<seq>"``: a *stream* is one sender (a
producer task), and ``seq`` counts its records.  Reading the log back (with our consumer and with
librdkafka), every acknowledged record must be there exactly once, and the records of one stream
in one partition must be in send order.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from _producer_helpers import read_back

from aiokafkawire import Admin, Consumer, NewTopic
from aiokafkawire.producer import DeliveryHandle
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster

RecordId = tuple[int, int]  # (stream, seq)

# A quicker failure detector than Kafka's defaults (9 s session, 2 s heartbeat): the controller
# fences a dead or frozen broker, and moves its leaderships, within ~3 s.  Clients see the same
# protocol either way; the tests just spend less time waiting.
FAULT_CLUSTER_CONFIG = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "controller.quorum.fetch.timeout.ms": "2000",
    "controller.quorum.election.timeout.ms": "1000",
    "replica.lag.time.max.ms": "5000",
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "unclean.leader.election.enable": "false",
}


def value_of(stream: int, seq: int) -> bytes:
    """The value carrying a record's identity."""
    return b"%d:%d" % (stream, seq)


def identity(value: bytes | None) -> RecordId:
    """The (stream, seq) of a record's value."""
    assert value is not None
    stream, seq = value.split(b":")
    return int(stream), int(seq)


async def create_replicated_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """A topic with replication factor 3 and ``min.insync.replicas=2``."""
    async with Admin(bootstrap_servers=bootstrap) as admin:
        results = await admin.create_topics(
            [
                NewTopic(
                    topic,
                    num_partitions=partitions,
                    replication_factor=3,
                    configs={"min.insync.replicas": "2"},
                )
            ]
        )
        for result in results.values():
            assert result.error is None, result


async def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    """Partition -> leader node id, as the cluster says now."""
    async with Admin(bootstrap_servers=bootstrap) as admin:
        info = (await admin.describe_topics([topic]))[topic]
        return {p: part.leader for p, part in info.partitions.items()}


async def wait_until_healthy(
    cluster: KafkaCluster, topics: Iterable[str] = (), timeout: float = 120.0
) -> None:
    """Every node running and unpaused, and every partition of ``topics`` fully in sync.

    A rolling restart waits for this between brokers (as operators do: no under-replicated
    partitions), and each fault test starts from it.
    """
    for node_id in cluster.broker_ids:
        cluster.resume_broker(node_id)
        if not cluster.running(node_id):
            await asyncio.to_thread(cluster.start_broker, node_id)
    wanted = [*topics, "__consumer_offsets"]
    deadline = time.monotonic() + timeout
    lagging: list[str] = []
    async with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        while time.monotonic() < deadline:
            existing = set(await admin.list_topics(include_internal=True))
            described = await admin.describe_topics([t for t in wanted if t in existing])
            lagging = [
                f"{name}-{p} isr={part.isr} replicas={part.replicas}"
                for name, info in described.items()
                for p, part in info.partitions.items()
                if part.leader < 0 or set(part.isr) != set(part.replicas)
            ]
            if not lagging:
                return
            await asyncio.sleep(0.5)
    raise AssertionError(f"cluster not healthy after {timeout}s: {lagging[:5]}")


@dataclass
class DeliveryLog:
    """What the senders sent and what the cluster acknowledged, with timing.

    ``track(handle, stream, seq)`` for each send; batch completions give each record's
    resolution time, and the longest spell with records pending and no acknowledgement at all
    (the longest stall).
    """

    started: float = field(default_factory=time.monotonic)
    sent: dict[RecordId, DeliveryHandle] = field(default_factory=dict)
    _batches: dict[int, Any] = field(default_factory=dict)
    completions: list[float] = field(default_factory=list)
    slowest_batch: float = 0.0

    def track(self, handle: DeliveryHandle, stream: int, seq: int) -> None:
        self.sent[(stream, seq)] = handle
        batch = handle._batch
        key = id(batch)
        if key not in self._batches:
            self._batches[key] = batch
            batch.future.add_done_callback(lambda _f, b=batch: self._batch_done(b))

    def _batch_done(self, batch: Any) -> None:
        now = time.monotonic()
        self.completions.append(now)
        self.slowest_batch = max(self.slowest_batch, now - batch.created)

    def longest_stall(self) -> float:
        """Longest time between consecutive batch completions (acks or failures)."""
        times = [self.started, *sorted(self.completions)]
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    def acknowledged(self) -> dict[RecordId, tuple[int, int] | None]:
        """Record -> (partition, offset) for every record the cluster acknowledged.

        None when delivered without an offset: an idempotent batch whose answer was lost and
        whose retry the leader no longer matched (it acknowledged later sequences).
        """
        out: dict[RecordId, tuple[int, int] | None] = {}
        for record, handle in self.sent.items():
            if handle.done() and handle.exception() is None:
                metadata = handle.result()
                where = (metadata.partition, metadata.offset)
                out[record] = where if metadata.offset >= 0 else None
        return out

    def failures(self) -> dict[RecordId, BaseException]:
        out = {}
        for record, handle in self.sent.items():
            if handle.done():
                exc = handle.exception()
                if exc is not None:
                    out[record] = exc
        return out

    def pending(self) -> list[RecordId]:
        return [record for record, handle in self.sent.items() if not handle.done()]

    def attempts(self) -> int:
        """Most attempts any batch needed."""
        return max((b.attempts for b in self._batches.values()), default=0)


async def read_with_our_consumer(
    bootstrap: str, topic: str, *, isolation_level: str = "read_uncommitted", timeout: float = 60
) -> dict[int, list[tuple[int, bytes | None]]]:
    """Partition -> [(offset, value)] of the whole log (to the end offsets when it starts)."""
    async with Consumer(
        bootstrap_servers=bootstrap,
        isolation_level=isolation_level,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=10_000,
    ) as consumer:
        async with Admin(bootstrap_servers=bootstrap) as admin:
            info = (await admin.describe_topics([topic]))[topic]
        partitions = [TopicPartition(topic, p) for p in info.partition_ids]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        out: dict[int, list[tuple[int, bytes | None]]] = {tp.partition: [] for tp in partitions}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = True
            for tp in partitions:
                if await consumer.position(tp) < ends[tp]:
                    done = False
            if done:
                return out
            batch = await consumer.getmany(timeout_ms=500)
            for tp, records in batch.items():
                out[tp.partition].extend((r.offset, r.value) for r in records)
        raise AssertionError(f"could not read {topic} to its end offsets {ends} in {timeout}s")


async def read_with_librdkafka(
    bootstrap: str, topic: str, expected: int, *, isolation_level: str = "read_uncommitted"
) -> dict[int, list[tuple[int, bytes | None]]]:
    """The same, read by confluent-kafka (librdkafka)."""
    records = await read_back(
        bootstrap, topic, expected, timeout=90, isolation_level=isolation_level, quiet_after=1.0
    )
    out: dict[int, list[tuple[int, bytes | None]]] = defaultdict(list)
    for record in records:
        out[record.partition].append((record.offset, record.value))
    return dict(out)


@dataclass
class LogCheck:
    """The outcome of comparing a log with what was acknowledged."""

    records: int
    lost: list[RecordId]
    duplicated: dict[RecordId, int]
    out_of_order: list[str]
    misplaced: list[str]

    @property
    def clean(self) -> bool:
        return not (self.lost or self.duplicated or self.out_of_order or self.misplaced)

    def summary(self) -> str:
        return (
            f"{self.records} records; lost {len(self.lost)} {self.lost[:5]}; duplicated "
            f"{len(self.duplicated)} {list(self.duplicated.items())[:5]}; out of order "
            f"{self.out_of_order[:3]}; misplaced {self.misplaced[:3]}"
        )


def check_log(
    log: dict[int, list[tuple[int, bytes | None]]],
    acknowledged: dict[RecordId, tuple[int, int] | None],
) -> LogCheck:
    """Every acknowledged record exactly once, where acknowledged, each stream in send order.

    An acknowledgement without a position (None) only asks for the record to be somewhere.
    """
    copies: dict[RecordId, int] = defaultdict(int)
    out_of_order: list[str] = []
    misplaced: list[str] = []
    for partition, entries in log.items():
        last_seq: dict[int, int] = {}
        for offset, value in entries:
            record = identity(value)
            copies[record] += 1
            stream, seq = record
            if seq <= last_seq.get(stream, -1):
                out_of_order.append(f"p{partition}@{offset}: {record} after seq {last_seq[stream]}")
            last_seq[stream] = seq
            where = acknowledged.get(record)
            if where is not None and where != (partition, offset) and copies[record] == 1:
                misplaced.append(
                    f"{record} acknowledged at {where}, found at p{partition}@{offset}"
                )
    lost = sorted(record for record in acknowledged if copies.get(record, 0) == 0)
    duplicated = {record: n for record, n in copies.items() if n > 1}
    return LogCheck(sum(copies.values()), lost, duplicated, out_of_order, misplaced)
