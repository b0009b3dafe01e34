"""The cost of ``Producer.send`` itself, on its C fast path and on its Python path.

Run: ``python benchmarks/bench_send_path.py [--records N] [--rounds R]``.

Three shapes, 100-byte values with 8-byte keys, acks=1, one Tansu broker, 3 partitions: ``fast``
(no headers: the accumulator's C ``Appender`` path), ``headers`` (one header: the Python path,
which checks types), ``pure`` (no headers, ``AIOKAFKAWIRE_PURE_PYTHON=1`` in a child process: the
Python path without the C fast path). Prints the best of ``rounds`` loops in ns of the client
process's CPU time per ``send`` (the loop only, final flush excluded; the broker is another
process, so a loaded machine disturbs this less than wall time). Used for the A/B figures of
argument checking (benchmarks/README.md): run it on two revisions in one sitting and compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time

from aiokafkawire import Admin, NewTopic
from aiokafkawire.producer import Producer
from aiokafkawire.testing import TansuBroker


async def _one_shape(bootstrap: str, shape: str, records: int, rounds: int) -> float:
    topic = f"send-path-{shape}-{time.monotonic_ns()}"
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 3, 1)])
    values = [os.urandom(100) for _ in range(1024)]
    keys = [os.urandom(8) for _ in range(1024)]
    headers = [("trace", b"0123456789abcdef")]
    best = float("inf")
    async with Producer(
        bootstrap_servers=bootstrap, acks=1, linger_ms=5, buffer_memory=256 << 20
    ) as producer:
        await producer.partitions_for(topic)
        send = producer.send
        for _ in range(rounds):
            started = time.process_time()
            if shape == "headers":
                for i in range(records):
                    await send(topic, values[i & 1023], key=keys[i & 1023], headers=headers)
            else:
                for i in range(records):
                    await send(topic, values[i & 1023], key=keys[i & 1023])
            elapsed = time.process_time() - started
            await producer.flush(60)
            best = min(best, elapsed)
    return best / records * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bootstrap", help="use this broker instead of starting Tansu")
    parser.add_argument("--shape", choices=("fast", "headers", "pure"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.shape:  # child process of a run: one shape against the given broker
        result = asyncio.run(_one_shape(args.bootstrap, args.shape, args.records, args.rounds))
        print(json.dumps(result))
        return
    broker = None if args.bootstrap else TansuBroker()
    if broker is not None:
        broker.start()
    try:
        bootstrap = args.bootstrap or broker.bootstrap_servers  # type: ignore[union-attr]
        for shape in ("fast", "headers", "pure"):
            env = dict(os.environ)
            if shape == "pure":
                env["AIOKAFKAWIRE_PURE_PYTHON"] = "1"
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--shape",
                    shape,
                    "--bootstrap",
                    bootstrap,
                    "--records",
                    str(args.records),
                    "--rounds",
                    str(args.rounds),
                ],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            print(f"{shape:8s} {float(out.strip().splitlines()[-1]):8.0f} ns/send")
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
