"""Options shared by every client (Producer, Consumer, Admin): connection, security, metadata.

Each client accepts these as keyword arguments with the names Kafka users know, and builds its
:class:`~aiokafkawire.cluster.cluster.Cluster` through :func:`build_cluster`.
"""

from __future__ import annotations

import difflib
import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.cluster.metadata import parse_bootstrap
from aiokafkawire.cluster.recovery import METADATA_RECOVERY_STRATEGIES
from aiokafkawire.metrics import ClientMetrics
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.net.versions import ApiVersionCap


@dataclass
class CommonConfig:
    """Connection and metadata options common to all clients.  Secrets stay out of ``repr``.

    - ``bootstrap_servers``: ``"host:port,host:port"`` or a list of ``"host:port"``; brokers to
      fetch the first metadata from (``[v6]:port`` for IPv6; listener prefixes such as
      ``SSL://`` are accepted, other URL schemes are refused).
    - ``client_id``: the name brokers log and use for quotas.
    - ``request_timeout_ms``: how long a request may wait for its response.
    - ``connect_timeout_ms``: how long opening a connection (TCP, TLS, ApiVersions) may take.
    - ``metadata_max_age_ms``: refresh the cluster metadata at least this often.
    - ``metadata_wait_ms``: how long to wait for an unknown topic's metadata before
      :class:`~aiokafkawire.errors.UnknownTopicError`.
    - ``retry_backoff_ms``: the first wait before a retry; ``retry_backoff_max_ms``: the
      longest, as a subscribed topic that does not exist yet is looked for again (doubling).
    - ``reconnect_backoff_ms``, ``reconnect_backoff_max_ms``: the wait before reconnecting to a
      broker, doubling (with jitter) after each failure up to the maximum.
    - ``max_in_flight_requests_per_connection``: requests pipelined on one connection.
    - ``api_version``: cap the protocol versions: ``"0.10"``, ``"2.8"``, ... (a release) or a
      mapping ``{api_key: max_version}``; ``None`` negotiates through ApiVersions.
    - ``security_protocol``: ``"PLAINTEXT"``, ``"SSL"``, ``"SASL_PLAINTEXT"`` or ``"SASL_SSL"``.
    - ``ssl_context``: an :class:`ssl.SSLContext` (default for SSL: the system's trust store;
      see :func:`~aiokafkawire.net.tls.create_ssl_context`).
    - ``sasl_mechanism``: ``"PLAIN"``, ``"SCRAM-SHA-256"``, ``"SCRAM-SHA-512"`` or
      ``"OAUTHBEARER"``; ``sasl_plain_username`` and ``sasl_plain_password`` for PLAIN and
      SCRAM; ``sasl_oauth_token_provider`` for OAUTHBEARER.
    - ``allow_auto_create_topics``: let Metadata requests create missing topics (where the
      broker allows it).
    - ``metadata_recovery_strategy``: ``"rebootstrap"`` (default, as the Java client since 4.0)
      or ``"none"``.  With ``"rebootstrap"`` the client closes its connections and starts over
      from ``bootstrap_servers`` (resolving the names again) when no known broker answers, when
      metadata has been failing for the trigger time (next option), when a broker
      answers REBOOTSTRAP_REQUIRED (KIP-899, KIP-1102), or when a connection reaches another
      cluster or broker than the metadata promised (KIP-1242: ApiVersions v5 then carries the
      expected cluster id and node id, and a broker that is not that node refuses it).  With
      ``"none"`` the bootstrap addresses serve the first metadata only and no such check is made.
    - ``metadata_recovery_rebootstrap_trigger_ms``: how long metadata may fail, from the first
      failed attempt, before the client rebootstraps (default 300,000: 5 minutes).
    - ``enable_metrics_push``: push the client's metrics to the cluster when a client-metrics
      subscription asks for them (KIP-714; default True, as Java's ``enable.metrics.push``).
    - ``hooks``: an object (or list of objects) with ``on_connect``, ``on_disconnect``,
      ``on_request``, ``on_batch`` or ``on_rebalance`` methods; see :mod:`aiokafkawire.metrics`.
    """

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
    retry_backoff_max_ms: int = 1_000
    hooks: Any = field(default=None, repr=False)
    metadata_recovery_strategy: str = "rebootstrap"
    metadata_recovery_rebootstrap_trigger_ms: int = 300_000
    enable_metrics_push: bool = True
    metrics: ClientMetrics = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.metrics = ClientMetrics(self.hooks)
        servers = self.bootstrap_servers
        if not isinstance(servers, str):
            if not isinstance(servers, Iterable) or isinstance(servers, (bytes, bytearray)):
                raise errors.ConfigTypeError(
                    "bootstrap_servers must be a 'host:port[,host:port...]' string or a list "
                    f"of such strings, got {type(servers).__name__}"
                )
            servers = self.bootstrap_servers = list(servers)
            for item in servers:
                check_type("bootstrap_servers item", item, str)
        parse_bootstrap(servers)  # a malformed address fails here, not at start()
        check_type("client_id", self.client_id, str)
        check_number("request_timeout_ms", self.request_timeout_ms, minimum=1)
        check_number("connect_timeout_ms", self.connect_timeout_ms, minimum=1)
        check_number("metadata_max_age_ms", self.metadata_max_age_ms, minimum=1)
        check_number("retry_backoff_ms", self.retry_backoff_ms, minimum=0)
        check_number("retry_backoff_max_ms", self.retry_backoff_max_ms, minimum=0)
        check_number("reconnect_backoff_ms", self.reconnect_backoff_ms, minimum=0)
        check_number("reconnect_backoff_max_ms", self.reconnect_backoff_max_ms, minimum=0)
        check_number("metadata_wait_ms", self.metadata_wait_ms, minimum=0)
        check_int(
            "max_in_flight_requests_per_connection",
            self.max_in_flight_requests_per_connection,
            minimum=1,
        )
        check_type("security_protocol", self.security_protocol, str)
        check_type("sasl_mechanism", self.sasl_mechanism, str, none_ok=True)
        check_type("allow_auto_create_topics", self.allow_auto_create_topics, bool)
        check_type("metadata_recovery_strategy", self.metadata_recovery_strategy, str)
        check_type("enable_metrics_push", self.enable_metrics_push, bool)
        check_choice(
            "metadata_recovery_strategy",
            self.metadata_recovery_strategy,
            METADATA_RECOVERY_STRATEGIES,
        )
        check_number(
            "metadata_recovery_rebootstrap_trigger_ms",
            self.metadata_recovery_rebootstrap_trigger_ms,
            minimum=1,
        )
        if self.ssl_context is not None and not isinstance(self.ssl_context, ssl.SSLContext):
            raise errors.ConfigTypeError(
                f"ssl_context must be an ssl.SSLContext, got {type(self.ssl_context).__name__}"
            )

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
            metrics=self.metrics,
        )

    def build_cluster(self) -> Cluster:
        """A new (not yet started) cluster manager for these options."""
        return Cluster(
            self.bootstrap_servers,
            self.connection_config(),
            metadata_max_age_ms=self.metadata_max_age_ms,
            retry_backoff_ms=self.retry_backoff_ms,
            retry_backoff_max_ms=self.retry_backoff_max_ms,
            allow_auto_topic_creation=self.allow_auto_create_topics,
            topic_wait_ms=self.metadata_wait_ms,
            metadata_recovery_strategy=self.metadata_recovery_strategy,
            metadata_recovery_rebootstrap_trigger_ms=self.metadata_recovery_rebootstrap_trigger_ms,
        )


class CommonOptions(TypedDict, total=False):
    """The common options as keyword arguments of every client (see :class:`CommonConfig`).

    Clients take them as ``**options: Unpack[CommonOptions]``, so a type checker rejects a
    misspelt or mistyped option and an editor completes them.
    """

    bootstrap_servers: str | Iterable[str]
    client_id: str
    request_timeout_ms: int
    connect_timeout_ms: int
    metadata_max_age_ms: int
    retry_backoff_ms: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    max_in_flight_requests_per_connection: int
    api_version: ApiVersionCap
    security_protocol: str
    ssl_context: ssl.SSLContext | None
    sasl_mechanism: str | None
    sasl_plain_username: str | None
    sasl_plain_password: str | None
    sasl_oauth_token_provider: Any
    allow_auto_create_topics: bool
    metadata_wait_ms: int
    retry_backoff_max_ms: int
    hooks: Any
    metadata_recovery_strategy: str
    metadata_recovery_rebootstrap_trigger_ms: int
    enable_metrics_push: bool


COMMON_OPTION_NAMES = frozenset(
    name for name, spec in CommonConfig.__dataclass_fields__.items() if spec.init
)


def split_common_options(options: dict[str, Any]) -> tuple[CommonConfig, dict[str, Any]]:
    """Separate the common options from a client's own; the rest is returned untouched."""
    common = {k: options.pop(k) for k in list(options) if k in COMMON_OPTION_NAMES}
    return CommonConfig(**common), options


# ------------------------------------------------------------------------ option checks
# Shared by every client so that a wrong option fails at construction with a message naming it,
# as a ConfigError (ValueError) or ConfigTypeError (also a TypeError).


def _type_names(types: type | tuple[type, ...]) -> str:
    if isinstance(types, type):
        return types.__name__
    return " or ".join(t.__name__ for t in types)


def check_type(
    name: str, value: Any, types: type | tuple[type, ...], *, none_ok: bool = False
) -> None:
    """Raise :class:`~aiokafkawire.errors.ConfigTypeError` unless ``value`` is of ``types``."""
    if value is None and none_ok:
        return
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        expected = _type_names(types) + (" or None" if none_ok else "")
        raise errors.ConfigTypeError(
            f"{name} must be {expected}, got {type(value).__name__} ({value!r})"
        )


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return (types,) if isinstance(types, type) else types


def check_int(name: str, value: Any, *, minimum: int | None = None, none_ok: bool = False) -> None:
    """An ``int`` option (``bool`` refused) with an optional lower bound."""
    check_type(name, value, int, none_ok=none_ok)
    if value is not None and minimum is not None and value < minimum:
        raise errors.ConfigError(f"{name} must be at least {minimum}, got {value}")


def check_number(
    name: str, value: Any, *, minimum: float | None = None, none_ok: bool = False
) -> None:
    """An ``int`` or ``float`` option (a duration, usually) with an optional lower bound."""
    check_type(name, value, (int, float), none_ok=none_ok)
    if value is not None and minimum is not None and value < minimum:
        raise errors.ConfigError(f"{name} must be at least {minimum}, got {value}")


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> None:
    """One of a fixed set of values."""
    allowed = tuple(choices)
    if value not in allowed:
        raise errors.ConfigError(f"{name} must be one of {allowed}, got {value!r}")


# Options of aiokafka (and the Java client) that have another name here, or no counterpart.
_OPTION_HINTS = {
    "max_batch_size": "use batch_size",
    "loop": "not needed: clients use the running event loop",
    "connections_max_idle_ms": "not supported: connections stay open until close()",
    "consumer_timeout_ms": "not needed: getmany(timeout_ms=...) bounds each wait",
    "exclude_internal_topics": "not needed: pattern subscriptions never match internal topics",
    "sasl_kerberos_service_name": "not supported: GSSAPI (Kerberos) is not implemented",
    "sasl_kerberos_domain_name": "not supported: GSSAPI (Kerberos) is not implemented",
    "enable_auto_create_topics": "use allow_auto_create_topics",
    "ssl_cafile": "build an ssl_context (aiokafkawire.net.tls.create_ssl_context)",
}


def unknown_options_error(
    client: str, names: Iterable[str], known: Iterable[str] = ()
) -> errors.ConfigError:
    """The error for options ``client`` does not know, with hints for aiokafka's names."""
    hints = [f"{name}: {_OPTION_HINTS[name]}" for name in sorted(names) if name in _OPTION_HINTS]
    for name in sorted(names):
        if name in _OPTION_HINTS:
            continue
        if "." in name:
            hints.append(f"{name}: a Java/librdkafka property; use {client}.from_config({{...}})")
            continue
        close = difflib.get_close_matches(name, sorted(set(known) | COMMON_OPTION_NAMES), n=1)
        if close:
            hints.append(f"{name}: did you mean {close[0]!r}?")
    message = f"unknown {client} options: {sorted(names)}"
    if hints:
        message += " (" + "; ".join(hints) + ")"
    return errors.ConfigError(message + "; see docs/configuration.md")
