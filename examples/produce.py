"""Produce records with aiokafkawire: fire-and-collect, send-and-wait, and a transaction.

Run: ``python examples/produce.py [bootstrap_servers] [topic]``.  Without arguments an embedded
Tansu broker is started for the duration of the example.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator

from aiokafkawire.producer import Producer


@contextlib.contextmanager
def broker(argv: list[str]) -> Iterator[str]:
    """The bootstrap servers given on the command line, or an embedded Tansu broker's."""
    if len(argv) > 1:
        yield argv[1]
        return
    from aiokafkawire.testing import TansuBroker

    with TansuBroker() as tansu:
        yield tansu.bootstrap_servers


async def produce(bootstrap_servers: str, topic: str) -> None:
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
            for i in range(1000)
        ]
        last = await handles[-1]
        print(f"1000 records sent; the last is {last}")

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


def main() -> None:
    topic = sys.argv[2] if len(sys.argv) > 2 else "aiokafkawire-example"
    with broker(sys.argv) as bootstrap_servers:
        asyncio.run(produce(bootstrap_servers, topic))


if __name__ == "__main__":
    main()
