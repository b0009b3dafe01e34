"""OpenTelemetry tracing and metrics (issue 22, part 3), on Apache Kafka, with the SDK's
in-memory exporters; interop with opentelemetry-instrumentation-aiokafka both ways."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from aiokafkawire import Admin, Consumer, NewTopic, Producer
from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing.pytest_plugin import TEST_BROKERS_ENV_VAR, enabled_broker_kinds

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
export = pytest.importorskip("opentelemetry.sdk.trace.export")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
sdk_metrics = pytest.importorskip("opentelemetry.sdk.metrics")
metrics_export = pytest.importorskip("opentelemetry.sdk.metrics.export")

from opentelemetry import trace  # noqa: E402

from aiokafkawire import otel  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        "kafka" not in enabled_broker_kinds(), reason=f"kafka not in ${TEST_BROKERS_ENV_VAR}"
    ),
]


@pytest.fixture
def spans() -> Iterator[tuple[object, object]]:
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    reader = metrics_export.InMemoryMetricReader()
    meters = sdk_metrics.MeterProvider(metric_readers=[reader])
    otel.instrument(tracer_provider=provider, meter_provider=meters)
    try:
        yield exporter, provider, reader
    finally:
        otel.uninstrument()


async def new_topic(bootstrap: str) -> str:
    name = f"otel-{uuid.uuid4().hex[:8]}"
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(name, num_partitions=1)])
    return name


def named(exporter: object, prefix: str) -> list[object]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith(prefix)]  # type: ignore[attr-defined]


async def test_send_and_process_spans_form_one_trace(kafka_cluster: KafkaCluster, spans) -> None:
    exporter, provider, reader = spans
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await new_topic(bootstrap)
    async with Producer(bootstrap_servers=bootstrap, client_id="otel-p") as producer:
        handles = [await producer.send(topic, f"v{i}".encode(), key=b"k") for i in range(3)]
        await asyncio.gather(*handles)
    sends = named(exporter, f"send {topic}")
    assert len(sends) == 3
    first = sends[0]
    assert first.kind == trace.SpanKind.PRODUCER
    assert first.attributes["messaging.system"] == "kafka"
    assert first.attributes["messaging.destination.name"] == topic
    assert first.attributes["messaging.client.id"] == "otel-p"
    assert first.attributes["messaging.kafka.message.key"] == "k"
    assert {s.attributes["messaging.kafka.offset"] for s in sends} == {0, 1, 2}

    tracer = provider.get_tracer("test")
    children = []
    async with Consumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}",
                        auto_offset_reset="earliest") as consumer:  # fmt: skip
        seen = 0
        async for record in consumer:
            assert any(k == "traceparent" for k, _ in record.headers)
            with tracer.start_as_current_span("handler") as child:
                children.append(child)
                await asyncio.sleep(0)  # the span stays current across awaits in the body
            seen += 1
            if seen == 3:
                break
    processes = sorted(
        named(exporter, f"process {topic}"), key=lambda s: s.attributes["messaging.kafka.offset"]
    )
    assert len(processes) == 3
    by_offset = {s.attributes["messaging.kafka.offset"]: s for s in sends}
    for process, child in zip(processes, children, strict=True):
        send = by_offset[process.attributes["messaging.kafka.offset"]]
        assert process.kind == trace.SpanKind.CONSUMER
        assert process.context.trace_id == send.context.trace_id
        assert process.parent.span_id == send.context.span_id
        assert child.parent.span_id == process.context.span_id

    reader_data = reader.get_metrics_data()
    sent = [
        point.value
        for rm in reader_data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == "messaging.client.sent.messages"
        for point in metric.data.data_points
    ]
    assert sent and max(sent) >= 3
    points = {
        metric.name: list(metric.data.data_points)
        for rm in reader_data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    }
    received = points["aiokafkawire.broker.bytes_received"]
    assert received and all(p.attributes["server.address"] for p in received)
    assert max(p.value for p in received) > 0
    assert max(p.value for p in points["aiokafkawire.broker.requests"]) >= 1
    latency = points["aiokafkawire.broker.request_latency.p99"]
    assert {"Produce", "Fetch"} <= {p.attributes["kafka.api"] for p in latency}


async def test_a_getmany_batch_is_one_receive_span_linked_to_its_records(
    kafka_cluster: KafkaCluster, spans
) -> None:
    exporter, _, _ = spans
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await new_topic(bootstrap)
    async with Producer(bootstrap_servers=bootstrap) as producer:
        for _ in range(4):
            await producer.send(topic, b"x")
        await producer.flush()
    async with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        from aiokafkawire import TopicPartition

        consumer.assign([TopicPartition(topic, 0)])
        got = 0
        for _ in range(30):
            batches = await consumer.getmany(timeout_ms=1000)
            got += sum(map(len, batches.values()))
            if got >= 4:
                break
    receives = named(exporter, f"receive {topic}")
    sends = {s.context.span_id for s in named(exporter, f"send {topic}")}
    assert receives
    linked = {link.context.span_id for r in receives for link in r.links}
    assert linked == sends
    assert sum(r.attributes["messaging.batch.message_count"] for r in receives) == 4


async def test_traces_continue_across_aiokafka_instrumented_by_opentelemetry(
    kafka_cluster: KafkaCluster, spans
) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    instrumentation = pytest.importorskip("opentelemetry.instrumentation.aiokafka")
    exporter, provider, _ = spans
    instrumentor = instrumentation.AIOKafkaInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        bootstrap = kafka_cluster.bootstrap_servers
        theirs_to_ours, ours_to_theirs = await new_topic(bootstrap), await new_topic(bootstrap)
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            await producer.send_and_wait(theirs_to_ours, b"from-aiokafka")
        finally:
            await producer.stop()
        group = f"g-{theirs_to_ours}"
        async with Consumer(theirs_to_ours, bootstrap_servers=bootstrap, group_id=group,
                            auto_offset_reset="earliest") as consumer:  # fmt: skip
            await consumer.__anext__()
        async with Producer(bootstrap_servers=bootstrap) as ours:
            await ours.send_and_wait(ours_to_theirs, b"from-aiokafkawire")
        their_consumer = aiokafka.AIOKafkaConsumer(
            ours_to_theirs, bootstrap_servers=bootstrap, auto_offset_reset="earliest"
        )
        await their_consumer.start()
        try:
            await their_consumer.getone()
        finally:
            await their_consumer.stop()
    finally:
        instrumentor.uninstrument()
    spans_by_name = {}
    for span in exporter.get_finished_spans():
        spans_by_name.setdefault(span.name, []).append(span)
    their_send = spans_by_name[f"{theirs_to_ours} send"][0]
    our_process = spans_by_name[f"process {theirs_to_ours}"][0]
    assert our_process.context.trace_id == their_send.context.trace_id
    our_send = spans_by_name[f"send {ours_to_theirs}"][0]
    their_receive = spans_by_name[f"{ours_to_theirs} receive"][0]
    assert their_receive.context.trace_id == our_send.context.trace_id


def test_uninstrument_restores_the_clients_own_methods() -> None:
    original_send = Producer.send
    original_next = Consumer.__anext__
    otel.instrument()
    assert Producer.send is not original_send and otel.is_instrumented()
    otel.uninstrument()
    assert Producer.send is original_send and Consumer.__anext__ is original_next
    assert not otel.is_instrumented()


async def test_the_aiokafka_compat_layer_is_traced_send_by_send(
    kafka_cluster: KafkaCluster, spans
) -> None:
    # The compat send takes the native producer's compiled append directly, but only while
    # Producer.send is not wrapped: instrumented, each record still gets its send span and
    # its trace context header, and each record read with async for one process span.
    from aiokafkawire.compat.aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    exporter, _provider, _reader = spans
    bootstrap = kafka_cluster.bootstrap_servers
    topic = await new_topic(bootstrap)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        futures = [await producer.send(topic, b"v%d" % i) for i in range(3)]
        assert [m.offset for m in await asyncio.gather(*futures)] == [0, 1, 2]
    finally:
        await producer.stop()
    assert len(named(exporter, f"send {topic}")) == 3

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        seen = 0
        async for record in consumer:
            assert any(key == "traceparent" for key, _ in record.headers)
            seen += 1
            if seen == 3:
                break
    finally:
        await consumer.stop()
    assert len(named(exporter, f"process {topic}")) == 3
