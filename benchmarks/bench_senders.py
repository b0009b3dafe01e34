"""Many concurrent senders: does throughput hold as the number of sending coroutines grows?

Run: ``python benchmarks/bench_senders.py [--records N] [--senders 1,10,100,1000,10000]``.

The same number of records (100,000 by default: workload 6's size) is sent by 1, 10, 100, ...
coroutines at once, each sending its share with ``await producer.send(...)`` and then awaiting
every handle it got (as workload 6 of ``run.py`` does with 1,000).  100-byte values, 8-byte keys,
3 partitions, acks=1, lz4, linger 5 ms, one Tansu broker; a fresh producer and topic per run,
client start-up excluded.  With ``--aiokafka`` it runs aiokafka the same way (its ``send``
returns a future per record).  Prints records/s per sender count and relative to one sender.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from bench_producer import create_topic
from workloads.common import POOL_MASK, payloads

from aiokafkawire.producer import Producer
from aiokafkawire.testing import TansuBroker


async def _senders(producer: Any, topic: str, senders: int, total: int) -> float:
    values, keys = payloads(100, 8)
    each = total // senders
    send = producer.send

    async def sender(n: int) -> None:
        handles = []
        for i in range(n * each, n * each + each):
            handles.append(await send(topic, values[i & POOL_MASK], key=keys[i & POOL_MASK]))
        for handle in handles:
            await handle

    await producer.partitions_for(topic)
    started = time.perf_counter()
    await asyncio.gather(*(sender(n) for n in range(senders)))
    await producer.flush()
    return time.perf_counter() - started


async def run_ours(bootstrap: str, topic: str, senders: int, total: int) -> float:
    async with Producer(
        bootstrap_servers=bootstrap, acks=1, compression="lz4", linger_ms=5
    ) as producer:
        return await _senders(producer, topic, senders, total)


async def run_aiokafka(bootstrap: str, topic: str, senders: int, total: int) -> float:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks=1, compression_type="lz4", linger_ms=5
    )
    await producer.start()
    try:
        return await _senders(producer, topic, senders, total)
    finally:
        await producer.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--senders", default="1,10,100,1000,10000")
    parser.add_argument("--aiokafka", action="store_true", help="also run aiokafka")
    args = parser.parse_args()
    counts = [int(c) for c in args.senders.split(",")]
    clients = {"aiokafkawire": run_ours}
    if args.aiokafka:
        clients["aiokafka"] = run_aiokafka
    with TansuBroker() as broker:
        bootstrap = broker.bootstrap_servers
        print(f"Tansu at {bootstrap}; {args.records:,} records per run")
        for name, runner in clients.items():
            base = None
            for senders in counts:
                total = args.records // senders * senders
                elapsed = asyncio.run(runner(bootstrap, create_topic(bootstrap), senders, total))
                rate = total / elapsed
                base = base or rate
                print(
                    f"{name:<13} {senders:>6,} senders  {rate:>11,.0f} records/s  "
                    f"({rate / base:.2f} of 1 sender)"
                )


if __name__ == "__main__":
    main()
