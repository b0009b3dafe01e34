"""The cost of one request on a ``BrokerConnection``: framing, bookkeeping, metrics counters.

Run: ``python benchmarks/bench_requests.py [--requests N] [--rounds R] [--bootstrap host:port]``.

Sends ``N`` ApiVersions requests, five in flight at a time (the default pipelining depth), to one
Tansu broker and prints the best of ``rounds``: the client process's CPU time per request (the
broker runs in its own process, so this is the client's cost alone) and the wall time.  Compare
revisions in one sitting on the same machine (the A/B of per-request metrics: benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from aiokafkawire.net.connection import BrokerConnection
from aiokafkawire.protocol.messages import ApiVersionsRequest
from aiokafkawire.testing import TansuBroker


async def measure(bootstrap: str, requests: int, rounds: int) -> tuple[float, float]:
    host, port = bootstrap.rsplit(":", 1)
    connection = await BrokerConnection.open(host, int(port))
    request = ApiVersionsRequest(client_software_name="bench", client_software_version="1")
    version = connection.versions.version_for(ApiVersionsRequest.API_KEY)
    best_cpu = best_wall = float("inf")
    try:
        for _ in range(rounds):
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(requests // 5):
                await asyncio.gather(*(connection.send(request, version) for _ in range(5)))
            best_cpu = min(best_cpu, time.process_time() - cpu)
            best_wall = min(best_wall, time.perf_counter() - wall)
    finally:
        connection.close()
    return best_cpu / requests * 1e6, best_wall / requests * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bootstrap", help="use this broker instead of starting Tansu")
    args = parser.parse_args()
    if args.bootstrap:
        cpu, wall = asyncio.run(measure(args.bootstrap, args.requests, args.rounds))
    else:
        with TansuBroker() as broker:
            cpu, wall = asyncio.run(measure(broker.bootstrap_servers, args.requests, args.rounds))
    print(f"client CPU {cpu:.2f} us/request, wall {wall:.1f} us/request")


if __name__ == "__main__":
    main()
