"""Produce records with aiokafkawire: fire-and-collect, send-and-wait, and a transaction.

Run: ``python examples/produce.py [bootstrap_servers] [topic] [--records N]``.  Without
arguments an embedded Tansu broker is started for the duration of the example.  SIGTERM or Ctrl-C
stops it: the send in hand is abandoned, the producer closes (an open transaction is aborted) and
the exit status is 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Iterator

from aiokafkawire.producer import Producer


@contextlib.contextmanager
def broker(bootstrap: str | None) -> Iterator[str]:
    """The bootstrap servers given on the command line, or an embedded Tansu broker's."""
    if bootstrap:
        yield bootstrap
        return
    from aiokafkawire.testing import TansuBroker

    with TansuBroker() as tansu:
        yield tansu.bootstrap_servers


async def produce(bootstrap_servers: str, topic: str, records: int) -> None:
    print(f"sending {records} records to {topic}", flush=True)
    async with Producer(
        bootstrap_servers=bootstrap_servers,
        acks="all",  # idempotent by default: retries never duplicate or reorder
        compression="lz4",
        linger_ms=5,
        allow_auto_create_topics=True,
    ) as producer:
        # send() returns as soon as the record is in a batch; await the handles later.
        handles = [
            await producer.send(
                topic, b"value-%d" % i, key=b"key-%d" % (i % 10), headers=[("source", b"example")]
            )
            for i in range(records)
        ]
        last = await handles[-1]
        print(f"{records} records sent; the last is {last}")

        metadata = await producer.send_and_wait(topic, b"one more", key=b"key-0")
        print(f"send_and_wait: partition {metadata.partition}, offset {metadata.offset}")
        await producer.flush()

    async with Producer(
        bootstrap_servers=bootstrap_servers,
        transactional_id="example-transactional-producer",
    ) as producer:
        async with producer.transaction():  # commits, or aborts if the block raises
            for i in range(10):
                await producer.send(topic, b"in a transaction %d" % i, partition=0)
        print("transaction committed")


async def run(bootstrap_servers: str, topic: str, records: int) -> None:
    """``produce``, cancelled by SIGTERM or SIGINT: leaving the ``async with`` blocks closes the
    producers on the way out."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await produce(bootstrap_servers, topic, records)
    except asyncio.CancelledError:
        print("stopped by signal", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap", nargs="?", help="bootstrap servers (default: embedded)")
    parser.add_argument("topic", nargs="?", default="aiokafkawire-example")
    parser.add_argument("--records", type=int, default=1000)
    args = parser.parse_args()
    with broker(args.bootstrap) as bootstrap_servers:
        asyncio.run(run(bootstrap_servers, args.topic, args.records))


if __name__ == "__main__":
    main()
