"""TansuBroker: start, answer Kafka requests, serve an independent client, stop cleanly."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from aiokafkawire.errors import KafkaTimeoutError
from aiokafkawire.testing import tansu as tansu_module
from aiokafkawire.testing._errors import BrokerStartError, BrokerUnavailableError
from aiokafkawire.testing.tansu import TansuBroker, resolve_tansu_binary

pytestmark = pytest.mark.integration

try:
    resolve_tansu_binary()
except BrokerUnavailableError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"Tansu unavailable: {exc}", allow_module_level=True)

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

QUIET = {"log_level": 0}


def _process_gone(pid: int) -> bool:
    # The broker is our child and stop() reaps it, so its /proc entry must be gone entirely.
    return not os.path.exists(f"/proc/{pid}")


@pytest.fixture
def broker() -> Iterator[TansuBroker]:
    """A private Tansu broker for tests that change its state."""
    with TansuBroker() as running:
        yield running


def test_start_answer_stop(broker: TansuBroker) -> None:
    pid = broker.pid
    assert pid is not None and broker.running
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    assert (host, int(port)) == (broker.host, broker.port) == ("127.0.0.1", broker.port)
    info = broker.probe(version=3)
    assert info.error_code == 0 and info.version == 3
    assert {0, 1, 3, 18} <= set(info.api_versions)  # Produce, Fetch, Metadata, ApiVersions
    assert broker.api_versions == info.api_versions
    broker.stop()
    assert _process_gone(pid)
    assert not broker.running and broker.pid is None
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()
    broker.stop()  # idempotent


async def test_async_context_manager() -> None:
    async with TansuBroker() as broker:
        pid = broker.pid
        assert pid is not None
        assert broker.probe(version=0).api_versions
    assert _process_gone(pid)


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[bytes]]:
    """Every process started while the test runs, in order (``Popen`` wrapped to record it)."""
    processes: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        process = real_popen(*args, **kwargs)
        processes.append(process)
        return process

    monkeypatch.setattr(tansu_module.subprocess, "Popen", recording_popen)
    return processes


async def test_cancelled_async_start_leaves_no_process(
    launched: list[subprocess.Popen[bytes]],
) -> None:
    broker = TansuBroker()
    starting = asyncio.create_task(broker.start_async())
    await asyncio.sleep(0)  # let the task begin, then cancel it while the start runs
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert broker.pid is None
    (process,) = launched  # the start did run to completion before being undone
    assert process.returncode is not None and _process_gone(process.pid)


def test_produce_and_consume_with_confluent_kafka(broker: TansuBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    futures = admin.create_topics([NewTopic("tansu-roundtrip", 2, 1)])
    futures["tansu-roundtrip"].result(timeout=10)
    metadata = admin.list_topics(timeout=10)
    assert len(metadata.topics["tansu-roundtrip"].partitions) == 2
    (advertised,) = metadata.brokers.values()
    assert (advertised.host, advertised.port) == (broker.host, broker.port)

    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, **QUIET})
    reports: list[tuple[object, int, int]] = []
    for i in range(5):
        producer.produce(
            "tansu-roundtrip",
            key=b"k%d" % i,
            value=b"v%d" % i,
            partition=1,
            on_delivery=lambda err, msg: reports.append((err, msg.partition(), msg.offset())),
        )
    assert producer.flush(10) == 0
    assert reports == [(None, 1, i) for i in range(5)]

    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused", **QUIET}
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition("tansu-roundtrip", 1, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 10
        while len(values) < 5 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    assert values == [b"v%d" % i for i in range(5)]


def test_early_exit_reports_broker_output() -> None:
    broker = TansuBroker(extra_args=["--no-such-flag"], startup_timeout=10)
    with pytest.raises(BrokerStartError, match="no-such-flag"):
        broker.start()
    assert broker.pid is None


def test_explicit_port_in_use_fails_with_output() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        broker = TansuBroker(port=port, startup_timeout=10)
        with pytest.raises(BrokerStartError, match=f"port {port} was taken"):
            broker.start()
        assert broker.pid is None


def test_port_race_is_retried_on_a_new_port(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        taken_port = taken.getsockname()[1]
        chosen: list[int] = []
        real_find_free_port = tansu_module.find_free_port

        def first_taken_then_free(host: str = "127.0.0.1") -> int:
            port = taken_port if not chosen else real_find_free_port(host)
            chosen.append(port)
            return port

        monkeypatch.setattr(tansu_module, "find_free_port", first_taken_then_free)
        with TansuBroker(startup_timeout=10) as broker:
            assert chosen[0] == taken_port
            assert broker.port == chosen[-1] != taken_port
            assert broker.probe().error_code == 0


def test_startup_timeout_raises_and_kills_the_process(
    monkeypatch: pytest.MonkeyPatch, launched: list[subprocess.Popen[bytes]]
) -> None:
    def never_answers(*args: object, **kwargs: object) -> object:
        raise ConnectionRefusedError("pretend the broker is not listening yet")

    monkeypatch.setattr(tansu_module, "probe_api_versions", never_answers)
    broker = TansuBroker(startup_timeout=0.5)
    with pytest.raises(KafkaTimeoutError, match="did not answer"):
        broker.start()
    assert broker.pid is None
    (process,) = launched
    assert process.returncode is not None  # stopped and reaped
    assert _process_gone(process.pid)


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv")
def test_broker_dies_with_a_killed_parent_process() -> None:
    # A test process killed without teardown must not leave its broker running.
    script = (
        "import sys, time\n"
        "from aiokafkawire.testing import TansuBroker\n"
        "b = TansuBroker().start()\n"
        "print(b.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        broker_pid = int(parent.stdout.readline())
        os.kill(broker_pid, 0)  # running
    finally:
        parent.kill()
        parent.wait(10)
    deadline = time.monotonic() + 10
    while True:
        try:
            os.kill(broker_pid, 0)
        except ProcessLookupError:
            break
        # bounded: the kernel delivers the parent-death signal at once
        assert time.monotonic() < deadline, f"broker {broker_pid} outlived its parent"
        time.sleep(0.05)
