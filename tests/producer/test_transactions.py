"""Transactions: commit/abort markers, read_committed visibility, offsets, fencing.

Neither embedded broker filters aborted records for ``read_committed`` consumers (both write the
commit/abort markers but return no aborted-transaction list in Fetch), so on them the outcome is
checked on the raw log: every data batch is transactional and is followed by the right marker.
Against an external Kafka (``AIOKAFKAWIRE_BOOTSTRAP``) a ``read_committed`` librdkafka consumer
checks visibility directly.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

import pytest
from _producer_helpers import ck, create_topic, fetch_raw_batches, read_back, unique_topic

from aiokafkawire import errors
from aiokafkawire.producer import OffsetAndMetadata, Producer
from aiokafkawire.protocol.records import ControlRecordType
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import MockCluster


def _txn_id() -> str:
    return f"txn-{uuid.uuid4().hex[:10]}"


def _log_outline(batches: list) -> list[tuple[str, object]]:
    """The partition log as ("data", [values]) and ("marker", COMMIT/ABORT) entries."""
    outline: list[tuple[str, object]] = []
    for batch in batches:
        if batch.is_control:
            outline.append(("marker", next(iter(batch)).control_type))
        else:
            assert batch.is_transactional
            values = [r.value for r in batch]
            if outline and outline[-1][0] == "data":
                outline[-1] = ("data", outline[-1][1] + values)  # type: ignore[operator]
            else:
                outline.append(("data", values))
    return outline


async def _settled_outline(bootstrap: str, topic: str) -> list[tuple[str, object]]:
    """The partition-0 outline once every transaction in it has its marker.

    EndTxn returns once the coordinator has logged the decision; it writes the markers to the
    partitions afterwards (KIP-98), so a read right after a commit may not see the last one yet.
    """
    outline: list[tuple[str, object]] = []
    for _ in range(100):  # 10 s at most
        outline = _log_outline(await fetch_raw_batches(bootstrap, topic, 0))
        if outline and outline[-1][0] == "marker":
            return outline
        await asyncio.sleep(0.1)
    return outline


async def test_committed_and_aborted_transactions(kafka_bootstrap: str) -> None:
    topic = unique_topic("txn")
    async with Producer(
        bootstrap_servers=kafka_bootstrap,
        transactional_id=_txn_id(),
        allow_auto_create_topics=True,
    ) as producer:
        await producer.partitions_for(topic)
        with pytest.raises(errors.IllegalStateError, match="begin_transaction"):
            await producer.send(topic, b"outside", partition=0)

        await producer.begin_transaction()
        aborted = [await producer.send(topic, b"aborted-%d" % i, partition=0) for i in range(5)]
        await producer.flush()  # really written before the abort
        assert all(h.exception() is None for h in aborted)
        await producer.abort_transaction()

        async with producer.transaction():
            committed = [
                await producer.send(topic, b"committed-%d" % i, partition=0) for i in range(5)
            ]

        with pytest.raises(RuntimeError, match="boom"):
            async with producer.transaction():
                await producer.send(topic, b"dropped", partition=0)
                raise RuntimeError("boom")
    assert [(await h).offset for h in committed] == list(range(6, 11))

    outline = await _settled_outline(kafka_bootstrap, topic)
    assert outline[:4] == [
        ("data", [b"aborted-%d" % i for i in range(5)]),
        ("marker", ControlRecordType.ABORT),
        ("data", [b"committed-%d" % i for i in range(5)]),
        ("marker", ControlRecordType.COMMIT),
    ]
    # The record of the failed block was either never sent or is followed by an abort marker.
    assert outline[4:] in ([], [("data", [b"dropped"]), ("marker", ControlRecordType.ABORT)])

    if getattr(kafka_bootstrap, "kind", "") == "external":
        read = await read_back(kafka_bootstrap, topic, 5, isolation_level="read_committed")
        assert [r.value for r in read] == [b"committed-%d" % i for i in range(5)]


async def test_second_producer_with_same_id_fences_the_first(kafka_bootstrap: str) -> None:
    if getattr(kafka_bootstrap, "kind", "") == "mock":
        pytest.skip("librdkafka's mock does not check producer epochs, so it never fences")
    topic = unique_topic("fence")
    txn_id = _txn_id()
    common: dict[str, Any] = {
        "bootstrap_servers": kafka_bootstrap,
        "allow_auto_create_topics": True,
    }
    async with Producer(transactional_id=txn_id, **common) as first:
        await first.partitions_for(topic)
        async with first.transaction():
            await first.send(topic, b"first", partition=0)
        async with Producer(transactional_id=txn_id, **common) as second:
            await first.begin_transaction()
            await first.send(topic, b"zombie", partition=0)
            with pytest.raises(
                (errors.ProducerFencedClientError, errors.IllegalStateError)
            ) as info:
                await first.commit_transaction()
            fenced = info.value
            if isinstance(fenced, errors.IllegalStateError):
                assert isinstance(fenced.__cause__, errors.ProducerFencedClientError)
            with pytest.raises(errors.ProducerFencedClientError):
                await first.begin_transaction()
            async with second.transaction():
                await second.send(topic, b"second", partition=0)
    outline = await _settled_outline(kafka_bootstrap, topic)
    committed = [
        value
        for (kind, values), nxt in itertools.pairwise(outline)
        if kind == "data" and nxt == ("marker", ControlRecordType.COMMIT)
        for value in values  # type: ignore[attr-defined]
    ]
    assert committed == [b"first", b"second"]


async def test_send_offsets_to_transaction_commits_group_offsets(kafka_bootstrap: str) -> None:
    if getattr(kafka_bootstrap, "kind", "") == "mock":
        pytest.skip("librdkafka's mock accepts TxnOffsetCommit but never applies the offsets")
    # Two partitions on every broker: Apache Kafka refuses offsets for a partition that does
    # not exist (UNKNOWN_TOPIC_OR_PARTITION), and auto-creates one partition only.
    topic = await create_topic(kafka_bootstrap, "offsets", 2)
    group = f"group-{uuid.uuid4().hex[:8]}"
    async with Producer(
        bootstrap_servers=kafka_bootstrap,
        transactional_id=_txn_id(),
    ) as producer:
        await producer.partitions_for(topic)
        async with producer.transaction():
            await producer.send(topic, b"out", partition=0)
            await producer.send_offsets_to_transaction(
                {TopicPartition(topic, 0): 42, TopicPartition(topic, 1): OffsetAndMetadata(7)},
                group,
            )

    def committed_offsets() -> dict[int, int]:
        consumer = ck.Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
        try:
            parts = consumer.committed(
                [ck.TopicPartition(topic, 0), ck.TopicPartition(topic, 1)], timeout=10
            )
            return {p.partition: p.offset for p in parts}
        finally:
            consumer.close()

    assert await asyncio.to_thread(committed_offsets) == {0: 42, 1: 7}


async def test_failed_record_aborts_the_transaction_and_the_next_one_works(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("txnfail")
    mock_cluster.create_topic(topic, partitions=1)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id=_txn_id()
    ) as producer:
        await producer.partitions_for(topic)
        mock_cluster.push_request_errors(0, [errors.InvalidRecordError.code])
        decided: list[bool] = []
        with pytest.raises(errors.IllegalStateError, match="abort") as info:
            async with producer.transaction():
                handle = await producer.send(topic, b"refused", partition=0)
                handle.add_done_callback(lambda h: decided.append(h.exception() is not None))
        assert isinstance(info.value.__cause__, errors.InvalidRecordError)
        assert decided == [True]
        async with producer.transaction():
            committed = await producer.send(topic, b"accepted", partition=0)
    assert (await committed).offset >= 0
    outline = _log_outline(await fetch_raw_batches(mock_cluster.bootstrap_servers, topic, 0))
    assert outline[-2:] == [("data", [b"accepted"]), ("marker", ControlRecordType.COMMIT)]
    assert b"refused" not in [v for kind, values in outline if kind == "data" for v in values]  # type: ignore[attr-defined]


async def test_records_still_queued_at_abort_fail_with_transaction_aborted(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("txnqueued")
    mock_cluster.create_topic(topic, partitions=1)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        transactional_id=_txn_id(),
        linger_ms=60_000,  # nothing leaves the accumulator before the abort
    ) as producer:
        await producer.partitions_for(topic)
        await producer.begin_transaction()
        handle = await producer.send(topic, b"never-sent", partition=0)
        await producer.abort_transaction()
        with pytest.raises(errors.TransactionAbortedError):
            await handle


async def test_txn_offset_commit_retries_a_moved_group_coordinator_with_its_own_error(
    mock_cluster: MockCluster,
) -> None:
    """A coordinator error of TxnOffsetCommit is retried as the error table says (after the
    group's coordinator is looked up again), and the error given up on is the broker's own."""
    topic = unique_topic("txnoffsets")
    mock_cluster.create_topic(topic, partitions=1)
    txn_offset_commit = 28
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        transactional_id=_txn_id(),
        request_timeout_ms=1500,
        retry_backoff_ms=10,
    ) as producer:
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"x", partition=0)
        offsets: dict[TopicPartition, int | OffsetAndMetadata] = {TopicPartition(topic, 0): 1}
        # Twice NOT_COORDINATOR, then accepted: the offsets are committed with the transaction.
        mock_cluster.push_request_errors(txn_offset_commit, [errors.NotCoordinatorError.code] * 2)
        await producer.send_offsets_to_transaction(offsets, "group-a")
        # Always NOT_COORDINATOR: given up at request_timeout_ms, the broker's error as cause.
        mock_cluster.push_request_errors(txn_offset_commit, [errors.NotCoordinatorError.code] * 500)
        try:
            with pytest.raises(errors.KafkaTimeoutError, match="TxnOffsetCommit") as info:
                await producer.send_offsets_to_transaction(offsets, "group-a")
        finally:
            mock_cluster.clear_request_errors(txn_offset_commit)
        assert isinstance(info.value.__cause__, errors.NotCoordinatorError)
        await producer.abort_transaction()


async def test_prepare_transaction_delivers_and_names_the_open_transaction(
    mock_cluster: MockCluster,
) -> None:
    # KIP-939's prepareTransaction: the records are delivered, the transaction stays open and
    # is named for whoever ends it; with a failed record only an abort is possible.
    topic = unique_topic("txnprepare")
    mock_cluster.create_topic(topic, partitions=2)
    transactional_id = _txn_id()
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id=transactional_id
    ) as producer:
        await producer.partitions_for(topic)
        with pytest.raises(errors.IllegalStateError, match="no transaction to prepare"):
            await producer.prepare_transaction()
        await producer.begin_transaction()
        handles = [await producer.send(topic, b"v", partition=p) for p in (1, 0)]
        prepared = await producer.prepare_transaction()
        assert all(handle.done() for handle in handles)
        assert prepared.transactional_id == transactional_id
        assert prepared.producer_id >= 0 and prepared.producer_epoch >= 0
        assert prepared.partitions == (TopicPartition(topic, 0), TopicPartition(topic, 1))
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id=_txn_id()
    ) as producer:
        await producer.partitions_for(topic)
        await producer.begin_transaction()
        mock_cluster.push_request_errors(0, [errors.InvalidRecordError.code])
        await producer.send(topic, b"refused", partition=0)
        with pytest.raises(errors.IllegalStateError, match="cannot prepare, abort it") as info:
            await producer.prepare_transaction()
        assert isinstance(info.value.__cause__, errors.InvalidRecordError)
        await producer.abort_transaction()
        await producer.begin_transaction()  # ready for the next one
        await producer.abort_transaction()
