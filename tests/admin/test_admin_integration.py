"""The admin client against brokers nobody here wrote (Tansu, librdkafka's mock cluster, Apache
Kafka 4.x and 3.9)."""

from __future__ import annotations

import uuid

import pytest

from aiokafkawire import errors
from aiokafkawire.admin import (
    Admin,
    ConfigResource,
    GroupOffset,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster, TansuBroker
from aiokafkawire.testing.pytest_plugin import broker_kind_params


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# Every broker with the admin APIs (the mock has none: test_unsupported_api_is_a_typed_error).
@pytest.fixture(params=broker_kind_params(("tansu", "kafka", "kafka39")))
def admin_bootstrap(request: pytest.FixtureRequest) -> str:
    """Bootstrap servers of each broker that serves the admin APIs."""
    fixture = {"tansu": "tansu_broker", "kafka": "kafka_cluster", "kafka39": "kafka_cluster_39"}
    broker: TansuBroker | KafkaCluster = request.getfixturevalue(fixture[request.param])
    return broker.bootstrap_servers


async def test_topic_lifecycle(admin_bootstrap: str) -> None:
    name = unique("admin-topic")
    async with Admin(bootstrap_servers=admin_bootstrap) as admin:
        created = await admin.create_topics(
            [NewTopic(name, num_partitions=3, replication_factor=1)]
        )
        assert created[name].ok, created[name].error
        # A failed item raises by default (issue 14: it used to pass unnoticed), carrying every
        # item's result; raise_on_error=False returns the per-item results instead.
        other = unique("admin-topic")
        with pytest.raises(errors.AdminOperationError, match="1 of 2 items") as caught:
            await admin.create_topics([NewTopic(name, 3, 1), NewTopic(other, 1, 1)])
        assert set(caught.value.results) == {name, other}
        assert isinstance(caught.value.errors[name], errors.TopicAlreadyExistsError)
        assert caught.value.results[other].ok and not caught.value.retriable
        again = await admin.create_topics([NewTopic(name, 3, 1)], raise_on_error=False)
        assert isinstance(again[name].error, errors.TopicAlreadyExistsError)

        assert name in await admin.list_topics()
        missing_name = unique("missing")
        with pytest.raises(errors.AdminOperationError, match=missing_name):
            await admin.describe_topics([name, missing_name])
        described = await admin.describe_topics([name, missing_name], raise_on_error=False)
        assert described[name].partition_ids == [0, 1, 2]
        assert described[missing_name].error_code != 0

        cluster = await admin.describe_cluster()
        assert cluster.brokers and cluster.cluster_id

        deleted = await admin.delete_topics([name, other])
        assert deleted[name].ok, deleted[name].error
        assert name not in await admin.list_topics()
        with pytest.raises(errors.AdminOperationError) as caught:
            await admin.delete_topics([name])
        assert isinstance(caught.value.errors[name], errors.UnknownTopicOrPartitionError)


async def test_configs(admin_bootstrap: str) -> None:
    name = unique("admin-config")
    async with Admin(bootstrap_servers=admin_bootstrap) as admin:
        await admin.create_topics([NewTopic(name, 1, 1)])
        resource = ConfigResource(ResourceType.TOPIC, name)
        described = await admin.describe_configs([resource])
        assert resource in described
        assert described[resource].error is None


async def test_list_offsets_and_group_offsets(kafka_bootstrap, mock_cluster) -> None:
    topic = unique("admin-offsets")
    group = unique("admin-group")
    if kafka_bootstrap.kind == "mock":
        bootstrap = mock_cluster.bootstrap_servers
        mock_cluster.create_topic(topic, partitions=2, replication_factor=1)
    else:
        bootstrap = kafka_bootstrap
    async with Admin(bootstrap_servers=bootstrap) as admin:
        if kafka_bootstrap.kind != "mock":
            await admin.create_topics([NewTopic(topic, 2, 1)])
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        earliest = await admin.list_offsets({tp: OffsetSpec.earliest() for tp in tps})
        latest = await admin.list_offsets({tp: OffsetSpec.latest() for tp in tps})
        for tp in tps:
            assert earliest[tp].error is None and latest[tp].error is None
            assert earliest[tp].offset == 0 and latest[tp].offset == 0

        result = await admin.alter_group_offsets(
            group, {tps[0]: 0, tps[1]: GroupOffset(0, metadata="m")}
        )
        assert all(r.ok for r in result.values()), result
        committed = await admin.list_group_offsets(group, tps)
        assert committed[tps[0]].offset == 0
        if kafka_bootstrap.kind != "tansu":  # Tansu 0.6 does not keep commit metadata
            assert committed[tps[1]].metadata == "m"


async def test_retriable_errors_are_retried_and_others_reported(mock_cluster) -> None:
    topic = unique("admin-faults")
    mock_cluster.create_topic(topic, partitions=1, replication_factor=3)
    tp = TopicPartition(topic, 0)
    async with Admin(bootstrap_servers=mock_cluster.bootstrap_servers) as admin:
        # ListOffsets: NOT_LEADER_OR_FOLLOWER then REQUEST_TIMED_OUT, then the real answer.
        mock_cluster.push_request_errors(2, [6, 7])
        listed = await admin.list_offsets({tp: OffsetSpec.latest()})
        assert listed[tp].error is None and listed[tp].offset == 0

        mock_cluster.push_request_errors(2, [29])  # TOPIC_AUTHORIZATION_FAILED: not retriable
        with pytest.raises(errors.AdminOperationError) as caught:
            await admin.list_offsets({tp: OffsetSpec.latest()})
        assert isinstance(caught.value.errors[tp], errors.TopicAuthorizationFailedError)
        mock_cluster.push_request_errors(2, [29])
        listed = await admin.list_offsets({tp: OffsetSpec.latest()}, raise_on_error=False)
        assert isinstance(listed[tp].error, errors.TopicAuthorizationFailedError)

        # FindCoordinator answered with NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE first.
        mock_cluster.push_request_errors(10, [16, 15])
        committed = await admin.list_group_offsets(unique("g"), [tp])
        assert committed[tp].offset == -1

        # OffsetCommit has no top-level error: a coordinator still loading its offsets (as a
        # real broker's is just after start) answers COORDINATOR_LOAD_IN_PROGRESS per partition.
        group = unique("g")
        mock_cluster.push_request_errors(8, [14, 16])
        altered = await admin.alter_group_offsets(group, {tp: 0})
        assert altered[tp].error is None, altered
        assert (await admin.list_group_offsets(group, [tp]))[tp].offset == 0


async def test_leader_move_is_followed(mock_cluster) -> None:
    topic = unique("admin-leader")
    mock_cluster.create_topic(topic, partitions=1, replication_factor=3)
    tp = TopicPartition(topic, 0)
    async with Admin(bootstrap_servers=mock_cluster.bootstrap_servers) as admin:
        await admin.list_offsets({tp: OffsetSpec.latest()})
        old_leader = admin.cluster.metadata.leader_for(topic, 0)
        new_leader = next(b for b in mock_cluster.broker_ids if b != old_leader)
        mock_cluster.set_partition_leader(topic, 0, new_leader)
        listed = await admin.list_offsets({tp: OffsetSpec.latest()})
        assert listed[tp].error is None
        assert admin.cluster.metadata.leader_for(topic, 0) == new_leader


async def test_unsupported_api_is_a_typed_error(mock_cluster) -> None:
    async with Admin(bootstrap_servers=mock_cluster.bootstrap_servers) as admin:
        # The librdkafka mock cluster has no CreateTopics API.
        with pytest.raises(errors.UnsupportedVersionForBrokerError):
            await admin.create_topics([NewTopic(unique("x"), 1, 1)])


async def test_group_listing_and_deletion(admin_bootstrap: str) -> None:
    topic = unique("admin-groups-topic")
    group = unique("admin-groups")
    async with Admin(bootstrap_servers=admin_bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 1, 1)])
        await admin.alter_group_offsets(group, {TopicPartition(topic, 0): 0})
        listed = await admin.list_groups()
        described = await admin.describe_groups([group], raise_on_error=False)
        assert described[group].error is None or described[group].group_id == group
        deleted = await admin.delete_groups([group], raise_on_error=False)
        assert group in deleted
        assert isinstance(listed, list)


async def test_closed_and_unstarted_admin_raise_typed_errors(tansu_broker: TansuBroker) -> None:
    admin = Admin(bootstrap_servers=tansu_broker.bootstrap_servers)
    with pytest.raises(errors.IllegalStateError):
        await admin.list_topics()
    await admin.start()
    await admin.close()
    with pytest.raises(errors.ClientClosedError):
        await admin.list_topics()


def test_unknown_option_is_a_config_error() -> None:
    with pytest.raises(errors.ConfigError, match="frobnicate"):
        Admin(bootstrap_servers="127.0.0.1:1", frobnicate=True)
