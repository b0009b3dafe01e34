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
    with pytest.raises(ConfigError, match="endingoffsets"):
        parse_options(_lower({**BASE, "endingOffsets": "latest"}), mode="stream")


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
