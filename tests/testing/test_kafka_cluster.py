"""The Apache Kafka fixture (``KafkaCluster``): real KRaft brokers as child JVMs.

These tests start real JVMs: the session fixtures (one 4.x, one 3.9 broker) are shared with the
rest of the suite; the 3-broker and security clusters here are started once each.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from aiokafkawire import Admin, Consumer, NewTopic, Producer
from aiokafkawire.admin import ConfigResource, ResourceType
from aiokafkawire.errors import KafkaTimeoutError
from aiokafkawire.net.tls import create_ssl_context
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster, probe_api_versions
from aiokafkawire.testing._errors import BrokerStartError, BrokerUnavailableError
from aiokafkawire.testing.kafka import _metadata_broker_ids
from aiokafkawire.testing.pytest_plugin import REQUIRE_KAFKA_ENV_VAR, skip_or_fail_unavailable

REPO_ROOT = Path(__file__).resolve().parents[2]
ClusterFactory = Callable[..., KafkaCluster]


def _wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _brokers_seen(cluster: KafkaCluster, node_id: int) -> list[int]:
    try:
        return sorted(_metadata_broker_ids(*cluster.address(node_id), timeout=3.0))
    except OSError:
        return []


async def _round_trip(bootstrap: str, count: int = 100, **security: object) -> list[bytes]:
    topic = f"fixture-{uuid.uuid4().hex[:8]}"
    async with Admin(bootstrap_servers=bootstrap, **security) as admin:
        results = await admin.create_topics([NewTopic(topic, num_partitions=1)])
        assert results[topic].error is None, results[topic].error
    async with Producer(bootstrap_servers=bootstrap, acks="all", **security) as producer:
        handles = [await producer.send(topic, b"v%d" % i) for i in range(count)]
        await producer.flush()
        assert [(await h).offset for h in handles] == list(range(count))
    tp = TopicPartition(topic, 0)
    async with Consumer(bootstrap_servers=bootstrap, **security) as consumer:
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        values: list[bytes] = []
        for _ in range(50):  # bounded: 50 polls of at most 1 s
            batch = await consumer.getmany(timeout_ms=1000)
            values += [record.value for record in batch.get(tp, [])]
            if len(values) >= count:
                break
    return values


def test_newest_4x_broker_serves_our_client(kafka_cluster: KafkaCluster) -> None:
    assert kafka_cluster.version is not None and kafka_cluster.version.startswith("4.")
    assert kafka_cluster.broker_ids == [1]
    # KIP-896: Kafka 4 no longer serves Fetch v0-v3 (it still advertises Produce v0, for
    # librdkafka's sake, and refuses it on use).
    assert kafka_cluster.api_versions[1][0] >= 4
    values = asyncio.run(_round_trip(kafka_cluster.bootstrap_servers))
    assert values == [b"v%d" % i for i in range(100)]
    assert "Kafka Server started" in kafka_cluster.logs(1)


def test_topics_have_no_time_retention(kafka_cluster: KafkaCluster) -> None:
    # Kafka deletes records older than retention.ms (7 days, by record timestamp) at each
    # retention check, so a test writing a fixed 2023 timestamp lost them if one fell mid-test.
    async def main() -> None:
        topic = f"old-ts-{uuid.uuid4().hex[:8]}"
        resource = ConfigResource(ResourceType.TOPIC, topic)
        async with Admin(bootstrap_servers=kafka_cluster.bootstrap_servers) as admin:
            assert (await admin.create_topics([NewTopic(topic, 1)]))[topic].error is None
            entries = (await admin.describe_configs([resource]))[resource].entries
        assert entries["retention.ms"].value == "-1"

    asyncio.run(main())


def test_kafka_39_serves_the_oldest_protocol_versions(kafka_cluster_39: KafkaCluster) -> None:
    assert kafka_cluster_39.version is not None and kafka_cluster_39.version.startswith("3.9")
    assert kafka_cluster_39.api_versions[0][0] == 0  # Produce v0
    assert kafka_cluster_39.api_versions[1][0] == 0  # Fetch v0
    values = asyncio.run(_round_trip(kafka_cluster_39.bootstrap_servers, count=10))
    assert values == [b"v%d" % i for i in range(10)]


def test_three_brokers_kill_pause_stop_and_restart(kafka_cluster_factory: ClusterFactory) -> None:
    # The controller fences a node 3 s after its last heartbeat (9 s by default), as in the
    # reliability tests' cluster: the kill below is seen sooner.
    cluster = kafka_cluster_factory(
        brokers=3,
        config={"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"},
    )
    assert cluster.broker_ids == [1, 2, 3]
    assert len(cluster.bootstrap_servers.split(",")) == 3
    assert _brokers_seen(cluster, 1) == [1, 2, 3]
    first_pid = cluster.pid(2)

    cluster.kill_broker(2)
    assert cluster.pid(2) is None and not cluster.running(2)
    _wait_until(lambda: _brokers_seen(cluster, 1) == [1, 3], 60, "node 2 to be fenced")
    cluster.start_broker(2)
    assert cluster.pid(2) not in (None, first_pid)
    assert _brokers_seen(cluster, 2) == [1, 2, 3]

    cluster.pause_broker(3)
    with pytest.raises(OSError):  # a stopped JVM accepts nothing into its answers
        probe_api_versions(*cluster.address(3), timeout=1.0)
    cluster.resume_broker(3)
    _wait_until(
        lambda: probe_api_versions(*cluster.address(3), timeout=5.0).error_code == 0,
        30,
        "node 3 to answer after SIGCONT",
    )

    cluster.stop_broker(1)
    assert not cluster.running(1)
    assert "[BrokerServer id=1] shut down completed" in cluster.logs(1)  # a controlled shutdown
    cluster.start_broker(1)
    assert _brokers_seen(cluster, 1) == [1, 2, 3]

    pids = [cluster.pid(node) for node in cluster.broker_ids]
    workdir = cluster.log_dir
    cluster.stop()
    assert not workdir.exists()
    for pid in pids:
        assert pid is not None and not os.path.exists(f"/proc/{pid}")


def test_tls_sasl_listeners_and_the_authorizer(kafka_cluster_factory: ClusterFactory) -> None:
    cluster = kafka_cluster_factory(
        listeners=("SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        sasl_users={"alice": "alice-secret"},
        authorizer=True,
    )
    assert cluster.ca_path is not None
    tls = create_ssl_context(cafile=cluster.ca_path)
    admin_sasl = {
        "security_protocol": "SASL_SSL",
        "ssl_context": tls,
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "admin",
        "sasl_plain_password": "admin-secret",
    }
    values = asyncio.run(_round_trip(cluster.bootstrap_for("SASL_SSL"), count=5, **admin_sasl))
    assert len(values) == 5
    values = asyncio.run(
        _round_trip(cluster.bootstrap_for("SSL"), count=5, security_protocol="SSL", ssl_context=tls)
    )
    assert len(values) == 5

    async def topics_seen_by(user: str, password: str) -> list[str]:
        async with Admin(
            bootstrap_servers=cluster.bootstrap_for("SASL_PLAINTEXT"),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username=user,
            sasl_plain_password=password,
        ) as admin:
            return await admin.list_topics()

    # The authorizer hides topics from a principal without ACLs; super users see them all.
    assert asyncio.run(topics_seen_by("admin", "admin-secret"))
    assert asyncio.run(topics_seen_by("alice", "alice-secret")) == []


def test_a_broker_that_cannot_start_names_its_log(
    monkeypatch: pytest.MonkeyPatch, kafka_cluster: KafkaCluster
) -> None:
    # Skipping the storage format makes the JVM exit at once ("no meta.properties").
    monkeypatch.setattr(KafkaCluster, "_format_storage", lambda self, deadline: None)
    cluster = KafkaCluster(version=kafka_cluster.version, startup_timeout=60)
    with pytest.raises(BrokerStartError) as caught:
        cluster.start()
    message = str(caught.value)
    assert "broker.log" in message and "last lines" in message
    assert "meta.properties" in message


def test_startup_timeout_is_a_typed_error(kafka_cluster: KafkaCluster) -> None:
    cluster = KafkaCluster(version=kafka_cluster.version, startup_timeout=1)
    started = time.monotonic()
    with pytest.raises((KafkaTimeoutError, BrokerStartError)) as caught:
        cluster.start()
    assert time.monotonic() - started < 60
    assert "node 1" in str(caught.value)


def test_unknown_version_is_unavailable_not_a_crash() -> None:
    if shutil.which("mvn") is None:
        pytest.skip("needs Maven")
    with pytest.raises(BrokerUnavailableError, match=r"0\.0\.1"):
        KafkaCluster(version="0.0.1").start()


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv")
def test_jvm_dies_with_a_killed_parent_process(kafka_cluster: KafkaCluster) -> None:
    script = (
        "import sys, time\n"
        "from aiokafkawire.testing import KafkaCluster\n"
        f"c = KafkaCluster(version={kafka_cluster.version!r}).start()\n"
        "print(c.pid(1), c.log_dir, flush=True)\n"
        "time.sleep(120)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert parent.stdout is not None
        pid_text, _workdir = parent.stdout.readline().split()
        jvm_pid = int(pid_text)
        os.kill(jvm_pid, 0)  # running
    finally:
        parent.kill()
        parent.wait(10)
    _wait_until(lambda: not os.path.exists(f"/proc/{jvm_pid}"), 15, "the JVM to die")


def test_required_kafka_turns_a_skip_into_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_KAFKA_ENV_VAR, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Java"):
        skip_or_fail_unavailable("Apache Kafka", BrokerUnavailableError("no Java"))
    monkeypatch.setenv(REQUIRE_KAFKA_ENV_VAR, "1")
    with pytest.raises(pytest.fail.Exception, match=REQUIRE_KAFKA_ENV_VAR):
        skip_or_fail_unavailable("Apache Kafka", BrokerUnavailableError("no Java"))
