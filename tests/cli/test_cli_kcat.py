"""What a kcat or rpk user reaches for (issue 21): ``--offset -N``, ``--until``, ``-X``, config
profiles, one bootstrap environment variable, ``-D`` and ``--null-value``, and a byte-for-byte
``consume | produce`` copy.

Offsets from the end run on the librdkafka mock (Tansu's ListOffsets(latest) answers too low an
offset); ``--until`` and the copy run on Apache Kafka (Tansu ignores producer timestamps in
lookups and the mock has none).
"""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace
from typing import Any

import pytest
from cli_helpers import make_topic, run_aiokafkawire, run_in_process

from aiokafkawire.cli.app import Context, build_parser
from aiokafkawire.cli.consume import _Bounds
from aiokafkawire.cli.exit_codes import CliError
from aiokafkawire.cli.formats import LineParser, RecordFormatter, unescape_bytes
from aiokafkawire.cli.options import apply_profile
from aiokafkawire.cli.output import Reporter
from aiokafkawire.cli.settings import (
    FOREIGN_NAMES,
    for_client,
    load_profile,
    parse_x_options,
)
from aiokafkawire.structs import TopicPartition

# ----------------------------------------------------------------------------- --offset -N


def test_negative_offset_counts_back_from_each_partitions_end(mock_cluster, name) -> None:
    topic = name("tail")
    mock_cluster.create_topic(topic, partitions=2)
    make_topic(mock_cluster.bootstrap_servers, topic, 2, 10, create=False)
    servers = ("-b", mock_cluster.bootstrap_servers)
    tail = run_in_process("consume", topic, "--offset", "-2", "-e", *servers)
    assert tail.returncode == 0, tail.stderr
    assert sorted(tail.stdout.splitlines()) == ["value-6", "value-7", "value-8", "value-9"]
    # More than a partition holds: from its beginning, not an error.
    everything = run_in_process("consume", topic, "--offset", "-100", "-e", *servers)
    assert everything.returncode == 0, everything.stderr
    assert len(everything.stdout.splitlines()) == 10


# ----------------------------------------------------------------------------- --until


class _FakeConsumer:
    """What _Bounds asks of a consumer: positions, high watermarks, pause."""

    def __init__(self, positions: dict[TopicPartition, int], highwaters: dict[Any, int]) -> None:
        self.positions = positions
        self.highwaters = highwaters
        self.paused: set[TopicPartition] = set()
        self.lookups: dict[TopicPartition, Any] = {}

    def assignment(self) -> set[TopicPartition]:
        return set(self.positions)

    async def position(self, tp: TopicPartition) -> int:
        return self.positions[tp]

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.highwaters.get(tp)

    def pause(self, tp: TopicPartition) -> None:
        self.paused.add(tp)

    async def offsets_for_times(self, wanted: dict[TopicPartition, int]) -> dict[Any, Any]:
        return {tp: self.lookups.get(tp) for tp in wanted}


def _record(offset: int, timestamp: int) -> Any:
    return SimpleNamespace(offset=offset, timestamp=timestamp)


def test_until_cuts_at_the_looked_up_offset_or_else_at_a_late_record() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    consumer = _FakeConsumer({a: 0, b: 0}, {})
    consumer.lookups = {a: SimpleNamespace(offset=2)}  # b: every record so far is earlier

    async def run() -> None:
        bounds = _Bounds(until=1_000, at_end=False)
        await bounds.prepare(consumer, [a, b])  # type: ignore[arg-type]
        # By offset for a, even though its records' timestamps are not in order.
        kept = bounds.cut(consumer, a, [_record(0, 5), _record(1, 2_000), _record(2, 10)])  # type: ignore[arg-type]
        assert [r.offset for r in kept] == [0, 1] and consumer.paused == {a}
        # By timestamp for b, whose lookup found nothing.
        kept = bounds.cut(consumer, b, [_record(0, 999), _record(1, 1_000)])  # type: ignore[arg-type]
        assert [r.offset for r in kept] == [0] and consumer.paused == {a, b}
        assert await bounds.finished(consumer)  # type: ignore[arg-type]

    asyncio.run(run())


def test_until_with_exit_at_end_ends_partitions_at_their_end() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    consumer = _FakeConsumer({a: 3, b: 5}, {a: 3, b: 9})
    consumer.lookups = {b: SimpleNamespace(offset=5)}

    async def run() -> None:
        follow = _Bounds(until=1_000, at_end=False)
        await follow.prepare(consumer, [a, b])  # type: ignore[arg-type]
        assert not await follow.finished(consumer)  # type: ignore[arg-type]  # a: no bound yet
        assert consumer.paused == {b}  # b is at its --until offset
        at_end = _Bounds(until=1_000, at_end=True)
        await at_end.prepare(consumer, [a, b])  # type: ignore[arg-type]
        assert await at_end.finished(consumer)  # type: ignore[arg-type]

    asyncio.run(run())


def test_until_and_offset_from_the_end_on_apache_kafka(kafka_cluster, name) -> None:
    topic = name("until")
    servers = ("-b", kafka_cluster.bootstrap_servers)
    now = int(time.time() * 1000)
    lines = "".join(
        json.dumps({"value": f"v{i}", "timestamp": now - 60_000 + i * 1_000, "partition": i % 2})
        + "\n"
        for i in range(10)
    )
    produced = run_in_process("produce", topic, "--create", "--partitions", "2", "--json",
                              *servers, input=lines)  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    until = str(now - 60_000 + 6_000)  # v0..v5 are before it
    result = run_aiokafkawire("consume", topic, "--until", until, *servers, timeout=60)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [f"v{i}" for i in range(6)]
    tail = run_in_process("consume", topic, "--offset", "-2", "-e", *servers)
    assert sorted(tail.stdout.splitlines()) == ["v6", "v7", "v8", "v9"]
    # A time after every record: -e ends at the partitions' ends.
    later = run_in_process("consume", topic, "--until", str(now + 60_000), "-e", *servers)
    assert later.returncode == 0, later.stderr
    assert len(later.stdout.splitlines()) == 10


def test_until_is_not_for_groups(cli_fast, records_topic) -> None:
    result = cli_fast("consume", records_topic, "-g", "g", "--until", "1000")
    assert result.returncode == 2
    assert "--until reads partitions directly" in result.stderr


# ----------------------------------------------------------------------------- -X, profiles


def test_x_options_go_to_the_clients_that_take_them_as_their_types() -> None:
    texts = parse_x_options(
        ["linger_ms=20", "fetch_max_bytes=1_048_576", "enable_idempotence=false", "acks=all"]
    )
    assert for_client("producer", texts) == {
        "linger_ms": 20,
        "enable_idempotence": False,
        "acks": "all",
    }
    assert for_client("consumer", texts) == {"fetch_max_bytes": 1_048_576}
    assert for_client("admin", texts) == {}
    assert for_client("consumer", parse_x_options(["group_id=123"])) == {"group_id": "123"}


def test_x_refuses_unknown_secret_and_object_options() -> None:
    with pytest.raises(CliError, match="unknown client options: \\['lingerms'\\]"):
        parse_x_options(["lingerms=5"])
    with pytest.raises(CliError, match="is a secret"):
        parse_x_options(["sasl_plain_password=hunter2"])
    with pytest.raises(CliError, match="takes a Python object"):
        parse_x_options(["ssl_context=x"])
    with pytest.raises(CliError, match="NAME=VALUE"):
        parse_x_options(["linger_ms"])
    with pytest.raises(CliError, match="has its own option: -b/--bootstrap-servers"):
        parse_x_options(["bootstrap_servers=elsewhere:9092"])


def test_foreign_names_plug_into_x(monkeypatch) -> None:
    monkeypatch.setitem(FOREIGN_NAMES, "linger.ms", "linger_ms")
    assert for_client("producer", parse_x_options(["linger.ms=7"])) == {"linger_ms": 7}


def test_x_takes_java_and_librdkafka_property_names() -> None:
    texts = parse_x_options(
        ["linger.ms=7", "auto.offset.reset=smallest", "request.required.acks=-1",
         "compression.codec=none", "enable.auto.commit=false"]
    )  # fmt: skip
    assert for_client("producer", texts) == {
        "linger_ms": 7,
        "acks": "all",
        "compression_type": None,
    }
    assert for_client("consumer", texts) == {
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
    }
    with pytest.raises(CliError, match="has its own option: -b/--bootstrap-servers"):
        parse_x_options(["bootstrap.servers=elsewhere:9092"])


def test_precedence_flags_over_x_over_profile_over_defaults(tmp_path) -> None:
    config = tmp_path / "config.ini"
    config.write_text(
        "[DEFAULT]\nbootstrap_servers = default:9092\nlinger_ms = 1\n\n"
        "[prod]\nbootstrap_servers = prod:9092\nlinger_ms = 2\nbatch_size = 3\n"
        "sasl_mechanism = SCRAM-SHA-512\nsasl_username = alice\n"
        "sasl_password_env = PROD_PASSWORD\nclient_id = from-profile\n"
    )
    args = build_parser().parse_args(
        ["produce", "t", "--config-file", str(config), "--profile", "prod", "-X", "linger_ms=9",
         "--client-id", "from-flag"]
    )  # fmt: skip
    profile = load_profile(args.config_file, args.profile)
    apply_profile(args, profile)
    assert (args.bootstrap_servers, args.client_id) == ("prod:9092", "from-flag")
    assert (args.sasl_username, args.sasl_password_env) == ("alice", "PROD_PASSWORD")
    context = Context(args, Reporter(quiet=True))
    context.settings = {**profile.options, **parse_x_options(args.client_settings)}
    context._client_options = {"bootstrap_servers": args.bootstrap_servers}  # no password asked
    options = context.client_options("producer", defaults={"acks": "all", "linger_ms": 5}, acks=1)
    assert options == {
        "bootstrap_servers": "prod:9092",
        "linger_ms": 9,
        "batch_size": 3,
        "acks": 1,
    }
    assert load_profile(str(config), None).options == {"linger_ms": "1"}


def test_config_file_and_profile_errors(tmp_path) -> None:
    config = tmp_path / "config.ini"
    config.write_text("[dev]\nbootstrap_servers = dev:9092\nnot_an_option = 1\n")
    with pytest.raises(CliError, match="has no profile 'prod' \\(profiles: dev\\)"):
        load_profile(str(config), "prod")
    with pytest.raises(CliError, match="unknown client options: \\['not_an_option'\\]"):
        load_profile(str(config), "dev")
    with pytest.raises(CliError, match="No such file"):
        load_profile(str(tmp_path / "missing.ini"), None)


def test_config_file_gives_the_cluster_and_the_old_variable_warns(
    tansu_broker, records_topic, tmp_path
) -> None:
    config = tmp_path / "config.ini"
    config.write_text(f"[local]\nbootstrap_servers = {tansu_broker.bootstrap_servers}\n")
    listed = run_in_process("topics", "list", "--config-file", str(config), "--profile", "local")
    assert listed.returncode == 0, listed.stderr
    assert records_topic in listed.stdout
    old = run_in_process(
        "topics", "list", env={"AIOKAFKAWIRE_BOOTSTRAP": tansu_broker.bootstrap_servers}
    )
    assert old.returncode == 0, old.stderr
    assert records_topic in old.stdout
    assert "$AIOKAFKAWIRE_BOOTSTRAP is deprecated; set $AIOKAFKAWIRE_BOOTSTRAP_SERVERS" in (
        old.stderr
    )
    new = run_in_process(
        "topics", "list", env={"AIOKAFKAWIRE_BOOTSTRAP_SERVERS": tansu_broker.bootstrap_servers}
    )
    assert records_topic in new.stdout and "deprecated" not in new.stderr


def test_a_bad_x_value_is_a_usage_error(cli_fast, records_topic) -> None:
    result = cli_fast("consume", records_topic, "-e", "-X", "fetch_max_bytes=lots")
    assert result.returncode == 2, result.stderr
    assert "fetch_max_bytes" in result.stderr and "Traceback" not in result.stderr


# ----------------------------------------------------------------------------- binary-safe


def test_escapes_of_delimiters() -> None:
    assert unescape_bytes(r"\0") == b"\0"
    assert unescape_bytes(r"a\xffb\x") == b"a\xffb\\x"
    assert unescape_bytes("é\\t") == "é".encode() + b"\t"


def test_delimiter_null_value_and_base64_parsing() -> None:
    parser = LineParser(key_separator=r"\x00", null_value=b"")
    assert parser.parse(b"k\x00", 1).value is None  # an empty value: a tombstone
    record = parser.parse(b"k\x00\xff\n", 2)
    assert (record.key, record.value) == (b"k", b"\xff\n")
    b64 = LineParser(json_input=True, encoding="base64")
    line = json.dumps(
        {"topic": "src", "offset": 4, "partition": 1, "timestamp": 5, "key": "AA==",
         "value": None, "headers": [["h", "/w=="], ["n", None]]}
    ).encode()  # fmt: skip
    record = b64.parse(line, 1)
    assert (record.key, record.value, record.partition, record.timestamp) == (b"\0", None, 1, 5)
    assert record.headers == [("h", b"\xff"), ("n", None)]
    with pytest.raises(CliError, match="input line 3: not base64"):
        b64.parse(b'{"value": "a"}', 3)
    raw = RecordFormatter("raw", delimiter=b"\0")
    assert raw.format(SimpleNamespace(value=b"\xff\n")) == b"\xff\n\0"


def test_produce_with_a_delimiter_and_null_value(cli, cli_fast, name) -> None:
    topic = name("delim")
    data = "a|b\n||c|\n"  # records: "a", "b\n", "" (a tombstone), "c", "\n"
    result = cli("produce", topic, "--create", "--partitions", "1", "-D", "|", "--null-value", "",
                 input=data)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "produced 5 record(s)" in result.stderr
    read = cli_fast("consume", topic, "-e", "-o", "json")
    values = [json.loads(line)["value"] for line in read.stdout.splitlines()]
    assert values == ["a", "b\n", None, "c", "\n"]
    usage = cli_fast("produce", topic, "--json", "-D", "|", input="")
    assert usage.returncode == 2 and "not with --delimiter" in usage.stderr


def _read_all(servers: str, topic: str) -> list[tuple[Any, ...]]:
    from aiokafkawire import Admin, Consumer

    async def read() -> list[tuple[Any, ...]]:
        async with Admin(bootstrap_servers=servers) as admin:
            info = (await admin.describe_topics([topic]))[topic]
        partitions = [TopicPartition(topic, p) for p in info.partition_ids]
        async with Consumer(bootstrap_servers=servers, enable_auto_commit=False) as consumer:
            consumer.assign(partitions)
            ends = await consumer.end_offsets(partitions)
            await consumer.seek_to_beginning(*partitions)
            got: list[tuple[Any, ...]] = []
            deadline = time.monotonic() + 30
            while len(got) < sum(ends.values()) and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got += [
                        (r.partition, r.offset, r.timestamp, r.key, r.value, list(r.headers))
                        for r in records
                    ]
            return sorted(got)

    return asyncio.run(read())


def test_consume_into_produce_copies_a_topic_byte_for_byte_on_apache_kafka(
    kafka_cluster, name
) -> None:
    from aiokafkawire import Admin, NewTopic, Producer

    servers = kafka_cluster.bootstrap_servers
    source, copy = name("source"), name("copy")

    async def write() -> None:
        async with Admin(bootstrap_servers=servers) as admin:
            await admin.create_topics([NewTopic(source, 2, 1), NewTopic(copy, 2, 1)])
        async with Producer(bootstrap_servers=servers) as producer:
            handles = [
                await producer.send(source, bytes(range(256)), key=b"\x00\xff", partition=0,
                                    headers=[("bin", b"\xfe\n"), ("none", None)]),
                await producer.send(source, None, key=b"deleted", partition=1),  # a tombstone
                await producer.send(source, b"", key=None, partition=1),  # empty, not null
                await producer.send(source, "é\n\r\t".encode(), key=b"k", partition=0,
                                    timestamp=1_700_000_000_000),
            ]  # fmt: skip
            for handle in handles:
                await handle

    asyncio.run(write())
    dumped = run_aiokafkawire(
        "consume", source, "-e", "-o", "json", "--encoding", "base64", "-b", servers
    )
    assert dumped.returncode == 0, dumped.stderr
    loaded = run_aiokafkawire(
        "produce", copy, "--json", "--encoding", "base64", "-b", servers, input=dumped.stdout
    )
    assert loaded.returncode == 0, loaded.stderr
    assert "produced 4 record(s)" in loaded.stderr
    original, copied = _read_all(servers, source), _read_all(servers, copy)
    assert len(original) == 4
    assert copied == original
    assert any(row[4] is None for row in copied) and any(row[4] == b"" for row in copied)
    # kcat -L -J's counterpart on the same cluster: one JSON document, both topics in it.
    listed = run_in_process("topics", "list", "-J", "-b", servers)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    for topic in (source, copy):
        assert rows[topic] == {"name": topic, "partitions": 2, "replication": 1, "internal": False}


def test_the_test_suite_reads_the_same_variable(monkeypatch) -> None:
    from aiokafkawire.testing.pytest_plugin import external_bootstrap

    monkeypatch.delenv("AIOKAFKAWIRE_BOOTSTRAP", raising=False)
    monkeypatch.setenv("AIOKAFKAWIRE_BOOTSTRAP_SERVERS", "new:9092")
    assert external_bootstrap() == "new:9092"
    monkeypatch.delenv("AIOKAFKAWIRE_BOOTSTRAP_SERVERS")
    monkeypatch.setenv("AIOKAFKAWIRE_BOOTSTRAP", "old:9092")
    with pytest.warns(DeprecationWarning, match="set \\$AIOKAFKAWIRE_BOOTSTRAP_SERVERS"):
        assert external_bootstrap() == "old:9092"
