"""Options shared by every client (Producer, Consumer, Admin): connection, security, metadata.

Each client accepts these as keyword arguments with the names Kafka users know, and builds its
:class:`~aiokafkawire.cluster.cluster.Cluster` through :func:`build_cluster`.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.net.versions import ApiVersionCap


@dataclass
class CommonConfig:
    """Connection and metadata options common to all clients.  Secrets stay out of ``repr``."""

    bootstrap_servers: str | Iterable[str] = "localhost:9092"
    client_id: str = "aiokafkawire"
    request_timeout_ms: int = 30_000
    connect_timeout_ms: int = 10_000
    metadata_max_age_ms: int = 300_000
    retry_backoff_ms: int = 100
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1_000
    max_in_flight_requests_per_connection: int = 5
    api_version: ApiVersionCap = None
    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    sasl_mechanism: str | None = None
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = field(default=None, repr=False)
    sasl_oauth_token_provider: Any = field(default=None, repr=False)
    allow_auto_create_topics: bool = False
    metadata_wait_ms: int = 10_000

    def connection_config(self) -> ConnectionConfig:
        """The per-connection part of these options."""
        return ConnectionConfig(
            client_id=self.client_id,
            request_timeout_ms=self.request_timeout_ms,
            connect_timeout_ms=self.connect_timeout_ms,
            max_in_flight_requests_per_connection=self.max_in_flight_requests_per_connection,
            reconnect_backoff_ms=self.reconnect_backoff_ms,
            reconnect_backoff_max_ms=self.reconnect_backoff_max_ms,
            security_protocol=self.security_protocol,
            ssl_context=self.ssl_context,
            sasl_mechanism=self.sasl_mechanism,
            sasl_username=self.sasl_plain_username,
            sasl_password=self.sasl_plain_password,
            sasl_oauth_token_provider=self.sasl_oauth_token_provider,
            api_version=self.api_version,
        )

    def build_cluster(self) -> Cluster:
        """A new (not yet started) cluster manager for these options."""
        return Cluster(
            self.bootstrap_servers,
            self.connection_config(),
            metadata_max_age_ms=self.metadata_max_age_ms,
            retry_backoff_ms=self.retry_backoff_ms,
            allow_auto_topic_creation=self.allow_auto_create_topics,
            topic_wait_ms=self.metadata_wait_ms,
        )


COMMON_OPTION_NAMES = frozenset(CommonConfig.__dataclass_fields__)


def split_common_options(options: dict[str, Any]) -> tuple[CommonConfig, dict[str, Any]]:
    """Separate the common options from a client's own; the rest is returned untouched."""
    common = {k: options.pop(k) for k in list(options) if k in COMMON_OPTION_NAMES}
    return CommonConfig(**common), options
