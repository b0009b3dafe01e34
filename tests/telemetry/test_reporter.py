"""KIP-714 push loop, OTLP encoding and metric collection against a scripted broker."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from aiokafkawire import errors
from aiokafkawire._tasks import TaskSupervisor
from aiokafkawire.metrics import ClientMetrics, ProducerStats
from aiokafkawire.protocol.messages import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
)
from aiokafkawire.protocol.records.codecs import decompress
from aiokafkawire.telemetry import (
    MetricPoint,
    MetricsCollector,
    TelemetryReporter,
    consumer_values,
    encode_metrics_data,
    metric_selector,
    producer_values,
)
from aiokafkawire.telemetry import reporter as reporter_module
from tests.telemetry.otlp_decode import decode_metrics_data

INSTANCE = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


def subscription(**overrides: Any) -> GetTelemetrySubscriptionsResponse:
    fields: dict[str, Any] = {
        "client_instance_id": INSTANCE,
        "subscription_id": 7,
        "accepted_compression_types": [],
        "push_interval_ms": 40,
        "telemetry_max_bytes": 1 << 20,
        "delta_temporality": False,
        "requested_metrics": ["org.apache.kafka.producer."],
    }
    fields.update(overrides)
    return GetTelemetrySubscriptionsResponse(**fields)


class ScriptedBroker:
    """``answer(request)`` decides each response; every request is kept."""

    def __init__(self, answer: Callable[[Any], Any], *, supported: bool = True) -> None:
        self.answer = answer
        self.requests: list[Any] = []
        self.versions = SimpleNamespace(supports=lambda key: supported)
        self.sent = asyncio.Event()

    async def any_connection(self) -> ScriptedBroker:
        return self

    async def send(self, request: Any, timeout_ms: float | None = None) -> Any:
        self.requests.append(request)
        self.sent.set()
        answer = self.answer(request)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def pushes(self) -> list[PushTelemetryRequest]:
        return [r for r in self.requests if isinstance(r, PushTelemetryRequest)]

    def subscribes(self) -> list[GetTelemetrySubscriptionsRequest]:
        return [r for r in self.requests if isinstance(r, GetTelemetrySubscriptionsRequest)]


def make_reporter(
    broker: ScriptedBroker, metrics: ClientMetrics | None = None
) -> TelemetryReporter:
    client = metrics or ClientMetrics()
    stats = ProducerStats()
    stats.records, stats.batches, stats.bytes = 10, 2, 300
    collector = MetricsCollector(
        "org.apache.kafka.producer.",
        client,
        lambda: producer_values(stats, 100, 1000, client),
    )
    return TelemetryReporter(broker, collector, resource={"client_id": "c1"}, close_timeout_ms=2000)


def answer_with(sub: Any, push_codes: list[int] | None = None) -> Callable[[Any], Any]:
    codes = list(push_codes or [])

    def answer(request: Any) -> Any:
        if isinstance(request, GetTelemetrySubscriptionsRequest):
            return sub
        return PushTelemetryResponse(error_code=codes.pop(0) if codes else 0)

    return answer


async def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.005)


# ------------------------------------------------------------------------- encoding


def test_otlp_encoding_round_trips_by_field_number() -> None:
    data = encode_metrics_data(
        [
            MetricPoint("a.total", "sum", 12, 2_000, 1_000),
            MetricPoint("b.latency", "gauge", 1.5, 2_000, 0, {"node_id": "3"}),
            MetricPoint("b.latency", "gauge", 2.5, 2_000, 0, {"node_id": "4"}),
            MetricPoint("c.neg", "gauge", -5, 2_000),
        ],
        resource={"client_id": "c1", "n": 7, "f": True},
        temporality=1,
    )
    decoded = decode_metrics_data(data)
    assert decoded["resource"] == {"client_id": "c1", "n": 7, "f": True}
    assert decoded["scope"] == "aiokafkawire"
    total = decoded["metrics"]["a.total"]
    assert total["kind"] == "sum" and total["temporality"] == 1 and total["monotonic"]
    assert total["points"] == [{"value": 12, "time_ns": 2000, "start_ns": 1000, "attributes": {}}]
    latency = decoded["metrics"]["b.latency"]
    assert latency["kind"] == "gauge"
    assert [(p["value"], p["attributes"]) for p in latency["points"]] == [
        (1.5, {"node_id": "3"}),
        (2.5, {"node_id": "4"}),
    ]
    assert decoded["metrics"]["c.neg"]["points"][0]["value"] == -5


def test_metric_selector() -> None:
    assert not metric_selector([])("org.apache.kafka.producer.x")
    assert metric_selector([""])("anything")
    assert metric_selector(["*"])("anything")
    pick = metric_selector(["org.apache.kafka.producer.node.", "org.apache.kafka.producer.record"])
    assert pick("org.apache.kafka.producer.node.request.latency.avg")
    assert pick("org.apache.kafka.producer.record.send.total")
    assert not pick("org.apache.kafka.producer.request.total")


def test_collector_cumulative_and_delta_sums() -> None:
    client = ClientMetrics()
    broker = client.broker("h", 1, 1)
    broker.connections_opened = 2
    broker.latency(0).add(0.010)
    broker.latency(0).add(0.030)
    collector = MetricsCollector("p.", client, lambda: [])
    everything = metric_selector([""])
    first = {p.name: p for p in collector.collect(everything, delta=True)}
    assert first["p.connection.creation.total"].value == 2
    assert first["p.connection.creation.total"].start_ns == collector.started_ns
    avg = [p for p in collector.collect(everything, delta=False) if p.name.endswith("latency.avg")]
    assert avg[0].attributes == {"node_id": "1"} and avg[0].value == pytest.approx(20.0)
    broker.connections_opened = 5
    later = {p.name: p for p in collector.collect(everything, delta=True)}
    assert later["p.connection.creation.total"].value == 3  # the change since the last push
    assert later["p.connection.creation.total"].start_ns > collector.started_ns
    assert later["p.connection.creation.rate"].kind == "gauge"
    cumulative = {p.name: p for p in collector.collect(everything, delta=False)}
    assert cumulative["p.connection.creation.total"].value == 5


def test_consumer_values() -> None:
    client = ClientMetrics()
    client.broker("h", 1, 1).latency(1).add(0.2)
    values = {n: (k, v) for n, k, v in consumer_values(42, [3, None, 9], 3, 2, 1.5, client)}
    assert values["fetch.manager.records.consumed.total"] == ("sum", 42)
    assert values["fetch.manager.records.lag.max"] == ("gauge", 9)
    assert values["fetch.manager.fetch.latency.max"][1] == pytest.approx(200.0)
    assert values["coordinator.assigned.partitions"] == ("gauge", 3)
    assert values["coordinator.rebalance.latency.avg"] == ("gauge", 750.0)


# ------------------------------------------------------------------------- the loop


async def test_subscribes_then_pushes_at_the_interval_and_terminates_on_close() -> None:
    broker = ScriptedBroker(answer_with(subscription()))
    reporter = make_reporter(broker)
    tasks = TaskSupervisor("test")
    reporter.start(tasks)
    assert await reporter.client_instance_id(2) == INSTANCE
    await wait_until(lambda: len(broker.pushes()) >= 2)
    await reporter.close()
    assert len(tasks) == 0  # the loop ended by itself after the terminating push
    await tasks.stop()
    pushes = broker.pushes()
    assert broker.requests[0].client_instance_id == uuid.UUID(int=0)  # the broker assigns it
    assert all(p.client_instance_id == INSTANCE and p.subscription_id == 7 for p in pushes)
    assert [p.terminating for p in pushes][-1] is True
    assert not any(p.terminating for p in pushes[:-1])
    assert pushes[0].compression_type == 0
    names = decode_metrics_data(pushes[0].metrics)["metrics"]
    assert names["org.apache.kafka.producer.record.send.total"]["points"][0]["value"] == 10
    assert "org.apache.kafka.consumer.fetch.manager.records.consumed.total" not in names


async def test_first_push_is_jittered_later_ones_are_not(monkeypatch: pytest.MonkeyPatch) -> None:
    factors: list[tuple[float, float]] = []

    def uniform(low: float, high: float) -> float:
        factors.append((low, high))
        return high

    monkeypatch.setattr(reporter_module.random, "uniform", uniform)
    reporter = make_reporter(ScriptedBroker(answer_with(subscription(push_interval_ms=1000))))
    assert await reporter._subscribe() == ("push", 1.5)
    assert factors == [(0.5, 1.5)]
    assert await reporter._subscribe() == ("push", 1.0)  # a renewed subscription: no jitter


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (117, ("subscribe", 0.0)),  # UNKNOWN_SUBSCRIPTION_ID: ask again at once
        (76, ("subscribe", 0.0)),  # UNSUPPORTED_COMPRESSION_TYPE
        (118, ("subscribe", 0.04)),  # TELEMETRY_TOO_LARGE: after the interval
        (89, ("subscribe", 0.04)),  # THROTTLING_QUOTA_EXCEEDED
        (42, (None, 0.0)),  # INVALID_REQUEST: stop
        (87, (None, 0.0)),  # INVALID_RECORD
        (35, (None, 0.0)),  # UNSUPPORTED_VERSION
        (3, (None, 0.0)),  # anything else KIP-714 does not name
    ],
)
async def test_push_errors(code: int, expected: tuple[str | None, float]) -> None:
    broker = ScriptedBroker(answer_with(subscription(), [code]))
    reporter = make_reporter(broker)
    await reporter._subscribe()
    assert await reporter._push(terminating=False) == expected
    assert (reporter.stopped_reason is None) == (expected[0] is not None)


async def test_unknown_subscription_resubscribes_with_the_same_instance_id() -> None:
    broker = ScriptedBroker(answer_with(subscription(), [117]))
    reporter = make_reporter(broker)
    task = asyncio.ensure_future(reporter._run())
    await wait_until(lambda: len(broker.pushes()) >= 2)
    reporter._closing.set()
    await asyncio.wait_for(task, 3)
    subscribes = broker.subscribes()
    assert len(subscribes) >= 2
    assert subscribes[1].client_instance_id == INSTANCE


async def test_subscription_error_stops_and_loop_ends() -> None:
    broker = ScriptedBroker(lambda r: GetTelemetrySubscriptionsResponse(error_code=42))
    reporter = make_reporter(broker)
    await asyncio.wait_for(reporter._run(), 3)
    assert "INVALID_REQUEST" in (reporter.stopped_reason or "")
    assert broker.pushes() == []
    assert await reporter.client_instance_id(0) is None


async def test_broker_without_the_apis_ends_quietly() -> None:
    broker = ScriptedBroker(answer_with(subscription()), supported=False)
    reporter = make_reporter(broker)
    await asyncio.wait_for(reporter._run(), 3)
    assert broker.requests == []
    assert "does not support GetTelemetrySubscriptions" in (reporter.stopped_reason or "")
    assert await reporter.client_instance_id(5) is None  # at once: telemetry ended


async def test_connection_failure_retries_the_subscription() -> None:
    calls = []

    def answer(request: Any) -> Any:
        calls.append(request)
        if len(calls) == 1:
            return errors.KafkaConnectionError("refused")
        return subscription(requested_metrics=[])

    broker = ScriptedBroker(answer)
    reporter = make_reporter(broker)
    reporter._retry_ms = 10
    task = asyncio.ensure_future(reporter._run())
    await wait_until(lambda: len(broker.subscribes()) >= 3)  # again after failure, and no push
    reporter._closing.set()
    await asyncio.wait_for(task, 3)
    assert broker.pushes() == []  # nothing requested: nothing pushed, not even on close


async def test_compression_first_accepted_codec_that_is_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = reporter_module.compress

    def compress(codec: int, data: bytes) -> bytes:
        if codec == 4:
            raise errors.CompressionLibraryMissingError("no zstd here")
        return real(codec, data)

    monkeypatch.setattr(reporter_module, "compress", compress)
    broker = ScriptedBroker(answer_with(subscription(accepted_compression_types=[4, 1, 3])))
    reporter = make_reporter(broker)
    await reporter._subscribe()
    await reporter._push(terminating=False)
    push = broker.pushes()[0]
    assert push.compression_type == 1  # zstd is missing: the broker's next choice, gzip
    decoded = decode_metrics_data(decompress(1, push.metrics))
    assert "org.apache.kafka.producer.record.send.total" in decoded["metrics"]


async def test_close_does_not_wait_for_a_silent_broker() -> None:
    hang = asyncio.get_running_loop().create_future()

    class SilentBroker(ScriptedBroker):
        async def send(self, request: Any, timeout_ms: float | None = None) -> Any:
            self.requests.append(request)
            return await hang

    failures: list[BaseException] = []
    tasks = TaskSupervisor("test", lambda key, exc: failures.append(exc))
    broker = SilentBroker(answer_with(subscription()))
    collector = make_reporter(broker)._collector
    reporter = TelemetryReporter(broker, collector, resource={}, close_timeout_ms=50)
    reporter.start(tasks)
    await wait_until(lambda: len(broker.requests) == 1)
    started = asyncio.get_running_loop().time()
    await reporter.close()
    assert asyncio.get_running_loop().time() - started < 1.0
    await tasks.stop()  # the owner cancels the loop: not reported as a failure
    assert failures == []
    assert len(tasks) == 0


@pytest.mark.parametrize(
    "failure",
    [
        errors.AuthenticationError("bad password"),
        errors.ClusterAuthorizationFailedError("denied"),
    ],
)
async def test_a_fatal_request_failure_disables_telemetry(failure: errors.KafkaError) -> None:
    # Java's ClientTelemetryReporter: only a retriable failure is tried again; any other one
    # disables telemetry (no request every interval that can never succeed).
    broker = ScriptedBroker(lambda request: failure)
    reporter = make_reporter(broker)
    reporter._retry_ms = 10
    await asyncio.wait_for(reporter._run(), 3)
    assert len(broker.subscribes()) == 1
    assert str(failure) in (reporter.stopped_reason or "")
    assert await reporter.client_instance_id(0) is None
