"""A web service that produces to Kafka from its request handlers (aiohttp).

One producer is shared by every request: it starts with the application and is flushed and
closed when the application stops.  ``POST /orders`` awaits the delivery of the record before
answering (so the client knows it is stored), for at most ``--send-timeout`` seconds: a handler
must not hang on a cluster that does not answer.  Errors become the status a client can act on:
a record too large is 413 (sending it again will not help), a retriable error or a timeout 503
with ``Retry-After``, anything else 500.  ``GET /health`` is 200 only while the producer can
deliver: it is open, the cluster answers (a metadata request, bounded to ``HEALTH_TIMEOUT_S``, so a
stopped broker fails the probe even when no order arrives), its buffer is not (nearly) full, and
deliveries are not failing now.

Run: ``python examples/web_service.py [--bootstrap host:port] [--port 8080] [--topic orders]``,
then ``curl -X POST localhost:8080/orders -d '{"id": 1}'``.  Without ``--bootstrap`` an embedded
Tansu broker is started for the lifetime of the service.  Ctrl-C (or SIGTERM) stops it cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator, Iterator

from aiohttp import web

from aiokafkawire import Admin, KafkaError, NewTopic, Producer, errors

PRODUCER = web.AppKey("producer", Producer)
ADMIN = web.AppKey("admin", Admin)
TOPIC = web.AppKey("topic", str)
SEND_TIMEOUT = web.AppKey("send_timeout", float)
DELIVERIES = web.AppKey("deliveries", "Deliveries")

# How long /health waits for the cluster to answer (a probe's own timeout is usually 1-5 s).
HEALTH_TIMEOUT_S = 2.0


class Deliveries:
    """For ``/health``: whether the producer is running, and whether deliveries fail now."""

    def __init__(self) -> None:
        self.running = False
        self.last_error: str | None = None

    def succeeded(self) -> None:
        self.last_error = None

    def failed(self, exc: BaseException) -> None:
        self.last_error = f"{type(exc).__name__}: {exc}"


def error_response(exc: Exception) -> web.Response:
    """The HTTP answer for a failed send: what the client can do about it."""
    if isinstance(exc, (errors.RecordTooLargeError, errors.MessageTooLargeError)):
        # The record will never fit (the client's max_request_size or the topic's
        # max.message.bytes): 413, not a "try again later".
        return web.json_response({"error": str(exc)}, status=413)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or (
        isinstance(exc, KafkaError) and exc.retriable
    ):
        return web.json_response(
            {"error": f"Kafka is not accepting records now: {exc or 'timed out'}"},
            status=503,
            headers={"Retry-After": "1"},
        )
    # Not retriable (authorization, an invalid topic, a closed producer): the service is wrong,
    # not the request; a 500 says so and the message goes to the log.
    return web.json_response({"error": f"{type(exc).__name__}: {exc}"}, status=500)


async def create_order(request: web.Request) -> web.Response:
    """Store the posted JSON document in Kafka, keyed by its ``id``; answer with its offset."""
    try:
        order = await request.json()
    except json.JSONDecodeError:
        return web.json_response({"error": "the body must be JSON"}, status=400)
    key = str(order.get("id", "")).encode() if isinstance(order, dict) else None
    producer = request.app[PRODUCER]
    deliveries = request.app[DELIVERIES]
    try:
        # send_and_wait: the record is written (acks="all") when this returns.  Bounded: past
        # the timeout the client gets a 503 (the record may still be delivered later, so
        # clients retrying should send an idempotency key, here the order id).
        metadata = await asyncio.wait_for(
            producer.send_and_wait(request.app[TOPIC], json.dumps(order).encode(), key=key or None),
            request.app[SEND_TIMEOUT],
        )
    except (KafkaError, asyncio.TimeoutError) as exc:
        if not isinstance(exc, (errors.RecordTooLargeError, errors.MessageTooLargeError)):
            deliveries.failed(exc)  # the record's own size says nothing about the cluster
        return error_response(exc)
    deliveries.succeeded()
    return web.json_response(
        {"topic": metadata.topic, "partition": metadata.partition, "offset": metadata.offset},
        status=201,
    )


async def health(request: web.Request) -> web.Response:
    """200 while the producer can deliver, else 503 with the reason; a few producer figures
    (from ``producer.metrics()``, whose rates do not depend on how often this is called)."""
    producer = request.app[PRODUCER]
    stats = producer.metrics()["producer"]
    problems = []
    if not request.app[DELIVERIES].running:
        problems.append("the producer is not running (starting or stopping)")
    if stats["buffer_use"] > 0.9:
        problems.append(f"the send buffer is {stats['buffer_use']:.0%} full")
    last_error = request.app[DELIVERIES].last_error
    if last_error is not None:
        problems.append(f"the latest delivery failed: {last_error}")
    cluster_problem = await cluster_answers(request.app[ADMIN])
    if cluster_problem is not None:
        problems.append(cluster_problem)
    return web.json_response(
        {
            "status": "failing" if problems else "ok",
            "problems": problems,
            "records_sent": stats["records_sent"],
            "records_per_sec": stats["records_per_sec"],
            "buffer_use": stats["buffer_use"],
            "batch_errors": stats["batch_errors"],
        },
        status=503 if problems else 200,
    )


async def cluster_answers(admin: Admin) -> str | None:
    """None when the cluster answers a metadata request within ``HEALTH_TIMEOUT_S``, else why
    not.  Without this, an idle service would say "ok" against a cluster that is gone."""
    try:
        await asyncio.wait_for(admin.describe_cluster(), HEALTH_TIMEOUT_S)
    except (KafkaError, asyncio.TimeoutError) as exc:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else f"no answer in {HEALTH_TIMEOUT_S}s"
        return f"the cluster does not answer: {reason}"
    return None


def make_app(
    bootstrap_servers: str,
    topic: str,
    send_timeout: float = 10.0,
    max_request_size: int = 1_048_576,
) -> web.Application:
    """The aiohttp application; the producer lives exactly as long as it does."""
    app = web.Application(client_max_size=max_request_size * 2)
    app[TOPIC] = topic
    app[SEND_TIMEOUT] = send_timeout
    app[DELIVERIES] = Deliveries()

    async def kafka_producer(app: web.Application) -> AsyncIterator[None]:
        producer = Producer(
            bootstrap_servers=bootstrap_servers,
            acks="all",
            linger_ms=2,
            max_request_size=max_request_size,
            # send() itself waits no longer than a request may (buffer full, metadata).
            max_block_ms=int(send_timeout * 1000),
        )
        # The admin client creates the topic, then is /health's probe of the cluster.
        async with Admin(bootstrap_servers=bootstrap_servers) as admin:
            # The topic may exist already (a restarted service): that is not a failure here.
            await admin.create_topics([NewTopic(topic, 3, 1)], raise_on_error=False)
            await producer.start()
            app[ADMIN], app[PRODUCER] = admin, producer
            app[DELIVERIES].running = True
            try:
                yield
            finally:
                app[DELIVERIES].running = False
                # Delivers what is still buffered, then disconnects. Bounded: with the cluster
                # gone a buffered record would otherwise wait out delivery_timeout_ms (2 min),
                # as with the Java client's close(); what is left after it fails, logged.
                await producer.close(timeout=send_timeout * 2)

    app.cleanup_ctx.append(kafka_producer)
    app.router.add_post("/orders", create_order)
    app.router.add_get("/health", health)
    return app


@contextlib.contextmanager
def kafka(bootstrap: str | None) -> Iterator[str]:
    """The given bootstrap servers, or an embedded Tansu broker's for the duration."""
    if bootstrap:
        yield bootstrap
        return
    from aiokafkawire.testing import TansuBroker

    with TansuBroker() as broker:
        yield broker.bootstrap_servers


async def serve(args: argparse.Namespace, bootstrap_servers: str) -> None:
    topic, host, port = args.topic, args.host, args.port
    runner = web.AppRunner(
        make_app(bootstrap_servers, topic, args.send_timeout, args.max_request_size)
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    print(f"listening on http://{host}:{bound} (topic {topic!r})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    print("stopping", flush=True)
    await runner.cleanup()  # runs the producer's cleanup: flush and close


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="bootstrap servers (default: an embedded broker)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument("--topic", default="orders")
    parser.add_argument(
        "--send-timeout", type=float, default=10.0, help="seconds a request waits for Kafka"
    )
    parser.add_argument(
        "--max-request-size", type=int, default=1_048_576, help="largest record (bytes)"
    )
    args = parser.parse_args()
    with kafka(args.bootstrap) as bootstrap_servers:
        asyncio.run(serve(args, bootstrap_servers))


if __name__ == "__main__":
    main()
