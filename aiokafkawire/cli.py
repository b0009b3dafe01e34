"""Command line: ``python -m aiokafkawire <command>``.

``demo`` starts an embedded broker (extra ``testing``), creates a topic, produces and consumes;
the other commands talk to a cluster given by ``--bootstrap-servers``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from typing import Any

from aiokafkawire import errors


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m aiokafkawire", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="produce and consume on an embedded Tansu broker")
    demo.add_argument("--records", type=int, default=10_000)
    demo.add_argument(
        "--compression", default="lz4", choices=["none", "gzip", "snappy", "lz4", "zstd"]
    )

    def with_bootstrap(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--bootstrap-servers", "-b", default="localhost:9092")
        return p

    with_bootstrap(sub.add_parser("versions", help="API versions negotiated with a broker"))
    with_bootstrap(sub.add_parser("topics", help="list topics"))
    produce = with_bootstrap(sub.add_parser("produce", help="send lines of stdin as records"))
    produce.add_argument("topic")
    produce.add_argument("--key")
    consume = with_bootstrap(sub.add_parser("consume", help="print records of a topic"))
    consume.add_argument("topic")
    consume.add_argument("--group")
    consume.add_argument("--max-records", type=int, default=0)
    consume.add_argument("--timeout-ms", type=int, default=5000)
    return parser


async def _demo(records: int, compression: str) -> int:
    from aiokafkawire import Admin, Consumer, NewTopic, Producer
    from aiokafkawire.testing import TansuBroker

    codec = None if compression == "none" else compression
    async with TansuBroker() as broker:
        servers = broker.bootstrap_servers
        print(f"embedded Tansu broker on {servers}")
        async with Admin(bootstrap_servers=servers) as admin:
            await admin.create_topics([NewTopic("demo", num_partitions=3, replication_factor=1)])
        started = time.perf_counter()
        async with Producer(bootstrap_servers=servers, compression=codec, linger_ms=5) as producer:
            handles = [
                await producer.send("demo", f"value-{i}".encode(), key=f"key-{i % 100}".encode())
                for i in range(records)
            ]
            await producer.flush()
            last = await handles[-1]
        produced = time.perf_counter() - started
        print(
            f"produced {records} records in {produced:.2f}s "
            f"({records / produced:,.0f}/s); last: partition {last.partition} offset {last.offset}"
        )
        started = time.perf_counter()
        seen = 0
        # A short session timeout: Tansu answers a group's first join after half of it.
        async with Consumer(
            "demo",
            bootstrap_servers=servers,
            group_id="demo",
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=1000,
        ) as consumer:
            await consumer.wait_for_assignment(30_000)
            joined = time.perf_counter() - started
            print(f"joined group 'demo' in {joined:.1f}s; assigned {sorted(consumer.assignment())}")
            started = time.perf_counter()
            while seen < records:
                batches = await consumer.getmany(timeout_ms=5000)
                if not batches:
                    print("no more records arrived within 5s", file=sys.stderr)
                    return 1
                seen += sum(len(batch) for batch in batches.values())
            await consumer.commit()
        consumed = time.perf_counter() - started
        print(f"consumed {seen} records in {consumed:.2f}s ({seen / consumed:,.0f}/s)")
    return 0


async def _versions(servers: str) -> int:
    from aiokafkawire.cluster.cluster import Cluster
    from aiokafkawire.protocol import ApiKey

    async with Cluster(servers) as cluster:
        connection = await cluster.any_connection()
        policy = connection.versions
        print(f"{'API':<28} {'broker':>9} {'client':>9} {'used':>5}")
        for key, (lo, hi) in sorted(policy.broker_versions.items()):
            name = ApiKey(key).name if key in ApiKey.__members__.values() else str(key)
            client = policy.client_versions.get(key)
            used = policy.version_for(key) if policy.supports(key) else "-"
            client_text = f"{client[0]}-{client[1]}" if client else "-"
            print(f"{name:<28} {f'{lo}-{hi}':>9} {client_text:>9} {used!s:>5}")
    return 0


async def _topics(servers: str) -> int:
    from aiokafkawire import Admin

    async with Admin(bootstrap_servers=servers) as admin:
        for name in await admin.list_topics():
            print(name)
    return 0


async def _produce(servers: str, topic: str, key: str | None) -> int:
    from aiokafkawire import Producer

    async with Producer(bootstrap_servers=servers) as producer:
        handles = []
        for line in sys.stdin:
            handles.append(
                await producer.send(
                    topic, line.rstrip("\n").encode(), key=key.encode() if key else None
                )
            )
        await producer.flush()
        for handle in handles:
            await handle
    print(f"sent {len(handles)} records to {topic}", file=sys.stderr)
    return 0


async def _consume(
    servers: str, topic: str, group: str | None, max_records: int, timeout_ms: int
) -> int:
    from aiokafkawire import Consumer

    count = 0
    options: dict[str, Any] = {"bootstrap_servers": servers, "auto_offset_reset": "earliest"}
    if group:
        options["group_id"] = group
    async with Consumer(topic, **options) as consumer:
        while not max_records or count < max_records:
            batches = await consumer.getmany(timeout_ms=timeout_ms)
            if not batches:
                break
            for records in batches.values():
                for record in records:
                    print(f"{record.partition}:{record.offset}\t{record.key!r}\t{record.value!r}")
                    count += 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "demo":
            return asyncio.run(_demo(args.records, args.compression))
        if args.command == "versions":
            return asyncio.run(_versions(args.bootstrap_servers))
        if args.command == "topics":
            return asyncio.run(_topics(args.bootstrap_servers))
        if args.command == "produce":
            return asyncio.run(_produce(args.bootstrap_servers, args.topic, args.key))
        if args.command == "consume":
            return asyncio.run(
                _consume(
                    args.bootstrap_servers,
                    args.topic,
                    args.group,
                    args.max_records,
                    args.timeout_ms,
                )
            )
    except errors.KafkaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 1
