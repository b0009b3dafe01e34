"""Exactly-once writes of the Spark sink on Apache Kafka 4.4 (transactions v2) and 3.9 (v1).

The output is always read back by confluent-kafka (an independent client) with
``read_committed``: every input value must be there exactly once, and no transaction of the
writer may be left open (it would hold ``read_committed`` readers back).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _spark_helpers import create_topic, unique

pytest.importorskip("pyspark")
import pyarrow as pa

from aiokafkawire.admin import Admin
from aiokafkawire.errors import IllegalStateError
from aiokafkawire.spark._exactly_once import (
    CommitLogEntry,
    TransactionCompleter,
    write_in_transaction,
)
from aiokafkawire.spark._options import parse_options

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

DRIVER = str(Path(__file__).with_name("_eos_driver.py"))


def produce_values(bootstrap: str, topic: str, count: int, partitions: int = 2) -> set[bytes]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = {f"r{i}".encode() for i in range(count)}
    for i in range(count):
        producer.produce(topic, value=f"r{i}".encode(), key=b"k", partition=i % partitions)
    assert producer.flush(30) == 0
    return values


def read_committed(bootstrap: str, topic: str) -> list[bytes]:
    """Every committed value of ``topic`` (confluent-kafka, read_committed, to the LSO)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("check"),
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        partitions = [TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions]
        consumer.assign(partitions)
        values: list[bytes] = []
        quiet_since = time.monotonic()
        deadline = time.monotonic() + 60
        while time.monotonic() - quiet_since < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            values.append(message.value())
            quiet_since = time.monotonic()
        return values
    finally:
        consumer.close()


def committed_transactional_ids(bootstrap: str, prefix: str, log_topic: str) -> set[str]:
    """Every transactional id the commit log lists for ``prefix`` (in ``completing`` records)."""
    from confluent_kafka import Consumer, TopicPartition

    from aiokafkawire.spark._exactly_once import CommitLogEntry

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": unique("log"), "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(log_topic, 0, 0)])
        ids: set[str] = set()
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < 3:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            quiet_since = time.monotonic()
            if message.key() == prefix.encode():
                entry = CommitLogEntry.decode(message.value())
                ids.update(t.transactional_id for t in entry.transactions)
        return ids
    finally:
        consumer.close()


def open_transactions(bootstrap: str, prefix: str) -> list[str]:
    async def listed() -> list[str]:
        async with Admin(bootstrap_servers=bootstrap) as admin:
            found = await admin.list_transactions(states=["Ongoing", "PrepareAbort"])
            return [t.transactional_id for t in found if t.transactional_id.startswith(prefix)]

    return asyncio.run(listed())


def _write_options(bootstrap: str, topic: str, prefix: str) -> Any:
    return parse_options(
        {
            "kafka.bootstrap.servers": bootstrap,
            "topic": topic,
            "exactlyonce": "true",
            "transactionalidprefix": prefix,
            "transactiontimeoutms": "60000",
        },
        mode="write",
    )


def _rows(values: list[bytes]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"value": values}, schema=pa.schema([("value", pa.binary())]))


@pytest.fixture(params=["kafka", "kafka39"])
def any_bootstrap(request: Any) -> str:
    """Apache Kafka 4.4 (transactions v2) and 3.9 (transactions v1)."""
    name = "kafka_cluster" if request.param == "kafka" else "kafka_cluster_39"
    return str(request.getfixturevalue(name).bootstrap_servers)


def test_driver_dead_mid_commit_is_completed_and_replay_aborted(any_bootstrap: str) -> None:
    bootstrap = any_bootstrap
    topic = create_topic(bootstrap, 2, "eos-unit")
    prefix = unique("eos-unit")
    opts = _write_options(bootstrap, topic, prefix)
    written: list[bytes] = []
    refs = []
    for task in range(3):
        values = [f"t{task}-{i}".encode() for i in range(20)]
        count, ref = write_in_transaction(opts, [_rows(values)], f"{prefix}-{task}-0")
        assert count == 20 and ref is not None
        refs.append(ref)
        written += values
    assert sorted(open_transactions(bootstrap, prefix)) == [f"{prefix}-{t}-0" for t in range(3)]
    # A driver records batch 7 as completing, commits one transaction, and dies.
    dying = TransactionCompleter(opts)
    try:
        dying._run(dying._append(CommitLogEntry(7, "completing", tuple(refs))))
        dying._run(dying._end(refs[0], True))
    finally:
        dying.close()
    assert len(open_transactions(bootstrap, prefix)) == 2
    # The next driver completes batch 7 before anything else.
    completer = TransactionCompleter(opts)
    try:
        entry = completer.recover()
        assert entry == CommitLogEntry(7, "done")
        assert open_transactions(bootstrap, prefix) == []
        # Spark replays batch 7: the replay's transactions are aborted, not committed.
        replay = [f"replay-{i}".encode() for i in range(5)]
        _, again = write_in_transaction(opts, [_rows(replay)], f"{prefix}-0-0")
        assert again is not None
        assert completer.commit([again], 7) is False
        # Batch 8 commits; a leftover of a failed attempt (never reported) is fenced.
        _, fresh = write_in_transaction(opts, [_rows([b"b8"])], f"{prefix}-0-0")
        _, leftover = write_in_transaction(opts, [_rows([b"lost"])], f"{prefix}-1-1")
        assert fresh is not None and leftover is not None
        assert completer.commit([fresh], 8) is True
        assert open_transactions(bootstrap, prefix) == []
        # A batch before the log's last one: a reset checkpoint or a shared prefix, refused.
        _, stray = write_in_transaction(opts, [_rows([b"stray"])], f"{prefix}-0-0")
        assert stray is not None
        with pytest.raises(IllegalStateError, match="committed batch 8, after batch 3"):
            completer.commit([stray], 3)
        assert open_transactions(bootstrap, prefix) == []
    finally:
        completer.close()
    got = read_committed(bootstrap, topic)
    assert sorted(got) == sorted([*written, b"b8"])


def test_streaming_replayed_batch_is_not_written_twice(
    spark: Any, bootstrap: str, tmp_path: Path
) -> None:
    source = create_topic(bootstrap, 2, "eos-in")
    sink = create_topic(bootstrap, 2, "eos-out")
    expected = produce_values(bootstrap, source, 200)
    checkpoint = tmp_path / "checkpoint"

    def run() -> None:
        query = (
            spark.readStream.format("aiokafkawire")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "60")
            .load()
            .selectExpr("key", "value")
            .writeStream.format("aiokafkawire")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", sink)
            .option("exactlyOnce", "true")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(240)
        assert query.exception() is None, str(query.exception())

    run()
    # As if the driver died after the sink committed the last batch, before Spark noted it:
    # Spark runs that batch again on restart.
    commits = sorted(
        (p for p in (checkpoint / "commits").iterdir() if p.name.isdigit()),
        key=lambda p: int(p.name),
    )
    assert len(commits) >= 4  # 200 records, at most 60 per micro-batch
    last = commits[-1]
    last.unlink()
    (checkpoint / "commits" / f".{last.name}.crc").unlink(missing_ok=True)
    run()
    got = read_committed(bootstrap, sink)
    assert sorted(got) == sorted(expected)
    assert open_transactions(bootstrap, "aiokafkawire-spark-") == []


def _driver(*args: str, conf: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    command = [sys.executable, DRIVER, *args]
    for item in conf:
        command += ["--conf", item]
    log = Path(args[4]).parent / f"driver-{time.monotonic_ns()}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as stderr:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ},
            start_new_session=True,
        )
    process.log = log  # type: ignore[attr-defined]
    return process


def _wait_ready(process: subprocess.Popen[str], timeout: float) -> None:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"the driver exited early ({process.wait()})")
        if line.startswith("READY"):
            return
    raise AssertionError("the driver did not start in time")


def _kill(process: subprocess.Popen[str]) -> None:
    """SIGKILL the driver and everything it started (its JVM, its Python workers)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(30)


def _finish(process: subprocess.Popen[str], timeout: float) -> str:
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise
    if process.returncode != 0:
        errors = [line for line in process.log.read_text().splitlines() if "Error" in line]  # type: ignore[attr-defined]
        raise AssertionError(f"driver exit {process.returncode}: {out}\n" + "\n".join(errors[-30:]))
    return out


def test_streaming_driver_killed_at_random_moments(bootstrap: str, tmp_path: Path) -> None:
    source = create_topic(bootstrap, 2, "eos-kill-in")
    sink = create_topic(bootstrap, 2, "eos-kill-out")
    expected = produce_values(bootstrap, source, 600)
    prefix = unique("eos-kill")
    args = ("stream", bootstrap, source, sink, str(tmp_path / "ckpt"), prefix)
    randomness = random.Random(os.environ.get("PYTEST_SEED", "23"))
    # Two rounds: each kill lands at a random moment of a running query (mid-batch, mid-commit
    # or between batches); a third round takes the same paths again at the cost of a JVM start.
    for _ in range(2):
        process = _driver(*args)
        try:
            _wait_ready(process, 600)
            time.sleep(randomness.uniform(2.0, 12.0))
        finally:
            _kill(process)
    drain = _driver("drain", *args[1:])
    _finish(drain, 900)
    assert sorted(read_committed(bootstrap, sink)) == sorted(expected)
    assert open_transactions(bootstrap, prefix) == []


def test_task_failing_on_its_first_attempt(bootstrap: str, tmp_path: Path) -> None:
    """A batch write, then a streaming drain, in one driver (one JVM start): the first attempt
    of every write task dies half-way; both outputs hold every record once."""
    source = create_topic(bootstrap, 2, "eos-retry-in")
    sinks = [create_topic(bootstrap, 2, f"eos-retry-out-{mode}") for mode in ("batch", "drain")]
    expected = produce_values(bootstrap, source, 300)
    prefixes = [unique(f"eos-retry-{mode}") for mode in ("batch", "drain")]
    drain = _driver(
        "batch+drain", bootstrap, source, ",".join(sinks), str(tmp_path / "ckpt"),
        ",".join(prefixes), "--fail-first",
    )  # fmt: skip
    _finish(drain, 900)
    for sink, prefix in zip(sinks, prefixes, strict=True):
        assert sorted(read_committed(bootstrap, sink)) == sorted(expected), sink
        assert open_transactions(bootstrap, prefix) == []


def test_batch_killed_mid_write_and_run_again(bootstrap: str, tmp_path: Path) -> None:
    source = create_topic(bootstrap, 2, "eos-batch-in")
    sink = create_topic(bootstrap, 2, "eos-batch-out")
    expected = produce_values(bootstrap, source, 300)
    prefix = unique("eos-batch")
    args = ("batch", bootstrap, source, sink, str(tmp_path / "ckpt"), prefix)
    process = _driver(*args, "--slow", "0.05")
    try:
        _wait_ready(process, 600)
        time.sleep(random.Random(7).uniform(4.0, 8.0))
    finally:
        _kill(process)
    _finish(_driver(*args), 900)
    assert sorted(read_committed(bootstrap, sink)) == sorted(expected)
    assert open_transactions(bootstrap, prefix) == []
    # A third run of the same named write writes nothing.
    _finish(_driver(*args), 900)
    assert sorted(read_committed(bootstrap, sink)) == sorted(expected)
