"""Options of the ``aiokafkawire`` Spark data source: Spark's Kafka options, checked on the driver.

The names and meanings are those of Spark's built-in Kafka source and sink, so that a job switches
by changing the format name.  Everything here is plain Python (no pyspark), picklable, and raises
:class:`~aiokafkawire.errors.ConfigError` with a message naming the option that is wrong.

Offsets travel as Spark's Kafka connector writes them: ``{"topic": {"0": 23, "1": -1}}`` where
``-2`` means earliest and ``-1`` latest.
"""

from __future__ import annotations

import difflib
import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire.errors import ConfigError
from aiokafkawire.spark._registry_format import REGISTRY_OPTIONS
from aiokafkawire.structs import TopicPartition

__all__ = [
    "EARLIEST",
    "LATEST",
    "KafkaOptions",
    "OffsetBound",
    "Subscription",
    "offsets_from_json",
    "offsets_to_json",
    "parse_options",
]

EARLIEST = -2
LATEST = -1

#: Spark's own (non-``kafka.``) option names, as documented (pyspark hands them over lower-cased;
#: errors use these spellings).
_READ_OPTIONS = (
    "subscribe",
    "subscribePattern",
    "assign",
    "startingOffsets",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "includeHeaders",
    "minPartitions",
    "maxRecordsPerPartition",
    "failOnDataLoss",
    "kafkaConsumer.pollTimeoutMs",
    "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs",
    "groupIdPrefix",
    *REGISTRY_OPTIONS,
)
_BATCH_OPTIONS = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
_STREAM_OPTIONS = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")
_WRITE_OPTIONS = (
    "topic",
    "checkpointLocation",
    "exactlyOnce",
    "transactionalIdPrefix",
    "transactionTimeoutMs",
    "commitLogTopic",
    *REGISTRY_OPTIONS,
)
_OPTIONS_BY_MODE = {
    "batch": _READ_OPTIONS + _BATCH_OPTIONS,
    "stream": _READ_OPTIONS + _STREAM_OPTIONS,
    "write": _WRITE_OPTIONS,
}
#: Every spelling by its lower-case form, for messages.
_SPELLING = {
    name.lower(): name for name in _READ_OPTIONS + _BATCH_OPTIONS + _STREAM_OPTIONS + _WRITE_OPTIONS
}

# Kafka client properties Spark forbids (it manages them itself): the same refusals here.
_FORBIDDEN_KAFKA = {
    "auto.offset.reset": "set the option 'startingOffsets' instead",
    "enable.auto.commit": "offsets are tracked by Spark, not committed to Kafka",
    "key.deserializer": "keys are always read as binary; cast them in the DataFrame",
    "value.deserializer": "values are always read as binary; cast them in the DataFrame",
    "key.serializer": "keys are always written as binary (or string) columns",
    "value.serializer": "values are always written as binary (or string) columns",
    "interceptor.classes": "Java interceptors do not apply to this Python client",
    "transactional.id": "use the option 'exactlyOnce' (transactional ids are per task)",
    "transaction.timeout.ms": "use the option 'transactionTimeoutMs'",
}


def _int(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"option '{name}' must be an integer, not {value!r}") from None


def _positive(name: str, value: str | None) -> int | None:
    if value is None:
        return None
    number = _int(name, value)
    if number <= 0:
        raise ConfigError(f"option '{name}' must be positive, not {number}")
    return number


_TIME_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
_TIME_UNITS["d"] = 24 * _TIME_UNITS["h"]


def _duration_ms(name: str, value: str) -> int:
    """A Spark time string (``500ms``, ``10s``, ``15m``, ``1h``; a bare number is ms)."""
    found = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", value.lower())
    if found is None or found.group(2) not in ("", *_TIME_UNITS):
        raise ConfigError(
            f"option '{name}' must be a duration such as '500ms', '10s', '15m' or '1h', "
            f"not {value!r}"
        )
    return int(int(found.group(1)) * _TIME_UNITS.get(found.group(2), 1))


def check_option_names(options: Mapping[str, str], *, mode: str) -> None:
    """Refuse a non-``kafka.`` option ``mode`` does not know, naming the nearest valid one."""
    valid = _OPTIONS_BY_MODE[mode]
    by_lower = {name.lower(): name for name in valid}
    for key in options:
        lowered = str(key).lower()
        if lowered.startswith("kafka.") or lowered in by_lower:
            continue
        spelled = _SPELLING.get(lowered)
        if spelled is not None:
            where = {
                "batch": "batch reads",
                "stream": "streaming reads",
                "write": "writes",
            }
            allowed = [m for m, names in _OPTIONS_BY_MODE.items() if spelled in names]
            raise ConfigError(
                f"option '{spelled}' is not valid for {where[mode]} (only for "
                f"{' and '.join(where[m] for m in allowed)})"
            )
        nearest = difflib.get_close_matches(lowered, list(by_lower), n=1, cutoff=0.6)
        hint = f"; did you mean '{by_lower[nearest[0]]}'?" if nearest else ""
        raise ConfigError(
            f"unknown option '{key}' for {'a write' if mode == 'write' else 'a read'}{hint} "
            f"(valid: {', '.join(valid)}, kafka.<client property>)"
        )


def _bool(name: str, value: str) -> bool:
    lowered = str(value).strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ConfigError(f"option '{name}' must be 'true' or 'false', not {value!r}")


def _jaas(name: str, value: str) -> dict[str, Any]:
    """username/password out of a PLAIN or SCRAM ``sasl.jaas.config`` line."""
    found = dict(re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', value))
    if "username" not in found or "password" not in found:
        raise ConfigError(f'option \'{name}\' must set username="..." and password="..."')
    return {"sasl_plain_username": found["username"], "sasl_plain_password": found["password"]}


def _simple(kwarg: str, convert: Callable[[str, str], Any] | None = None) -> Any:
    def apply(name: str, value: str) -> dict[str, Any]:
        return {kwarg: convert(name, value) if convert else value}

    return apply


def _upper(kwarg: str) -> Any:
    return lambda name, value: {kwarg: value.strip().upper()}


# kafka.<property> -> (which client it concerns, how it becomes keyword arguments).
# "common" goes to every client; "consumer" / "producer" to one; "tls" is assembled into an
# ssl.SSLContext by the client side (a context cannot be pickled to the executors).
_KAFKA_PROPERTIES: dict[str, tuple[str, Any]] = {
    "bootstrap.servers": ("common", _simple("bootstrap_servers")),
    "client.id": ("common", _simple("client_id")),
    "request.timeout.ms": ("common", _simple("request_timeout_ms", _int)),
    "socket.connection.setup.timeout.ms": ("common", _simple("connect_timeout_ms", _int)),
    "metadata.max.age.ms": ("common", _simple("metadata_max_age_ms", _int)),
    "retry.backoff.ms": ("common", _simple("retry_backoff_ms", _int)),
    "reconnect.backoff.ms": ("common", _simple("reconnect_backoff_ms", _int)),
    "reconnect.backoff.max.ms": ("common", _simple("reconnect_backoff_max_ms", _int)),
    "max.in.flight.requests.per.connection": (
        "common",
        _simple("max_in_flight_requests_per_connection", _int),
    ),
    "security.protocol": ("common", _upper("security_protocol")),
    "sasl.mechanism": ("common", _upper("sasl_mechanism")),
    "sasl.jaas.config": ("common", _jaas),
    "ssl.truststore.location": ("tls", _simple("cafile")),
    "ssl.truststore.certificates": ("tls", _simple("cadata")),
    "ssl.keystore.location": ("tls", _simple("certfile")),
    "ssl.key.location": ("tls", _simple("keyfile")),
    "ssl.key.password": ("tls", _simple("password")),
    "ssl.truststore.type": ("tls", _simple("truststore_type")),
    "ssl.keystore.type": ("tls", _simple("keystore_type")),
    "ssl.endpoint.identification.algorithm": ("tls", _simple("endpoint_identification")),
    # The source reads with manual assignment and never commits: the group id is the one its
    # consumers announce (for group-based ACLs and quotas), as Spark's connector does.
    "group.id": ("consumer", _simple("group_id")),
    "isolation.level": ("consumer", _simple("isolation_level")),
    "fetch.min.bytes": ("consumer", _simple("fetch_min_bytes", _int)),
    "fetch.max.bytes": ("consumer", _simple("fetch_max_bytes", _int)),
    "fetch.max.wait.ms": ("consumer", _simple("fetch_max_wait_ms", _int)),
    "max.partition.fetch.bytes": ("consumer", _simple("max_partition_fetch_bytes", _int)),
    "max.poll.records": ("consumer", _simple("max_poll_records", _int)),
    "check.crcs": ("consumer", _simple("check_crcs", _bool)),
    "client.rack": ("consumer", _simple("client_rack")),
    "acks": ("producer", _simple("acks")),
    "compression.type": ("producer", _simple("compression")),
    "linger.ms": ("producer", _simple("linger_ms", _int)),
    "batch.size": ("producer", _simple("batch_size", _int)),
    "max.request.size": ("producer", _simple("max_request_size", _int)),
    "buffer.memory": ("producer", _simple("buffer_memory", _int)),
    "delivery.timeout.ms": ("producer", _simple("delivery_timeout_ms", _int)),
    "max.block.ms": ("producer", _simple("max_block_ms", _int)),
    "enable.idempotence": ("producer", _simple("enable_idempotence", _bool)),
}


@dataclass(frozen=True)
class Subscription:
    """Which partitions are read: a topic list, a pattern, or fixed partitions."""

    kind: str  # "subscribe" | "subscribePattern" | "assign"
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` belongs to a topic-level subscription."""
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return re.fullmatch(self.pattern, topic) is not None
        return any(tp.topic == topic for tp in self.partitions)


@dataclass(frozen=True)
class OffsetBound:
    """Where a read starts or ends: earliest/latest, per-partition offsets, or timestamps.

    ``kind`` is ``"earliest"``, ``"latest"``, ``"offsets"`` (``offsets``: partition -> offset,
    ``-2``/``-1`` allowed), ``"timestamp"`` (``timestamp`` for every partition) or
    ``"timestamps"`` (``offsets`` holds partition -> timestamp).
    """

    kind: str
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int = -1


@dataclass(frozen=True)
class KafkaOptions:
    """Every option of one read or write, validated.  Client settings (secrets) stay out of repr."""

    common: Mapping[str, Any] = field(repr=False)
    tls: Mapping[str, str] = field(repr=False)
    consumer: Mapping[str, Any]
    producer: Mapping[str, Any]
    subscription: Subscription | None
    starting: OffsetBound
    ending: OffsetBound
    include_headers: bool = False
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = 120_000
    timestamp_strategy: str = "error"
    topic: str | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    max_records_per_partition: int | None = None
    fetch_offset_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1000
    exactly_once: bool = False
    transactional_id_prefix: str | None = None
    transaction_timeout_ms: int = 60_000
    commit_log_topic: str = "aiokafkawire-spark-commits"
    checkpoint_location: str | None = None
    #: keyFormat/valueFormat (a ``_registry_format.RegistryOptions``), set by the data source
    registry: Any = None

    @property
    def read_committed(self) -> bool:
        """Whether aborted transactional records are skipped (``kafka.isolation.level``)."""
        return self.consumer.get("isolation_level") == "read_committed"

    @property
    def isolation_level(self) -> str:
        """The consumer's isolation level, also used to look up the latest offsets."""
        return str(self.consumer.get("isolation_level", "read_uncommitted"))


def offsets_from_json(
    name: str, text: str, *, allow_negative: bool = True
) -> dict[TopicPartition, int]:
    """Parse Spark's per-partition JSON (``{"t": {"0": 5}}``) for option ``name``."""
    try:
        parsed = json.loads(text)
    except ValueError:
        raise ConfigError(
            f"option '{name}' must be 'earliest', 'latest' or JSON like "
            f'{{"topic":{{"0":23,"1":-1}}}}, not {text!r}'
        ) from None
    if not isinstance(parsed, dict):
        raise ConfigError(f"option '{name}' must be a JSON object of topics, not {text!r}")
    result: dict[TopicPartition, int] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise ConfigError(
                f"option '{name}': topic {topic!r} must map partition numbers to offsets"
            )
        for partition, offset in partitions.items():
            try:
                number = int(partition)
            except ValueError:
                raise ConfigError(
                    f"option '{name}': {partition!r} of topic {topic!r} is not a partition number"
                ) from None
            if not isinstance(offset, int) or isinstance(offset, bool):
                raise ConfigError(
                    f"option '{name}': offset of {topic}-{partition} must be an integer"
                )
            if offset < (-2 if allow_negative else 0):
                raise ConfigError(
                    f"option '{name}': offset {offset} of {topic}-{partition} is not valid"
                )
            result[TopicPartition(topic, number)] = offset
    return result


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets as Spark's Kafka connector writes them (topics and partitions sorted)."""
    result: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        result.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return result


def _assign(text: str) -> tuple[TopicPartition, ...]:
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not all(
        isinstance(v, list) and all(isinstance(p, int) for p in v) for v in parsed.values()
    ):
        raise ConfigError(
            f'option \'assign\' must be JSON like {{"topicA":[0,1],"topicB":[2,4]}}, not {text!r}'
        )
    partitions = tuple(TopicPartition(t, p) for t, ps in parsed.items() for p in ps)
    if not partitions:
        raise ConfigError("option 'assign' names no partition")
    return partitions


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = [k for k in ("assign", "subscribe", "subscribepattern") if k in options]
    names = {"assign": "assign", "subscribe": "subscribe", "subscribepattern": "subscribePattern"}
    if len(given) != 1:
        listed = ", ".join(names[k] for k in given) if given else "none"
        raise ConfigError(
            "exactly one of the options 'assign', 'subscribe' or 'subscribePattern' must be "
            f"given (got: {listed})"
        )
    kind = given[0]
    value = str(options[kind])
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ConfigError(f"option 'subscribe' names no topic: {value!r}")
        return Subscription("subscribe", topics=topics)
    if kind == "subscribepattern":
        if not value.strip():
            raise ConfigError("option 'subscribePattern' is empty")
        try:
            re.compile(value)
        except re.error as exc:
            raise ConfigError(f"option 'subscribePattern' is not a valid pattern: {exc}") from None
        return Subscription("subscribePattern", pattern=value)
    return Subscription("assign", partitions=_assign(value))


def _bound(options: Mapping[str, str], which: str, default: str, *, streaming: bool) -> OffsetBound:
    """The starting or ending bound; timestamps take precedence, as in Spark."""
    offsets_name = f"{which}Offsets"
    timestamp_name = f"{which}Timestamp"
    by_timestamp_name = f"{which}OffsetsByTimestamp"
    if timestamp_name.lower() in options:
        return OffsetBound(
            "timestamp", timestamp=_int(timestamp_name, options[timestamp_name.lower()])
        )
    if by_timestamp_name.lower() in options:
        stamps = offsets_from_json(
            by_timestamp_name, options[by_timestamp_name.lower()], allow_negative=False
        )
        return OffsetBound("timestamps", offsets=stamps)
    text = str(options.get(offsets_name.lower(), default)).strip()
    lowered = text.lower()
    if lowered in ("earliest", "latest"):
        if which == "ending" and lowered == "earliest":
            raise ConfigError("option 'endingOffsets' cannot be 'earliest'")
        if which == "starting" and lowered == "latest" and not streaming:
            raise ConfigError("option 'startingOffsets' cannot be 'latest' for batch queries")
        return OffsetBound(lowered)
    offsets = offsets_from_json(offsets_name, text)
    for tp, offset in offsets.items():
        if which == "ending" and offset == EARLIEST:
            raise ConfigError(f"option 'endingOffsets': -2 (earliest) is not allowed ({tp})")
        if which == "starting" and offset == LATEST and not streaming:
            raise ConfigError(
                f"option 'startingOffsets': -1 (latest) is not allowed for batch queries ({tp})"
            )
    return OffsetBound("offsets", offsets=offsets)


def _write_options(
    lowered: Mapping[str, str],
    common: dict[str, Any],
    tls: dict[str, str],
    consumer: dict[str, Any],
    producer: dict[str, Any],
) -> KafkaOptions:
    topic = lowered.get("topic")
    exactly_once = _bool("exactlyOnce", lowered.get("exactlyonce", "false"))
    if not exactly_once:
        for name in ("transactionalIdPrefix", "transactionTimeoutMs", "commitLogTopic"):
            if name.lower() in lowered:
                raise ConfigError(f"option '{name}' applies only with exactlyOnce=true")
    prefix = lowered.get("transactionalidprefix")
    if prefix is not None and not re.fullmatch(r"[A-Za-z0-9._-]+", prefix):
        raise ConfigError(
            f"option 'transactionalIdPrefix' must be letters, digits, '.', '_' or '-', "
            f"not {prefix!r}"
        )
    timeout = _positive("transactionTimeoutMs", lowered.get("transactiontimeoutms", "60000"))
    log_topic = lowered.get("commitlogtopic", "aiokafkawire-spark-commits").strip()
    if not log_topic:
        raise ConfigError("option 'commitLogTopic' is empty")
    if exactly_once and producer.get("enable_idempotence") is False:
        raise ConfigError("option 'kafka.enable.idempotence' cannot be false with exactlyOnce")
    return KafkaOptions(
        common=common,
        tls=tls,
        consumer=consumer,
        producer=producer,
        subscription=None,
        starting=OffsetBound("earliest"),
        ending=OffsetBound("latest"),
        topic=topic.strip() if topic and topic.strip() else None,
        exactly_once=exactly_once,
        transactional_id_prefix=prefix,
        transaction_timeout_ms=timeout or 60_000,
        commit_log_topic=log_topic,
        checkpoint_location=lowered.get("checkpointlocation"),
    )


def parse_options(  # long: one check per pyspark option, read top to bottom
    options: Mapping[str, str], *, mode: str
) -> KafkaOptions:
    """Validate ``options`` (keys lower-cased, as pyspark passes them) for ``mode``.

    ``mode`` is ``"batch"``, ``"stream"`` (reading) or ``"write"``.
    """
    check_option_names(options, mode=mode)
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    common: dict[str, Any] = {}
    tls: dict[str, str] = {}
    consumer: dict[str, Any] = {}
    producer: dict[str, Any] = {}
    for key, value in lowered.items():
        if not key.startswith("kafka."):
            continue
        prop = key[len("kafka.") :]
        if prop in _FORBIDDEN_KAFKA:
            raise ConfigError(f"option 'kafka.{prop}' is not supported: {_FORBIDDEN_KAFKA[prop]}")
        known = _KAFKA_PROPERTIES.get(prop)
        if known is None:
            nearest = difflib.get_close_matches(prop, list(_KAFKA_PROPERTIES), n=1, cutoff=0.6)
            hint = f"; did you mean 'kafka.{nearest[0]}'?" if nearest else ""
            raise ConfigError(
                f"option 'kafka.{prop}' is not a Kafka client property this source knows{hint} "
                f"(known: {', '.join(sorted(_KAFKA_PROPERTIES))})"
            )
        if prop == "group.id" and mode == "write":
            raise ConfigError("option 'kafka.group.id' is for reads: a write joins no group")
        target, convert = known
        converted = convert(f"kafka.{prop}", value)
        {"common": common, "tls": tls, "consumer": consumer, "producer": producer}.get(
            target, {}
        ).update(converted)
    if not str(common.get("bootstrap_servers", "")).strip():
        raise ConfigError("option 'kafka.bootstrap.servers' must be set (host:port,...)")
    isolation = consumer.get("isolation_level", "read_uncommitted")
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ConfigError(
            "option 'kafka.isolation.level' must be 'read_uncommitted' or 'read_committed', "
            f"not {isolation!r}"
        )
    for name in ("truststore_type", "keystore_type"):
        kind = tls.get(name)
        if kind is not None and kind.upper() != "PEM":
            raise ConfigError(
                f"option 'kafka.ssl.{name.replace('_', '.')}' must be PEM (JKS and PKCS12 stores "
                f"are Java formats), not {kind!r}"
            )
    if mode == "write":
        return _write_options(lowered, common, tls, consumer, producer)
    streaming = mode == "stream"
    subscription = _subscription(lowered)
    starting = _bound(
        lowered, "starting", "latest" if streaming else "earliest", streaming=streaming
    )
    if streaming:
        ending = OffsetBound("latest")
    else:
        ending = _bound(lowered, "ending", "latest", streaming=False)
    if "groupidprefix" in lowered and "group_id" not in consumer:
        # As Spark's connector: a prefix names a fresh group per query; kafka.group.id wins.
        prefix = lowered["groupidprefix"].strip()
        if not prefix:
            raise ConfigError("option 'groupIdPrefix' is empty")
        consumer["group_id"] = f"{prefix}-{uuid.uuid4()}"
    max_per_trigger = lowered.get("maxoffsetspertrigger")
    min_partitions = lowered.get("minpartitions")
    strategy = lowered.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ConfigError(
            "option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
            f"not {strategy!r}"
        )
    result = KafkaOptions(
        common=common,
        tls=tls,
        consumer=consumer,
        producer=producer,
        subscription=subscription,
        starting=starting,
        ending=ending,
        include_headers=_bool("includeHeaders", lowered.get("includeheaders", "false")),
        max_offsets_per_trigger=None
        if max_per_trigger is None
        else _int("maxOffsetsPerTrigger", max_per_trigger),
        min_partitions=None if min_partitions is None else _int("minPartitions", min_partitions),
        fail_on_data_loss=_bool("failOnDataLoss", lowered.get("failondataloss", "true")),
        poll_timeout_ms=_int(
            "kafkaConsumer.pollTimeoutMs", lowered.get("kafkaconsumer.polltimeoutms", "120000")
        ),
        timestamp_strategy=strategy,
        min_offsets_per_trigger=_positive(
            "minOffsetsPerTrigger", lowered.get("minoffsetspertrigger")
        ),
        max_trigger_delay_ms=_duration_ms("maxTriggerDelay", lowered.get("maxtriggerdelay", "15m")),
        max_records_per_partition=_positive(
            "maxRecordsPerPartition", lowered.get("maxrecordsperpartition")
        ),
        fetch_offset_retries=_int(
            "fetchOffset.numRetries", lowered.get("fetchoffset.numretries", "3")
        ),
        fetch_offset_retry_interval_ms=_int(
            "fetchOffset.retryIntervalMs", lowered.get("fetchoffset.retryintervalms", "1000")
        ),
    )
    if result.fetch_offset_retries < 0:
        raise ConfigError("option 'fetchOffset.numRetries' must not be negative")
    if result.fetch_offset_retry_interval_ms < 0:
        raise ConfigError("option 'fetchOffset.retryIntervalMs' must not be negative")
    if (
        result.min_offsets_per_trigger is not None
        and result.max_offsets_per_trigger is not None
        and result.min_offsets_per_trigger > result.max_offsets_per_trigger
    ):
        raise ConfigError(
            "option 'minOffsetsPerTrigger' must not be above 'maxOffsetsPerTrigger' "
            f"({result.min_offsets_per_trigger} > {result.max_offsets_per_trigger})"
        )
    if result.max_offsets_per_trigger is not None and result.max_offsets_per_trigger <= 0:
        raise ConfigError("option 'maxOffsetsPerTrigger' must be positive")
    if result.min_partitions is not None and result.min_partitions <= 0:
        raise ConfigError("option 'minPartitions' must be positive")
    if result.poll_timeout_ms <= 0:
        raise ConfigError("option 'kafkaConsumer.pollTimeoutMs' must be positive")
    return result
