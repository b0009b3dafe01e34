"""Consume-transform-produce with transactions: exactly-once from one topic to another.

For each batch read from the input topic, one transaction writes the transformed records to the
output topic *and* commits the consumer's offsets (``send_offsets_to_transaction``): either both
happen or neither does, so a crash never loses or duplicates output for readers that use
``isolation_level="read_committed"``.

What production needs, shown here:

- **A transactional id per instance.**  The consumer group's generation, sent with the offsets
  (KIP-447), is what fences a zombie instance; a fixed id shared by every instance would make
  them fence each other instead.
- **Fatal errors end the loop; only retriable ones retry.**  A fenced producer (another
  instance took over), an authorization failure or any error that is not retriable stops the
  pipeline with status 1; a retriable one aborts the transaction, rewinds the consumer to the
  committed offsets (``seek_to_committed``; partitions with nothing committed yet go back to the
  batch's first offset) and processes the batch again.
- **Tombstones stay tombstones**: a record with a null value is forwarded with a null value.
- **SIGTERM/SIGINT** finish the transaction in hand, then stop (status 0).

Run: ``python examples/transactional_pipeline.py [--bootstrap host:port] [--records N]``.
Without ``--bootstrap`` an embedded Tansu broker is started; the example writes ``N`` input
records first (every tenth a tombstone), runs the pipeline until all are transformed, and
checks the output.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import uuid
from collections.abc import Iterator

from aiokafkawire import Admin, Consumer, KafkaError, NewTopic, Producer, TopicPartition, errors

# Errors after which this instance must stop: retrying cannot help (or another instance owns
# the work now).  Anything else that is not retriable stops the pipeline too.
FATAL = (
    errors.ProducerFencedError,
    errors.ProducerFencedClientError,
    errors.InvalidProducerEpochError,
    errors.TransactionCoordinatorFencedError,
    errors.AuthorizationError,
)


def transactional_id(group: str) -> str:
    """This instance's transactional id: unique per instance (KIP-447 fences zombies by the
    group generation sent with the offsets; a fixed id shared by the instances would make each
    new one fence the others)."""
    return f"{group}-{uuid.uuid4()}"


def transform(value: bytes | None) -> bytes | None:
    """The business logic: upper-case the text; a tombstone (None) stays a tombstone."""
    return None if value is None else value.upper()


async def seed(bootstrap_servers: str, topic: str, records: int) -> None:
    """Write ``records`` input records; every tenth is a tombstone (a null value)."""
    async with Producer(bootstrap_servers=bootstrap_servers) as producer:
        for i in range(records):
            value = None if i % 10 == 9 else b"record %d" % i
            await producer.send(topic, value, key=b"%d" % (i % 10))
        await producer.flush()


async def rewind(consumer: Consumer, batches: dict[TopicPartition, list]) -> None:
    """Back to the committed offsets after an abort; a partition with nothing committed yet
    goes back to the first offset of the batch the aborted transaction read."""
    committed = await consumer.seek_to_committed(*batches)
    for tp, records in batches.items():
        if committed.get(tp) is None:
            consumer.seek(tp, records[0].offset)


async def pipeline(
    bootstrap_servers: str,
    source: str,
    sink: str,
    group: str,
    expected: int,
    timeout: float,
    stop: asyncio.Event | None = None,
) -> int:
    """Transform records from ``source`` to ``sink`` until ``expected`` were done (or ``stop``)."""
    stop = stop or asyncio.Event()
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
        transactional_id=transactional_id(group),
    )
    done = 0
    async with consumer, producer:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        print(f"pipeline running: {source} -> {sink}", flush=True)
        while done < expected and loop.time() < deadline and not stop.is_set():
            batches = await consumer.getmany(timeout_ms=500, max_records=100)
            if not batches:
                continue
            try:
                async with producer.transaction():  # commit on success, abort on exception
                    for records in batches.values():
                        for record in records:
                            await producer.send(sink, transform(record.value), record.key)
                    await producer.send_offsets_to_transaction(
                        {tp: records[-1].offset + 1 for tp, records in batches.items()},
                        group_metadata=consumer.group_metadata(),
                    )
            except KafkaError as exc:
                if isinstance(exc, FATAL) or not exc.retriable:
                    print(f"stopping: {type(exc).__name__}: {exc}", flush=True)
                    raise
                # Aborted: rewind to the last committed offsets and process the batch again.
                print(f"transaction aborted ({exc}); retrying the batch", flush=True)
                await rewind(consumer, batches)
                await asyncio.sleep(0.1)
                continue
            done += sum(len(records) for records in batches.values())
    return done


async def count_committed(bootstrap_servers: str, topic: str, expected: int) -> int:
    """Read ``topic`` as a read_committed consumer would; returns how many records it saw."""
    seen = tombstones = 0
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
            for records in batches.values():
                seen += len(records)
                tombstones += sum(record.value is None for record in records)
    print(f"read_committed reader sees {seen} records ({tombstones} tombstones)", flush=True)
    return seen


async def run(bootstrap_servers: str, records: int, timeout: float) -> None:
    suffix = uuid.uuid4().hex[:8]
    source, sink, group = f"input-{suffix}", f"output-{suffix}", f"pipeline-{suffix}"
    async with Admin(bootstrap_servers=bootstrap_servers) as admin:
        await admin.create_topics([NewTopic(source, 3, 1), NewTopic(sink, 3, 1)])
    await seed(bootstrap_servers, source, records)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        done = await pipeline(bootstrap_servers, source, sink, group, records, timeout, stop)
    except KafkaError:
        raise SystemExit(1) from None  # said why already
    print(f"transformed {done} records from {source} to {sink}", flush=True)
    if stop.is_set():
        print("stopped by signal", flush=True)
        return
    seen = await count_committed(bootstrap_servers, sink, records)
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
