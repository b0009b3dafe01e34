"""Embedded Kafka brokers for tests: a Tansu process and librdkafka's mock cluster.

- :class:`KafkaCluster`: real Apache Kafka (KRaft) brokers as child JVMs, jars from Maven.
- :class:`TansuBroker`: a real Kafka-protocol broker (Tansu, in-memory storage) as a child process.
- :class:`MockCluster`: librdkafka's in-process mock cluster, with fault injection.
- :func:`probe_api_versions`: a self-contained ApiVersions request, to check a broker answers.
- ``aiokafkawire.testing.pytest_plugin``: the ``tansu_broker``, ``mock_cluster``,
  ``mock_cluster_factory``, ``kafka_cluster``, ``kafka_cluster_39``, ``kafka_cluster_factory``
  and ``kafka_bootstrap`` fixtures; opt in with
  ``pytest_plugins = ["aiokafkawire.testing.pytest_plugin"]`` in a ``conftest.py``.

What each broker supports is summarised in ``BROKERS.md`` beside this file.
"""

from __future__ import annotations

from aiokafkawire.testing._errors import (
    BrokerStartError,
    BrokerUnavailableError,
    EmbeddedBrokerError,
    MockClusterError,
)
from aiokafkawire.testing._probe import ApiVersionsInfo, probe_api_versions
from aiokafkawire.testing.kafka import KafkaCluster, newest_kafka_version
from aiokafkawire.testing.mock_cluster import (
    MockCluster,
    MockRequest,
    find_librdkafka,
    librdkafka_version,
)
from aiokafkawire.testing.tansu import TansuBroker, find_free_port, resolve_tansu_binary

__all__ = [
    "ApiVersionsInfo",
    "BrokerStartError",
    "BrokerUnavailableError",
    "EmbeddedBrokerError",
    "KafkaCluster",
    "MockCluster",
    "MockClusterError",
    "MockRequest",
    "TansuBroker",
    "find_free_port",
    "find_librdkafka",
    "librdkafka_version",
    "newest_kafka_version",
    "probe_api_versions",
    "resolve_tansu_binary",
]
