"""Export a client's metrics in the Prometheus text format, from hooks and ``metrics()``.

A hook object counts requests per broker and API, with a latency histogram, and batches per
topic; ``GET /metrics`` renders those plus the producer's ``metrics()`` snapshot (records,
buffer use, compression ratio) as Prometheus text (version 0.0.4).  No Prometheus library is
needed; with ``prometheus_client`` the same hooks would update its Counter and Histogram objects.

Run: ``python examples/prometheus_metrics.py [--bootstrap host:port] [--port 9108]`` and point
Prometheus (or ``curl localhost:9108/metrics``) at it.  A producer sends a record every 10 ms so
that the figures move.  Without ``--bootstrap`` an embedded Tansu broker is started.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import signal
from collections import defaultdict
from collections.abc import Iterator

from aiohttp import web

from aiokafkawire import Admin, NewTopic, Producer
from aiokafkawire.metrics import BatchEvent, ClientHooks, RequestEvent

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class PrometheusHooks(ClientHooks):
    """Counters and histograms fed by the client's hooks (one call per request or batch)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, str], int] = defaultdict(int)
        self.latency_buckets: dict[tuple[str, str], list[int]] = defaultdict(
            lambda: [0] * (len(BUCKETS) + 1)
        )
        self.latency_sum: dict[tuple[str, str], float] = defaultdict(float)
        self.batch_records: dict[tuple[str, str], int] = defaultdict(int)

    def on_request(self, event: RequestEvent) -> None:
        broker = str(event.node_id if event.node_id is not None else f"{event.host}:{event.port}")
        outcome = "ok" if event.error is None else "error"
        self.requests[(broker, event.api_name, outcome)] += 1
        key = (broker, event.api_name)
        self.latency_buckets[key][bisect.bisect_left(BUCKETS, event.latency_s)] += 1
        self.latency_sum[key] += event.latency_s

    def on_batch(self, event: BatchEvent) -> None:
        outcome = "ok" if event.error is None else "error"
        self.batch_records[(event.topic, outcome)] += event.records

    def render(self, producer: Producer) -> str:
        """The Prometheus text exposition of everything counted so far."""
        lines = [
            "# HELP aiokafkawire_requests_total Requests completed, by broker, API and outcome.",
            "# TYPE aiokafkawire_requests_total counter",
        ]
        for (broker, api, outcome), count in sorted(self.requests.items()):
            labels = f'broker="{broker}",api="{api}",outcome="{outcome}"'
            lines.append(f"aiokafkawire_requests_total{{{labels}}} {count}")
        lines += [
            "# HELP aiokafkawire_request_latency_seconds Request latency, by broker and API.",
            "# TYPE aiokafkawire_request_latency_seconds histogram",
        ]
        for (broker, api), buckets in sorted(self.latency_buckets.items()):
            labels = f'broker="{broker}",api="{api}"'
            cumulative = 0
            for bound, count in zip((*BUCKETS, float("inf")), buckets, strict=True):
                cumulative += count
                le = "+Inf" if bound == float("inf") else repr(bound)
                lines.append(
                    f'aiokafkawire_request_latency_seconds_bucket{{{labels},le="{le}"}} '
                    f"{cumulative}"
                )
            lines.append(
                f"aiokafkawire_request_latency_seconds_sum{{{labels}}} "
                f"{self.latency_sum[(broker, api)]:.6f}"
            )
            lines.append(f"aiokafkawire_request_latency_seconds_count{{{labels}}} {cumulative}")
        lines += [
            "# HELP aiokafkawire_producer_records_total Records in delivered or failed batches.",
            "# TYPE aiokafkawire_producer_records_total counter",
        ]
        for (topic, outcome), count in sorted(self.batch_records.items()):
            lines.append(
                f'aiokafkawire_producer_records_total{{topic="{topic}",outcome="{outcome}"}} '
                f"{count}"
            )
        stats = producer.metrics()["producer"]
        for name, help_text in (
            ("buffer_use", "Fraction of buffer_memory held by undelivered batches."),
            ("compression_ratio", "Bytes sent over uncompressed bytes."),
            ("retries", "Batches sent again after a retriable error."),
        ):
            kind = "counter" if name == "retries" else "gauge"
            metric = f"aiokafkawire_producer_{name}" + ("_total" if kind == "counter" else "")
            lines += [
                f"# HELP {metric} {help_text}",
                f"# TYPE {metric} {kind}",
                f"{metric} {stats[name]}",
            ]
        return "\n".join(lines) + "\n"


async def traffic(producer: Producer, topic: str) -> None:
    for i in range(10_000_000):
        await producer.send(topic, b"sample %d" % i)
        await asyncio.sleep(0.01)


async def serve(bootstrap_servers: str, host: str, port: int, topic: str) -> None:
    async with Admin(bootstrap_servers=bootstrap_servers) as admin:
        await admin.create_topics([NewTopic(topic, 3, 1)], raise_on_error=False)
    hooks = PrometheusHooks()
    async with Producer(bootstrap_servers=bootstrap_servers, hooks=hooks) as producer:

        async def metrics(request: web.Request) -> web.Response:
            return web.Response(
                text=hooks.render(producer), content_type="text/plain", charset="utf-8"
            )

        app = web.Application()
        app.router.add_get("/metrics", metrics)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        print(f"metrics on http://{host}:{runner.addresses[0][1]}/metrics", flush=True)
        sender = asyncio.create_task(traffic(producer, topic))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender
        await runner.cleanup()


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
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9108, help="0 picks a free port")
    parser.add_argument("--topic", default="metrics-demo")
    args = parser.parse_args()
    with kafka(args.bootstrap) as bootstrap_servers:
        asyncio.run(serve(bootstrap_servers, args.host, args.port, args.topic))


if __name__ == "__main__":
    main()
