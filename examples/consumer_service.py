"""A consumer microservice: group member, manual commits, health endpoint, graceful shutdown.

- Records are processed in batches (``getmany``) and the offsets are committed after each
  batch is processed: a crash re-delivers at most the batch in hand (at-least-once).
- ``GET /health`` (aiohttp) answers from the consumer's own state: the group state, the
  assignment, records processed, the lag per partition and how long ago a batch was processed.
  It answers 503 while the member is not in a stable group.
- SIGTERM or SIGINT stops the loop after the current batch, commits, leaves the group (so the
  partitions move to the other members at once) and exits with status 0.

Run: ``python examples/consumer_service.py [--bootstrap host:port] [--topic T] [--group G]``.
Without ``--bootstrap`` an embedded Tansu broker is started, and a small producer feeds the topic
so there is something to consume.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator, Iterator

from aiohttp import web

from aiokafkawire import Admin, Consumer, ConsumerRecord, NewTopic, Producer


class Service:
    """The consuming loop and the state the health endpoint reports."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.processed = 0
        self.last_batch_at: float | None = None
        self.stopping = asyncio.Event()

    async def process(self, record: ConsumerRecord) -> None:
        """The business logic (here: nothing but counting)."""
        self.processed += 1

    async def run(self) -> None:
        consumer = self.consumer
        while not self.stopping.is_set():
            batches = await consumer.getmany(timeout_ms=500, max_records=200)
            for records in batches.values():
                for record in records:
                    await self.process(record)
            if batches:
                await consumer.commit()  # the positions after the records just processed
                self.last_batch_at = time.monotonic()

    async def health(self, request: web.Request) -> web.Response:
        consumer = self.consumer
        metrics = consumer.metrics()["consumer"]
        stable = consumer.state == "stable"
        body = {
            "status": "ok" if stable else "starting" if not self.stopping.is_set() else "stopping",
            "state": consumer.state,
            "assignment": sorted(f"{tp.topic}-{tp.partition}" for tp in consumer.assignment()),
            "processed": self.processed,
            "lag": metrics["lag"],
            "seconds_since_last_batch": None
            if self.last_batch_at is None
            else round(time.monotonic() - self.last_batch_at, 3),
        }
        return web.json_response(body, status=200 if stable else 503)


@contextlib.asynccontextmanager
async def health_server(service: Service, host: str, port: int) -> AsyncIterator[int]:
    app = web.Application()
    app.router.add_get("/health", service.health)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def feed(bootstrap_servers: str, topic: str) -> None:
    """Demo traffic for the embedded broker: one record every 100 ms."""
    async with Producer(bootstrap_servers=bootstrap_servers) as producer:
        for i in range(1_000_000):
            await producer.send(topic, b"event %d" % i, key=b"%d" % (i % 10))
            await asyncio.sleep(0.1)


async def serve(args: argparse.Namespace, bootstrap_servers: str, demo: bool) -> None:
    async with Admin(bootstrap_servers=bootstrap_servers) as admin:
        await admin.create_topics([NewTopic(args.topic, 3, 1)], raise_on_error=False)
    feeder = asyncio.create_task(feed(bootstrap_servers, args.topic)) if demo else None
    consumer = Consumer(
        args.topic,
        bootstrap_servers=bootstrap_servers,
        group_id=args.group,
        enable_auto_commit=False,  # committed after processing, in Service.run
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=max(args.session_timeout_ms // 10, 100),
    )
    service = Service(consumer)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, service.stopping.set)
    await consumer.start()
    try:
        async with health_server(service, args.host, args.port) as port:
            print(f"health on http://{args.host}:{port}/health", flush=True)
            await service.run()
            print(f"stopping after {service.processed} records", flush=True)
    finally:
        if feeder is not None:
            feeder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await feeder
        await consumer.stop()  # leaves the group: its partitions are reassigned at once
    print("stopped", flush=True)


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
    parser.add_argument("--topic", default="events")
    parser.add_argument("--group", default="consumer-service")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081, help="health port (0: a free one)")
    parser.add_argument("--session-timeout-ms", type=int, default=10_000)
    args = parser.parse_args()
    with kafka(args.bootstrap) as bootstrap_servers:
        asyncio.run(serve(args, bootstrap_servers, demo=args.bootstrap is None))


if __name__ == "__main__":
    main()
