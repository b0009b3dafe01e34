"""Consume-transform-produce with transactions: exactly-once from one topic to another.

For each batch read from the input topic, one transaction writes the transformed records to the
output topic *and* commits the consumer's offsets (``send_offsets_to_transaction``): either both
happen or neither does, so a crash never loses or duplicates output for readers that use
``isolation_level="read_committed"``.

Run: ``python examples/transactional_pipeline.py [--bootstrap host:port] [--records N]``.
Without ``--bootstrap`` an embedded Tansu broker is started; the example writes ``N`` input
records first, runs the pipeline until all are transformed, and checks the output.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import uuid
from collections.abc import Iterator

from aiokafkawire import Admin, Consumer, KafkaError, NewTopic, Producer


def transform(value: bytes) -> bytes:
    """The business logic: upper-case the text."""
    return value.upper()


async def seed(bootstrap_servers: str, topic: str, records: int) -> None:
    async with Producer(bootstrap_servers=bootstrap_servers) as producer:
        for i in range(records):
            await producer.send(topic, b"record %d" % i, key=b"%d" % (i % 10))
        await producer.flush()


async def pipeline(
    bootstrap_servers: str, source: str, sink: str, group: str, expected: int, timeout: float
) -> int:
    """Transform records from ``source`` to ``sink`` until ``expected`` were done."""
    consumer = Consumer(
        source,
        bootstrap_servers=bootstrap_servers,
        group_id=group,
        enable_auto_commit=False,  # offsets are committed by the transactions
        auto_offset_reset="earliest",
        isolation_level="read_committed",  # upstream transactions' aborted records are skipped
        session_timeout_ms=6_000,
        heartbeat_interval_ms=500,
    )
    producer = Producer(
        bootstrap_servers=bootstrap_servers,
        # One transactional id per input partition set; a restarted instance with the same id
        # fences its predecessor (a "zombie" cannot commit any more).
        transactional_id=f"{group}-pipeline",
    )
    done = 0
    async with consumer, producer:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while done < expected and loop.time() < deadline:
            batches = await consumer.getmany(timeout_ms=500, max_records=100)
            if not batches:
                continue
            try:
                async with producer.transaction():  # commit on success, abort on exception
                    for records in batches.values():
                        for record in records:
                            await producer.send(sink, transform(record.value or b""), record.key)
                    await producer.send_offsets_to_transaction(
                        {tp: records[-1].offset + 1 for tp, records in batches.items()},
                        group_metadata=consumer.group_metadata(),
                    )
            except KafkaError as exc:
                # Aborted: rewind to the last committed offsets and process the batch again.
                print(f"transaction aborted ({exc}); retrying the batch", flush=True)
                await consumer.seek_to_committed(*batches)
                continue
            done += sum(len(records) for records in batches.values())
    return done


async def count_committed(bootstrap_servers: str, topic: str, expected: int) -> int:
    """Read ``topic`` as a read_committed consumer would; returns how many records it saw."""
    seen = 0
    async with Consumer(
        topic,
        bootstrap_servers=bootstrap_servers,
        group_id=f"verify-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        session_timeout_ms=6_000,
        heartbeat_interval_ms=500,
    ) as reader:
        while seen < expected:
            batches = await reader.getmany(timeout_ms=10_000)
            if not batches:
                break
            seen += sum(len(records) for records in batches.values())
    return seen


async def run(bootstrap_servers: str, records: int, timeout: float) -> None:
    suffix = uuid.uuid4().hex[:8]
    source, sink, group = f"input-{suffix}", f"output-{suffix}", f"pipeline-{suffix}"
    async with Admin(bootstrap_servers=bootstrap_servers) as admin:
        await admin.create_topics([NewTopic(source, 3, 1), NewTopic(sink, 3, 1)])
    await seed(bootstrap_servers, source, records)
    done = await pipeline(bootstrap_servers, source, sink, group, records, timeout)
    print(f"transformed {done} records from {source} to {sink}", flush=True)
    seen = await count_committed(bootstrap_servers, sink, records)
    print(f"read_committed reader sees {seen} records in {sink}", flush=True)
    if done != records or seen != records:
        raise SystemExit(1)


@contextlib.contextmanager
def kafka(bootstrap: str | None) -> Iterator[str]:
    """The given bootstrap servers, or an embedded Tansu broker's for the duration."""
    if bootstrap:
        yield bootstrap
        return
    from aiokafkawire.testing import TansuBroker

    with TansuBroker() as broker:
        yield broker.bootstrap_servers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="bootstrap servers (default: an embedded broker)")
    parser.add_argument("--records", type=int, default=1_000)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for the pipeline")
    args = parser.parse_args()
    with kafka(args.bootstrap) as bootstrap_servers:
        asyncio.run(run(bootstrap_servers, args.records, args.timeout))


if __name__ == "__main__":
    main()
