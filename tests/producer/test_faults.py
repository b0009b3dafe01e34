"""Faults on the 3-broker librdkafka mock cluster: leader moves, broker outages, injected errors.

Every delivery handle must resolve, and every record must be in the log exactly once and in send
order per partition (read back with librdkafka).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

import pytest
from _producer_helpers import create_topic, read_back, unique_topic

from aiokafkawire import errors
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.producer import DeliveryHandle, Producer, RecordMetadata
from aiokafkawire.testing import KafkaCluster, MockCluster, TansuBroker
from aiokafkawire.testing.pytest_plugin import broker_kind_params

NOT_LEADER_OR_FOLLOWER = errors.NotLeaderOrFollowerError.code
REQUEST_TIMED_OUT = errors.RequestTimedOutError.code
PARTITIONS = 3


def _values_by_partition(read: list) -> dict[int, list[int]]:
    """The records' values (the send index) per partition, in log order.

    Log order is offset order: a reader that fetched a range again (librdkafka may after a
    leader change) delivers those offsets twice, which says nothing about the log, so each
    offset counts once (two copies of a record in the log have two offsets).
    """
    by_partition: dict[int, list[int]] = defaultdict(list)
    unique = {(record.partition, record.offset): record for record in read}
    for (partition, _), record in sorted(unique.items()):
        assert record.value is not None
        by_partition[partition].append(int(record.value))
    return by_partition


def _assert_in_send_order(by_partition: dict[int, list[int]]) -> None:
    for partition, values in by_partition.items():
        assert values == sorted(values), f"partition {partition} is out of send order"
        assert all(v % PARTITIONS == partition for v in values)


def _assert_exactly_once_in_order(read: list, count: int) -> None:
    by_partition = _values_by_partition(read)
    seen = [i for values in by_partition.values() for i in values]
    assert len(seen) == count, f"{len(seen)} records in the log for {count} sent"
    assert sorted(seen) == list(range(count)), "records lost or duplicated"
    _assert_in_send_order(by_partition)


def _assert_complete_in_order_duplicates_only_retried(
    read: list, handles: list[DeliveryHandle]
) -> int:
    """What a broker that does not check sequence numbers allows; returns the duplicates.

    librdkafka's mock appends whatever it is sent: a request it wrote but whose answer a
    ``broker_down`` cut off is written again by the retry, by any client.  So: nothing lost,
    send order kept per partition, and a record appears more than once only if its batch was
    sent more than once, at most once per attempt.  (Exactly once with cut connections is
    tested on Tansu, which checks sequence numbers.)
    """
    by_partition = _values_by_partition(read)
    _assert_in_send_order(by_partition)
    copies: dict[int, int] = defaultdict(int)
    for values in by_partition.values():
        for value in values:
            copies[value] += 1
    assert sorted(copies) == list(range(len(handles))), "records lost"
    duplicated = {value: n for value, n in copies.items() if n > 1}
    for value, n in duplicated.items():
        attempts = handles[value]._batch.attempts
        assert n <= attempts, f"record {value} is in the log {n} times, its batch sent {attempts}"
    return len(duplicated)


async def _chaos(
    cluster: MockCluster, topic: str, stop: asyncio.Event, rounds: int, progress: list[int]
) -> int:
    """Move leaders, take brokers down and up, inject Produce errors; returns rounds done.

    ``progress[0]`` counts the rounds done so far, for a sender that waits for enough of them.
    """
    done = 0
    brokers = cluster.broker_ids
    for round_no in range(rounds):
        if stop.is_set():
            break
        partition = round_no % PARTITIONS
        cluster.set_partition_leader(topic, partition, brokers[(round_no + 1) % len(brokers)])
        cluster.push_request_errors(0, [NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, 0, 6, 7])
        await asyncio.sleep(0.05)  # chaos pacing, not synchronisation
        victim = brokers[round_no % len(brokers)]
        cluster.broker_down(victim)
        await asyncio.sleep(0.1)
        cluster.broker_up(victim)
        await asyncio.sleep(0.05)
        done += 1
        progress[0] = done
    return done


async def test_idempotent_producer_survives_leader_moves_outages_and_errors(
    mock_cluster: MockCluster,
) -> None:
    at_least, at_most = 100_000, 1_000_000
    topic = unique_topic("chaos")
    mock_cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    stop = asyncio.Event()
    started = time.monotonic()
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        acks="all",
        compression="lz4",
        linger_ms=5,
        # Many small batches (the Java default size), so that sending lasts long enough for the
        # chaos to happen during it, and many requests meet it.
        batch_size=16384,
        retry_backoff_ms=20,
        request_timeout_ms=3000,
        delivery_timeout_ms=60_000,
        metadata_max_age_ms=2000,
        reconnect_backoff_ms=20,
        reconnect_backoff_max_ms=200,
        # The mock does not check sequence numbers (Tansu and Kafka do), so only one request in
        # flight per connection keeps partitions in order across retries there.
        max_in_flight_requests_per_connection=1,
    ) as producer:
        assert producer.idempotent
        progress = [0]
        chaos = asyncio.create_task(_chaos(mock_cluster, topic, stop, rounds=40, progress=progress))
        try:
            handles = []
            for i in range(at_most):
                handles.append(await producer.send(topic, b"%d" % i, partition=i % PARTITIONS))
                if i % 5000 == 4999:
                    # A bounded window of undelivered records keeps sending and chaos overlapping.
                    await handles[i - 4000]
                    if i + 1 >= at_least and progress[0] >= 3:
                        break  # sent through three rounds of chaos (however fast sending is)
            count = len(handles)
            results = await asyncio.gather(*[_resolve(h) for h in handles[-1000:]])
            await producer.flush(timeout=60)
        finally:
            stop.set()
            rounds = await chaos
    assert rounds >= 2, "the chaos hardly ran while records were sent"
    assert max(h._batch.attempts for h in handles) >= 2, "no batch needed a retry"
    failures = [h.exception() for h in handles if h.exception() is not None]
    assert not failures, failures[:3]
    assert all(r is not None for r in results)
    offsets_by_partition: dict[int, list[int]] = defaultdict(list)
    for handle in handles:
        metadata = handle.result()
        offsets_by_partition[metadata.partition].append(metadata.offset)
    for offsets in offsets_by_partition.values():
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)

    read = await read_back(mock_cluster.bootstrap_servers, topic, count, timeout=60)
    _assert_complete_in_order_duplicates_only_retried(read, handles)
    assert time.monotonic() - started < 90


async def _resolve(handle: DeliveryHandle) -> RecordMetadata:
    return await handle


async def test_injected_errors_are_retried_in_order(mock_cluster: MockCluster) -> None:
    topic = unique_topic("inject")
    mock_cluster.create_topic(topic, partitions=PARTITIONS)
    codes = [NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT] * 5
    mock_cluster.push_request_errors(0, codes)
    count = 3000
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        retry_backoff_ms=10,
        batch_size=2048,
        # One request in flight: the mock does not reject out-of-sequence batches (see above).
        max_in_flight_requests_per_connection=1,
    ) as producer:
        handles = [await producer.send(topic, b"%d" % i, partition=i % 3) for i in range(count)]
        await producer.flush(timeout=30)
    assert all(h.exception() is None for h in handles)
    assert max(h._batch.attempts for h in handles) >= 2, "no batch was retried"
    read = await read_back(mock_cluster.bootstrap_servers, topic, count)
    _assert_exactly_once_in_order(read, count)


async def test_non_idempotent_producer_keeps_order_across_retries(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("noidem")
    mock_cluster.create_topic(topic, partitions=PARTITIONS)
    mock_cluster.push_request_errors(0, [NOT_LEADER_OR_FOLLOWER, 0, REQUEST_TIMED_OUT, 0] * 3)
    count = 2000
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        acks=1,
        retry_backoff_ms=10,
        batch_size=1024,
    ) as producer:
        assert not producer.idempotent
        handles = [await producer.send(topic, b"%d" % i, partition=i % 3) for i in range(count)]
        await producer.flush(timeout=30)
    assert all(h.exception() is None for h in handles)
    read = await read_back(mock_cluster.bootstrap_servers, topic, count)
    # Injected errors are answered without writing, so nothing is duplicated here either.
    _assert_exactly_once_in_order(read, count)


async def test_out_of_order_sequence_bumps_the_epoch_and_delivers(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("oosn")
    mock_cluster.create_topic(topic, partitions=1)
    async with Producer(bootstrap_servers=mock_cluster.bootstrap_servers, retry_backoff_ms=10) as p:
        first = await p.send_and_wait(topic, b"0", partition=0)
        txn = p._txn
        assert txn is not None
        identity_before = (txn.producer_id, txn.producer_epoch)
        mock_cluster.push_request_errors(
            0, [errors.OutOfOrderSequenceNumberError.code, errors.UnknownProducerIdError.code]
        )
        handles = [await p.send(topic, b"%d" % i, partition=0) for i in range(1, 50)]
        await p.flush(timeout=20)
        assert all(h.exception() is None for h in handles)
        # A bumped epoch, or (the mock cannot bump idempotent ids) a fresh producer id.
        assert txn.producer_id >= 0
        assert (txn.producer_id, txn.producer_epoch) != identity_before
    assert first.offset == 0
    read = await read_back(mock_cluster.bootstrap_servers, topic, 50)
    assert [int(r.value) for r in read] == list(range(50))  # type: ignore[arg-type]


@pytest.fixture(params=broker_kind_params(("tansu", "kafka")))
def sequence_checking_bootstrap(request: pytest.FixtureRequest) -> str:
    """Brokers that check idempotent sequence numbers (the mock cannot bump producer epochs)."""
    fixture = "tansu_broker" if request.param == "tansu" else "kafka_cluster"
    broker: TansuBroker | KafkaCluster = request.getfixturevalue(fixture)
    return broker.bootstrap_servers


async def _cut_when_in_flight(cluster: Cluster, within: float) -> bool:
    """Close the produce connections the first moment one has requests in flight.

    ``send()`` rarely yields, so right after a cut nothing may be in flight until the loop has
    let the producer connect again: wait for that (polling, at most ``within`` seconds) instead
    of counting on the timing of a loaded machine.  Returns whether a connection was cut.
    """
    deadline = time.monotonic() + within
    while True:
        cut = False
        for broker in cluster.metadata.brokers.values():
            connection = cluster.pool.cached(broker.host, broker.port, "produce")
            if connection is not None and connection.in_flight:
                connection.close()  # the answers of the requests in flight are lost
                cut = True
        if cut or time.monotonic() >= deadline:
            return cut
        await asyncio.sleep(0.001)


async def test_cut_connections_with_five_in_flight_on_a_sequence_checking_broker(
    sequence_checking_bootstrap: str,
) -> None:
    """Tansu and Kafka check sequence numbers: with 5 requests in flight, cut connections
    make the producer resend batches that may already be written (the broker must drop them as
    duplicates) and batches behind a lost one (the broker refuses them as out of order)."""
    bootstrap = sequence_checking_bootstrap
    topic = await create_topic(bootstrap, "cut", PARTITIONS)
    count = 20_000
    cuts = 0
    async with Producer(
        bootstrap_servers=bootstrap,
        batch_size=512,  # many small batches, so that several are in flight at each cut
        linger_ms=0,
        retry_backoff_ms=10,
        reconnect_backoff_ms=10,
        max_in_flight_requests_per_connection=5,
    ) as producer:
        partitions = await producer.partitions_for(topic)
        cluster = producer._cluster
        assert cluster is not None
        handles = []
        for i in range(count):
            handles.append(await producer.send(topic, b"%d" % i, partition=i % PARTITIONS))
            if i % 1000 == 999:
                cuts += await _cut_when_in_flight(cluster, within=5.0)
        await producer.flush(timeout=60)
    assert len(partitions) >= PARTITIONS
    assert cuts >= 3, "no connection was cut with requests in flight"
    assert all(h.exception() is None for h in handles)
    assert max(h._batch.attempts for h in handles) >= 2
    read = await read_back(bootstrap, topic, count, timeout=60)
    _assert_exactly_once_in_order(read, count)


async def test_stale_leader_refreshes_metadata_and_follows_the_new_leader(
    mock_cluster: MockCluster,
) -> None:
    topic = unique_topic("moved")
    mock_cluster.create_topic(topic, partitions=1)
    mock_cluster.set_partition_leader(topic, 0, 1)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers, retry_backoff_ms=10
    ) as producer:
        assert (await producer.send_and_wait(topic, b"before", partition=0)).offset == 0
        mock_cluster.set_partition_leader(topic, 0, 2)
        mock_cluster.start_request_tracking()
        moved = await producer.send_and_wait(topic, b"after", partition=0)
        produce_brokers = [r.broker_id for r in mock_cluster.requests() if r.api_key == 0]
    assert moved.offset == 1
    # The old leader refused (NOT_LEADER_OR_FOLLOWER); after a metadata refresh the batch went
    # to the new one.
    assert produce_brokers[0] == 1 and produce_brokers[-1] == 2


@pytest.mark.parametrize("in_flight", [5, 1])
async def test_a_frozen_leader_is_left_as_soon_as_the_metadata_names_another(
    mock_cluster: MockCluster, in_flight: int
) -> None:
    """A leader that stopped answering (paused, stuck) keeps its partitions until the cluster
    moves them, which may come after the refresh that the first request timeout triggers.
    The producer keeps looking (with backoff) and sends to the new leader at once, instead of
    waiting out a second request timeout on the frozen broker for a retry sent there.

    With one request per connection, the timeout closes the connection: the retry then waits
    for a new one, whose handshake the frozen broker never answers (not a request in flight,
    the same wait)."""
    timeout_ms = 2_000
    topic = unique_topic("frozen")
    mock_cluster.create_topic(topic, partitions=1)
    mock_cluster.set_partition_leader(topic, 0, 1)
    async with Producer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        enable_idempotence=True,
        request_timeout_ms=timeout_ms,
        delivery_timeout_ms=30_000,
        retry_backoff_ms=20,
        retry_backoff_max_ms=100,
        max_in_flight_requests_per_connection=in_flight,
    ) as producer:
        assert (await producer.send_and_wait(topic, b"before", partition=0)).offset == 0
        mock_cluster.set_broker_rtt(1, 30_000)  # frozen: connected, answering nothing
        try:
            started = time.monotonic()
            handle = await producer.send(topic, b"after", partition=0)
            # The first attempt times out; the refresh it triggers still names broker 1, so
            # the retry goes there again.  The leadership moves while that retry is out.
            await asyncio.sleep(timeout_ms / 1000 + 0.5)
            assert not handle.done()
            mock_cluster.set_partition_leader(topic, 0, 2)
            moved_at = time.monotonic()
            metadata = await asyncio.wait_for(handle, 10)
            delivered = time.monotonic()
        finally:
            mock_cluster.set_broker_rtt(1, 0)
    # (The mock writes each attempt as it arrives, its RTT delays only the answers: the
    # offset is not checked.  A frozen Kafka broker writes nothing.)
    assert metadata.partition == 0 and handle._batch.attempts >= 2
    # Waiting out the retry's timeout would deliver at ~2 request timeouts after the send;
    # following the new leader takes a refresh backoff (at most 100 ms here) and a round trip.
    assert delivered - moved_at < 0.8, delivered - moved_at
    assert delivered - started < 2 * timeout_ms / 1000, delivered - started


async def test_metadata_is_asked_of_a_broker_that_answers_not_of_one_that_timed_out(
    mock_cluster: MockCluster,
) -> None:
    """A broker that left a request unanswered past its timeout is asked for metadata last
    (as the Java client's leastLoadedNode): a frozen broker costs a whole request timeout for
    each refresh asked of it, while the others can answer at once."""
    timeout_ms = 1_000
    cluster = Cluster(
        mock_cluster.bootstrap_servers, ConnectionConfig(request_timeout_ms=timeout_ms)
    )
    await cluster.start()
    try:
        brokers = list(cluster.metadata.brokers.values())
        held = [b for b in brokers if cluster.pool.cached(b.host, b.port)]
        assert held, "no metadata connection is held after the bootstrap"
        frozen = held[0]

        def only_the_frozen_one_connected() -> None:
            # Connections are preferred: without the rule the frozen broker is asked first.
            for other in brokers:
                if other.node_id != frozen.node_id:
                    cluster.pool.close_node(other.host, other.port)

        only_the_frozen_one_connected()
        mock_cluster.set_broker_rtt(frozen.node_id, 30_000)
        try:
            started = time.monotonic()
            await cluster.refresh_metadata()
            first = time.monotonic() - started
            only_the_frozen_one_connected()
            started = time.monotonic()
            await cluster.refresh_metadata()
            second = time.monotonic() - started
        finally:
            mock_cluster.set_broker_rtt(frozen.node_id, 0)
    finally:
        await cluster.close()
    assert first >= timeout_ms / 1000 * 0.9, f"the frozen broker was not asked first ({first})"
    assert second < timeout_ms / 1000 / 2, f"the frozen broker was asked again ({second:.2f}s)"


async def test_a_metadata_request_left_unanswered_is_asked_of_the_next_broker_as_well(
    mock_cluster: MockCluster,
) -> None:
    """When the broker asked first is frozen but nothing marked it yet (its request has not
    timed out), the next broker is asked too after ``retry_backoff_max_ms``: the refresh
    takes that long, not a whole request timeout."""
    cluster = Cluster(
        mock_cluster.bootstrap_servers,
        ConnectionConfig(request_timeout_ms=10_000),
        retry_backoff_ms=50,
        retry_backoff_max_ms=300,
    )
    await cluster.start()
    try:
        brokers = list(cluster.metadata.brokers.values())
        frozen = next(b for b in brokers if cluster.pool.cached(b.host, b.port))
        for other in brokers:  # connections are preferred: the frozen broker is asked first
            if other.node_id != frozen.node_id:
                cluster.pool.close_node(other.host, other.port)
        mock_cluster.set_broker_rtt(frozen.node_id, 30_000)
        try:
            started = time.monotonic()
            await cluster.refresh_metadata()
            took = time.monotonic() - started
        finally:
            mock_cluster.set_broker_rtt(frozen.node_id, 0)
    finally:
        await cluster.close()
    assert 0.3 * 0.8 <= took < 2.0, f"the refresh took {took:.2f}s"
