"""``broker``, ``metadata``, ``versions``, ``topics``, ``groups`` and ``offsets`` as subprocesses.

Most run on the session's Tansu broker.  Lag and latest offsets run on real Apache Kafka
(``kafka_cluster``): Tansu's ListOffsets(latest) answers too low an offset (BROKERS.md).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time

import pytest
from cli_helpers import (
    REPO_ROOT,
    cli_command,
    cli_environment,
    column,
    make_topic,
    run_aiokafkawire,
    run_in_process,
)

from aiokafkawire import Admin
from aiokafkawire.structs import TopicPartition


def _rows(stdout: str, first_cell: str) -> list[str]:
    return [
        line
        for line in stdout.splitlines()
        if line.startswith("│") and column(line, 0) == first_cell
    ]


def test_broker_runs_in_the_foreground_until_ctrl_c() -> None:
    process = subprocess.Popen(
        cli_command("broker"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_environment(),
        cwd=REPO_ROOT,
    )
    try:
        assert process.stdout is not None
        address = process.stdout.readline().strip()
        assert address.startswith("127.0.0.1:"), address
        listed = run_aiokafkawire("topics", "list", "-b", address, timeout=30)
        assert listed.returncode == 0, listed.stderr
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 0, err
    assert f"embedded Tansu broker listening on {address}" in err
    assert "stopping the broker" in err


def test_metadata_and_versions(cli, records_topic) -> None:
    metadata = cli("metadata", records_topic)
    assert metadata.returncode == 0, metadata.stderr
    brokers = _rows(metadata.stdout, "111")
    assert len(brokers) == 1 and column(brokers[0], 4) == "controller"
    partitions = _rows(metadata.stdout, records_topic)
    assert [column(row, 1) for row in partitions] == ["0", "1", "2"]
    assert all(column(row, 2) == "111" and column(row, 4) == "111" for row in partitions)
    versions = cli("versions")
    assert versions.returncode == 0, versions.stderr
    fetch = _rows(versions.stdout, "1")[0]
    assert column(fetch, 1) == "FETCH" and column(fetch, 2) == "0-17"
    assert column(fetch, 4).isdigit()


def test_topic_lifecycle(cli, cli_fast, name) -> None:
    topic = name("topic")
    created = cli("topics", "create", topic, "-p", "2", "-c", "retention.ms=60000")
    assert created.returncode == 0, created.stderr
    assert f"created topic {topic}" in created.stderr
    again = cli_fast("topics", "create", topic)
    assert again.returncode == 1
    assert "TOPIC_ALREADY_EXISTS" in again.stderr and "Traceback" not in again.stderr
    assert cli_fast("topics", "create", topic, "--if-not-exists").returncode == 0
    listed = cli("topics", "list", "-l")
    assert column(_rows(listed.stdout, topic)[0], 1) == "2"
    altered = cli("topics", "alter-config", topic, "--set", "retention.ms=1000")
    assert altered.returncode == 0, altered.stderr
    described = cli("topics", "describe", topic)
    assert described.returncode == 0, described.stderr
    assert [
        column(row, 1) for row in _rows(described.stdout, "0") + _rows(described.stdout, "1")
    ] == [
        "111",
        "111",
    ]  # leaders
    deleted = cli("topics", "delete", topic)
    assert deleted.returncode == 0, deleted.stderr
    for missing in (
        cli_fast("topics", "delete", topic),
        cli_fast("topics", "describe", topic),
    ):
        assert missing.returncode == 3, missing.stderr
        assert f"topic {topic!r} does not exist" in missing.stderr
    assert cli_fast("topics", "delete", topic, "--if-exists").returncode == 0


def _commit(bootstrap: str, group: str, offsets: dict[TopicPartition, int]) -> None:
    async def commit() -> None:
        async with Admin(bootstrap_servers=bootstrap) as admin:
            for _ in range(20):
                results = await admin.alter_group_offsets(group, offsets, raise_on_error=False)
                problems = [r.error for r in results.values() if r.error is not None]
                # A fresh Kafka answers NOT_COORDINATOR per partition while its offsets topic
                # is being created; Admin retries only errors of the whole request.
                if not problems or not all(p.retriable for p in problems):
                    break
                await asyncio.sleep(0.5)
            assert not problems, results

    asyncio.run(commit())


def test_groups_list_describe_reset_and_delete(
    tansu_broker, cli, cli_fast, name, records_topic
) -> None:
    group = name("offsets")
    tps = [TopicPartition(records_topic, p) for p in range(3)]
    _commit(tansu_broker.bootstrap_servers, group, dict(zip(tps, (7, 8, 9), strict=True)))
    listed = cli("groups", "list")
    assert listed.returncode == 0, listed.stderr
    assert _rows(listed.stdout, group)
    described = cli("groups", "describe", group)
    assert described.returncode == 0, described.stderr
    assert [column(row, 2) for row in _rows(described.stdout, records_topic)] == ["7", "8", "9"]

    dry = cli(
        "groups", "reset-offsets", group, "--topic", records_topic, "--to-offset", "2", "--dry-run"
    )
    assert dry.returncode == 0, dry.stderr
    assert [(column(r, 2), column(r, 3)) for r in _rows(dry.stdout, records_topic)] == [
        ("7", "2"), ("8", "2"), ("9", "2")
    ]  # fmt: skip
    earliest = cli_fast(
        "groups", "reset-offsets", group, "--topic", records_topic, "--to-earliest", "-p", "1"
    )
    assert earliest.returncode == 0, earliest.stderr
    to_offset = cli_fast(
        "groups", "reset-offsets", group, "--topic", records_topic, "--to-offset", "5", "-p", "2"
    )
    assert to_offset.returncode == 0, to_offset.stderr
    after = cli_fast("groups", "describe", group)
    assert [column(row, 2) for row in _rows(after.stdout, records_topic)] == ["7", "0", "5"]

    deleted = cli("groups", "delete", group)
    assert deleted.returncode == 0, deleted.stderr
    gone = cli_fast("groups", "describe", group)
    assert gone.returncode == 3
    assert f"group {group!r} does not exist" in gone.stderr


def test_offsets_of_a_topic(cli, cli_fast, records_topic) -> None:
    result = cli("offsets", records_topic, "-p", "0", "-p", "2")
    assert result.returncode == 0, result.stderr
    assert [column(row, 1) for row in _rows(result.stdout, "0") + _rows(result.stdout, "2")] == [
        "0",
        "0",
    ]
    missing = cli_fast("offsets", records_topic, "-p", "7")
    assert missing.returncode == 3
    assert "7 is not one" in missing.stderr


@pytest.mark.slow
def test_lag_and_latest_offsets_on_apache_kafka(kafka_cluster, name) -> None:
    servers = kafka_cluster.bootstrap_servers
    topic, group = name("lag"), name("lag-group")
    make_topic(servers, topic, 2, 20)
    _commit(servers, group, {TopicPartition(topic, 0): 4, TopicPartition(topic, 1): 10})
    described = run_aiokafkawire("groups", "describe", group, "-b", servers)
    assert described.returncode == 0, described.stderr
    rows = _rows(described.stdout, topic)
    assert [(column(r, 2), column(r, 3), column(r, 4)) for r in rows] == [
        ("4", "10", "6"),
        ("10", "10", "0"),
    ]
    assert "total lag 6" in described.stdout
    offsets = run_in_process("offsets", topic, "-b", servers)
    assert [column(r, 2) for r in _rows(offsets.stdout, "0") + _rows(offsets.stdout, "1")] == [
        "10",
        "10",
    ]
    altered = run_in_process(
        "topics", "alter-config", topic, "--set", "retention.ms=60000", "-b", servers
    )
    assert altered.returncode == 0, altered.stderr
    described = run_in_process("topics", "describe", topic, "-b", servers)
    assert column(_rows(described.stdout, "retention.ms")[0], 1) == "60000"
    from_end = run_in_process("consume", topic, "--from", "end", "-e", "-b", servers)
    assert from_end.returncode == 0, from_end.stderr
    assert from_end.stdout == ""
    future = str(int(time.time() * 1000) + 3_600_000)
    at_time = run_in_process("offsets", topic, "--timestamp", "0", "-b", servers)
    assert [column(r, 3) for r in _rows(at_time.stdout, "0") + _rows(at_time.stdout, "1")] == [
        "0",
        "0",
    ]
    later = run_in_process("consume", topic, "--timestamp", future, "-e", "-b", servers)
    assert later.returncode == 0, later.stderr
    assert later.stdout == ""
    reset = ("groups", "reset-offsets", group, "--topic", topic, "-b", servers)
    shifted = run_in_process(*reset, "--shift-by", "-3")
    assert shifted.returncode == 0, shifted.stderr
    assert [(column(r, 2), column(r, 3)) for r in _rows(shifted.stdout, topic)] == [
        ("4", "1"),
        ("10", "7"),
    ]
    assert run_in_process(*reset, "--to-latest").returncode == 0
    assert "total lag 0" in run_in_process("groups", "describe", group, "-b", servers).stdout
