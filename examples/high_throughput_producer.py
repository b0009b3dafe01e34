"""Produce as fast as the client allows: no await per delivery, compression, big batches.

``send`` returns a delivery handle as soon as the record is in a batch; the loop never waits for
the broker, and the handles are checked once at the end (a real application would check them in
batches, or count failures in a hook).  Prints records/s and the producer's metrics.

Run: ``python examples/high_throughput_producer.py [--bootstrap host:port] [--records N]``.
Without ``--bootstrap`` an embedded Tansu broker is started for the run.  SIGTERM or Ctrl-C stops
the run: the producer closes on the way out and the exit status is 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator

from aiokafkawire import Admin, NewTopic, Producer


@contextlib.contextmanager
def kafka(bootstrap: str | None) -> Iterator[str]:
    """The given bootstrap servers, or an embedded Tansu broker's for the duration."""
    if bootstrap:
        yield bootstrap
        return
    from aiokafkawire.testing import TansuBroker

    with TansuBroker() as broker:
        yield broker.bootstrap_servers


async def produce(bootstrap_servers: str, topic: str, records: int, size: int) -> None:
    async with Admin(bootstrap_servers=bootstrap_servers) as admin:
        await admin.create_topics([NewTopic(topic, 6, 1)], raise_on_error=False)
    # A pool of distinct payloads: generating random bytes per record would cost more than
    # sending them.
    values = [os.urandom(size // 2).hex().encode()[:size] for _ in range(1024)]
    async with Producer(
        bootstrap_servers=bootstrap_servers,
        acks=1,  # the leader's acknowledgement; acks="all" adds replication latency
        compression="lz4",  # cheap on CPU, good on real data
        linger_ms=10,  # let batches fill
        buffer_memory=64 << 20,  # room for the records in flight
    ) as producer:
        await producer.partitions_for(topic)  # metadata and connections before the clock starts
        print(f"producing {records:,} records to {topic}", flush=True)
        started = time.perf_counter()
        send = producer.send
        handles = [await send(topic, values[i & 1023]) for i in range(records)]
        sent = time.perf_counter()
        await producer.flush()
        done = time.perf_counter()
        failed = sum(1 for handle in handles if handle.exception() is not None)
        stats = producer.metrics()["producer"]
    print(
        f"{records:,} records of {size} bytes: sent in {sent - started:.2f}s, delivered in "
        f"{done - started:.2f}s ({records / (done - started):,.0f} records/s), {failed} failed"
    )
    print(
        f"batches {stats['batches_sent']}, {stats['records_per_batch_avg']} records per batch, "
        f"compression ratio {stats['compression_ratio']}, retries {stats['retries']}"
    )
    if failed:
        raise SystemExit(1)


async def run(bootstrap_servers: str, topic: str, records: int, size: int) -> None:
    """``produce``, cancelled by SIGTERM or SIGINT (the producer closes on the way out)."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await produce(bootstrap_servers, topic, records, size)
    except asyncio.CancelledError:
        print("stopped by signal", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="bootstrap servers (default: an embedded broker)")
    parser.add_argument("--topic", default="high-throughput")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="value size in bytes")
    args = parser.parse_args()
    with kafka(args.bootstrap) as bootstrap_servers:
        asyncio.run(run(bootstrap_servers, args.topic, args.records, args.size))


if __name__ == "__main__":
    main()
