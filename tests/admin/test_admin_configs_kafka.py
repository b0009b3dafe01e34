"""Config resources (KIP-714, KIP-1142, KIP-1191): client metrics subscriptions and group
configs described, altered and listed, on Apache Kafka 4.4 and 3.9."""

from __future__ import annotations

import asyncio

import pytest
from _kafka_helpers import create_topic, unique

from aiokafkawire import errors
from aiokafkawire.admin import Admin, ConfigResource, ResourceType
from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing.pytest_plugin import broker_kind_params

pytestmark = pytest.mark.integration


@pytest.fixture(params=broker_kind_params(("kafka", "kafka39")))
def kafka(request: pytest.FixtureRequest) -> KafkaCluster:
    """Apache Kafka 4.4 and 3.9."""
    fixture = {"kafka": "kafka_cluster", "kafka39": "kafka_cluster_39"}[request.param]
    cluster: KafkaCluster = request.getfixturevalue(fixture)
    return cluster


async def _eventually_listed(
    admin: Admin, resource: ConfigResource, types: list[ResourceType] | None
) -> list[ConfigResource]:
    """list_config_resources until ``resource`` shows (the brokers learn configs a moment after
    the controller), bounded."""
    listed: list[ConfigResource] = []
    for _ in range(50):
        listed = await admin.list_config_resources(types)
        if resource in listed:
            break
        await asyncio.sleep(0.1)
    return listed


async def test_client_metrics_subscriptions_are_altered_described_and_listed(
    kafka: KafkaCluster,
) -> None:
    subscription = ConfigResource(ResourceType.CLIENT_METRICS, unique("producer-metrics"))
    async with Admin(bootstrap_servers=kafka.bootstrap_servers) as admin:
        altered = await admin.alter_configs(
            {
                subscription: {
                    "metrics": "org.apache.kafka.producer.",
                    "interval.ms": "60000",
                    "match": "client_software_name=aiokafkawire",
                }
            }
        )
        assert altered[subscription].error is None
        listed = await _eventually_listed(admin, subscription, [ResourceType.CLIENT_METRICS])
        assert subscription in listed
        assert {r.type for r in listed} == {ResourceType.CLIENT_METRICS}
        described = (await admin.describe_configs([subscription]))[subscription]
        assert described.entries["metrics"].value == "org.apache.kafka.producer."
        assert described.entries["interval.ms"].value == "60000"
        assert described.entries["match"].value == "client_software_name=aiokafkawire"
        await admin.alter_configs({subscription: {"metrics": None, "match": None}})


async def test_config_resources_of_every_type_are_listed(kafka: KafkaCluster) -> None:
    bootstrap = kafka.bootstrap_servers
    kafka4 = (kafka.version or "").startswith("4.")
    topic = ConfigResource(ResourceType.TOPIC, await create_topic(bootstrap, "listed", 1))
    group = ConfigResource(ResourceType.GROUP, unique("configured-group"))
    async with Admin(bootstrap_servers=bootstrap) as admin:
        if not kafka4:  # Kafka 3.9: ListClientMetricsResources (v0), client metrics only
            with pytest.raises(errors.UnsupportedVersionForBrokerError, match="client metrics"):
                await admin.list_config_resources([ResourceType.TOPIC])
            with pytest.raises(errors.UnsupportedVersionForBrokerError, match="client metrics"):
                await admin.list_config_resources()
            return
        altered = await admin.alter_configs({group: {"consumer.session.timeout.ms": "50000"}})
        assert altered[group].error is None
        groups = await _eventually_listed(admin, group, [ResourceType.GROUP])
        assert group in groups and {r.type for r in groups} == {ResourceType.GROUP}
        topics = await admin.list_config_resources([ResourceType.TOPIC])
        assert topic in topics and {r.type for r in topics} == {ResourceType.TOPIC}
        both = await admin.list_config_resources([ResourceType.TOPIC, ResourceType.GROUP])
        assert {topic, group} <= set(both)
        everything = await admin.list_config_resources()
        assert {topic, group} <= set(everything)
        assert ConfigResource(ResourceType.BROKER, str(kafka.broker_ids[0])) in everything
        described = (await admin.describe_configs([group]))[group]
        assert described.entries["consumer.session.timeout.ms"].value == "50000"
