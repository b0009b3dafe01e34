"""``produce`` and ``consume`` as subprocesses against the session's Tansu broker.

The problems of issue 14 each have a test here: ``consume`` failed without ``--group``, printed
nothing with one (its 5 s timeout was shorter than the join), printed 9 records for
``--max-records 3``, exited 0 on a missing topic and printed ``b'...'`` reprs; ``produce`` to a
missing topic waited 60 s in silence and could not create it.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time

from cli_helpers import (
    REPO_ROOT,
    cli_command,
    cli_environment,
    column,
    make_topic,
    run_in_process,
)

ALL_VALUES = sorted(f"value-{i}" for i in range(30))


def test_produce_to_a_missing_topic_says_so_at_once(cli, name) -> None:
    started = time.monotonic()
    result = cli("produce", name("missing"), input="a\n")
    assert result.returncode == 3
    assert "does not exist; add --create" in result.stderr
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 15  # not the producer's 60 s metadata wait


def test_produce_creates_the_topic_and_splits_keys(cli, name) -> None:
    topic = name("produce")
    lines = "".join(f"k{i}\tv{i}\n" for i in range(5)) + "no separator\n"
    result = cli(
        "produce", topic, "--create", "--partitions", "1", "-K", "\\t", "-H", "h=1", input=lines
    )
    assert result.returncode == 0, result.stderr
    assert f"produced 6 record(s) to {topic}" in result.stderr
    read = cli("consume", topic, "-e", "-F", "{offset} {key}={value} {headers}")
    assert read.stdout.splitlines() == [f"{i} k{i}=v{i} h=1" for i in range(5)] + [
        "5 =no separator h=1"
    ]


def test_consume_by_assignment_prints_values_as_they_are(cli, records_topic) -> None:
    result = cli("consume", records_topic, "-e")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ALL_VALUES
    assert "b'" not in result.stdout
    assert "consumed 30 record(s)" in result.stderr


def test_count_is_exact_across_partitions(cli_fast, records_topic) -> None:
    result = cli_fast("consume", records_topic, "-n", "3")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 3
    assert "consumed 3 record(s)" in result.stderr


def test_consume_a_missing_topic_exits_3(cli_fast, name) -> None:
    result = cli_fast("consume", name("missing"), "-e")
    assert result.returncode == 3
    assert "does not exist" in result.stderr
    assert result.stdout == ""


def test_json_input_and_output_with_base64_and_headers(cli, name) -> None:
    topic = name("json")
    produced = cli(
        "produce", topic, "--create", "--partitions", "1", "-H", "source=cli", "--json",
        input='{"key": "k1", "value": {"n": 1}, "headers": {"h": "x"}}\n{"value": "plain"}\n',
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    result = cli("consume", topic, "-e", "-o", "json", "--encoding", "base64")
    assert result.returncode == 0, result.stderr
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert base64.b64decode(first["key"]) == b"k1"
    assert json.loads(base64.b64decode(first["value"])) == {"n": 1}
    assert [[k, base64.b64decode(v)] for k, v in first["headers"]] == [
        ["source", b"cli"],
        ["h", b"x"],
    ]
    assert (first["partition"], first["offset"], second["offset"]) == (0, 0, 1)
    assert second["key"] is None and base64.b64decode(second["value"]) == b"plain"


def test_template_partition_and_start_offset(cli_fast, records_topic) -> None:
    result = cli_fast(
        "consume", records_topic, "-p", "1", "--offset", "8", "-e",
        "-F", "{topic}|{partition}:{offset}\\t{key}={value}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"{records_topic}|1:8\tkey-25=value-25",
        f"{records_topic}|1:9\tkey-28=value-28",
    ]


def test_from_end_exits_at_end_with_nothing(mock_cluster, name) -> None:
    # On the librdkafka mock: Tansu's ListOffsets(latest) answers too low an offset.
    topic = name("end")
    mock_cluster.create_topic(topic, partitions=2)
    make_topic(mock_cluster.bootstrap_servers, topic, 2, 10, create=False)
    servers = ("-b", mock_cluster.bootstrap_servers)
    result = run_in_process("consume", topic, "--from", "end", "-e", *servers)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "consumed 0 record(s)" in result.stderr
    everything = run_in_process("consume", topic, "-e", *servers)
    assert sorted(everything.stdout.splitlines()) == sorted(f"value-{i}" for i in range(10))


def test_usage_errors(cli_fast, records_topic) -> None:
    bad_template = cli_fast("consume", records_topic, "-e", "-F", "{nope}")
    assert bad_template.returncode == 2
    assert "'nope' is not a field" in bad_template.stderr
    group_and_offset = cli_fast("consume", records_topic, "-g", "g", "--offset", "3")
    assert group_and_offset.returncode == 2
    assert "cannot be combined with --group" in group_and_offset.stderr
    bad_json = cli_fast("produce", records_topic, "--json", input="not json\n")
    assert bad_json.returncode == 2
    assert "input line 1 is not JSON" in bad_json.stderr


def test_group_consume_waits_for_the_join_saying_so_and_commits(cli, name, records_topic) -> None:
    group = name("group")
    result = cli("consume", records_topic, "-g", group, "-n", "30")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ALL_VALUES
    assert f"waiting: joining group {group}" in result.stderr
    assert f"joined group {group}" in result.stderr
    described = cli("groups", "describe", group)
    assert described.returncode == 0, described.stderr
    rows = [line for line in described.stdout.splitlines() if records_topic in line]
    assert [column(row, 2) for row in rows] == ["10", "10", "10"]  # committed offsets


def test_ctrl_c_ends_a_following_group_consumer_cleanly_with_commits(
    tansu_broker, cli, name, records_topic
) -> None:
    group = name("follow")
    process = subprocess.Popen(
        cli_command(
            "consume", records_topic, "-g", group, "--follow", "-b", tansu_broker.bootstrap_servers
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_environment(),
        cwd=REPO_ROOT,
    )
    try:
        assert process.stdout is not None
        seen = [process.stdout.readline() for _ in range(30)]
        assert sorted(line.strip() for line in seen) == ALL_VALUES
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 130, err
    assert "consumed 30 record(s)" in err
    assert "Traceback" not in err
    described = cli("groups", "describe", group)
    assert described.returncode == 0, described.stderr
    rows = [line for line in described.stdout.splitlines() if records_topic in line]
    assert [column(row, 2) for row in rows] == ["10", "10", "10"]


def test_ctrl_c_while_producing_from_a_terminal_sends_what_was_typed(
    tansu_broker, cli, cli_fast, name
) -> None:
    topic = name("typed")
    assert cli_fast("topics", "create", topic, "-p", "1").returncode == 0
    controller, terminal = os.openpty()
    process = subprocess.Popen(
        cli_command("produce", topic, "-b", tansu_broker.bootstrap_servers),
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_environment(),
        cwd=REPO_ROOT,
    )
    try:
        os.close(terminal)
        assert process.stderr is not None
        assert "one a line; Ctrl-D ends" in process.stderr.readline()
        os.write(controller, b"typed line\n")
        read = cli_fast("consume", topic, "-n", "1")  # delivered while the terminal is open
        assert read.stdout == "typed line\n"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 130, err
    assert "Fatal Python error" not in err  # a reader thread must not hold stdin's lock at exit
