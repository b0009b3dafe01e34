"""Options of the Spark data source, range planning and rate limiting (no Spark, no broker)."""

from __future__ import annotations

from typing import Any

import pytest

from aiokafkawire.errors import ConfigError
from aiokafkawire.spark._options import parse_options
from aiokafkawire.structs import TopicPartition

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "a,b"}


def _lower(options: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"startingOffsets": "yesterday"}, "startingOffsets"),
        ({"startingOffsets": '{"a": [1]}'}, "startingOffsets"),
        ({"endingOffsets": '{"a": {"x": 1}}'}, "endingOffsets"),
        ({"endingOffsets": "earliest"}, "endingOffsets"),
        ({"startingOffsets": "latest"}, "startingOffsets"),
        ({"assign": '{"a": [0]}'}, "assign"),
        ({"kafka.fetch.size.bytes": "1"}, "kafka.fetch.size.bytes"),
        ({"kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset"),
        ({"kafka.isolation.level": "serializable"}, "kafka.isolation.level"),
        ({"kafka.ssl.truststore.type": "JKS"}, "kafka.ssl.truststore.type"),
        ({"maxOffsetsPerTrigger": "ten"}, "maxOffsetsPerTrigger"),
        ({"minPartitions": "0"}, "minPartitions"),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss"),
        ({"includeHeaders": "yes"}, "includeHeaders"),
    ],
)
def test_bad_option_is_named(options: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        parse_options(_lower({**BASE, **options}), mode="batch")


def test_no_servers_is_named() -> None:
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap\.servers"):
        parse_options({"subscribe": "a"}, mode="batch")


def test_subscription_must_be_exactly_one() -> None:
    with pytest.raises(ConfigError, match=r"assign.*subscribe"):
        parse_options({"kafka.bootstrap.servers": "h:1"}, mode="batch")
    with pytest.raises(ConfigError, match="got: assign, subscribe"):
        parse_options(_lower({**BASE, "assign": '{"a": [0]}'}), mode="batch")


def test_streaming_refuses_batch_only_options() -> None:
    with pytest.raises(ConfigError, match="'endingOffsets' is not valid for streaming reads"):
        parse_options(_lower({**BASE, "endingOffsets": "latest"}), mode="stream")
    with pytest.raises(ConfigError, match="'maxOffsetsPerTrigger' is not valid for batch reads"):
        parse_options(_lower({**BASE, "maxOffsetsPerTrigger": "5"}), mode="batch")
    with pytest.raises(ConfigError, match="'subscribe' is not valid for writes"):
        parse_options(_lower({**BASE, "topic": "t"}), mode="write")


@pytest.mark.parametrize(
    ("mode", "typo", "nearest"),
    [
        ("batch", "startingOffset", "startingOffsets"),
        ("stream", "startingoffset", "startingOffsets"),
        ("batch", "endingOffset", "endingOffsets"),
        ("stream", "maxOffsetPerTrigger", "maxOffsetsPerTrigger"),
        ("stream", "minOffsetPerTrigger", "minOffsetsPerTrigger"),
        ("stream", "maxTriggerDelays", "maxTriggerDelay"),
        ("batch", "failOnDataLose", "failOnDataLoss"),
        ("batch", "includeHeader", "includeHeaders"),
        ("batch", "groupIdPrefx", "groupIdPrefix"),
        ("write", "topics", "topic"),
        ("write", "checkpointLocaton", "checkpointLocation"),
    ],
)
def test_unknown_option_names_itself_and_the_nearest(mode: str, typo: str, nearest: str) -> None:
    options = {"kafka.bootstrap.servers": "h:1", typo: "1"}
    if mode != "write":
        options["subscribe"] = "a"
    with pytest.raises(ConfigError) as info:
        parse_options(options, mode=mode)
    message = str(info.value)
    assert f"unknown option '{typo}'" in message
    assert f"did you mean '{nearest}'?" in message


def test_unknown_option_without_a_near_name_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown option 'zzz'.*\(valid: subscribe"):
        parse_options({**BASE, "zzz": "1"}, mode="batch")


def test_unknown_kafka_property_names_the_nearest() -> None:
    with pytest.raises(
        ConfigError, match=r"'kafka\.bootstrap\.server'.*'kafka\.bootstrap\.servers'"
    ):
        parse_options({**BASE, "kafka.bootstrap.server": "h:1"}, mode="batch")


def test_option_names_are_case_insensitive() -> None:
    opts = parse_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "SUBSCRIBE": "a",
            "MinOffsetsPerTrigger": "3",
            "MAXTRIGGERDELAY": "10s",
            "maxrecordsperpartition": "7",
        },
        mode="stream",
    )
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (3, 10_000)
    assert opts.max_records_per_partition == 7


@pytest.mark.parametrize(
    ("text", "ms"),
    [("15m", 900_000), ("500ms", 500), ("10s", 10_000), ("2h", 7_200_000), ("250", 250)],
)
def test_max_trigger_delay_is_a_spark_duration(text: str, ms: int) -> None:
    opts = parse_options({**BASE, "maxtriggerdelay": text}, mode="stream")
    assert opts.max_trigger_delay_ms == ms


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"minOffsetsPerTrigger": "0"}, "minOffsetsPerTrigger"),
        ({"minOffsetsPerTrigger": "x"}, "minOffsetsPerTrigger"),
        ({"maxTriggerDelay": "soon"}, "maxTriggerDelay"),
        ({"maxTriggerDelay": "5 fortnights"}, "maxTriggerDelay"),
        ({"maxRecordsPerPartition": "-1"}, "maxRecordsPerPartition"),
        ({"minOffsetsPerTrigger": "20", "maxOffsetsPerTrigger": "10"}, "minOffsetsPerTrigger"),
        ({"fetchOffset.numRetries": "-1"}, "fetchOffset.numRetries"),
        ({"fetchOffset.retryIntervalMs": "soon"}, "fetchOffset.retryIntervalMs"),
        ({"groupIdPrefix": " "}, "groupIdPrefix"),
    ],
)
def test_bad_stream_option_is_named(options: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        parse_options(_lower({**BASE, **options}), mode="stream")


def test_group_id_and_prefix_become_the_consumer_group() -> None:
    opts = parse_options({**BASE, "kafka.group.id": "billing"}, mode="batch")
    assert opts.consumer["group_id"] == "billing"
    # As Spark's connector: kafka.group.id wins over groupIdPrefix.
    opts = parse_options(
        {**BASE, "kafka.group.id": "billing", "groupidprefix": "jobs"}, mode="batch"
    )
    assert opts.consumer["group_id"] == "billing"
    first = parse_options({**BASE, "groupidprefix": "jobs"}, mode="stream")
    second = parse_options({**BASE, "groupidprefix": "jobs"}, mode="stream")
    assert first.consumer["group_id"].startswith("jobs-")
    assert first.consumer["group_id"] != second.consumer["group_id"]
    with pytest.raises(ConfigError, match=r"kafka\.group\.id"):
        parse_options(
            {"kafka.bootstrap.servers": "h:1", "topic": "t", "kafka.group.id": "g"}, mode="write"
        )


def test_fetch_offset_retries_are_honoured() -> None:
    pytest.importorskip("pyarrow")
    import asyncio

    from aiokafkawire import errors
    from aiokafkawire.spark._kafka_io import OffsetResolver

    opts = parse_options(
        {**BASE, "fetchoffset.numretries": "2", "fetchoffset.retryintervalms": "10"}, mode="batch"
    )
    calls: list[float] = []

    class Flaky(OffsetResolver):
        async def _list_once(self, specs: Any, allow_missing: bool) -> dict[TopicPartition, int]:
            calls.append(asyncio.get_running_loop().time())
            if len(calls) < 3:
                raise errors.KafkaError("not now")
            return dict(specs)

    resolver = Flaky(opts)
    try:
        tp = TopicPartition("a", 0)
        assert resolver.earliest([tp]) == {tp: -2}
        assert len(calls) == 3
        assert calls[2] - calls[0] >= 0.02
        calls.clear()
        never = Flaky(
            parse_options(
                {**BASE, "fetchoffset.numretries": "1", "fetchoffset.retryintervalms": "0"},
                mode="batch",
            )
        )

        async def fail(specs: Any, allow_missing: bool) -> dict[TopicPartition, int]:
            calls.append(0.0)
            raise errors.KafkaError("never")

        never._list_once = fail  # type: ignore[method-assign]
        with pytest.raises(errors.KafkaError, match="never"):
            never.earliest([tp])
        assert len(calls) == 2
        never.close()
    finally:
        resolver.close()


def test_options_are_parsed() -> None:
    opts = parse_options(
        _lower(
            {
                "kafka.bootstrap.servers": "h:1",
                "assign": '{"a": [0, 2], "b": [1]}',
                "startingOffsets": '{"a": {"0": -2, "2": 5}, "b": {"1": -1}}',
                "kafka.isolation.level": "read_committed",
                "kafka.client.id": "job-7",
                "kafka.fetch.max.bytes": "1000",
                "kafka.sasl.jaas.config": (
                    "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    'username="alice" password="s3cret";'
                ),
                "kafka.linger.ms": "20",
                "minPartitions": "8",
                "maxOffsetsPerTrigger": "100",
                "includeHeaders": "true",
            }
        ),
        mode="stream",
    )
    assert opts.subscription is not None
    assert opts.subscription.partitions == (
        TopicPartition("a", 0),
        TopicPartition("a", 2),
        TopicPartition("b", 1),
    )
    assert opts.starting.kind == "offsets"
    assert opts.starting.offsets[TopicPartition("a", 2)] == 5
    assert opts.read_committed
    assert opts.common["client_id"] == "job-7"
    assert opts.common["sasl_plain_password"] == "s3cret"
    assert opts.consumer["fetch_max_bytes"] == 1000
    assert opts.producer["linger_ms"] == 20
    assert (opts.min_partitions, opts.max_offsets_per_trigger, opts.include_headers) == (
        8,
        100,
        True,
    )


def test_timestamps_take_precedence() -> None:
    opts = parse_options(
        _lower({**BASE, "startingTimestamp": "1000", "startingOffsets": "earliest"}),
        mode="batch",
    )
    assert (opts.starting.kind, opts.starting.timestamp) == ("timestamp", 1000)
    opts = parse_options(
        _lower({**BASE, "startingOffsetsByTimestamp": '{"a": {"0": 7}}'}), mode="batch"
    )
    assert opts.starting.kind == "timestamps"
    assert opts.starting.offsets == {TopicPartition("a", 0): 7}


def test_plan_ranges_splits_by_min_partitions() -> None:
    pytest.importorskip("pyspark")
    from aiokafkawire.spark._source import plan_ranges

    a, b, c = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
    starts = {a: 0, b: 10, c: 5}
    ends = {a: 100, b: 10, c: 15}
    assert [(r.partition, r.start, r.end) for r in plan_ranges(starts, ends, None)] == [
        (0, 0, 100),
        (2, 5, 15),
    ]
    ranges = plan_ranges(starts, ends, 10)
    covered = sorted((r.partition, o) for r in ranges for o in range(r.start, r.end))
    assert covered == sorted([(0, o) for o in range(100)] + [(2, o) for o in range(5, 15)])
    assert len([r for r in ranges if r.partition == 0]) == 9
    assert all(r.end > r.start for r in ranges)


def test_plan_ranges_caps_records_per_partition() -> None:
    pytest.importorskip("pyspark")
    from aiokafkawire.spark._source import plan_ranges

    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    ranges = plan_ranges({a: 0, b: 10}, {a: 100, b: 15}, None, 30)
    assert [(r.partition, r.start, r.end) for r in ranges] == [
        (0, 0, 25),
        (0, 25, 50),
        (0, 50, 75),
        (0, 75, 100),
        (1, 10, 15),
    ]
    # minPartitions still applies on top (more pieces, none above the cap).
    ranges = plan_ranges({a: 0, b: 10}, {a: 100, b: 15}, 12, 30)
    assert len(ranges) >= 12 and max(r.size for r in ranges) <= 30
    covered = sorted((r.partition, o) for r in ranges for o in range(r.start, r.end))
    assert covered == [(0, o) for o in range(100)] + [(1, o) for o in range(10, 15)]


class _FakeLookups:
    """Offsets a stream reader sees, changed by the test."""

    def __init__(self, latest: dict[TopicPartition, int]) -> None:
        self.latest_offsets = latest

    def partitions(self) -> set[TopicPartition]:
        return set(self.latest_offsets)

    def latest(self, partitions: Any) -> dict[TopicPartition, int]:
        return dict(self.latest_offsets)

    def earliest(self, partitions: Any) -> dict[TopicPartition, int]:
        return dict.fromkeys(partitions, 0)

    def close(self) -> None:
        pass


def _stream_reader(options: dict[str, str], latest: dict[TopicPartition, int]) -> Any:
    from aiokafkawire.spark._source import KafkaStreamReader

    reader = KafkaStreamReader(parse_options(_lower({**BASE, **options}), mode="stream"))
    reader._resolver = _FakeLookups(latest)  # type: ignore[assignment]
    return reader


def test_min_offsets_per_trigger_waits_for_data_or_the_delay(monkeypatch: Any) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMinRows

    from aiokafkawire.spark import _source

    clock = [1000.0]
    monkeypatch.setattr(_source.time, "monotonic", lambda: clock[0])
    a, b = TopicPartition("a", 0), TopicPartition("b", 0)
    reader = _stream_reader({"minOffsetsPerTrigger": "10", "maxTriggerDelay": "1m"}, {a: 3, b: 0})
    limit = reader.getDefaultReadLimit()
    assert limit == ReadMinRows(10)
    start = {"a": {"0": 0}, "b": {"0": 0}}
    # The first trigger runs (as Spark's connector), whatever the backlog.
    first = reader.latestOffset(start, limit)
    assert first == {"a": {"0": 3}, "b": {"0": 0}}
    # Then fewer than 10 new offsets: the trigger is skipped (start comes back) ...
    reader._resolver.latest_offsets = {a: 8, b: 4}
    clock[0] += 30
    assert reader.latestOffset(first, limit) == first
    # ... until there are 10 ...
    reader._resolver.latest_offsets = {a: 9, b: 4}
    assert reader.latestOffset(first, limit) == {"a": {"0": 9}, "b": {"0": 4}}
    # ... or maxTriggerDelay has passed since the last batch.
    second = {"a": {"0": 9}, "b": {"0": 4}}
    reader._resolver.latest_offsets = {a: 10, b: 4}
    clock[0] += 59
    assert reader.latestOffset(second, limit) == second
    clock[0] += 1
    assert reader.latestOffset(second, limit) == {"a": {"0": 10}, "b": {"0": 4}}
    # Spark asking for everything (ReadAllAvailable) never waits.
    reader._resolver.latest_offsets = {a: 11, b: 4}
    third = {"a": {"0": 10}, "b": {"0": 4}}
    assert reader.latestOffset(third, ReadAllAvailable()) == {"a": {"0": 11}, "b": {"0": 4}}


def test_min_and_max_offsets_per_trigger_together(monkeypatch: Any) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.streaming.datasource import ReadMaxRows

    from aiokafkawire.spark import _source

    clock = [1000.0]
    monkeypatch.setattr(_source.time, "monotonic", lambda: clock[0])
    a = TopicPartition("a", 0)
    reader = _stream_reader({"minOffsetsPerTrigger": "5", "maxOffsetsPerTrigger": "8"}, {a: 100})
    limit = reader.getDefaultReadLimit()
    assert limit == ReadMaxRows(8)
    assert reader.latestOffset({"a": {"0": 0}}, limit) == {"a": {"0": 8}}
    assert reader.latestOffset({"a": {"0": 8}}, limit) == {"a": {"0": 16}}
    reader._resolver.latest_offsets = {a: 20}
    assert reader.latestOffset({"a": {"0": 16}}, limit) == {"a": {"0": 16}}
    # availableNow never waits for the minimum (it would wait for ever at the end).
    reader.prepareForTriggerAvailableNow()
    assert reader.latestOffset({"a": {"0": 16}}, limit) == {"a": {"0": 20}}


def test_rate_limit_admits_exactly_the_limit() -> None:
    pytest.importorskip("pyspark")
    from aiokafkawire.spark._source import rate_limit

    a, b, c = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
    starts = {a: 0, b: 0, c: 50}
    latest = {a: 10, b: 1, c: 60}
    end = rate_limit(starts, latest, 7)
    assert sum(end[tp] - starts[tp] for tp in latest) == 7
    assert all(starts[tp] <= end[tp] <= latest[tp] for tp in latest)
    assert rate_limit(starts, latest, 1000) == latest


def test_pem_tls_and_sasl_become_client_options(tmp_path: Any) -> None:
    trustme = pytest.importorskip("trustme")
    pytest.importorskip("pyarrow")
    import ssl

    from aiokafkawire.spark._kafka_io import client_options

    ca = trustme.CA()
    ca_path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    opts = parse_options(
        _lower(
            {
                **BASE,
                "kafka.security.protocol": "sasl_ssl",
                "kafka.sasl.mechanism": "SCRAM-SHA-512",
                "kafka.sasl.jaas.config": (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required "
                    'username="bob" password="pw";'
                ),
                "kafka.ssl.truststore.type": "PEM",
                "kafka.ssl.truststore.location": str(ca_path),
                "kafka.ssl.endpoint.identification.algorithm": "",
            }
        ),
        mode="batch",
    )
    kwargs = client_options(opts)
    assert kwargs["security_protocol"] == "SASL_SSL"
    assert kwargs["sasl_mechanism"] == "SCRAM-SHA-512"
    assert kwargs["sasl_plain_username"] == "bob"
    context = kwargs["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname is False
    assert "pw" not in repr(opts)
