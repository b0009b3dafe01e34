"""The idempotent producer's ordering rules, against a scripted broker that checks sequences.

``SequenceCheckingBroker`` keeps a log per partition and applies Apache Kafka's producer-state
rules (``ProducerAppendInfo.checkSequence`` and ``ProducerStateEntry``): a leader with no state
for a producer id accepts ANY sequence as that producer's first batch; afterwards a batch must
continue the last one's sequence (a new epoch starts at 0), the last five batches are recognised
as duplicates, and anything else is OUT_OF_ORDER_SEQUENCE_NUMBER.  Requests arriving on a
connection the test declared lost are neither written nor answered, so what reaches the log, and
in which order, depends on the producer alone: no timing is involved.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections import deque
from typing import Any

from fake_broker import SILENT, FakeBroker

from aiokafkawire import errors
from aiokafkawire.producer import DeliveryHandle, Producer
from aiokafkawire.protocol.messages import InitProducerIdResponse, MetadataResponse, ProduceResponse
from aiokafkawire.protocol.messages import metadata as m_metadata
from aiokafkawire.protocol.messages import produce as m_produce
from aiokafkawire.protocol.records import iter_batches

TOPIC = "ordered"
PARTITIONS = 2
PRODUCER_ID = 7
DUPLICATES_KEPT = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
OUT_OF_ORDER = errors.OutOfOrderSequenceNumberError.code
NOT_ENOUGH_REPLICAS = errors.NotEnoughReplicasError.code
INVALID_EPOCH = errors.InvalidProducerEpochError.code

# The broker-side number of the connection a request arrived on (one task per connection).
_connection_number: contextvars.ContextVar[int] = contextvars.ContextVar("connection", default=0)


class _ProducerState:
    """What a leader remembers of one producer id on one partition."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.batches: deque[tuple[int, int, int]] = deque(maxlen=DUPLICATES_KEPT)  # seqs, offset

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


class SequenceCheckingBroker(FakeBroker):
    """One broker leading ``TOPIC``'s partitions; checks idempotent sequences as Kafka does."""

    def __init__(self) -> None:
        super().__init__(self._handle)
        self.topic_id = uuid.uuid4()
        # Per partition: the records' values in log order, with the writing producer's fields.
        self.logs: dict[int, list[tuple[int, int, int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        self.states: dict[tuple[int, int], _ProducerState] = {}
        self.epochs: dict[int, int] = {}  # producer id -> newest epoch handed out
        self.lost_connections: set[int] = set()
        # Partitions whose batches a lost connection still writes (only the answer is lost).
        self.written_when_lost: set[int] = set()
        # Per partition, error codes to answer its next batches with (nothing written).
        self.refusals: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self.produce_connection = 0  # the connection the last Produce request came on
        # (partition, base sequence): the connection that next carries this batch is lost
        # from that request on (the batch and what follows it are handled, never answered).
        self.lose_from: tuple[int, int] | None = None

    def values(self, partition: int) -> list[int]:
        """The partition's record values (send indexes) in log order."""
        return [int(value) for *_, value in self.logs[partition]]

    async def _serve(self, reader: Any, writer: Any) -> None:
        _connection_number.set(self.connections + 1)  # _serve counts this connection first
        await super()._serve(reader, writer)

    async def _handle(self, header: Any, request: Any) -> Any:
        if header.api_key == 3:
            return self._metadata()
        if header.api_key == 22:
            return self._init_producer_id(request)
        if header.api_key == 0:
            connection = _connection_number.get()
            if self.lose_from is not None and self.lose_from in _sequences(request):
                self.lost_connections.add(connection)
                self.lose_from = None
            if connection in self.lost_connections:
                # Lost with its connection: never answered, written only where the test says.
                for topic in request.topic_data:
                    for data in topic.partition_data:
                        if data.index in self.written_when_lost:
                            self._append(data.index, data.records, refusable=False)
                return SILENT
            self.produce_connection = connection
            return self._produce(request)
        raise AssertionError(f"unexpected request {request!r}")

    def _metadata(self) -> Any:
        return MetadataResponse(
            brokers=[
                m_metadata.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=self.port)
            ],
            cluster_id="fake",
            controller_id=1,
            topics=[
                m_metadata.MetadataResponseTopic(
                    name=TOPIC,
                    topic_id=self.topic_id,
                    partitions=[
                        m_metadata.MetadataResponsePartition(
                            partition_index=p, leader_id=1, replica_nodes=[1], isr_nodes=[1]
                        )
                        for p in range(PARTITIONS)
                    ],
                )
            ],
        )

    def _init_producer_id(self, request: Any) -> Any:
        # A bump (the producer names its id) or a first id: either way the id's next epoch.
        producer_id = request.producer_id if request.producer_id >= 0 else PRODUCER_ID
        epoch = self.epochs[producer_id] = self.epochs.get(producer_id, -1) + 1
        return InitProducerIdResponse(producer_id=producer_id, producer_epoch=epoch)

    def _produce(self, request: Any) -> Any:
        topics = []
        for topic in request.topic_data:
            answers = []
            for data in topic.partition_data:
                code, offset = self._append(data.index, data.records)
                answers.append(
                    m_produce.PartitionProduceResponse(
                        index=data.index, error_code=code, base_offset=offset
                    )
                )
            topics.append(
                m_produce.TopicProduceResponse(
                    name=topic.name, topic_id=topic.topic_id, partition_responses=answers
                )
            )
        return ProduceResponse(responses=topics)

    def _append(self, partition: int, records: bytes, refusable: bool = True) -> tuple[int, int]:
        if refusable and self.refusals[partition]:
            return self.refusals[partition].pop(0), -1
        (batch,) = iter_batches(records)
        first = batch.base_sequence
        last = first + batch.last_offset_delta
        key = (batch.producer_id, partition)
        state = self.states.get(key)
        if state is not None and batch.producer_epoch < state.epoch:
            return INVALID_EPOCH, -1
        if state is not None and batch.producer_epoch == state.epoch:
            for seen_first, seen_last, seen_offset in state.batches:
                if (seen_first, seen_last) == (first, last):
                    return 0, seen_offset  # a duplicate: acknowledged, not written again
            if first != state.last_sequence + 1:
                return OUT_OF_ORDER, -1
        elif state is not None and first != 0:
            return OUT_OF_ORDER, -1  # a new epoch starts at sequence 0
        # No state for this producer id here: any sequence is accepted (as Kafka does).
        if state is None or batch.producer_epoch != state.epoch:
            state = self.states[key] = _ProducerState(batch.producer_epoch)
        log = self.logs[partition]
        offset = len(log)
        for record in batch:
            log.append((batch.producer_id, batch.producer_epoch, first, record.value))
        state.batches.append((first, last, offset))
        return 0, offset


def _sequences(request: Any) -> set[tuple[int, int]]:
    """(partition, base sequence) of every batch a Produce request carries."""
    return {
        (data.index, batch.base_sequence)
        for topic in request.topic_data
        for data in topic.partition_data
        for batch in iter_batches(data.records)
    }


async def test_a_partitions_first_batch_is_not_overtaken_when_its_connection_is_cut() -> None:
    """The leader has no state for the producer on partition 0 yet, so it would take any
    sequence first: the batches after the first must wait until the first is acknowledged.
    Otherwise they overtake it on the next connection when its connection is cut, and the first
    batch, refused as out of order, ends up after them (and re-sequenced, written twice)."""
    async with SequenceCheckingBroker() as broker:
        async with Producer(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            batch_size=512,
            linger_ms=0,
            retry_backoff_ms=5,
            reconnect_backoff_ms=5,
            max_in_flight_requests_per_connection=5,
        ) as producer:
            assert producer.idempotent
            # A producer id and an open produce connection, from a record to the other partition.
            await producer.send_and_wait(TOPIC, b"-1", partition=1)
            cluster = producer._cluster
            assert cluster is not None
            connection = cluster.pool.cached("127.0.0.1", broker.port, "produce")
            assert connection is not None
            broker.lost_connections.add(broker.produce_connection)
            handles: list[DeliveryHandle] = []
            # Nothing below awaits anything that yields: no answer is read until flush().
            while not connection.in_flight:  # the first batch of partition 0 fills and is sent
                handles.append(await producer.send(TOPIC, b"%d" % len(handles), partition=0))
                assert len(handles) < 1000, "no batch was sent"
            connection.close()  # cut: that request is lost, and the producer hears it later
            for _ in range(300):  # several more batches, ready to go
                handles.append(await producer.send(TOPIC, b"%d" % len(handles), partition=0))
            await producer.flush(timeout=10)
    assert all(h.exception() is None for h in handles)
    assert max(h._batch.attempts for h in handles) >= 2, "the first batch was not retried"
    assert broker.values(0) == list(range(len(handles)))


async def test_a_partitions_first_batch_refused_is_not_overtaken_by_the_next() -> None:
    """Without any cut: the leader refuses the first batch with a retriable error (nothing is
    written).  Had the next batches been pipelined behind it, the leader, with no state for the
    producer yet, would have written them first."""
    async with SequenceCheckingBroker() as broker:
        async with Producer(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            batch_size=512,
            linger_ms=0,
            retry_backoff_ms=5,
            max_in_flight_requests_per_connection=5,
        ) as producer:
            await producer.send_and_wait(TOPIC, b"-1", partition=1)
            broker.refusals[0] = [NOT_ENOUGH_REPLICAS]
            # Several full batches in one loop turn: all ready to go at once.
            handles = [await producer.send(TOPIC, b"%d" % i, partition=0) for i in range(300)]
            await producer.flush(timeout=10)
    assert all(h.exception() is None for h in handles)
    assert broker.values(0) == list(range(len(handles)))
    assert handles[0]._batch.attempts == 2  # refused once, then written


async def test_an_epoch_bump_keeps_the_numbers_of_another_partitions_batch_maybe_written() -> None:
    """Partition 1's batch was written but its answer was lost (cut); when partition 0's state
    turns out lost and the producer takes a new epoch, partition 1's batch must be retried
    under its old epoch and sequence (a duplicate then), not renumbered under the new epoch:
    that would write it twice.  Partition 0's batches restart at sequence 0."""
    async with SequenceCheckingBroker() as broker:
        async with Producer(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            linger_ms=60_000,  # batches go when flushed: both partitions in one request
            retry_backoff_ms=5,
            reconnect_backoff_ms=5,
        ) as producer:
            for partition in (0, 1):  # the leader knows the producer on both partitions
                await producer.send_and_wait(TOPIC, b"-1", partition=partition)
            txn = producer._txn
            assert txn is not None
            epoch = txn.producer_epoch
            cluster = producer._cluster
            assert cluster is not None
            connection = cluster.pool.cached("127.0.0.1", broker.port, "produce")
            assert connection is not None
            broker.lost_connections.add(broker.produce_connection)
            broker.written_when_lost = {1}
            # The retries: partition 0's state is gone (OUT_OF_ORDER_SEQUENCE_NUMBER for the
            # sequence that comes next), partition 1's leader is short of replicas once.
            broker.refusals = {0: [OUT_OF_ORDER], 1: [NOT_ENOUGH_REPLICAS]}
            handles = {
                p: [await producer.send(TOPIC, b"%d" % i, partition=p) for i in range(10)]
                for p in (0, 1)
            }
            flushed = asyncio.create_task(producer.flush(timeout=10))
            await broker.wait_for_requests(len(broker.requests) + 1)
            connection.close()  # partition 1's batch is in the log, its answer lost
            await flushed
            assert txn.producer_epoch == epoch + 1
            for p in (0, 1):  # and the new epoch's batches follow on both partitions
                handles[p] += [
                    await producer.send(TOPIC, b"%d" % i, partition=p) for i in range(10, 15)
                ]
            await producer.flush(timeout=10)
    for partition in (0, 1):
        assert all(h.exception() is None for h in handles[partition])
        assert broker.values(partition) == [-1, *range(15)], f"partition {partition}"


async def test_a_retried_batch_out_of_the_duplicate_window_is_not_written_again() -> None:
    """The leader writes batch X but its answer is lost with its connection.  Batch L1, drained
    before the producer heard of the cut, goes out first on the next connection and is
    acknowledged; X's retry follows, and L2..L5 are pipelined behind it on a connection that
    is cut in turn (the retry a duplicate, L2..L5 written).  The leader now holds five batches
    after X and no longer recognises X as a duplicate: it answers X's next retry
    OUT_OF_ORDER_SEQUENCE_NUMBER.  The leader acknowledged L1, a later sequence of the same
    producer id and epoch, so X is in the log: the producer must count it delivered, not take a
    new epoch and write X and L2..L5 again under new numbers (found on Kafka 4.4: 258 records
    twice in 20,000)."""
    async with SequenceCheckingBroker() as broker:
        async with Producer(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            batch_size=512,
            linger_ms=60_000,  # only full batches go by themselves
            retry_backoff_ms=5,
            reconnect_backoff_ms=5,
            max_in_flight_requests_per_connection=5,
        ) as producer:
            await producer.send_and_wait(TOPIC, b"-1", partition=0)
            sender = producer._sender
            cluster = producer._cluster
            assert sender is not None and cluster is not None
            tp = next(iter(sender.accumulator.batches))
            handles: list[DeliveryHandle] = []

            async def append_until_drained(count: int) -> None:
                # Until ``count`` more batches have been drained (a send() that opens a batch
                # drains the full one at once, then gives the loop one turn).
                queue = sender.accumulator.batches[tp]
                watched = [queue[-1]] if queue and not queue[-1].closed else []
                while sum(batch.closed for batch in watched) < count:
                    handle = await producer.send(TOPIC, b"%d" % len(handles), partition=0)
                    handles.append(handle)
                    if not watched or handle._batch is not watched[-1]:
                        watched.append(handle._batch)
                    assert len(handles) < 2000, "the batches were not drained"

            first_connection = cluster.pool.cached("127.0.0.1", broker.port, "produce")
            assert first_connection is not None
            broker.lost_connections.add(broker.produce_connection)
            broker.written_when_lost = {0}
            requests = len(broker.requests)
            await append_until_drained(1)  # X: written by the leader, never answered
            first = handles[0]._batch
            await broker.wait_for_requests(requests + 1)
            first_connection.close()
            # L1, drained before the cut is heard, goes out first on the next connection.
            await append_until_drained(1)
            broker.lose_from = (0, first.base_sequence)  # X's retry: on a connection then cut
            for _ in range(2000):
                if broker.lose_from is None:
                    break
                await asyncio.sleep(0.001)
            assert broker.lose_from is None, "X was not retried"
            second_connection = cluster.pool.cached("127.0.0.1", broker.port, "produce")
            assert second_connection is not None
            requests = len(broker.requests)
            await append_until_drained(4)  # L2..L5, pipelined behind X's retry
            await broker.wait_for_requests(requests + 4)
            second_connection.close()
            await producer.flush(timeout=10)
    assert all(h.exception() is None for h in handles)
    assert first.attempts >= 3
    assert broker.values(0) == [-1, *range(len(handles))]
