"""Groups by type (KIP-848 admin, KIP-1043): ListGroups filtered on the broker by type and state,
ConsumerGroupDescribe for consumer-protocol groups and DescribeGroups (newest version) for
classic ones, on Apache Kafka 4.4 and (classic groups, filters) 3.9."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _kafka_helpers import create_topic, eventually, unique

from aiokafkawire import errors
from aiokafkawire.admin import Admin, NewTopic
from aiokafkawire.consumer import Consumer
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing.pytest_plugin import broker_kind_params

pytestmark = pytest.mark.integration

CONSUMER_OPTIONS: dict[str, Any] = {
    "auto_offset_reset": "earliest",
    "fetch_max_wait_ms": 100,
    "enable_auto_commit": False,
}
CLASSIC = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300, **CONSUMER_OPTIONS}


@pytest.fixture(params=broker_kind_params(("kafka", "kafka39")))
def kafka(request: pytest.FixtureRequest) -> KafkaCluster:
    """Apache Kafka 4.4 and 3.9."""
    fixture = {"kafka": "kafka_cluster", "kafka39": "kafka_cluster_39"}[request.param]
    cluster: KafkaCluster = request.getfixturevalue(fixture)
    return cluster


@contextlib.asynccontextmanager
async def _polling(consumer: Consumer) -> AsyncIterator[Consumer]:
    """A started consumer polling in a task (its group stays Stable) for the block's length."""

    async def poll() -> None:
        while True:
            await consumer.getmany(timeout_ms=100)

    async with consumer:
        task = asyncio.create_task(poll())
        try:
            yield consumer
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_groups_are_listed_by_type_and_state_and_described_by_their_protocol(
    kafka: KafkaCluster,
) -> None:
    bootstrap = kafka.bootstrap_servers
    kafka4 = (kafka.version or "").startswith("4.")
    topic = await create_topic(bootstrap, "by-type", 2)
    everything = {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    classic_group, consumer_group = unique("g-classic"), unique("g-consumer")
    async with contextlib.AsyncExitStack() as stack:
        classic = await stack.enter_async_context(
            _polling(
                Consumer(topic, bootstrap_servers=bootstrap, group_id=classic_group, **CLASSIC)
            )
        )
        members = [classic]
        if kafka4:
            members.append(
                await stack.enter_async_context(
                    _polling(
                        Consumer(
                            topic,
                            bootstrap_servers=bootstrap,
                            group_id=consumer_group,
                            group_protocol="consumer",
                            **CONSUMER_OPTIONS,
                        )
                    )
                )
            )
        await eventually(
            lambda: all(m.assignment() == everything for m in members), 60, "both assigned"
        )
        async with Admin(bootstrap_servers=bootstrap) as admin:
            await _check_listings(admin, classic_group, consumer_group if kafka4 else None)
            described = await admin.describe_groups(
                [classic_group, "no-such-group"], raise_on_error=False
            )
            _check_classic(described[classic_group], everything)
            missing = described["no-such-group"]
            if kafka4:  # DescribeGroups v6 (KIP-1043)
                assert isinstance(missing.error, errors.GroupIdNotFoundError)
                assert "no-such-group" in str(missing.error)
            else:
                assert missing.error is None and missing.state == "Dead"
            if kafka4:
                [consumer] = [m for m in members if m is not classic]
                found = await admin.describe_groups([consumer_group])
                _check_consumer(found[consumer_group], consumer, topic, everything)


async def _check_listings(admin: Admin, classic: str, consumer: str | None) -> None:
    def ids(listings: list[Any]) -> set[str]:
        return {g.group_id for g in listings} & {classic, consumer}

    everything = {classic} if consumer is None else {classic, consumer}
    listed = {g.group_id: g for g in await admin.list_groups()}
    assert listed[classic].group_type == "classic"
    assert ids(await admin.list_groups(types=["classic"])) == {classic}
    assert ids(await admin.list_groups(types=["share"])) == set()
    assert ids(await admin.list_groups(states=["Stable"])) == everything
    assert ids(await admin.list_groups(states=["stable"])) == everything  # case-insensitive
    assert ids(await admin.list_groups(states=["Empty"])) == set()
    assert ids(await admin.list_groups(types=["classic", "consumer"], states=["Stable"])) == (
        everything
    )
    if consumer is not None:
        assert listed[consumer].group_type == "consumer"
        assert ids(await admin.list_groups(types=["consumer"])) == {consumer}


def _check_classic(described: Any, everything: set[TopicPartition]) -> None:
    assert described.error is None
    assert (described.group_type, described.state, described.protocol_type) == (
        "classic",
        "Stable",
        "consumer",
    )
    assert described.group_epoch == -1
    [member] = described.members
    assert set(member.assigned_partitions) == everything
    assert member.metadata  # the subscription bytes the classic protocol carries
    assert member.member_epoch == -1


def _check_consumer(
    described: Any, consumer: Consumer, topic: str, everything: set[TopicPartition]
) -> None:
    assert described.error is None, described.error
    assert (described.group_type, described.state, described.protocol_type) == (
        "consumer",
        "Stable",
        "consumer",
    )
    assert described.protocol in ("uniform", "range")  # the broker's assignor
    assert described.group_epoch >= 1
    assert described.assignment_epoch == described.group_epoch
    [member] = described.members
    assert member.member_id == consumer._parts.membership.member_id  # type: ignore[union-attr]
    assert member.member_epoch >= 1
    assert set(member.assigned_partitions) == everything
    assert set(member.target_assignment) == everything
    assert member.subscribed_topics == (topic,)
    assert member.member_type == "consumer"
    assert (member.metadata, member.assignment) == (b"", b"")


async def test_list_groups_filters_need_a_broker_that_can_filter() -> None:
    """ListGroups v4 filters by state, v5 by type: older brokers are refused before asking."""
    from aiokafkawire.admin.groups import GroupCalls

    class _Versions:
        def __init__(self, newest: int) -> None:
            self.newest = newest

        def supports(self, api_key: int, min_version: int = 0) -> bool:
            return min_version <= self.newest

    class _Cluster:
        def __init__(self, newest: int) -> None:
            self.newest = newest
            self.sent: list[Any] = []

        async def connection(self, node_id: int) -> Any:
            return type("C", (), {"versions": _Versions(self.newest)})()

        async def send(self, node_id: int, request: Any) -> Any:
            self.sent.append(request)
            return type("R", (), {"error_code": 0, "groups": []})()

    for newest, types, states, refused in (
        (3, None, ["Stable"], "state"),
        (4, ["consumer"], None, "type"),
        (4, None, ["Stable"], None),
        (5, ["consumer"], ["Stable"], None),
    ):
        admin = object.__new__(GroupCalls)
        cluster = _Cluster(newest)
        admin._cluster = cluster  # type: ignore[assignment]
        admin._check = lambda: None  # type: ignore[method-assign]

        async def each_broker(ask: Any) -> dict[int, Any]:
            return {1: await ask(1)}

        admin._ask_each_broker = each_broker  # type: ignore[method-assign]
        if refused:
            with pytest.raises(errors.UnsupportedVersionForBrokerError, match=refused):
                await admin.list_groups(types=types, states=states)
            assert cluster.sent == []
        else:
            assert await admin.list_groups(types=types, states=states) == []
            [request] = cluster.sent
            assert request.states_filter == (states or [])
            assert request.types_filter == (types or [])


async def test_a_classic_group_on_tansu_is_described_with_describe_groups(
    tansu_broker: Any,
) -> None:
    """Tansu answers ConsumerGroupDescribe for any group (no error, epoch -1, no members): the
    classic group and its member still come from DescribeGroups (as before ConsumerGroupDescribe
    was asked)."""
    bootstrap = tansu_broker.bootstrap_servers
    topic = unique("tansu-classic")
    group = unique("g-tansu")
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    options = {**CLASSIC, "session_timeout_ms": 4000, "heartbeat_interval_ms": 500}
    consumer = Consumer(topic, bootstrap_servers=bootstrap, group_id=group, **options)
    async with _polling(consumer):
        await eventually(lambda: bool(consumer.assignment()), 60, "assigned")
        async with Admin(bootstrap_servers=bootstrap) as admin:
            described = (await admin.describe_groups([group]))[group]
    assert (described.group_type, described.protocol_type) == ("classic", "consumer")
    [member] = described.members  # (Tansu sends no assignment bytes in DescribeGroups)
    assert member.member_id == consumer._parts.membership.member_id  # type: ignore[union-attr]
