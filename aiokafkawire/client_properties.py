"""Java and librdkafka property names, mapped to aiokafkawire's options.

``Producer.from_config``, ``Consumer.from_config`` and ``Admin.from_config`` take a dictionary as
the Java client and confluent-kafka (librdkafka) take it: ``{"bootstrap.servers": ...,
"linger.ms": "5", "sasl.username": ...}``.  Each property maps to one option through
:data:`PROPERTIES`; string values (as read from a properties file) are converted.  aiokafkawire's
own option names are accepted as well.  A property that has no counterpart here is an error
naming it (and the nearest known name), never dropped.  The TLS properties build one
``ssl_context``; Java's ``sasl.jaas.config`` gives the SASL username and password.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafkawire import errors

__all__ = [
    "PROPERTIES",
    "Property",
    "foreign_option",
    "properties_table",
    "translate_properties",
]

PRODUCER = frozenset({"producer"})
CONSUMER = frozenset({"consumer"})
ALL_CLIENTS = frozenset({"producer", "consumer", "admin"})


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise errors.ConfigTypeError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise errors.ConfigTypeError(f"{name} must be an integer, got {value!r}") from None


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise errors.ConfigTypeError(f"{name} must be true or false, got {value!r}")


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise errors.ConfigTypeError(f"{name} must be a string, got {type(value).__name__}")
    return value


def _acks(name: str, value: Any) -> int | str:
    text = str(value).strip().lower()
    if text in ("all", "-1"):
        return "all"
    if text in ("0", "1"):
        return int(text)
    raise errors.ConfigError(f"{name} must be all, -1, 0 or 1, got {value!r}")


def _compression(name: str, value: Any) -> str | None:
    text = _text(name, value).strip().lower()
    return None if text in ("none", "") else text


_RESETS = {
    "earliest": "earliest",
    "smallest": "earliest",
    "beginning": "earliest",
    "latest": "latest",
    "largest": "latest",
    "end": "latest",
    "none": "none",
    "error": "none",
}


def _offset_reset(name: str, value: Any) -> str:
    text = _text(name, value).strip().lower()
    if text not in _RESETS:
        raise errors.ConfigError(f"{name} must be one of {sorted(_RESETS)}, got {value!r}")
    return _RESETS[text]


def _upper(name: str, value: Any) -> str:
    return _text(name, value).strip().upper()


def _strategies(name: str, value: Any) -> list[str]:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return list(value)


def _kbytes(name: str, value: Any) -> int:
    return _int(name, value) * 1024


@dataclass(frozen=True)
class Property:
    """One option and the names the Java client and librdkafka give it."""

    option: str
    java: str | None
    librdkafka: tuple[str, ...]
    convert: Callable[[str, Any], Any]
    clients: frozenset[str] = ALL_CLIENTS


def _p(
    option: str,
    java: str | None,
    *librdkafka: str,
    convert: Callable[[str, Any], Any] = _int,
    clients: frozenset[str] = ALL_CLIENTS,
) -> Property:
    return Property(option, java, librdkafka, convert, clients)


#: Every mapped property; the configuration reference shows ``java`` and ``librdkafka``.
PROPERTIES: tuple[Property, ...] = (
    _p(
        "bootstrap_servers",
        "bootstrap.servers",
        "bootstrap.servers",
        "metadata.broker.list",
        convert=_text,
    ),
    _p("client_id", "client.id", "client.id", convert=_text),
    _p("request_timeout_ms", "request.timeout.ms", "socket.timeout.ms"),
    _p(
        "connect_timeout_ms",
        "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.ms",
    ),
    _p(
        "metadata_max_age_ms",
        "metadata.max.age.ms",
        "metadata.max.age.ms",
        "topic.metadata.refresh.interval.ms",
    ),
    _p("retry_backoff_ms", "retry.backoff.ms", "retry.backoff.ms"),
    _p("retry_backoff_max_ms", "retry.backoff.max.ms", "retry.backoff.max.ms"),
    _p("reconnect_backoff_ms", "reconnect.backoff.ms", "reconnect.backoff.ms"),
    _p("reconnect_backoff_max_ms", "reconnect.backoff.max.ms", "reconnect.backoff.max.ms"),
    _p(
        "max_in_flight_requests_per_connection",
        "max.in.flight.requests.per.connection",
        "max.in.flight.requests.per.connection",
        "max.in.flight",
    ),
    _p("security_protocol", "security.protocol", "security.protocol", convert=_upper),
    _p("sasl_mechanism", "sasl.mechanism", "sasl.mechanism", "sasl.mechanisms", convert=_upper),
    _p("sasl_plain_username", None, "sasl.username", convert=_text),
    _p("sasl_plain_password", None, "sasl.password", convert=_text),
    _p(
        "metadata_recovery_strategy",
        "metadata.recovery.strategy",
        "metadata.recovery.strategy",
        convert=_text,
    ),
    _p(
        "metadata_recovery_rebootstrap_trigger_ms",
        "metadata.recovery.rebootstrap.trigger.ms",
        "metadata.recovery.rebootstrap.trigger.ms",
    ),
    _p(
        "enable_metrics_push",
        "enable.metrics.push",
        "enable.metrics.push",
        convert=_bool,
    ),
    _p(
        "allow_auto_create_topics",
        "allow.auto.create.topics",
        "allow.auto.create.topics",
        convert=_bool,
    ),
    # producer
    _p("acks", "acks", "acks", "request.required.acks", convert=_acks, clients=PRODUCER),
    _p("linger_ms", "linger.ms", "linger.ms", "queue.buffering.max.ms", clients=PRODUCER),
    _p("batch_size", "batch.size", "batch.size", clients=PRODUCER),
    _p(
        "compression_type",
        "compression.type",
        "compression.type",
        "compression.codec",
        convert=_compression,
        clients=PRODUCER,
    ),
    _p("max_request_size", "max.request.size", "message.max.bytes", clients=PRODUCER),
    _p("buffer_memory", "buffer.memory", clients=PRODUCER),
    _p("buffer_memory", None, "queue.buffering.max.kbytes", convert=_kbytes, clients=PRODUCER),
    _p("max_block_ms", "max.block.ms", clients=PRODUCER),
    _p(
        "delivery_timeout_ms",
        "delivery.timeout.ms",
        "delivery.timeout.ms",
        "message.timeout.ms",
        clients=PRODUCER,
    ),
    _p(
        "enable_idempotence",
        "enable.idempotence",
        "enable.idempotence",
        convert=_bool,
        clients=PRODUCER,
    ),
    _p("transactional_id", "transactional.id", "transactional.id", convert=_text, clients=PRODUCER),
    _p(
        "transaction_timeout_ms",
        "transaction.timeout.ms",
        "transaction.timeout.ms",
        clients=PRODUCER,
    ),
    # consumer
    _p("group_id", "group.id", "group.id", convert=_text, clients=CONSUMER),
    _p(
        "group_instance_id",
        "group.instance.id",
        "group.instance.id",
        convert=_text,
        clients=CONSUMER,
    ),
    _p("group_protocol", "group.protocol", "group.protocol", convert=_text, clients=CONSUMER),
    _p(
        "group_remote_assignor",
        "group.remote.assignor",
        "group.remote.assignor",
        convert=_text,
        clients=CONSUMER,
    ),
    _p(
        "partition_assignment_strategy",
        "partition.assignment.strategy",
        "partition.assignment.strategy",
        convert=_strategies,
        clients=CONSUMER,
    ),
    _p("session_timeout_ms", "session.timeout.ms", "session.timeout.ms", clients=CONSUMER),
    _p("heartbeat_interval_ms", "heartbeat.interval.ms", "heartbeat.interval.ms", clients=CONSUMER),
    _p("max_poll_interval_ms", "max.poll.interval.ms", "max.poll.interval.ms", clients=CONSUMER),
    _p(
        "auto_offset_reset",
        "auto.offset.reset",
        "auto.offset.reset",
        convert=_offset_reset,
        clients=CONSUMER,
    ),
    _p(
        "enable_auto_commit",
        "enable.auto.commit",
        "enable.auto.commit",
        convert=_bool,
        clients=CONSUMER,
    ),
    _p(
        "auto_commit_interval_ms",
        "auto.commit.interval.ms",
        "auto.commit.interval.ms",
        clients=CONSUMER,
    ),
    _p("isolation_level", "isolation.level", "isolation.level", convert=_text, clients=CONSUMER),
    _p("fetch_min_bytes", "fetch.min.bytes", "fetch.min.bytes", clients=CONSUMER),
    _p("fetch_max_wait_ms", "fetch.max.wait.ms", "fetch.wait.max.ms", clients=CONSUMER),
    _p("fetch_max_bytes", "fetch.max.bytes", "fetch.max.bytes", clients=CONSUMER),
    _p(
        "max_partition_fetch_bytes",
        "max.partition.fetch.bytes",
        "max.partition.fetch.bytes",
        clients=CONSUMER,
    ),
    _p("max_poll_records", "max.poll.records", clients=CONSUMER),
    _p("check_crcs", "check.crcs", "check.crcs", convert=_bool, clients=CONSUMER),
    _p("client_rack", "client.rack", "client.rack", convert=_text, clients=CONSUMER),
)

# TLS properties build one ssl_context: property -> create_ssl_context argument.
_TLS_FILES = {
    "ssl.ca.location": "cafile",
    "ssl.certificate.location": "certfile",
    "ssl.key.location": "keyfile",
    "ssl.key.password": "password",
    "ssl.truststore.location": "cafile",  # with ssl.truststore.type=PEM
    "ssl.keystore.location": "certfile",  # with ssl.keystore.type=PEM (key in the same file)
    "ssl.keystore.key.password": "password",
}
_TLS_SWITCHES = (
    "ssl.endpoint.identification.algorithm",
    "enable.ssl.certificate.verification",
    "ssl.truststore.type",
    "ssl.keystore.type",
)
_JAAS = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?:required|requisite|sufficient|optional)\s+(?P<rest>.*?);?\s*$",
    re.S,
)


def _by_name(client: str) -> dict[str, Property]:
    names: dict[str, Property] = {}
    for prop in PROPERTIES:
        if client not in prop.clients:
            continue
        names.setdefault(prop.option, prop)
        for name in (prop.java, *prop.librdkafka):
            if name is not None:
                names[name] = prop
    return names


def _jaas(value: Any) -> dict[str, str]:
    """username and password from Java's ``sasl.jaas.config`` (Plain or Scram login module)."""
    match = _JAAS.match(_text("sasl.jaas.config", value))
    if match is None or not match.group("module").endswith(
        ("PlainLoginModule", "ScramLoginModule")
    ):
        raise errors.ConfigError(
            "sasl.jaas.config: only PlainLoginModule and ScramLoginModule with username and "
            "password are supported; pass sasl_oauth_token_provider for OAUTHBEARER"
        )
    fields = dict(item.split("=", 1) for item in shlex.split(match.group("rest")) if "=" in item)
    if "username" not in fields or "password" not in fields:
        raise errors.ConfigError("sasl.jaas.config needs username=... and password=...")
    return {"sasl_plain_username": fields["username"], "sasl_plain_password": fields["password"]}


def _tls_context(settings: Mapping[str, Any]) -> Any:
    from aiokafkawire.net.tls import create_ssl_context

    for store in ("ssl.truststore", "ssl.keystore"):
        if f"{store}.location" in settings:
            kind = str(settings.get(f"{store}.type", "JKS")).upper()
            if kind != "PEM":
                raise errors.ConfigError(
                    f"{store}.type={kind} is not supported: convert the store to PEM and set "
                    f"{store}.type=PEM (or use ssl.ca.location / ssl.certificate.location)"
                )
    arguments: dict[str, Any] = {}
    for name, argument in _TLS_FILES.items():
        if name in settings:
            arguments[argument] = _text(name, settings[name])
    if "ssl.keystore.location" in settings and "keyfile" not in arguments:
        arguments["keyfile"] = arguments["certfile"]
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        arguments["check_hostname"] = str(algorithm).strip().lower() == "https"
    if "enable.ssl.certificate.verification" in settings:
        verify = _bool(
            "enable.ssl.certificate.verification", settings["enable.ssl.certificate.verification"]
        )
        arguments["verify"] = verify
        if not verify:
            arguments["check_hostname"] = False
    return create_ssl_context(**arguments)


def translate_properties(client: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """aiokafkawire options for a Java/librdkafka ``config`` of ``client`` (producer, consumer,
    admin).  Raises :class:`~aiokafkawire.errors.ConfigError` naming any property it cannot map.
    """
    names = _by_name(client)
    options: dict[str, Any] = {}
    tls: dict[str, Any] = {}
    unknown: list[str] = []
    for name, value in config.items():
        if not isinstance(name, str):
            raise errors.ConfigTypeError(f"property names must be strings, got {name!r}")
        if name in _TLS_FILES or name in _TLS_SWITCHES:
            tls[name] = value
        elif name == "sasl.jaas.config":
            options.update(_jaas(value))
        elif name in names:
            prop = names[name]
            ours_only = name == prop.option and name not in (prop.java, *prop.librdkafka)
            options[prop.option] = value if ours_only else prop.convert(name, value)
        elif "_" in name and "." not in name:
            options[name] = value  # one of our own option names: the client checks it
        else:
            unknown.append(name)
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, list(names) + list(_TLS_FILES), n=1)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise errors.ConfigError(
            f"{client} properties not supported by aiokafkawire: {', '.join(hints)}; "
            "see docs/configuration.md for every mapped property"
        )
    if tls:
        if "ssl_context" in options:
            raise errors.ConfigError("give either ssl_context or ssl.* properties, not both")
        options["ssl_context"] = _tls_context(tls)
    return options


def properties_table() -> str:
    """The mapped properties as a Markdown table (the migration guide and the reference)."""
    rows = ["| option | Java client | librdkafka | clients |", "| --- | --- | --- | --- |"]
    for prop in PROPERTIES:
        java = f"`{prop.java}`" if prop.java else ""
        librdkafka = ", ".join(f"`{name}`" for name in prop.librdkafka)
        clients = ", ".join(sorted(prop.clients))
        rows.append(f"| `{prop.option}` | {java} | {librdkafka} | {clients} |")
    tls = ", ".join(f"`{name}`" for name in (*_TLS_FILES, *_TLS_SWITCHES))
    rows.append(f"| `ssl_context` | {tls} | (same names) | all |")
    rows.append("| `sasl_plain_username`, `sasl_plain_password` | `sasl.jaas.config` | | all |")
    return "\n".join(rows) + "\n"


# Converters whose result text means the same to a client: a command line can pass it on.
_TEXT_CONVERTERS = (_acks, _compression, _offset_reset, _upper)


def foreign_option(name: str, text: str) -> tuple[str, str] | None:
    """``(our option, value text)`` for a Java/librdkafka property given as text (a command
    line's ``-X linger.ms=5``), or None when ``name`` is not such a property.  Values that
    another name spells differently are respelt (``auto.offset.reset=smallest`` ->
    ``earliest``); properties whose value changes unit are not offered this way."""
    for prop in PROPERTIES:
        if name != prop.java and name not in prop.librdkafka:
            continue
        if prop.convert is _kbytes:
            return None
        if prop.convert in _TEXT_CONVERTERS:
            converted = prop.convert(name, text)
            return prop.option, "none" if converted is None else str(converted)
        return prop.option, text
    return None
