"""A consumer microservice: group member, manual commits, health endpoint, graceful shutdown.

- Records are processed in batches (``getmany``) and the offsets are committed after each
  batch is processed: a crash re-delivers at most the batch in hand (at-least-once).
- A commit can fail with ``CommitFailedError`` when a rebalance gave the partitions to another
  member meanwhile: that member starts from the last committed offset, so the batch is processed
  again there (at-least-once); the service logs it, counts it, and goes on.
- Liveness and readiness are separate (aiohttp): ``GET /health/live`` is 200 while the loop
  polls (so a liveness probe never kills a pod that is just rebalancing), 503 when it is stuck or
  has failed; ``GET /health/ready`` (and ``GET /health``) is 200 while the member is in a stable
  group and the cluster answers (a metadata request bounded to ``HEALTH_TIMEOUT_S``: a member
  keeps its "stable" state while the brokers are gone), 503 during a rebalance or while the
  cluster does not answer.  Both report the group state, the assignment, records
  processed, the lag per partition and how long ago the loop last polled.
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

from aiokafkawire import Admin, Consumer, ConsumerRecord, KafkaError, NewTopic, Producer, errors

# The loop is "stuck" (liveness fails) when it has not polled for this long.
STUCK_AFTER_S = 60.0
# How long the readiness probe waits for the cluster to answer a metadata request.
HEALTH_TIMEOUT_S = 2.0


class Service:
    """The consuming loop and the state the health endpoint reports."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.processed = 0
        self.commit_failures = 0
        self.last_batch_at: float | None = None
        self.last_poll_at = time.monotonic()
        self.failed: str | None = None
        self.stopping = asyncio.Event()

    async def process(self, record: ConsumerRecord) -> None:
        """The business logic (here: nothing but counting)."""
        self.processed += 1

    async def run(self) -> None:
        try:
            await self._loop()
        except Exception as exc:  # a fatal error: liveness fails, the process exits non-zero
            self.failed = f"{type(exc).__name__}: {exc}"
            raise

    async def _loop(self) -> None:
        consumer = self.consumer
        while not self.stopping.is_set():
            batches = await consumer.getmany(timeout_ms=500, max_records=200)
            self.last_poll_at = time.monotonic()
            for records in batches.values():
                for record in records:
                    await self.process(record)
            if batches:
                await self.commit()
                self.last_batch_at = time.monotonic()

    async def commit(self) -> None:
        """Commit the positions after the records just processed."""
        try:
            await self.consumer.commit()
        except errors.CommitFailedError as exc:
            # A rebalance moved (some of) the partitions: their new owner starts from the last
            # committed offset and processes this batch again.  Not fatal: the loop goes on
            # with the partitions this member has now.
            self.commit_failures += 1
            print(f"commit failed, the batch will be processed again: {exc}", flush=True)

    def _report(self, status: str) -> dict[str, object]:
        consumer = self.consumer
        return {
            "status": status,
            "state": consumer.state,
            "assignment": sorted(f"{tp.topic}-{tp.partition}" for tp in consumer.assignment()),
            "processed": self.processed,
            "commit_failures": self.commit_failures,
            "lag": consumer.metrics()["consumer"]["lag"],
            "seconds_since_last_poll": round(time.monotonic() - self.last_poll_at, 3),
            "seconds_since_last_batch": None
            if self.last_batch_at is None
            else round(time.monotonic() - self.last_batch_at, 3),
            "error": self.failed,
        }

    async def live(self, request: web.Request) -> web.Response:
        """Liveness: the loop runs and polls; a rebalance does not make it fail."""
        stuck = time.monotonic() - self.last_poll_at > STUCK_AFTER_S
        alive = self.failed is None and not stuck
        status = "ok" if alive else "failed" if self.failed else "stuck"
        return web.json_response(self._report(status), status=200 if alive else 503)

    async def ready(self, request: web.Request) -> web.Response:
        """Readiness: a member of a stable group, and the cluster answers (503 while joining,
        rebalancing, or cut off from the brokers)."""
        consumer = self.consumer
        stable = consumer.state == "stable" and self.failed is None
        status = "ok" if stable else "stopping" if self.stopping.is_set() else "starting"
        if stable:
            try:
                await asyncio.wait_for(consumer.topics(), HEALTH_TIMEOUT_S)
            except (KafkaError, asyncio.TimeoutError) as exc:
                stable, status = False, f"the cluster does not answer: {type(exc).__name__} {exc}"
        return web.json_response(self._report(status), status=200 if stable else 503)


@contextlib.asynccontextmanager
async def health_server(service: Service, host: str, port: int) -> AsyncIterator[int]:
    app = web.Application()
    app.router.add_get("/health/live", service.live)
    app.router.add_get("/health/ready", service.ready)
    app.router.add_get("/health", service.ready)
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
