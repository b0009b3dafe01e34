"""Immutable snapshots of cluster metadata, built from Metadata responses (no I/O here)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A broker as the cluster advertises it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition's leadership and replica state."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic and its partitions; ``error_code`` is non-zero when the broker reported a problem."""

    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: Mapping[int, PartitionInfo]
    error_code: int = 0

    @property
    def partition_ids(self) -> list[int]:
        """Sorted partition numbers."""
        return sorted(self.partitions)

    @property
    def available_partitions(self) -> list[int]:
        """Partitions that currently have a leader."""
        return sorted(p for p, info in self.partitions.items() if info.leader >= 0)


_LISTENER_SCHEMES = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})


def parse_bootstrap(
    servers: str | Iterable[str], default_port: int = 9092
) -> list[tuple[str, int]]:
    """``"a:9092,[::1]:9093,10.0.0.1"`` -> ``[("a", 9092), ("::1", 9093), ("10.0.0.1", 9092)]``."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    result: list[tuple[str, int]] = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        if "://" in item:
            # Listener-style prefixes name the protocol (which security_protocol chooses);
            # anything else (kafka://, http://) is not an address form this client reads.
            scheme, _, rest = item.partition("://")
            if scheme.upper() not in _LISTENER_SCHEMES:
                raise errors.ConfigError(
                    f"bad bootstrap address {raw!r}: {scheme}:// is not supported; give "
                    "'host:port' (optionally prefixed by PLAINTEXT://, SSL://, "
                    "SASL_PLAINTEXT:// or SASL_SSL://) and set security_protocol"
                )
            item = rest
        if "/" in item or "?" in item or "@" in item or any(c.isspace() for c in item):
            raise errors.ConfigError(f"bad bootstrap address {raw!r}: expected 'host:port'")
        host, port_text = item, ""
        if item.startswith("["):
            end = item.find("]")
            if end < 0:
                raise errors.ConfigError(f"bad bootstrap address {raw!r}: unclosed '['")
            host, rest = item[1:end], item[end + 1 :]
            if rest:
                if not rest.startswith(":"):
                    raise errors.ConfigError(f"bad bootstrap address {raw!r}")
                port_text = rest[1:]
        elif item.count(":") == 1:
            host, port_text = item.split(":")
        elif item.count(":") > 1:  # a bare IPv6 address without a port
            host = item
        try:
            port = int(port_text) if port_text else default_port
        except ValueError:
            raise errors.ConfigError(f"bad port in bootstrap address {raw!r}") from None
        if not host or not 0 < port < 65536:
            raise errors.ConfigError(f"bad bootstrap address {raw!r}")
        result.append((host, port))
    if not result:
        raise errors.ConfigError("bootstrap_servers is empty")
    return result


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """A consistent view of the cluster at one point in time."""

    brokers: Mapping[int, BrokerInfo] = field(default_factory=dict)
    topics: Mapping[str, TopicInfo] = field(default_factory=dict)
    controller_id: int = -1
    cluster_id: str | None = None
    version: int = 0

    def leader_for(self, topic: str, partition: int) -> int | None:
        """The leader's node id, or None when unknown or leaderless."""
        info = self.topics.get(topic)
        if info is None:
            return None
        part = info.partitions.get(partition)
        if part is None or part.leader < 0:
            return None
        return part.leader

    def merged(self, response: Any, *, full: bool) -> ClusterMetadata:
        """A new snapshot: this one updated by a Metadata response.

        With ``full`` (all topics were asked for) topics missing from the response are dropped;
        otherwise only the topics in the response are replaced.
        """
        brokers = {
            b.node_id: BrokerInfo(b.node_id, b.host, b.port, getattr(b, "rack", None))
            for b in response.brokers
        }
        topics: dict[str, TopicInfo] = {} if full else dict(self.topics)
        for topic in response.topics:
            name = topic.name
            if name is None:
                continue
            partitions = {
                p.partition_index: PartitionInfo(
                    topic=name,
                    partition=p.partition_index,
                    leader=p.leader_id,
                    leader_epoch=getattr(p, "leader_epoch", -1),
                    replicas=tuple(p.replica_nodes),
                    isr=tuple(p.isr_nodes),
                    offline_replicas=tuple(getattr(p, "offline_replicas", ()) or ()),
                    error_code=p.error_code,
                )
                for p in topic.partitions
            }
            topic_id = getattr(topic, "topic_id", None)
            if topic_id is not None and topic_id.int == 0:
                topic_id = None
            topics[name] = TopicInfo(
                name=name,
                topic_id=topic_id,
                is_internal=bool(getattr(topic, "is_internal", False)),
                partitions=partitions,
                error_code=topic.error_code,
            )
        return ClusterMetadata(
            brokers=brokers,
            topics=topics,
            controller_id=getattr(response, "controller_id", -1),
            cluster_id=getattr(response, "cluster_id", None),
            version=self.version + 1,
        )
