"""What OpenTelemetry tracing costs the producer: CPU per record sent, off and on.

Runs on an embedded Tansu broker (the client's own CPU is what is measured, so the broker
matters little): 3 rounds of N records each way, in one process; "on" is
``aiokafkawire.otel.instrument()`` with the SDK's TracerProvider and a batch processor to an
exporter that drops spans (what a real exporter costs is not ours).

    python benchmarks/otel_overhead.py [N]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from aiokafkawire import Admin, NewTopic, Producer
from aiokafkawire.testing import TansuBroker


async def create_topic(bootstrap: str) -> None:
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic("otel-bench", num_partitions=1)])


async def produce(bootstrap: str, count: int) -> float:
    async with Producer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        await producer.send_and_wait("otel-bench", b"warm-up")
        started = time.process_time()
        for _ in range(count):
            await producer.send("otel-bench", b"x" * 100)
        await producer.flush()
        return (time.process_time() - started) / count * 1e6


def main() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from aiokafkawire import otel

    class Drop(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop(), max_queue_size=count * 2))
    with TansuBroker() as broker:
        asyncio.run(create_topic(broker.bootstrap_servers))
        off, on = [], []
        for _ in range(3):
            off.append(asyncio.run(produce(broker.bootstrap_servers, count)))
            otel.instrument(tracer_provider=provider)
            on.append(asyncio.run(produce(broker.bootstrap_servers, count)))
            otel.uninstrument()
    provider.shutdown()
    print(f"records per round: {count}")
    print(f"tracing off: {statistics.median(off):.2f} us CPU per record (runs {off})")
    print(f"tracing on:  {statistics.median(on):.2f} us CPU per record (runs {on})")


if __name__ == "__main__":
    main()
