"""Every example in ``examples/`` runs, as a subprocess, against the session's Tansu broker
(``work_queue.py``, on share groups, against Apache Kafka).

Small counts and short timeouts; the web service and the consumer service are driven through
real HTTP requests and stopped with SIGTERM, as a process manager would.  The services and the
pipeline run twice in a row (a restart must work: topics exist, groups have offsets) and are
stopped with SIGTERM mid-run, which must end them cleanly: status 0, and nothing on stderr that
says otherwise (a traceback, "Task was destroyed but it is pending", an unclosed resource; the
subprocesses run with ``-W always::ResourceWarning``).  ``spark_pipeline.py`` has its own test in
``tests/spark``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiokafkawire import Admin, Consumer, NewTopic, Producer, TopicPartition, errors
from aiokafkawire.testing import KafkaCluster, TansuBroker

aiohttp = pytest.importorskip("aiohttp")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ROOT = EXAMPLES.parent


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # The subprocess imports this checkout's aiokafkawire (as the tests do).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONWARNINGS"] = "always::ResourceWarning"  # an unclosed socket or file says so
    return env


# What a clean exit never writes (the ResourceWarnings and asyncio's "Unclosed ..." messages
# included).
UNCLEAN = ("Traceback", "Task was destroyed but it is pending", "ResourceWarning", "nclosed")


def _assert_clean(status: int, out: str, err: str) -> None:
    """Exit status 0 and none of ``UNCLEAN`` in the output."""
    assert status == 0, f"exit status {status}\n{out}\n{err}"
    for text in UNCLEAN:
        assert text not in err and text not in out, f"{text!r} in the output:\n{out}\n{err}"


def _load(name: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """An example imported as a module, for tests of its pieces."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _run(*args: str, timeout: float = 60) -> str:
    result = subprocess.run(
        [sys.executable, *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    _assert_clean(result.returncode, result.stdout, result.stderr)
    return result.stdout


class Service:
    """A long-running example started in the background; stopped (SIGTERM) by the test."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *args],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def wait_for_line(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        """Read stdout until a line matches ``pattern``."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        lines = []
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break  # the process ended
            lines.append(line)
            match = re.search(pattern, line)
            if match:
                return match
        self.kill()
        stderr = self.process.stderr.read() if self.process.stderr else ""
        raise AssertionError(f"no line matching {pattern!r}: {lines}\n{stderr}")

    def terminate(self, timeout: float = 20) -> tuple[int, str, str]:
        """SIGTERM, then wait; returns (exit status, rest of stdout, stderr)."""
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=10)


@pytest.fixture
def services() -> Iterator[list[Service]]:
    started: list[Service] = []
    yield started
    for service in started:
        service.kill()


async def _read_all(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    async with Consumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=100) as consumer:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        await consumer.seek_to_beginning(*tps)
        values: list[bytes] = []

        async def behind() -> bool:
            return any([await consumer.position(tp) < ends[tp] for tp in tps])

        while await behind():
            batches = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 10)
            values += [r.value for records in batches.values() for r in records]
        return values


async def test_web_service_answers_real_http_requests(
    tansu_broker: TansuBroker, services: list[Service]
) -> None:
    bootstrap = tansu_broker.bootstrap_servers
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    command = (
        str(EXAMPLES / "web_service.py"), "--bootstrap", bootstrap, "--port", "0",
        "--topic", topic, "--max-request-size", "4000", "--send-timeout", "10",
    )  # fmt: skip
    service = Service(*command)
    services.append(service)
    url = service.wait_for_line(r"listening on (http://\S+)").group(1)
    async with aiohttp.ClientSession() as http:
        answers = await asyncio.gather(
            *(http.post(f"{url}/orders", json={"id": i, "item": "book"}) for i in range(20))
        )
        bodies = [await answer.json() for answer in answers]
        assert [a.status for a in answers] == [201] * 20, bodies
        assert all(b["topic"] == topic and b["offset"] >= 0 for b in bodies)
        bad = await http.post(f"{url}/orders", data=b"not json")
        assert bad.status == 400
        too_large = await http.post(f"{url}/orders", json={"id": 99, "blob": "x" * 5000})
        assert too_large.status == 413, await too_large.text()
        answer = await http.get(f"{url}/health")
        health = await answer.json()
        # A record too large says nothing about the cluster: still healthy.
        assert answer.status == 200 and health["status"] == "ok", health
        assert health["records_sent"] == 20 and health["problems"] == []
    status, out, err = service.terminate()
    _assert_clean(status, out, err)
    # A second run in a row: the topic exists now.
    again = Service(*command)
    services.append(again)
    url = again.wait_for_line(r"listening on (http://\S+)").group(1)
    async with aiohttp.ClientSession() as http:
        answer = await http.post(f"{url}/orders", json={"id": 20})
        assert answer.status == 201, await answer.text()
    status, out, err = again.terminate()
    _assert_clean(status, out, err)
    stored = await _read_all(bootstrap, topic, 3)
    assert sorted(json.loads(v)["id"] for v in stored) == list(range(21))


async def test_web_service_health_fails_when_its_broker_stops(services: list[Service]) -> None:
    broker = TansuBroker().start()  # this test's own broker: it stops it
    try:
        command = (
            str(EXAMPLES / "web_service.py"), "--bootstrap", broker.bootstrap_servers,
            "--port", "0", "--topic", f"orders-{uuid.uuid4().hex[:8]}", "--send-timeout", "2",
        )  # fmt: skip
        service = Service(*command)
        services.append(service)
        url = service.wait_for_line(r"listening on (http://\S+)").group(1)
        async with aiohttp.ClientSession() as http:
            answer = await http.get(f"{url}/health")
            assert answer.status == 200, await answer.text()
            broker.stop()
            # No order arrives: the probe alone must see that the cluster is gone.
            answer = await http.get(f"{url}/health")
            health = await answer.json()
            assert answer.status == 503 and health["status"] == "failing", health
            assert any("the cluster does not answer" in p for p in health["problems"]), health
            order = await http.post(f"{url}/orders", json={"id": 1})
            assert order.status == 503 and order.headers["Retry-After"] == "1", await order.text()
        # SIGTERM with the broker gone (and a record undelivered) still stops it, promptly.
        started = time.monotonic()
        status, out, err = service.terminate()
        assert time.monotonic() - started < 15, out + err
        _assert_clean(status, out, err)
    finally:
        broker.stop()


def test_web_service_maps_errors_to_statuses(monkeypatch: pytest.MonkeyPatch) -> None:
    web_service = _load("web_service", monkeypatch)

    def status(exc: Exception) -> int:
        return int(web_service.error_response(exc).status)

    assert status(errors.RecordTooLargeError("too large")) == 413
    assert status(errors.MessageTooLargeError("broker: too large")) == 413
    assert status(asyncio.TimeoutError()) == 503
    assert status(errors.BufferFullError("full")) == 503  # retriable
    assert web_service.error_response(errors.KafkaTimeoutError("t")).headers["Retry-After"] == "1"
    assert status(errors.TopicAuthorizationFailedError("denied")) == 500
    assert status(errors.ClientClosedError("closed")) == 500


async def test_consumer_service_commits_reports_health_and_stops_on_sigterm(
    tansu_broker: TansuBroker, services: list[Service]
) -> None:
    bootstrap = tansu_broker.bootstrap_servers
    topic, group = f"events-{uuid.uuid4().hex[:8]}", f"svc-{uuid.uuid4().hex[:8]}"
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 3, 1)])
    async with Producer(bootstrap_servers=bootstrap) as producer:
        for i in range(30):
            await producer.send(topic, b"event %d" % i, key=b"%d" % i)
    command = (
        str(EXAMPLES / "consumer_service.py"), "--bootstrap", bootstrap, "--topic", topic,
        "--group", group, "--port", "0", "--session-timeout-ms", "2000",
    )  # fmt: skip
    service = Service(*command)
    services.append(service)
    url = service.wait_for_line(r"health on (http://\S+)/health").group(1)
    health: dict[str, object] = {}
    async with aiohttp.ClientSession() as http:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            answer = await http.get(f"{url}/health")
            health = await answer.json()
            if answer.status == 200 and health["processed"] == 30:
                break
            await asyncio.sleep(0.2)
    assert health["processed"] == 30 and health["state"] == "stable", health
    assert len(health["assignment"]) == 3 and set(health["lag"].values()) == {0}  # type: ignore[arg-type, union-attr]
    status, out, err = service.terminate()
    _assert_clean(status, out, err)
    assert "stopping after 30 records" in out and "stopped" in out
    async with Admin(bootstrap_servers=bootstrap) as admin:
        committed = await admin.list_group_offsets(group)
    assert sum(o.offset for o in committed.values()) == 30
    # A second run in a row resumes from the committed offsets: nothing to process again.
    again = Service(*command)
    services.append(again)
    url = again.wait_for_line(r"health on (http://\S+)/health").group(1)
    async with aiohttp.ClientSession() as http:
        live = await http.get(f"{url}/health/live")
        assert live.status == 200, await live.text()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if (await http.get(f"{url}/health/ready")).status == 200:
                break
            await asyncio.sleep(0.2)
        ready = await http.get(f"{url}/health/ready")
        assert ready.status == 200, await ready.text()
    status, out, err = again.terminate()
    _assert_clean(status, out, err)
    assert "stopping after 0 records" in out


async def test_consumer_service_not_ready_but_live_when_its_broker_stops(
    services: list[Service],
) -> None:
    broker = TansuBroker().start()  # this test's own broker: it stops it
    try:
        service = Service(
            str(EXAMPLES / "consumer_service.py"), "--bootstrap", broker.bootstrap_servers,
            "--topic", f"events-{uuid.uuid4().hex[:8]}", "--group", f"svc-{uuid.uuid4().hex[:8]}",
            "--port", "0", "--session-timeout-ms", "2000",
        )  # fmt: skip
        services.append(service)
        url = service.wait_for_line(r"health on (http://\S+)/health").group(1)
        async with aiohttp.ClientSession() as http:
            assert await _status_within(http, f"{url}/health/ready", 200, 30)
            broker.stop()
            # Readiness fails (no traffic for a member that lost its group) ...
            assert await _status_within(http, f"{url}/health/ready", 503, 30)
            # ... but liveness holds: the loop still polls, and restarting the pod won't help.
            live = await http.get(f"{url}/health/live")
            assert live.status == 200, await live.text()
        started = time.monotonic()
        status, out, err = service.terminate(timeout=60)
        _assert_clean(status, out, err)
        assert time.monotonic() - started < 30, out + err
    finally:
        broker.stop()


async def _status_within(http: Any, url: str, status: int, timeout: float) -> bool:
    """Whether GET ``url`` answers ``status`` within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (await http.get(url)).status == status:
            return True
        await asyncio.sleep(0.2)
    return False


class _Rebalancing:
    """A consumer in the middle of a rebalance whose commit fails, as after a lost partition."""

    state = "rebalancing"

    def __init__(self) -> None:
        self.commits = 0

    def assignment(self) -> set[TopicPartition]:
        return set()

    def metrics(self) -> dict[str, Any]:
        return {"consumer": {"lag": {}}}

    async def commit(self) -> None:
        self.commits += 1
        raise errors.CommitFailedError("the group rebalanced; partitions were reassigned")


async def test_consumer_service_liveness_survives_a_rebalance_and_a_failed_commit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    consumer_service = _load("consumer_service", monkeypatch)
    consumer = _Rebalancing()
    service = consumer_service.Service(consumer)
    await service.commit()  # CommitFailedError: counted and logged, not raised
    assert service.commit_failures == 1 and consumer.commits == 1
    live = await service.live(None)
    ready = await service.ready(None)
    assert live.status == 200  # a liveness probe must not kill a rebalancing member
    assert ready.status == 503  # but it takes no traffic meanwhile
    assert json.loads(live.text)["commit_failures"] == 1
    service.failed = "ProducerFencedError: fenced"
    assert (await service.live(None)).status == 503


def test_high_throughput_producer_twice_and_on_sigterm(
    tansu_broker: TansuBroker, services: list[Service]
) -> None:
    command = (
        str(EXAMPLES / "high_throughput_producer.py"), "--bootstrap",
        tansu_broker.bootstrap_servers, "--topic", f"ht-{uuid.uuid4().hex[:8]}",
    )  # fmt: skip
    for _run_number in range(2):  # the second run finds the topic there
        out = _run(*command, "--records", "10000")
        assert re.search(r"10,000 records of 100 bytes: .* 0 failed", out), out
    service = Service(*command, "--records", "100000000")
    services.append(service)
    service.wait_for_line(r"^producing 100,000,000 records")
    time.sleep(0.5)  # mid-run: the buffer is filling
    status, out, err = service.terminate()
    _assert_clean(status, out, err)
    assert "stopped by signal" in out and "records/s" not in out, out


def test_transactional_pipeline_twice_in_a_row(tansu_broker: TansuBroker) -> None:
    command = (
        str(EXAMPLES / "transactional_pipeline.py"), "--bootstrap",
        tansu_broker.bootstrap_servers, "--records", "60", "--timeout", "40",
    )  # fmt: skip
    for _run_number in range(2):
        out = _run(*command)
        assert "transformed 60 records" in out, out
        # Every tenth input record is a tombstone, and stays one.
        assert "reader sees 60 records (6 tombstones)" in out, out


def test_transactional_pipeline_stops_cleanly_on_sigterm(
    tansu_broker: TansuBroker, services: list[Service]
) -> None:
    service = Service(
        str(EXAMPLES / "transactional_pipeline.py"), "--bootstrap",
        tansu_broker.bootstrap_servers, "--records", "1000000", "--timeout", "120",
    )  # fmt: skip
    services.append(service)
    service.wait_for_line(r"pipeline running", timeout=120)
    time.sleep(1)  # mid-run: transactions in flight
    status, out, err = service.terminate(timeout=60)
    _assert_clean(status, out, err)
    assert "stopped by signal" in out, out + err


def test_transactional_pipeline_tells_fatal_from_retriable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline = _load("transactional_pipeline", monkeypatch)
    assert pipeline.transform(None) is None and pipeline.transform(b"a") == b"A"
    assert isinstance(errors.ProducerFencedError("fenced"), pipeline.FATAL)
    assert isinstance(errors.TransactionalIdAuthorizationFailedError("no"), pipeline.FATAL)
    assert not isinstance(errors.KafkaConnectionError("down"), pipeline.FATAL)
    # Two instances of one pipeline (one group) must not share a transactional id.
    assert pipeline.transactional_id("g") != pipeline.transactional_id("g")


class _Rewinding:
    """A consumer whose group committed partition 0 (at 5) but nothing yet for partition 1."""

    def __init__(self) -> None:
        self.seeks: dict[TopicPartition, int] = {}

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, Any]:
        committed = {TopicPartition("in", 0): 5, TopicPartition("in", 1): None}
        for tp in partitions:
            if committed[tp] is not None:
                self.seeks[tp] = committed[tp]
        return {tp: committed[tp] for tp in partitions}

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks[tp] = offset


async def test_transactional_pipeline_rewinds_partitions_with_nothing_committed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # After an abort, the first transaction's input must be read again even where the group has
    # no committed offset yet (seek_to_committed alone leaves those partitions where they are).
    pipeline = _load("transactional_pipeline", monkeypatch)
    consumer = _Rewinding()
    p0, p1 = TopicPartition("in", 0), TopicPartition("in", 1)
    batch = {
        p0: [types.SimpleNamespace(offset=o) for o in (5, 6)],
        p1: [types.SimpleNamespace(offset=o) for o in (0, 1, 2)],
    }
    await pipeline.rewind(consumer, batch)
    assert consumer.seeks == {p0: 5, p1: 0}


def test_produce_and_consume_examples_twice_and_on_sigterm(
    tansu_broker: TansuBroker, services: list[Service]
) -> None:
    bootstrap = tansu_broker.bootstrap_servers
    topic, group = f"example-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    out = _run(str(EXAMPLES / "produce.py"), bootstrap, topic)
    assert "1000 records sent" in out and "transaction committed" in out
    # A second run in a row: the topic exists, the transactional id is taken over.
    out = _run(str(EXAMPLES / "produce.py"), bootstrap, topic, "--records", "100")
    assert "100 records sent" in out and "transaction committed" in out
    consume = (str(EXAMPLES / "consume.py"), "--bootstrap", bootstrap, "--group", group)
    out = _run(*consume, "--from-beginning", "--max-records", "1122", topic)
    assert out.count(f"{topic}[") == 1122 and "stopped after 1122 records" in out, out
    # Again with the same group, until SIGTERM: it resumes after the committed offsets (nothing
    # printed again), then stops cleanly.
    service = Service(*consume, topic)
    services.append(service)
    service.wait_for_line(r"^assigned: \[TopicPartition")
    status, out, err = service.terminate()
    _assert_clean(status, out, err)
    assert "stopped by signal after 0 records" in out and f"{topic}[" not in out, out


def test_produce_example_stops_cleanly_on_sigterm(
    tansu_broker: TansuBroker, services: list[Service]
) -> None:
    service = Service(
        str(EXAMPLES / "produce.py"), tansu_broker.bootstrap_servers,
        f"example-{uuid.uuid4().hex[:8]}", "--records", "100000000",
    )  # fmt: skip
    services.append(service)
    service.wait_for_line(r"^sending 100000000 records")
    time.sleep(0.5)  # mid-run: sends in flight
    status, out, err = service.terminate()
    _assert_clean(status, out, err)
    assert "stopped by signal" in out and "records sent" not in out, out


async def test_prometheus_metrics_serves_the_text_format_twice_in_a_row(
    tansu_broker: TansuBroker, services: list[Service]
) -> None:
    topic = f"prom-{uuid.uuid4().hex[:8]}"
    for _run_number in range(2):  # the second run finds the topic there
        service = Service(
            str(EXAMPLES / "prometheus_metrics.py"), "--bootstrap",
            tansu_broker.bootstrap_servers, "--port", "0", "--topic", topic,
        )  # fmt: skip
        services.append(service)
        url = service.wait_for_line(r"metrics on (http://\S+)").group(1)
        text = await _scrape_until(url, f'aiokafkawire_producer_records_total{{topic="{topic}"')
        assert "# TYPE aiokafkawire_request_latency_seconds histogram" in text, text
        assert re.search(
            r'aiokafkawire_requests_total\{broker="\d+",api="Produce",outcome="ok"\} \d+', text
        )
        assert re.search(r'aiokafkawire_request_latency_seconds_bucket\{.*le="\+Inf"\} \d+', text)
        assert re.search(r"^aiokafkawire_producer_buffer_use [0-9.]+$", text, re.M)
        status, out, err = service.terminate()  # SIGTERM mid-run: the producer is sending
        _assert_clean(status, out, err)


async def _scrape_until(url: str, wanted: str, timeout: float = 20) -> str:
    """GET ``url`` until its text contains ``wanted`` (or ``timeout``); the last text."""
    text = ""
    async with aiohttp.ClientSession() as http:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = await http.get(url)
            assert answer.status == 200 and answer.content_type == "text/plain"
            text = await answer.text()
            if wanted in text:
                break
            await asyncio.sleep(0.2)
    return text


async def test_work_queue_runs_twice_and_stops_on_sigterm(
    kafka_cluster: KafkaCluster, services: list[Service]
) -> None:
    # Share groups (KIP-932): Apache Kafka 4.x, not Tansu.
    bootstrap = kafka_cluster.bootstrap_servers
    topic, group = f"jobs-{uuid.uuid4().hex[:8]}", f"workers-{uuid.uuid4().hex[:8]}"
    common = ("--bootstrap", bootstrap, "--topic", topic, "--group", group)
    for _run_number in range(2):  # the second run finds the topic there
        out = _run(str(EXAMPLES / "work_queue.py"), *common, "--enqueue", "10", timeout=120)
        assert f"enqueued 10 jobs on {topic}" in out, out
    for run_number in range(2):
        service = Service(
            str(EXAMPLES / "work_queue.py"), *common, "--workers", "2", "--from-beginning"
        )
        services.append(service)
        service.wait_for_line(r"2 workers on", timeout=120)
        if run_number == 0:
            service.wait_for_line(r"job \d+ -> accept", timeout=120)
        status, out, err = service.terminate(timeout=60)
        _assert_clean(status, out, err)
        assert "stopped:" in out, out + err
