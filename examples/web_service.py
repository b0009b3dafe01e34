"""A web service that produces to Kafka from its request handlers (aiohttp).

One producer is shared by every request: it starts with the application and is flushed and
closed when the application stops.  ``POST /orders`` awaits the delivery of the record before
answering (so the client knows it is stored); ``GET /health`` reports the producer's state.

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

from aiokafkawire import Admin, KafkaError, NewTopic, Producer

PRODUCER = web.AppKey("producer", Producer)
TOPIC = web.AppKey("topic", str)


async def create_order(request: web.Request) -> web.Response:
    """Store the posted JSON document in Kafka, keyed by its ``id``; answer with its offset."""
    try:
        order = await request.json()
    except json.JSONDecodeError:
        return web.json_response({"error": "the body must be JSON"}, status=400)
    key = str(order.get("id", "")).encode() if isinstance(order, dict) else None
    producer = request.app[PRODUCER]
    try:
        # send_and_wait: the record is written (acks="all") when this returns.
        metadata = await producer.send_and_wait(
            request.app[TOPIC], json.dumps(order).encode(), key=key or None
        )
    except KafkaError as exc:
        return web.json_response({"error": str(exc)}, status=503)
    return web.json_response(
        {"topic": metadata.topic, "partition": metadata.partition, "offset": metadata.offset},
        status=201,
    )


async def health(request: web.Request) -> web.Response:
    """Liveness plus a few producer figures (from ``producer.metrics()``)."""
    stats = request.app[PRODUCER].metrics()["producer"]
    return web.json_response(
        {
            "status": "ok",
            "records_sent": stats["records_sent"],
            "buffer_use": stats["buffer_use"],
            "batch_errors": stats["batch_errors"],
        }
    )


def make_app(bootstrap_servers: str, topic: str) -> web.Application:
    """The aiohttp application; the producer lives exactly as long as it does."""
    app = web.Application()
    app[TOPIC] = topic

    async def kafka_producer(app: web.Application) -> AsyncIterator[None]:
        async with Admin(bootstrap_servers=bootstrap_servers) as admin:
            # The topic may exist already (a restarted service): that is not a failure here.
            await admin.create_topics([NewTopic(topic, 3, 1)], raise_on_error=False)
        producer = Producer(bootstrap_servers=bootstrap_servers, acks="all", linger_ms=2)
        await producer.start()
        app[PRODUCER] = producer
        yield
        await producer.stop()  # delivers what is still buffered, then disconnects

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


async def serve(bootstrap_servers: str, topic: str, host: str, port: int) -> None:
    runner = web.AppRunner(make_app(bootstrap_servers, topic))
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
    args = parser.parse_args()
    with kafka(args.bootstrap) as bootstrap_servers:
        asyncio.run(serve(bootstrap_servers, args.topic, args.host, args.port))


if __name__ == "__main__":
    main()
