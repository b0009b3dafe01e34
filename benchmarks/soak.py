"""Soak: produce and consume in a group for a long time while brokers keep restarting.

Starts a 3-broker Apache Kafka cluster (:class:`aiokafkawire.testing.KafkaCluster`), a topic with
replication factor 3 and ``min.insync.replicas=2``, one idempotent ``acks="all"`` producer sending
at a steady rate and a group of consumers; every ``--restart-every`` seconds one broker (in turn)
is stopped and started again.  At the end the topic is read back whole and the figures printed:

    records sent / acknowledged, restarts survived, longest stall (the longest time with records
    pending and none acknowledged), lost (acknowledged, not in the log) and duplicated (in the log
    more than once), and what the group saw (every acknowledged record at least once; records
    handed out again after a rebalance are counted, as a group without transactions allows them).

Not part of CI (it runs for minutes)::

    python benchmarks/soak.py                      # 10 minutes, a restart every 30 s
    python benchmarks/soak.py --minutes 2 --restart-every 20

Exits non-zero if anything was lost or duplicated, or a handle never resolved.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from aiokafkawire import Admin, Consumer, NewTopic, Producer, errors
from aiokafkawire.producer import DeliveryHandle
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster

PARTITIONS = 6
CONSUMERS = 2
DELIVERY_TIMEOUT_MS = 120_000
# A quicker failure detector than Kafka's defaults, as in the fault tests: a stopped broker's
# leaderships move within seconds.
CLUSTER_CONFIG = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "unclean.leader.election.enable": "false",
}


@dataclass
class Figures:
    """What the run measured."""

    sent: int = 0
    acknowledged: int = 0
    failed: int = 0
    restarts: int = 0
    longest_stall: float = 0.0
    last_ack: float = field(default_factory=time.monotonic)
    consumed: Counter[int] = field(default_factory=Counter)

    def acked(self, now: float) -> None:
        self.longest_stall = max(self.longest_stall, now - self.last_ack)
        self.last_ack = now
        self.acknowledged += 1


async def produce(
    bootstrap: str, topic: str, rate: float, stop: asyncio.Event, figures: Figures
) -> list[DeliveryHandle]:
    handles: list[DeliveryHandle] = []
    pending = [0]

    def done(handle: DeliveryHandle) -> None:
        pending[0] -= 1
        if handle.exception() is None:
            figures.acked(time.monotonic())
        else:
            figures.failed += 1

    async with Producer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=5,
        request_timeout_ms=5_000,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
        metadata_max_age_ms=5_000,
    ) as producer:
        started = time.monotonic()
        seq = 0
        while not stop.is_set():
            ahead = started + seq / rate - time.monotonic()
            if ahead > 0:
                await asyncio.sleep(ahead)
            if pending[0] == 0:
                figures.last_ack = time.monotonic()  # idle is not a stall
            handle = await producer.send(topic, b"%d" % seq, key=b"k%d" % (seq % 13))
            pending[0] += 1
            handle.add_done_callback(done)
            handles.append(handle)
            seq += 1
            figures.sent = seq
        await producer.flush(timeout=DELIVERY_TIMEOUT_MS / 1000 + 30)
    return handles


async def consume(bootstrap: str, topic: str, group: str, stop: asyncio.Event, figures: Figures):
    async with Consumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        session_timeout_ms=15_000,
        heartbeat_interval_ms=1_000,
        request_timeout_ms=5_000,
    ) as consumer:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                for record in records:
                    assert record.value is not None
                    figures.consumed[int(record.value)] += 1


async def restart_brokers(
    cluster: KafkaCluster, every: float, stop: asyncio.Event, figures: Figures
) -> None:
    node = 0
    started = time.monotonic()
    while not stop.is_set():
        # Restarts start every ``every`` seconds (a restart itself takes ~10 s).
        due = started + (node + 1) * every - time.monotonic()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), max(due, 0.0))
        if stop.is_set():
            return
        victim = cluster.broker_ids[node % len(cluster.broker_ids)]
        node += 1
        await asyncio.to_thread(cluster.stop_broker, victim)
        await asyncio.to_thread(cluster.start_broker, victim)
        figures.restarts += 1
        print(f"  {time.strftime('%H:%M:%S')} broker {victim} restarted ({figures.restarts})")


async def read_log(bootstrap: str, topic: str) -> Counter[int]:
    copies: Counter[int] = Counter()
    async with Consumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    ) as consumer:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        while any([await consumer.position(tp) < ends[tp] for tp in partitions]):
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                for record in records:
                    assert record.value is not None
                    copies[int(record.value)] += 1
    return copies


async def soak(minutes: float, restart_every: float, rate: float) -> int:
    topic = f"soak-{uuid.uuid4().hex[:8]}"
    print(f"starting 3 Kafka brokers; {minutes} min, a restart every {restart_every:.0f}s")
    async with KafkaCluster(brokers=3, config=CLUSTER_CONFIG) as cluster:
        bootstrap = cluster.bootstrap_servers
        async with Admin(bootstrap_servers=bootstrap) as admin:
            await admin.create_topics(
                [NewTopic(topic, PARTITIONS, 3, configs={"min.insync.replicas": "2"})]
            )
        figures = Figures()
        stop = asyncio.Event()  # producing and restarting
        stop_consuming = asyncio.Event()  # once the group has seen everything (or given up)
        consumers = [
            asyncio.create_task(
                consume(bootstrap, topic, f"{topic}-group", stop_consuming, figures)
            )
            for _ in range(CONSUMERS)
        ]
        producer = asyncio.create_task(produce(bootstrap, topic, rate, stop, figures))
        restarter = asyncio.create_task(restart_brokers(cluster, restart_every, stop, figures))
        await asyncio.sleep(minutes * 60)
        stop.set()
        handles = await producer
        await restarter
        # Let the group finish what was acknowledged.
        acknowledged = {int(i) for i, h in enumerate(handles) if h.exception() is None}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not acknowledged <= set(figures.consumed):  # noqa: ASYNC110 - polls a counter the consumers fill
            await asyncio.sleep(0.5)
        stop_consuming.set()
        outcomes = await asyncio.gather(*consumers, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                print(f"a consumer failed: {outcome!r}")
        copies = await read_log(bootstrap, topic)
    unresolved = sum(1 for h in handles if not h.done())
    lost = sorted(acknowledged - set(copies))
    duplicated = sorted(i for i, n in copies.items() if n > 1)
    missing = sorted(acknowledged - set(figures.consumed))
    missed = len(missing)
    if missing:
        where: dict[int, list[int]] = {}
        for seq in missing:
            metadata = handles[seq].result()
            where.setdefault(metadata.partition, []).append(metadata.offset)
        print("records the group never saw, by partition (first, last offset, count):")
        for partition, offsets in sorted(where.items()):
            print(f"  {partition}: {offsets[0]}..{offsets[-1]} ({len(offsets)})")
    redelivered = sum(n - 1 for n in figures.consumed.values() if n > 1)
    print(
        f"records sent {figures.sent}, acknowledged {len(acknowledged)}, failed {figures.failed}, "
        f"unresolved {unresolved}\n"
        f"restarts survived {figures.restarts}\n"
        f"longest stall {figures.longest_stall:.2f}s\n"
        f"lost {len(lost)}, duplicated {len(duplicated)}\n"
        f"group: consumed {sum(figures.consumed.values())}, missed {missed}, "
        f"redelivered after rebalances {redelivered}"
    )
    return 0 if not (lost or duplicated or unresolved or missed) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--restart-every", type=float, default=30.0, help="seconds")
    parser.add_argument("--rate", type=float, default=2_000.0, help="records per second")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        return asyncio.run(soak(args.minutes, args.restart_every, args.rate))
    except errors.KafkaError as exc:
        print(f"soak failed: {exc!r}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
