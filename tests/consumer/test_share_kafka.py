"""The share consumer against Apache Kafka 4.x (share groups, KIP-932).

The session's broker, whose test settings make share-group timing suit tests: locks as short as
one second may be set per group, and heartbeats (which carry assignments) every half second.
Each test uses its own topic and group; per-group configs (``share.auto.offset.reset``,
``share.record.lock.duration.ms``, ``share.delivery.count.limit``) are set through the admin
client's ``ResourceType.GROUP`` configs, as an application would.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import sys
import textwrap
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _consumer_helpers import consume_n, produce_values, wait_until

from aiokafkawire import Admin, Consumer, NewTopic, errors
from aiokafkawire.admin import ConfigResource, ResourceType
from aiokafkawire.consumer.share import (
    AcknowledgementOutcome,
    AcknowledgeType,
    ShareConsumer,
    ShareRecord,
)
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def share_cluster(kafka_cluster: KafkaCluster) -> KafkaCluster:
    """The session's Apache Kafka 4.x broker: ``KafkaCluster``'s test defaults give share groups
    test-friendly timing (0.5 s heartbeats, 6 s sessions, 1 s minimum locks)."""
    return kafka_cluster


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _setup(
    bootstrap: str, partitions: int = 1, **group_configs: str | int
) -> tuple[str, str]:
    """A new topic and a share group reading it from the earliest offset."""
    topic, group = _name("share-t"), _name("share-g")
    configs = {"share.auto.offset.reset": "earliest", **group_configs}
    async with Admin(bootstrap_servers=bootstrap) as admin:
        created = await admin.create_topics([NewTopic(topic, partitions, 1)])
        assert all(r.error is None for r in created.values()), created
        altered = await admin.alter_configs(
            {ConfigResource(ResourceType.GROUP, group): {k: str(v) for k, v in configs.items()}}
        )
        assert all(r.error is None for r in altered.values()), altered
    return topic, group


async def _poll(consumer: ShareConsumer, want: int, timeout: float = 20.0) -> list[ShareRecord]:
    """getmany() until ``want`` records arrived or ``timeout`` passed (explicit mode: no acks)."""
    out: list[ShareRecord] = []
    deadline = time.monotonic() + timeout
    while len(out) < want and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=200)).values():
            out.extend(records)
    return out


def _values(records: list[ShareRecord]) -> list[bytes]:
    return [r.value for r in records]


# ------------------------------------------------------------------ a group shares the work


async def test_three_consumers_two_partitions_each_record_accepted_once(
    share_cluster: KafkaCluster,
) -> None:
    bootstrap = share_cluster.bootstrap_servers
    total = 30_000
    topic, group = await _setup(bootstrap, partitions=2)
    outcomes: list[AcknowledgementOutcome] = []
    consumers = [
        ShareConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=f"c{i}",
            on_acknowledgement=outcomes.append,
            # At most 200 records a fetch: the work is shared in small pieces, so every member
            # gets some however fast the others are.
            max_poll_records=200,
            acquire_mode="record_limit",
        )
        for i in range(3)
    ]
    received: list[list[ShareRecord]] = [[] for _ in consumers]
    seen = Counter[bytes]()
    done = asyncio.Event()

    async def run(index: int, consumer: ShareConsumer) -> None:
        while not done.is_set():
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                received[index].extend(records)
                seen.update(_values(records))
            if len(seen) >= total:
                done.set()
        results = await consumer.commit()
        assert all(error is None for error in results.values()), results

    for consumer in consumers:
        await consumer.start()
    try:
        # More consumers than partitions: each is assigned partitions another one shares.
        assignments = [await c.wait_for_assignment(timeout=20) for c in consumers]
        assert all(assignments), assignments
        tasks = [asyncio.create_task(run(i, c)) for i, c in enumerate(consumers)]
        await asyncio.to_thread(produce_values, bootstrap, topic, 2, total)
        try:
            await asyncio.wait_for(done.wait(), 90)
        finally:
            done.set()
            await asyncio.gather(*tasks)
    finally:
        for consumer in consumers:
            await consumer.close()
    assert set(seen) == {str(i).encode() for i in range(total)}
    duplicates = {value: n for value, n in seen.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} records delivered twice"
    assert all(r.delivery_count == 1 for part in received for r in part)
    assert all(received), [len(part) for part in received]  # every consumer got work
    # The broker applied an ACCEPT for every offset, exactly once, and nothing else.
    assert [o for o in outcomes if o.error is not None] == []
    accepted = Counter(
        (o.partition.partition, offset)
        for o in outcomes
        for offset, kind in o.offsets.items()
        if kind == AcknowledgeType.ACCEPT
    )
    assert sum(accepted.values()) == total and max(accepted.values()) == 1
    assert all(kind == AcknowledgeType.ACCEPT for o in outcomes for kind in o.offsets.values())
    # And nothing is left for the group: no lag, and a late member gets no record.
    async with Admin(bootstrap_servers=bootstrap) as admin:
        offsets = await admin.list_share_group_offsets(group, [topic])
    assert [o.lag for o in offsets.values()] == [0, 0], offsets
    async with ShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group) as late:
        assert await _poll(late, 1, timeout=3) == []


# ------------------------------------------------------------------ acknowledgement types


async def test_release_redelivers_with_delivery_count_two_and_reject_archives(
    share_cluster: KafkaCluster,
) -> None:
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap)
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 4)
    outcomes: list[AcknowledgementOutcome] = []
    async with ShareConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        acknowledgement_mode="explicit",
        on_acknowledgement=outcomes.append,
    ) as consumer:
        first = await _poll(consumer, 4)
        assert _values(first) == [b"0", b"1", b"2", b"3"]
        assert [r.delivery_count for r in first] == [1, 1, 1, 1]
        kinds = ["accept", "release", "reject", "accept"]
        for record, kind in zip(first, kinds, strict=True):
            consumer.acknowledge(record, kind)
        assert await consumer.commit() == {TopicPartition(topic, 0): None}
        again = await _poll(consumer, 1)
        assert [(r.value, r.delivery_count) for r in again] == [(b"1", 2)]
        consumer.acknowledge(again[0], "accept")
        await consumer.commit()
        # The rejected record is archived: nothing more comes.
        assert await _poll(consumer, 1, timeout=2.0) == []
        assert consumer.state == "stable"
        share = consumer.metrics()["consumer"]
        assert share["records_consumed"] == 5 and share["assigned_partitions"] == 1
        assert share["records_acquired"] == 0 and share["acknowledgements_failed"] == 0
        assert (share["records_accepted"], share["records_released"]) == (3, 1)
        assert share["records_rejected"] == 1 and share["fetch_latency"]["count"] > 0
    assert consumer.state == "closed"
    assert outcomes and all(o.error is None for o in outcomes)
    acknowledged = {o: t for outcome in outcomes for o, t in outcome.offsets.items()}
    assert acknowledged == {0: 1, 1: 1, 2: 3, 3: 1}  # offset 1: release, then accept


async def test_explicit_mode_refuses_to_poll_with_records_unacknowledged(
    share_cluster: KafkaCluster,
) -> None:
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap)
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 2)
    async with ShareConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, acknowledgement_mode="explicit"
    ) as consumer:
        records = await _poll(consumer, 2)
        consumer.acknowledge(records[0])
        with pytest.raises(errors.IllegalStateError, match="not acknowledged"):
            await consumer.getmany(timeout_ms=10)
        consumer.acknowledge(records[1], "accept")
        assert await consumer.getmany(timeout_ms=10) == {}
        with pytest.raises(errors.IllegalStateError, match="not held"):
            consumer.acknowledge(records[1], "accept")


async def test_delivery_count_limit_archives_a_record(share_cluster: KafkaCluster) -> None:
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap, **{"share.delivery.count.limit": 2})
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 1)
    async with ShareConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, acknowledgement_mode="explicit"
    ) as consumer:
        counts = []
        for _ in range(2):
            [record] = await _poll(consumer, 1)
            counts.append(record.delivery_count)
            consumer.acknowledge(record, "release")
            await consumer.commit()
        assert counts == [1, 2]
        assert await _poll(consumer, 1, timeout=2.0) == []  # archived after the 2nd delivery


async def test_acknowledging_after_the_lock_expired_is_a_typed_error(
    share_cluster: KafkaCluster,
) -> None:
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap, **{"share.record.lock.duration.ms": 1000})
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 1)
    outcomes: list[AcknowledgementOutcome] = []
    async with ShareConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        acknowledgement_mode="explicit",
        on_acknowledgement=outcomes.append,
    ) as consumer:
        [record] = await _poll(consumer, 1)
        assert consumer.acquisition_lock_timeout_ms == 1000
        await asyncio.sleep(1.5)
        consumer.acknowledge(record, "accept")
        result = await consumer.commit()
        error = result[TopicPartition(topic, 0)]
        assert isinstance(error, errors.AcquisitionLockTimeoutError)
        assert isinstance(error, errors.InvalidRecordStateError)
        assert any(isinstance(o.error, errors.AcquisitionLockTimeoutError) for o in outcomes)
        # The record is handed out again.
        [again] = await _poll(consumer, 1)
        assert (again.value, again.offset) == (record.value, record.offset)
        assert again.delivery_count >= 2
        consumer.acknowledge(again, "accept")
        assert await consumer.commit() == {TopicPartition(topic, 0): None}


# ------------------------------------------------------------------ renewed locks (KIP-1222)


async def test_a_renewed_lock_keeps_a_long_job_from_the_other_members(
    share_cluster: KafkaCluster,
) -> None:
    """5 s locks; the worker renews every 2 s while it works 15 s on its record, then accepts
    it: the other member, polling all along, never gets it, nor does the worker again."""
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(
        bootstrap,
        **{"share.record.lock.duration.ms": 5000, "share.renew.acknowledge.enable": "true"},
    )
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 1)
    outcomes: list[AcknowledgementOutcome] = []
    options = {"bootstrap_servers": bootstrap, "group_id": group}
    worker = ShareConsumer(
        topic, acknowledgement_mode="explicit", on_acknowledgement=outcomes.append, **options
    )
    other = ShareConsumer(topic, acknowledgement_mode="explicit", client_id="other", **options)
    async with worker:
        [record] = await _poll(worker, 1)
        assert record.delivery_count == 1
        assert worker.acquisition_lock_timeout_ms == 5000
        with pytest.raises(errors.KafkaValueError, match="acept"):
            worker.acknowledge(record, "acept")
        async with other:
            seen_by_other: list[ShareRecord] = []
            seen_again: list[ShareRecord] = []
            stop = asyncio.Event()

            async def other_polls() -> None:
                while not stop.is_set():
                    seen_by_other.extend(await _poll(other, 1, timeout=0.5))

            poller = asyncio.create_task(other_polls())
            try:
                started = time.monotonic()
                renewals = 0
                while time.monotonic() - started < 15.0:  # the long job
                    worker.acknowledge(record, "renew")
                    renewals += 1
                    # The worker polls meanwhile: a renewed record lets the poll go ahead,
                    # and is not handed out again.
                    seen_again.extend(await _poll(worker, 1, timeout=2.0))
                worker.acknowledge(record, "accept")
                assert await worker.commit() == {TopicPartition(topic, 0): None}
                seen_again.extend(await _poll(worker, 1, timeout=2.0))
            finally:
                stop.set()
                await poller
    assert seen_by_other == [] and seen_again == []
    assert renewals >= 7
    renewed = [o for o in outcomes if AcknowledgeType.RENEW in o.offsets.values()]
    assert len(renewed) >= 7
    assert all(o.error is None for o in outcomes), outcomes
    assert outcomes[-1].offsets == {record.offset: AcknowledgeType.ACCEPT}


async def test_renewing_is_refused_where_the_group_disables_it(share_cluster: KafkaCluster) -> None:
    """Kafka 4.4 refuses RENEWs in a group with ``share.renew.acknowledge.enable=false`` (the
    default is true): an InvalidRecordStateError outcome, and the record is still held."""
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap, **{"share.renew.acknowledge.enable": "false"})
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 1)
    async with ShareConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, acknowledgement_mode="explicit"
    ) as consumer:
        [record] = await _poll(consumer, 1)
        consumer.acknowledge(record, "renew")
        result = await consumer.commit()
        assert isinstance(result[TopicPartition(topic, 0)], errors.InvalidRecordStateError)
        consumer.acknowledge(record, "accept")
        assert await consumer.commit() == {TopicPartition(topic, 0): None}


# ------------------------------------------------------------------ members that go away


async def test_records_of_a_consumer_closed_without_acks_go_to_the_others(
    share_cluster: KafkaCluster,
) -> None:
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap)
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 20)
    quitter = ShareConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, acknowledgement_mode="explicit"
    )
    await quitter.start()
    try:
        held = await _poll(quitter, 20)
        assert sorted(_values(held)) == sorted(str(i).encode() for i in range(20))
    finally:
        await quitter.close()  # no acknowledgements: the session close releases the records
    async with ShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group) as other:
        started = time.monotonic()
        redelivered = await _poll(other, 20)
        # Released at once (the lock is 30 s): redelivered long before it could expire.
        assert time.monotonic() - started < 20
    assert sorted(_values(redelivered)) == sorted(_values(held))
    assert {r.delivery_count for r in redelivered} == {2}


_HOLDER_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from aiokafkawire.consumer.share import ShareConsumer

    async def main(bootstrap, topic, group, want):
        async with ShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                 acknowledgement_mode="explicit") as consumer:
            held = 0
            while held < want:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    held += len(records)
            print("HOLDING", held, flush=True)
            await asyncio.sleep(3600)

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
    """
)


async def test_records_of_a_killed_consumer_are_redelivered_after_the_lock_timeout(
    share_cluster: KafkaCluster,
) -> None:
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap, **{"share.record.lock.duration.ms": 2000})
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 10)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _HOLDER_SCRIPT,
        bootstrap,
        topic,
        group,
        "10",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    try:
        assert holder.stdout is not None
        line = await asyncio.wait_for(holder.stdout.readline(), 60)
        assert line.startswith(b"HOLDING 10"), line
    finally:
        holder.send_signal(signal.SIGKILL)  # no session close, no leave: the locks must expire
        await asyncio.wait_for(holder.wait(), 10)
    killed_at = time.monotonic()
    async with ShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group) as other:
        redelivered = await _poll(other, 10, timeout=30)
    assert sorted(_values(redelivered)) == sorted(str(i).encode() for i in range(10))
    assert {r.delivery_count for r in redelivered} == {2}
    assert time.monotonic() - killed_at < 30


_NEVER_CLOSED_SCRIPT = textwrap.dedent(
    """
    import asyncio, logging, sys
    from aiokafkawire.consumer.share import ShareConsumer

    logging.basicConfig(level=logging.WARNING)  # a "restarting task" at exit would show

    async def main(bootstrap, topic, group):
        consumer = ShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group)
        await consumer.start()
        await consumer.getmany(timeout_ms=500)  # its loops are under way
        raise RuntimeError("boom")  # and nobody closes it

    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
    except RuntimeError:
        print("ended", flush=True)
    """
)


async def test_a_consumer_never_closed_ends_with_the_loop_and_a_resource_warning(
    share_cluster: KafkaCluster,
) -> None:
    """asyncio.run cancels its tasks at exit: none is restarted and left pending ("Task was
    destroyed but it is pending!"); the program is told with a ResourceWarning instead."""
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-W",
        "always",
        "-c",
        _NEVER_CLOSED_SCRIPT,
        bootstrap,
        topic,
        group,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    stderr = err.decode()
    assert process.returncode == 0, stderr
    assert out.decode().strip() == "ended"
    assert "Task was destroyed but it is pending" not in stderr, stderr
    assert "Exception ignored" not in stderr and "restarting" not in stderr, stderr
    assert "ResourceWarning: unclosed ShareConsumer " in stderr, stderr
    assert "Call `await consumer.close()` before dropping it" in stderr


# ------------------------------------------------------------------ the example service


async def test_work_queue_example_retries_by_release_and_rejects(
    share_cluster: KafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = REPO_ROOT / "examples" / "work_queue.py"
    spec = importlib.util.spec_from_file_location("work_queue", path)
    assert spec is not None and spec.loader is not None
    work_queue = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "work_queue", work_queue)  # its dataclass looks itself up
    spec.loader.exec_module(work_queue)
    bootstrap = share_cluster.bootstrap_servers
    topic, group = _name("jobs"), _name("workers")
    await work_queue.prepare(bootstrap, topic, group, from_beginning=True)
    await work_queue.enqueue(bootstrap, topic, 50)
    stop = asyncio.Event()
    tally = work_queue.Tally()
    service = asyncio.create_task(
        work_queue.run_service(bootstrap, topic, group, workers=3, stop=stop, tally=tally)
    )
    try:
        await wait_until(lambda: len(tally.done) + len(tally.rejected) >= 50, timeout=60)
    finally:
        stop.set()
        await service
    assert sorted(job for job, _ in tally.done) == sorted(str(i) for i in range(50) if i % 25 != 24)
    assert sorted(tally.rejected) == [("24", 1), ("49", 1)]
    assert sorted(tally.retried) == [("19", 1), ("29", 1), ("39", 1), ("9", 1)]
    assert {count for job, count in tally.done if job in {"9", "19", "29", "39"}} == {2}


# ------------------------------------------------------------------ the command line


async def test_cli_consumes_from_a_share_group(share_cluster: KafkaCluster) -> None:
    bootstrap = share_cluster.bootstrap_servers
    topic, group = _name("cli-share"), _name("cli-share-g")
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 2, 1)])
    await asyncio.to_thread(produce_values, bootstrap, topic, 2, 20)
    command = [sys.executable, "-m", "aiokafkawire", "consume", topic, "-b", bootstrap]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

    async def run(*args: str) -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            *command,
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()

    # Released records come back: the second run (accepting) gets all 20, those 5 included.
    code, out, err = await run(
        "--share-group", group, "--from", "beginning", "-n", "5", "--ack", "release"
    )
    assert code == 0, err
    assert len(out.split()) == 5
    code, out, err = await run("--share-group", group, "-n", "20", "-o", "json")
    assert code == 0, err
    printed = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["value"] for r in printed) == sorted(str(i) for i in range(20))
    assert "acknowledged: accept" in err
    code, _, err = await run("--share-group", group, "--group", "g", "-n", "1")
    assert code != 0 and "not both" in err


# ------------------------------------------------------------------ with other clients


def _confluent_share_consumer_available() -> bool:
    try:
        import confluent_kafka
    except ImportError:
        return False
    return hasattr(confluent_kafka, "ShareConsumer")


@pytest.mark.skipif(
    not _confluent_share_consumer_available(), reason="confluent-kafka has no ShareConsumer"
)
async def test_mixed_group_with_confluent_kafka_share_consumers(
    share_cluster: KafkaCluster,
) -> None:
    from confluent_kafka import ShareConsumer as ConfluentShareConsumer

    bootstrap = share_cluster.bootstrap_servers
    total = 6_000
    topic, group = await _setup(bootstrap, partitions=2)
    # record_limit: each of our fetches acquires at most max_poll_records, so a fast member of
    # ours cannot take everything in one fetch before librdkafka's members poll.
    ours = [
        ShareConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            acquire_mode="record_limit",
            max_poll_records=100,
        )
        for _ in range(2)
    ]
    theirs: list[list[bytes]] = [[], []]
    stop = threading.Event()
    problems: list[str] = []

    def confluent_member(index: int) -> None:
        consumer = ConfluentShareConsumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"ck{index}"}
        )
        try:
            consumer.subscribe([topic])
            while not stop.is_set():
                for message in consumer.poll(0.2) or []:
                    if message.error() is not None:
                        problems.append(str(message.error()))
                    else:
                        theirs[index].append(message.value())
            consumer.commit_sync()
        finally:
            consumer.close()

    threads = [threading.Thread(target=confluent_member, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    ours_received: list[list[bytes]] = [[], []]
    try:
        for consumer in ours:
            await consumer.start()
        await asyncio.gather(*(c.wait_for_assignment(timeout=20) for c in ours))
        # Produce only once librdkafka's two members have joined too (bounded: 60 s).
        async with Admin(bootstrap_servers=bootstrap) as admin:
            members = 0
            for _ in range(300):
                described = await admin.describe_share_groups([group], raise_on_error=False)
                members = len(described[group].members)
                if members >= 4:
                    break
                await asyncio.sleep(0.2)
        assert members >= 4, f"only {members} members joined the share group"
        await asyncio.to_thread(produce_values, bootstrap, topic, 2, total)

        def count() -> int:
            return sum(map(len, ours_received)) + sum(map(len, theirs))

        async def run(index: int, consumer: ShareConsumer) -> None:
            deadline = time.monotonic() + 60
            while count() < total and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    ours_received[index].extend(_values(records))
            await consumer.commit()

        await asyncio.gather(*(run(i, c) for i, c in enumerate(ours)))
    finally:
        stop.set()
        await asyncio.to_thread(lambda: [t.join(30) for t in threads])
        for consumer in ours:
            await consumer.close()
    assert not problems, problems[:5]
    everything = Counter(v for part in [*ours_received, *theirs] for v in part)
    assert set(everything) == {str(i).encode() for i in range(total)}
    assert max(everything.values()) == 1, "a record was processed twice"
    # The group really was mixed (4 members were seen above). How the broker spreads records
    # between them depends on who fetches first, so the split itself is not asserted: one full
    # run gave every record to one side.
    print(  # the split, for the log
        "mixed group split:",
        [len(p) for p in ours_received],
        "ours,",
        [len(p) for p in theirs],
        "confluent-kafka",
    )


async def test_a_broker_without_share_groups_is_refused_with_a_clear_error(
    kafka_cluster_39: KafkaCluster,
) -> None:
    consumer = ShareConsumer(
        "any", bootstrap_servers=kafka_cluster_39.bootstrap_servers, group_id="g"
    )
    with pytest.raises(errors.ShareGroupsUnsupportedError, match=r"share\.version") as info:
        await consumer.start()
    assert isinstance(info.value, errors.UnsupportedVersionForBrokerError)
    await consumer.close()


async def test_a_failed_start_stops_everything_it_started(
    share_cluster: KafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """start() fails after its loops are running (here: joining the group): no task of the
    consumer outlives it, its connections are closed, and a later start() works."""
    from aiokafkawire.consumer.share import membership as share_membership

    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap)
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 1)
    before = asyncio.all_tasks()
    consumer = ShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group)
    clusters = []
    build = consumer._common.build_cluster

    def recording_build() -> Any:
        clusters.append(build())
        return clusters[-1]

    monkeypatch.setattr(consumer._common, "build_cluster", recording_build)
    real_subscribe = share_membership.ShareMembership.subscribe

    def failing_subscribe(self: Any, topics: Any) -> None:
        raise errors.KafkaError("joining failed")

    monkeypatch.setattr(share_membership.ShareMembership, "subscribe", failing_subscribe)
    with pytest.raises(errors.KafkaError, match="joining failed"):
        await consumer.start()
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()
    [cluster] = clusters
    assert cluster._closed
    assert consumer.member_id is None and consumer.assignment() == set()
    with pytest.raises(errors.IllegalStateError, match="not started"):
        await consumer.getmany()
    monkeypatch.setattr(share_membership.ShareMembership, "subscribe", real_subscribe)
    async with consumer:
        assert _values(await _poll(consumer, 1)) == [b"0"]


# ------------------------------------------------------------------ dead-letter topics (KIP-1191)


async def test_rejected_records_go_to_the_groups_dead_letter_topic(
    share_cluster: KafkaCluster,
) -> None:
    """Kafka 4.4 writes a share group's rejected records to its dead-letter topic, set with the
    admin client: the group's ``errors.deadletterqueue.*`` configs and the topic's
    ``errors.deadletterqueue.group.enable`` (names must start with ``dlq.`` by default)."""
    bootstrap = share_cluster.bootstrap_servers
    dlq = _name("dlq.share")
    async with Admin(bootstrap_servers=bootstrap) as admin:
        created = await admin.create_topics(
            [NewTopic(dlq, 1, 1, configs={"errors.deadletterqueue.group.enable": "true"})]
        )
        assert created[dlq].error is None
    topic, group = await _setup(
        bootstrap,
        **{
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.copy.record.enable": "true",
        },
    )
    async with Admin(bootstrap_servers=bootstrap) as admin:
        resource = ConfigResource(ResourceType.GROUP, group)
        for _ in range(50):  # the broker learns group configs from the controller, soon
            entries = (await admin.describe_configs([resource]))[resource].entries
            if entries["errors.deadletterqueue.topic.name"].value == dlq:
                break
            await asyncio.sleep(0.1)
        assert entries["errors.deadletterqueue.topic.name"].value == dlq
        assert entries["errors.deadletterqueue.copy.record.enable"].value == "true"
    await asyncio.to_thread(produce_values, bootstrap, topic, 1, 2)
    async with ShareConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, acknowledgement_mode="explicit"
    ) as consumer:
        first, second = await _poll(consumer, 2)
        consumer.acknowledge(first, "reject")
        consumer.acknowledge(second, "accept")
        assert await consumer.commit() == {TopicPartition(topic, 0): None}
    async with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as reader:
        reader.assign([TopicPartition(dlq, 0)])
        [dead] = await consume_n(reader, 1, timeout=30.0)
    assert dead.value == first.value == b"0"
    headers = dict(dead.headers)
    assert headers["__dlq.errors.group"] == group.encode()
    assert headers["__dlq.errors.topic"] == topic.encode()
    assert headers["__dlq.errors.partition"] is not None
    assert headers["__dlq.errors.offset"] is not None


# ------------------------------------------------------------------ administration


async def test_admin_lists_describes_and_moves_share_group_offsets(
    share_cluster: KafkaCluster,
) -> None:
    bootstrap = share_cluster.bootstrap_servers
    topic, group = await _setup(bootstrap, partitions=2)
    await asyncio.to_thread(produce_values, bootstrap, topic, 2, 10)
    async with Admin(bootstrap_servers=bootstrap) as admin:
        async with ShareConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, client_id="described"
        ) as consumer:
            assert len(await _poll(consumer, 10)) == 10
            await consumer.commit()
            listed = {g.group_id: g for g in await admin.list_share_groups()}
            assert group in listed
            described = (await admin.describe_share_groups([group]))[group]
            assert described.error is None and described.state == "Stable"
            [member] = described.members
            assert member.member_id == consumer.member_id
            assert member.client_id == "described"
            assert member.subscribed_topics == (topic,)
            assert member.assignment == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
            offsets = await admin.list_share_group_offsets(group)
            # The start offset trails the acknowledgements (the broker moves it lazily); the
            # lag counts what is not yet acknowledged.
            assert set(offsets) == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
            assert all(0 <= o.start_offset <= 5 and o.error is None for o in offsets.values())
            assert [o.lag for o in offsets.values()] == [0, 0]
            # Offsets can only move while the group is empty.
            busy = await admin.alter_share_group_offsets(
                group, {TopicPartition(topic, 0): 0}, raise_on_error=False
            )
            assert isinstance(busy[TopicPartition(topic, 0)], errors.KafkaError)
            with pytest.raises(errors.AdminOperationError):
                await admin.alter_share_group_offsets(group, {TopicPartition(topic, 0): 0})
        moved = await admin.alter_share_group_offsets(group, {TopicPartition(topic, 0): 2})
        assert moved == {TopicPartition(topic, 0): None}
        offsets = await admin.list_share_group_offsets(group, [topic])
        assert offsets[TopicPartition(topic, 0)].start_offset == 2
        async with ShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group) as consumer:
            again = await _poll(consumer, 3)
            assert sorted(r.offset for r in again) == [2, 3, 4]
        deleted = await admin.delete_share_group_offsets(group, [topic])
        assert deleted == {topic: None}
        assert await admin.list_share_group_offsets(group) == {}
        forgotten = await admin.list_share_group_offsets(group, [topic])
        assert {o.start_offset for o in forgotten.values()} == {-1}
        gone = await admin.delete_groups([group])
        assert gone[group].error is None
        assert group not in {g.group_id for g in await admin.list_share_groups()}


async def test_unknown_share_group_is_described_with_an_error(share_cluster: KafkaCluster) -> None:
    async with Admin(bootstrap_servers=share_cluster.bootstrap_servers) as admin:
        described = await admin.describe_share_groups(["no-such-share-group"], raise_on_error=False)
        assert isinstance(described["no-such-share-group"].error, errors.GroupIdNotFoundError)
        with pytest.raises(errors.AdminOperationError):
            await admin.describe_share_groups(["no-such-share-group"])
