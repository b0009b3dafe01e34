"""Consume a topic as a member of a consumer group, committing after each batch.

python examples/consume.py --bootstrap localhost:9092 --group billing orders payments

Without ``--bootstrap`` an embedded Tansu broker is started and a few records are written to the
topics first, so there is something to read.  ``--max-records N`` stops after N records.
SIGTERM or Ctrl-C stops after the batch in hand: its offsets are committed, the consumer leaves
the group (its partitions move to the other members at once) and the exit status is 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterator

from aiokafkawire import Admin, NewTopic, Producer
from aiokafkawire.consumer import Consumer, ConsumerRebalanceListener
from aiokafkawire.structs import TopicPartition


class PrintingListener(ConsumerRebalanceListener):
    """Shows how partitions move between the group's members."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        print("assigned:", sorted(assigned))

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        print("revoked:", sorted(revoked))


@contextlib.contextmanager
def kafka(bootstrap: str | None) -> Iterator[str]:
    """The given bootstrap servers, or an embedded Tansu broker's for the duration."""
    if bootstrap:
        yield bootstrap
        return
    from aiokafkawire.testing import TansuBroker

    with TansuBroker() as broker:
        yield broker.bootstrap_servers


async def write_demo_records(bootstrap_servers: str, topics: list[str]) -> None:
    async with Admin(bootstrap_servers=bootstrap_servers) as admin:
        await admin.create_topics([NewTopic(t, 2, 1) for t in topics], raise_on_error=False)
    async with Producer(bootstrap_servers=bootstrap_servers) as producer:
        for topic in topics:
            for i in range(10):
                await producer.send(topic, b"demo record %d" % i)


async def consume(args: argparse.Namespace, bootstrap_servers: str, stop: asyncio.Event) -> int:
    """Print records until ``--max-records`` or ``stop``; returns how many were printed."""
    async with Consumer(
        bootstrap_servers=bootstrap_servers,
        group_id=args.group,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        enable_auto_commit=False,
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
        value_deserializer=lambda raw: raw.decode("utf-8", "replace") if raw else raw,
    ) as consumer:
        consumer.subscribe(args.topics, listener=PrintingListener())
        seen = 0
        while (args.max_records is None or seen < args.max_records) and not stop.is_set():
            batches = await consumer.getmany(timeout_ms=1000, max_records=500)
            for tp, records in batches.items():
                for record in records:
                    print(f"{tp.topic}[{tp.partition}]@{record.offset}: {record.value!r}")
                seen += len(records)
            if batches:
                await consumer.commit()  # the positions after what was just printed
    return seen  # leaving the block stops the consumer: it leaves the group


async def run(args: argparse.Namespace, bootstrap_servers: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if args.bootstrap is None:
        args.from_beginning = True
        await write_demo_records(bootstrap_servers, args.topics)
    seen = await consume(args, bootstrap_servers, stop)
    print(f"stopped{' by signal' if stop.is_set() else ''} after {seen} records", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("topics", nargs="*", default=["aiokafkawire-example"])
    parser.add_argument("--bootstrap", help="bootstrap servers (default: an embedded broker)")
    parser.add_argument("--group", default="aiokafkawire-example")
    parser.add_argument("--from-beginning", action="store_true")
    parser.add_argument("--max-records", type=int, help="stop after this many records")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    with kafka(args.bootstrap) as bootstrap_servers:
        asyncio.run(run(args, bootstrap_servers))


if __name__ == "__main__":
    main()
