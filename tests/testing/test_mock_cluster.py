"""MockCluster: librdkafka's mock brokers, observed by raw requests and by confluent-kafka."""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

from aiokafkawire.errors import ConfigError, MessageTooLargeError, NotLeaderOrFollowerError
from aiokafkawire.testing._errors import BrokerUnavailableError, MockClusterError
from aiokafkawire.testing._probe import _recv_exactly, probe_api_versions
from aiokafkawire.testing.mock_cluster import MOCK_GROUP_API_CAPS, MockCluster, find_librdkafka

pytestmark = pytest.mark.integration

try:
    find_librdkafka()
except BrokerUnavailableError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"librdkafka unavailable: {exc}", allow_module_level=True)

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient  # noqa: E402

PRODUCE, METADATA, FIND_COORDINATOR, INIT_PRODUCER_ID = 0, 3, 10, 22
QUIET = {"log_level": 0}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    """A 3-broker mock cluster, closed after the test."""
    with MockCluster(3) as running:
        yield running


def _produce(
    bootstrap: str, topic: str, values: list[bytes], partition: int = 0, **conf: object
) -> list[tuple[Any, int]]:
    """Produce ``values`` with confluent-kafka and return (error, offset) per delivery report."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, **QUIET, **conf})
    reports: list[tuple[Any, int]] = []
    for value in values:
        producer.produce(
            topic,
            value=value,
            partition=partition,
            on_delivery=lambda err, msg: reports.append((err, msg.offset())),
        )
    assert producer.flush(15) == 0
    return reports


def _consume(bootstrap: str, topic: str, partition: int, count: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", **QUIET}
    )
    values: list[bytes] = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, partition, 0)])
        deadline = time.monotonic() + 10
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def _partition_leader(bootstrap: str, topic: str, partition: int) -> int:
    metadata = AdminClient({"bootstrap.servers": bootstrap, **QUIET}).list_topics(timeout=10)
    leader: int = metadata.topics[topic].partitions[partition].leader
    return leader


def _find_coordinator(host: str, port: int, group: str) -> int:
    """FindCoordinator v0 by hand; returns the coordinator's node id."""
    key = group.encode()
    client = b"t"
    payload = struct.pack(">hhih", FIND_COORDINATOR, 0, 5, len(client)) + client
    payload += struct.pack(">h", len(key)) + key
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
        body = _recv_exactly(sock, size)
    _correlation, error, node_id = struct.unpack_from(">ihi", body)
    assert error == 0
    node: int = node_id
    return node


def test_every_broker_answers_api_versions(cluster: MockCluster) -> None:
    assert cluster.broker_ids == [1, 2, 3]
    assert len(cluster.bootstrap_servers.split(",")) == 3
    for broker_id in cluster.broker_ids:
        host, port = cluster.broker_address(broker_id)
        info = probe_api_versions(host, port, version=3)
        assert info.error_code == 0
        assert info.version == 2  # the mock implements ApiVersions up to v2 and says so
        assert {PRODUCE, METADATA, FIND_COORDINATOR} <= set(info.api_versions)
    expected = dict(cluster.default_api_versions)
    for api_key, top in MOCK_GROUP_API_CAPS.items():  # capped by default (see MockCluster)
        expected[api_key] = (expected[api_key][0], min(expected[api_key][1], top))
    assert info.api_versions == expected


def test_group_api_caps_can_be_turned_off() -> None:
    with MockCluster(1, cap_group_apis=False) as cluster:
        host, port = cluster.broker_address(1)
        info = probe_api_versions(host, port, version=3)
        assert info.api_versions == cluster.default_api_versions
        assert info.api_versions[11][1] > MOCK_GROUP_API_CAPS[11]


def test_broker_ids_match_metadata(cluster: MockCluster) -> None:
    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **QUIET}).list_topics(
        timeout=10
    )
    advertised = {b.id: (b.host, b.port) for b in metadata.brokers.values()}
    assert advertised == {i: cluster.broker_address(i) for i in cluster.broker_ids}


def test_topic_creation_and_leader_change(cluster: MockCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    cluster.create_topic("moving", partitions=2, replication_factor=3)
    cluster.set_partition_leader("moving", 0, 2)
    assert _partition_leader(bootstrap, "moving", 0) == 2

    cluster.start_request_tracking()
    assert _produce(bootstrap, "moving", [b"a", b"b"]) == [(None, 0), (None, 1)]
    produce_brokers = {r.broker_id for r in cluster.requests() if r.api_key == PRODUCE}
    assert produce_brokers == {2}

    cluster.set_partition_leader("moving", 0, 3)
    assert _partition_leader(bootstrap, "moving", 0) == 3
    cluster.clear_requests()
    assert _produce(bootstrap, "moving", [b"c"]) == [(None, 2)]
    produce_brokers = {r.broker_id for r in cluster.requests() if r.api_key == PRODUCE}
    assert produce_brokers == {3}
    assert _consume(bootstrap, "moving", 0, 3) == [b"a", b"b", b"c"]

    with pytest.raises(MockClusterError) as info:
        cluster.create_topic("moving")
    assert info.value.name == "TOPIC_ALREADY_EXISTS" and info.value.code == 36
    cluster.delete_topic("moving")
    with pytest.raises(MockClusterError, match="UNKNOWN_TOPIC"):
        cluster.delete_topic("moving")


def test_broker_down_refuses_then_up_answers(cluster: MockCluster) -> None:
    host, port = cluster.broker_address(2)
    cluster.broker_down(2)
    with pytest.raises(OSError):
        probe_api_versions(host, port, timeout=2)
    # the other brokers are unaffected
    assert probe_api_versions(*cluster.broker_address(1)).error_code == 0
    cluster.broker_up(2)
    assert probe_api_versions(host, port).error_code == 0


def test_retriable_produce_errors_are_retried(cluster: MockCluster) -> None:
    cluster.create_topic("retry", 1, 1)
    cluster.push_request_errors(PRODUCE, [NotLeaderOrFollowerError, NotLeaderOrFollowerError])
    cluster.start_request_tracking()
    assert _produce(cluster.bootstrap_servers, "retry", [b"x"], **{"retry.backoff.ms": 10}) == [
        (None, 0)
    ]
    produce_requests = [r for r in cluster.requests() if r.api_key == PRODUCE]
    assert len(produce_requests) == 3  # two injected failures, then the real write


def test_fatal_produce_error_reaches_delivery_report(cluster: MockCluster) -> None:
    cluster.create_topic("fatal", 1, 1)
    cluster.push_request_errors(PRODUCE, [MessageTooLargeError.code])
    ((error, _offset),) = _produce(cluster.bootstrap_servers, "fatal", [b"x"])
    assert error is not None and error.code() == MessageTooLargeError.code


def test_cleared_errors_are_not_served(cluster: MockCluster) -> None:
    cluster.create_topic("cleared", 1, 1)
    cluster.push_request_errors(PRODUCE, [MessageTooLargeError] * 3)
    cluster.clear_request_errors(PRODUCE)
    assert _produce(cluster.bootstrap_servers, "cleared", [b"x"]) == [(None, 0)]


def test_transport_error_drops_the_connection(cluster: MockCluster) -> None:
    host, port = cluster.broker_address(1)
    cluster.push_request_errors(18, [-195])  # librdkafka's _TRANSPORT: disconnect instead
    with pytest.raises(OSError):
        probe_api_versions(host, port, version=0)
    assert probe_api_versions(host, port, version=0).error_code == 0  # consumed


def test_group_initial_rebalance_delay_is_configurable() -> None:
    with MockCluster(1, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic("grouped", 1, 1)
        _produce(cluster.bootstrap_servers, "grouped", [b"g"])
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "fast-group",
                "auto.offset.reset": "earliest",
                **QUIET,
            }
        )
        started = time.monotonic()
        try:
            consumer.subscribe(["grouped"])
            message = None
            while message is None and time.monotonic() - started < 10:
                message = consumer.poll(0.1)
        finally:
            consumer.close()
        assert message is not None and message.value() == b"g"
        # librdkafka's default delay is 3 s before the first assignment
        assert time.monotonic() - started < 2.5


def test_broker_error_with_delay(cluster: MockCluster) -> None:
    cluster.create_topic("slow", 1, 1)
    cluster.set_partition_leader("slow", 0, 1)
    cluster.push_broker_request_errors(1, PRODUCE, [(0, 400)])
    assert cluster.broker_error_stack_count(1, PRODUCE) == 1
    started = time.monotonic()
    assert _produce(cluster.bootstrap_servers, "slow", [b"x"]) == [(None, 0)]
    assert time.monotonic() - started >= 0.4
    assert cluster.broker_error_stack_count(1, PRODUCE) == 0


def test_broker_rtt_delays_responses(cluster: MockCluster) -> None:
    host, port = cluster.broker_address(3)
    cluster.set_broker_rtt(3, 300)
    started = time.monotonic()
    probe_api_versions(host, port, version=0)
    assert time.monotonic() - started >= 0.3
    cluster.set_broker_rtt(3, 0)
    started = time.monotonic()
    probe_api_versions(host, port, version=0)
    assert time.monotonic() - started < 0.3


def test_set_api_version_is_advertised(cluster: MockCluster) -> None:
    host, port = cluster.broker_address(1)
    implemented = cluster.default_api_versions
    cluster.set_api_version(METADATA, 1, 4)
    cluster.disable_api(INIT_PRODUCER_ID)
    advertised = probe_api_versions(host, port).api_versions
    assert advertised[METADATA] == (1, 4)
    assert INIT_PRODUCER_ID not in advertised
    with pytest.raises(ConfigError):
        cluster.set_api_version(METADATA, 0, implemented[METADATA][1] + 1)
    with pytest.raises(ConfigError):
        cluster.set_api_version(9999, 0, 0)


def test_coordinator_can_be_pinned(cluster: MockCluster) -> None:
    host, port = cluster.broker_address(1)
    cluster.set_coordinator("group", "pinned-group", 2)
    assert _find_coordinator(host, port, "pinned-group") == 2
    cluster.set_coordinator("group", "pinned-group", 3)
    assert _find_coordinator(host, port, "pinned-group") == 3
    with pytest.raises(ConfigError):
        cluster.set_coordinator("cluster", "x", 1)  # type: ignore[arg-type]


def test_request_tracking_records_broker_and_api(cluster: MockCluster) -> None:
    host, port = cluster.broker_address(3)
    probe_api_versions(host, port, version=0)  # before tracking: not recorded
    cluster.start_request_tracking()
    probe_api_versions(host, port, version=0)
    ((broker_id, api_key, timestamp),) = cluster.requests()
    assert (broker_id, api_key) == (3, 18) and timestamp > 0
    cluster.clear_requests()
    assert cluster.requests() == []
    probe_api_versions(*cluster.broker_address(1), version=0)
    assert [(r.broker_id, r.api_key) for r in cluster.requests()] == [(1, 18)]
    cluster.stop_request_tracking()
    probe_api_versions(host, port, version=0)
    assert cluster.requests() == []


def test_invalid_arguments_are_rejected(cluster: MockCluster) -> None:
    with pytest.raises(ConfigError):
        MockCluster(0)
    with pytest.raises(ConfigError):
        cluster.broker_down(7)
    with pytest.raises(ConfigError):
        cluster.set_partition_leader("t", 0, 9)
    with pytest.raises(ConfigError):
        cluster.create_topic("t", partitions=0)
    with pytest.raises(ConfigError):
        cluster.push_request_errors(PRODUCE, ["not an error"])  # type: ignore[list-item]


def _native_thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def test_close_stops_brokers_and_threads() -> None:
    baseline = _native_thread_count()
    cluster = MockCluster(2)
    addresses = [cluster.broker_address(i) for i in cluster.broker_ids]
    assert _native_thread_count() > baseline  # librdkafka serves the brokers on its threads
    cluster.close()
    cluster.close()  # idempotent
    assert cluster.closed
    assert _native_thread_count() == baseline
    for host, port in addresses:
        with pytest.raises(OSError):
            socket.create_connection((host, port), timeout=1).close()
    with pytest.raises(RuntimeError, match="closed"):
        cluster.create_topic("late")


async def test_async_context_manager() -> None:
    async with MockCluster(1) as cluster:
        assert probe_api_versions(*cluster.broker_address(1)).error_code == 0
    assert cluster.closed
