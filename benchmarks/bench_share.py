#!/usr/bin/env python3
"""Share-group throughput: a group of 3 aiokafkawire ShareConsumers against 3 confluent-kafka
ShareConsumers (one thread each), on the same topic, in the same acknowledgement mode.

::

    python benchmarks/bench_share.py                      # 200,000 records, 2 partitions, 3 reps
    python benchmarks/bench_share.py --records 50000 --repetitions 1 --ack-mode explicit
    python benchmarks/bench_share.py --ack-mode both   # results/share.json, share_explicit.json

Starts one Apache Kafka 4.x broker (``aiokafkawire.testing.KafkaCluster``, share groups on),
creates one topic, fills it once (100-byte values), then runs each (client, repetition) in its own
child process with a fresh share group that starts at the earliest offset, so every run reads the
same records.  Repetitions alternate between the clients (and which one goes first).  A run ends
when the group has received every record; it reports

- ``records/s``: records over the time from the first record received to the last one (the
  steady state: joining the group is excluded), and
- ``join_s``: time from starting the consumers to the first record;
- ``warm_records_per_s`` and ``cpu_us_per_record``: after a warm-up (the first ``WARMUP`` of the
  records), records/s and the process's CPU time (user + system, all threads, ``os.times``) per
  record until the last one: the steady state, and the cost a user pays on their own hosts.

Each of our consumers runs in the same event loop (one process, one core for Python), as an
asyncio service would host them; confluent-kafka's consumers each have a thread (librdkafka's
own threads do the fetching).  In ``implicit`` mode each poll accepts the previous poll's
records; in ``explicit`` mode every record is acknowledged ACCEPT by the application.  Each
mode prints its medians, ``ratio`` / ``warm_ratio`` / ``cpu_ratio`` (ours / confluent-kafka's)
and the load average before and after (each run's line has the load then); ``both`` runs the
two modes on one broker and topic, one after the other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CONSUMERS = 3
#: Share of the records received before the warm meter starts.
WARMUP = 0.2
BROKER_CONFIG = {
    # Heartbeats carry assignments: a short interval keeps the join out of the measurement.
    "group.share.min.heartbeat.interval.ms": 500,
    "group.share.heartbeat.interval.ms": 500,
}


# --------------------------------------------------------------------------- workers


class _Meter:
    """Wall-clock and CPU time (user + system, every thread of the process) between a mark
    taken once ``warm_at`` records have arrived and the last record."""

    def __init__(self, records: int) -> None:
        self.warm_at = max(1, int(records * WARMUP))
        self.first = self.last = self.warm = 0.0
        self.warm_cpu = self.last_cpu = 0.0
        self.warm_received = self.received = 0

    def add(self, total: int) -> None:
        """More records arrived: ``total`` so far, all consumers together."""
        if not self.first:
            self.first = time.perf_counter()
        if not self.warm and total >= self.warm_at:
            self.warm, self.warm_cpu, self.warm_received = time.perf_counter(), _cpu(), total

    def end(self, total: int) -> None:
        """The last record arrived."""
        if not self.last:
            self.last, self.last_cpu, self.received = time.perf_counter(), _cpu(), total

    def result(self, started: float, per_consumer: list[int]) -> dict[str, Any]:
        """The run's figures (see the module docstring)."""
        warm_records = max(self.received - self.warm_received, 1)
        return {
            "records": self.received,
            "records_per_s": self.received / max(self.last - self.first, 1e-9),
            "warm_records_per_s": warm_records / max(self.last - self.warm, 1e-9),
            "cpu_us_per_record": (self.last_cpu - self.warm_cpu) / warm_records * 1e6,
            "join_s": self.first - started,
            "total_s": self.last - started,
            "per_consumer": per_consumer,
        }


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


async def _ours(bootstrap: str, topic: str, group: str, records: int, mode: str) -> dict[str, Any]:
    from aiokafkawire import ShareConsumer

    received = 0
    meter = _Meter(records)
    done = asyncio.Event()
    consumers = [
        ShareConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            acknowledgement_mode=mode,
            client_id=f"bench-{i}",
        )
        for i in range(CONSUMERS)
    ]
    per_consumer = [0] * CONSUMERS

    async def run(index: int, consumer: Any) -> None:
        nonlocal received
        while not done.is_set():
            batch = await consumer.getmany(timeout_ms=100)
            for part in batch.values():
                if mode == "explicit":
                    for record in part:
                        consumer.acknowledge(record, "accept")
                received += len(part)
                meter.add(received)
                per_consumer[index] += len(part)
            if received >= records:
                meter.end(received)
                done.set()
        await consumer.commit()

    started = time.perf_counter()
    for consumer in consumers:
        await consumer.start()
    try:
        await asyncio.gather(*(run(i, c) for i, c in enumerate(consumers)))
    finally:
        for consumer in consumers:
            await consumer.close()
    return meter.result(started, per_consumer)


def _confluent(bootstrap: str, topic: str, group: str, records: int, mode: str) -> dict[str, Any]:
    from confluent_kafka import ShareConsumer

    lock = threading.Lock()
    received = 0
    meter = _Meter(records)
    done = threading.Event()
    per_consumer = [0] * CONSUMERS
    problems: list[str] = []

    def run(index: int) -> None:
        nonlocal received
        consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": f"bench-{index}",
                "share.acknowledgement.mode": mode,
            }
        )
        try:
            consumer.subscribe([topic])
            while not done.is_set():
                messages = list(consumer.poll(0.1) or [])
                good = 0
                for message in messages:
                    if message.error() is not None:
                        problems.append(str(message.error()))
                        continue
                    if mode == "explicit":
                        consumer.acknowledge(message)
                    good += 1
                if good:
                    with lock:
                        received += good
                        meter.add(received)
                        per_consumer[index] += good
                        if received >= records:
                            meter.end(received)
                            done.set()
            consumer.commit_sync()
        finally:
            consumer.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(CONSUMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if problems:
        raise RuntimeError(f"confluent-kafka errors: {problems[:3]}")
    return meter.result(started, per_consumer)


def worker(args: argparse.Namespace) -> None:
    """One measured run (child process): prints one JSON line."""
    if args.worker == "aiokafkawire":
        result = asyncio.run(
            _ours(args.bootstrap, args.topic, args.group, args.records, args.ack_mode)
        )
    else:
        result = _confluent(args.bootstrap, args.topic, args.group, args.records, args.ack_mode)
    print(json.dumps(result), flush=True)


# --------------------------------------------------------------------------- driver


async def _prepare(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    from aiokafkawire import Admin, NewTopic, Producer

    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    value = b"x" * 100
    async with Producer(bootstrap_servers=bootstrap, linger_ms=5, acks=1) as producer:
        for i in range(records):
            await producer.send(topic, value=value, partition=i % partitions)
        await producer.flush()


async def _new_group(bootstrap: str, group: str) -> None:
    from aiokafkawire import Admin
    from aiokafkawire.admin import ConfigResource, ResourceType

    async with Admin(bootstrap_servers=bootstrap) as admin:
        results = await admin.alter_configs(
            {ConfigResource(ResourceType.GROUP, group): {"share.auto.offset.reset": "earliest"}}
        )
        for result in results.values():
            if result.error is not None:
                raise result.error


def _versions() -> dict[str, str]:
    import confluent_kafka

    import aiokafkawire

    return {
        "aiokafkawire": aiokafkawire.__version__,
        "confluent-kafka": confluent_kafka.version(),
        "librdkafka": confluent_kafka.libversion()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument(
        "--ack-mode",
        choices=("implicit", "explicit", "both"),
        default="implicit",
        help="both: implicit then explicit on one broker (--output, and *_explicit.json)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="per run, seconds")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/share.json")
    parser.add_argument("--worker", choices=("aiokafkawire", "confluent-kafka"))
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--group")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    from aiokafkawire.testing import KafkaCluster

    modes = ("implicit", "explicit") if args.ack_mode == "both" else (args.ack_mode,)
    with KafkaCluster(config=BROKER_CONFIG) as cluster:
        bootstrap = cluster.bootstrap_servers
        topic = f"bench-share-{uuid.uuid4().hex[:6]}"
        asyncio.run(_prepare(bootstrap, topic, args.partitions, args.records))
        for mode in modes:
            output = args.output
            if args.ack_mode == "both" and mode == "explicit":
                output = output.with_name(f"{output.stem}_explicit{output.suffix}")
            _measure(args, bootstrap, topic, mode, output)


def _measure(args: argparse.Namespace, bootstrap: str, topic: str, mode: str, output: Path) -> None:
    """The alternated runs of one acknowledgement mode; their summary goes to ``output``."""
    clients = ("aiokafkawire", "confluent-kafka")
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {client: [] for client in clients}
    for repetition in range(args.repetitions):
        # Alternate who goes first: the first run on a fresh topic pays the broker's warm-up.
        for client in clients if repetition % 2 == 0 else clients[::-1]:
            result = _run_worker(args, bootstrap, topic, mode, client, repetition)
            if result is None:
                continue
            runs[client].append(result)
            print(
                f"{mode} rep {repetition + 1} {client:16s}"
                f" {result['records_per_s']:>10,.0f} records/s"
                f"  warm {result['warm_records_per_s']:>10,.0f}/s"
                f"  {result['cpu_us_per_record']:.2f} us CPU/record"
                f"  join {result['join_s']:.2f}s  split {result['per_consumer']}"
                f"  load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    summary = _summary(args, mode, runs, load_before)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(summary, indent=2) + "\n")
    shown = (
        "ack_mode",
        "median_records_per_s",
        "median_warm_records_per_s",
        "median_cpu_us_per_record",
        "ratio",
        "warm_ratio",
        "cpu_ratio",
        "load_average_before",
        "load_average_after",
    )
    print(json.dumps({k: summary[k] for k in shown if k in summary}), flush=True)


def _run_worker(
    args: argparse.Namespace, bootstrap: str, topic: str, mode: str, client: str, repetition: int
) -> dict[str, Any] | None:
    """One client's run in a child process with a fresh share group (None: it failed)."""
    group = f"bench-{client}-{mode}-{repetition}-{uuid.uuid4().hex[:6]}"
    asyncio.run(_new_group(bootstrap, group))
    command = [sys.executable, __file__, "--worker", client, "--bootstrap", bootstrap]
    command += ["--topic", topic, "--group", group, "--records", str(args.records)]
    command += ["--ack-mode", mode]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, env=env)
    if done.returncode != 0:
        print(f"{mode} {client} rep {repetition + 1} failed:\n{done.stderr[-2000:]}")
        return None
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _summary(
    args: argparse.Namespace,
    mode: str,
    runs: dict[str, list[dict[str, Any]]],
    load_before: tuple[float, float, float],
) -> dict[str, Any]:
    medians, warm, cpu = (
        {
            client: statistics.median(r[key] for r in results)
            for client, results in runs.items()
            if results
        }
        for key in ("records_per_s", "warm_records_per_s", "cpu_us_per_record")
    )
    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu_count": os.cpu_count(),
        # The machine is shared: its load (1, 5, 15 min) says how much to trust the figures.
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "python": sys.version.split()[0],
        "versions": _versions(),
        "records": args.records,
        "partitions": args.partitions,
        "consumers": CONSUMERS,
        "ack_mode": mode,
        "runs": runs,
        "median_records_per_s": medians,
        "median_warm_records_per_s": warm,
        "median_cpu_us_per_record": cpu,
    }
    if len(medians) == 2:
        summary["ratio"] = medians["aiokafkawire"] / medians["confluent-kafka"]
        summary["warm_ratio"] = warm["aiokafkawire"] / warm["confluent-kafka"]
        summary["cpu_ratio"] = cpu["aiokafkawire"] / cpu["confluent-kafka"]
    return summary


if __name__ == "__main__":
    main()
