"""Shared helpers for the consumer tests: a broker handle per backend, producing, consuming."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from aiokafkawire.consumer import Consumer, ConsumerRecord
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster, MockCluster, TansuBroker
from aiokafkawire.testing.pytest_plugin import broker_kind_params

# librdkafka's mock cluster advertises flexible versions of the classic group APIs but parses
# them as non-flexible (librdkafka itself never sends them) and drops the connection: cap them.
MOCK_GROUP_API_CAPS = {11: 5, 12: 3, 13: 2, 14: 3}


def cap_mock_group_apis(cluster: MockCluster) -> None:
    """Restrict the mock to the classic group API versions it really parses."""
    implemented = cluster.default_api_versions
    for api_key, top in MOCK_GROUP_API_CAPS.items():
        low, high = implemented[api_key]
        cluster.set_api_version(api_key, low, min(high, top))


@dataclass
class Broker:
    """One test broker: its bootstrap string, its kind and how to make topics on it."""

    kind: str
    bootstrap_servers: str
    mock: MockCluster | None = None

    def create_topic(self, partitions: int = 1, name: str | None = None) -> str:
        """Create a fresh topic and return its name."""
        topic = name or f"t-{uuid.uuid4().hex[:10]}"
        if self.mock is not None:
            self.mock.create_topic(topic, partitions, 1)
        else:
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
            futures = admin.create_topics([NewTopic(topic, partitions, 1)])
            for future in futures.values():
                future.result(timeout=60)  # a loaded machine, a JVM broker just started
        return topic


@pytest.fixture(params=broker_kind_params(("tansu", "mock", "kafka")))
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """Each test broker in turn: Tansu, the mock (its group APIs capped), Apache Kafka 4.x.

    Kafka 3.9 is left out here: what the consumer does is the same on both lines, and the
    version-specific paths (the oldest protocol) have their own tests on 3.9.
    """
    if request.param == "tansu":
        tansu: TansuBroker = request.getfixturevalue("tansu_broker")
        yield Broker("tansu", tansu.bootstrap_servers)
    elif request.param == "kafka":
        kafka: KafkaCluster = request.getfixturevalue("kafka_cluster")
        yield Broker("kafka", kafka.bootstrap_servers)
    else:
        mock: MockCluster = request.getfixturevalue("mock_cluster")
        cap_mock_group_apis(mock)
        mock.set_group_initial_rebalance_delay(0)
        yield Broker("mock", mock.bootstrap_servers, mock)


def only_on(*kinds: str) -> pytest.MarkDecorator:
    """Run a ``broker`` test on these kinds only (it overrides the fixture's parameters).

    For a test of the client's own logic that Tansu makes slow (its group joins wait seconds)
    while Apache Kafka, the reference, checks the same behaviour in a fraction of the time.
    """
    return pytest.mark.parametrize("broker", broker_kind_params(kinds), indirect=True)


@pytest.fixture
def mock(mock_cluster: MockCluster) -> MockCluster:
    """The 3-broker mock cluster with its group APIs capped and no initial rebalance delay."""
    cap_mock_group_apis(mock_cluster)
    mock_cluster.set_group_initial_rebalance_delay(0)
    return mock_cluster


def produce(
    bootstrap_servers: str,
    topic: str,
    messages: list[dict[str, Any]],
    **config: Any,
) -> None:
    """Produce with confluent-kafka (blocking); each message is ``Producer.produce`` kwargs."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap_servers, "linger.ms": 5, "acks": "all", **config}
    )
    failures: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(err)

    for message in messages:
        while True:
            try:
                producer.produce(topic, on_delivery=delivered, **message)
                break
            except BufferError:
                producer.poll(0.1)
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} messages not delivered"
    assert not failures, failures


def produce_values(bootstrap_servers: str, topic: str, partitions: int, count: int) -> None:
    """``count`` records with values ``b"<i>"`` spread round-robin over the partitions."""
    produce(
        bootstrap_servers,
        topic,
        [{"value": str(i).encode(), "partition": i % partitions} for i in range(count)],
    )


async def consume_n(consumer: Consumer, count: int, timeout: float = 20.0) -> list[ConsumerRecord]:
    """getmany() until ``count`` records arrived or ``timeout`` passed."""
    records: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout
    while len(records) < count and time.monotonic() < deadline:
        batch = await consumer.getmany(timeout_ms=200)
        for part in batch.values():
            records.extend(part)
    return records


async def wait_until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    """Poll a condition (bounded); fails the test on timeout."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


def by_partition(records: list[ConsumerRecord]) -> dict[TopicPartition, list[ConsumerRecord]]:
    """Group records by partition, keeping their order."""
    out: dict[TopicPartition, list[ConsumerRecord]] = {}
    for record in records:
        out.setdefault(TopicPartition(record.topic, record.partition), []).append(record)
    return out


class ConfluentMember:
    """A confluent-kafka group consumer polled in its own thread (started and stopped by us)."""

    def __init__(self, bootstrap_servers: str, group_id: str, topic: str, **config: Any) -> None:
        import threading

        self._config = {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group_id,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 4000,
            "heartbeat.interval.ms": 300,
            "enable.auto.commit": False,
            **config,
        }
        self._topic = topic
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._assignment: set[TopicPartition] = set()
        self.records: list[tuple[int, int]] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="confluent-member", daemon=True)

    def start(self) -> ConfluentMember:
        """Start polling."""
        self._thread.start()
        return self

    @property
    def assignment(self) -> set[TopicPartition]:
        """The partitions librdkafka currently assigns to this member."""
        with self._lock:
            return set(self._assignment)

    def _run(self) -> None:
        from confluent_kafka import Consumer as RdConsumer

        consumer = RdConsumer(self._config)

        # The callbacks get what changes: the whole assignment under an eager protocol, only
        # the added or revoked partitions under an incremental one (cooperative-sticky and
        # KIP-848).  Adding and removing what they name is right for both.
        def on_assign(_c: Any, partitions: list[Any]) -> None:
            with self._lock:
                self._assignment |= {TopicPartition(p.topic, p.partition) for p in partitions}

        def on_revoke(_c: Any, partitions: list[Any]) -> None:
            with self._lock:
                self._assignment -= {TopicPartition(p.topic, p.partition) for p in partitions}

        try:
            consumer.subscribe([self._topic], on_assign=on_assign, on_revoke=on_revoke)
            while not self._stop.is_set():
                message = consumer.poll(0.1)
                if message is not None and not message.error():
                    self.records.append((message.partition(), message.offset()))
        except BaseException as exc:  # reported to the test through .error
            self.error = exc
        finally:
            consumer.close()  # leaves the group

    def stop(self, timeout: float = 15.0) -> None:
        """Close the consumer (it leaves the group) and join the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        assert not self._thread.is_alive(), "confluent consumer thread did not stop"
