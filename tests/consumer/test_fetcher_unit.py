"""Fetcher internals without a broker: fetch sessions, oversized batches, buffering, positions."""

from __future__ import annotations

from typing import Any

from aiokafkawire.consumer.fetch import FetchConfig
from aiokafkawire.consumer.fetch.buffer import FetchBuffer
from aiokafkawire.consumer.fetch.context import FetchContext
from aiokafkawire.consumer.fetch.decode import RecordDecoder, scan
from aiokafkawire.consumer.fetch.session import FetchSession
from aiokafkawire.consumer.fetch.source import BrokerSource
from aiokafkawire.consumer.subscription import SubscriptionState
from aiokafkawire.protocol.messages.fetch import PartitionData
from aiokafkawire.protocol.records import DefaultRecordBatchBuilder
from aiokafkawire.structs import TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))


def test_fetch_session_sends_only_changes_and_forgets_dropped_partitions() -> None:
    session = FetchSession()
    wanted = {A: (0, 1, -1, 100), B: (5, 1, -1, 100)}
    # No session yet: a full request.
    assert session.plan(wanted) == (wanted, [])
    session.completed(77, wanted)
    assert (session.id, session.epoch) == (77, 1)
    # Unchanged partitions are left out; moved ones are sent; dropped ones are forgotten.
    changed, forgotten = session.plan({A: (3, 1, -1, 100), C: (0, 1, -1, 100)})
    assert changed == {A: (3, 1, -1, 100), C: (0, 1, -1, 100)}
    assert forgotten == [B]
    session.completed(77, {A: (3, 1, -1, 100), C: (0, 1, -1, 100)})
    assert session.epoch == 2
    assert session.plan({A: (3, 1, -1, 100), C: (0, 1, -1, 100)}) == ({}, [])
    # The broker dropped the session (id 0): back to full requests with epoch 0.
    session.completed(0, wanted)
    assert (session.id, session.epoch) == (0, 0)
    assert session.plan(wanted) == (wanted, [])


def _batch(base_offset: int, count: int, size: int = 10) -> bytes:
    builder = DefaultRecordBatchBuilder(base_offset=base_offset, batch_size=1 << 20)
    for i in range(count):
        builder.append(1_700_000_000_000 + i, None, bytes([65 + i % 26]) * size)
    return builder.build()


class _Parts:
    """A broker source and the buffer it fills, without a cluster."""

    def __init__(self) -> None:
        self.subs = SubscriptionState("earliest")
        self.subs.assign_manually([A])
        self.subs.assignment[A].seek(0)
        config = FetchConfig(max_partition_fetch_bytes=100)
        self.buffer = FetchBuffer(self.subs, RecordDecoder(config))
        self.context = FetchContext(None, self.subs, config, self.buffer)  # type: ignore[arg-type]
        self.source = BrokerSource(0, self.context)


def _fetcher() -> tuple[_Parts, SubscriptionState]:
    parts = _Parts()
    return parts, parts.subs


def test_oversized_batch_grows_the_fetch_size_then_is_buffered() -> None:
    fetcher, subs = _fetcher()
    state = subs.assignment[A]
    whole = _batch(0, 20, size=50)
    partial = PartitionData(partition_index=0, high_watermark=20, records=whole[:100])
    assert not fetcher.source.handle_partition(A, partial, (0, -1, -1, 100), state.version, 2)
    assert state.fetch_size is not None and state.fetch_size >= 200
    assert state.fetch_position == 0  # nothing buffered: the same offset is fetched again
    complete = PartitionData(partition_index=0, high_watermark=20, records=whole)
    assert fetcher.source.handle_partition(
        A, complete, (0, -1, -1, state.fetch_size), state.version, 2
    )
    assert state.fetch_size is None and state.fetch_position == 20
    data, _ = fetcher.buffer.drain(1000)
    assert [r.offset for r in data[A]] == list(range(20))
    assert state.position == 20 and state.highwater == 20


def test_drain_hands_out_in_order_and_positions_follow() -> None:
    fetcher, subs = _fetcher()
    state = subs.assignment[A]
    first = PartitionData(partition_index=0, high_watermark=20, records=_batch(0, 10))
    assert fetcher.source.handle_partition(A, first, (0, -1, -1, 1000), state.version, 11)
    second = PartitionData(partition_index=0, high_watermark=20, records=_batch(10, 10))
    assert fetcher.source.handle_partition(A, second, (10, -1, -1, 1000), state.version, 11)
    data, _ = fetcher.buffer.drain(4)
    assert [r.offset for r in data[A]] == [0, 1, 2, 3]
    assert state.position == 4
    # Without advancing, the caller gets the end position to apply itself.
    data, ends = fetcher.buffer.drain(10, advance=False)
    assert [r.offset for r in data[A]] == list(range(4, 14))
    assert state.position == 4 and ends[A].offset == 14
    fetcher.buffer.apply_position(A, ends[A])
    assert state.position == 14
    # A seek makes buffered data stale: it is dropped, nothing is handed out.
    state.seek(2)
    data, _ = fetcher.buffer.drain(10)
    assert data == {}
    # Data fetched for an old version of the position is ignored.
    stale = PartitionData(partition_index=0, high_watermark=20, records=_batch(0, 10))
    assert not fetcher.source.handle_partition(A, stale, (0, -1, -1, 1000), state.version - 1, 11)


def test_a_stale_answer_still_tells_the_log_offsets() -> None:
    # A seek raced the first answer of a fetch session: its records are dropped, but the high
    # watermark, LSO and log start are the log's and are kept, since an incremental session
    # will not send them again until they change (an idle log would keep them unknown).
    fetcher, subs = _fetcher()
    state = subs.assignment[A]
    assert state.highwater is None
    state.seek(5)
    stale = PartitionData(
        partition_index=0,
        high_watermark=10,
        last_stable_offset=10,
        log_start_offset=0,
        records=_batch(0, 10),
    )
    assert not fetcher.source.handle_partition(A, stale, (0, -1, -1, 1000), state.version - 1, 11)
    assert (state.highwater, state.last_stable_offset, state.log_start_offset) == (10, 10, 0)
    assert state.position == 5
    data, _ = fetcher.buffer.drain(10)
    assert data == {}


def test_scan_finds_the_next_offset_and_epoch_from_the_batch_headers() -> None:
    from aiokafkawire.errors import CorruptRecordError, UnknownMagicError
    from aiokafkawire.protocol.records import RecordBatchBuilder

    def legacy(base_offset: int) -> bytes:
        builder = RecordBatchBuilder(magic=1, base_offset=base_offset)
        builder.append(1, b"k", b"v")
        return bytes(builder.build())

    data = _epoch_batch(0, 3, 1) + _epoch_batch(3, 4, 2) + _epoch_batch(7, 2, 3)
    assert (scan(data, 0).next_offset, scan(data, 0).epoch) == (9, 3)
    assert scan(data, 8).next_offset == 9
    assert scan(data, 9).next_offset == 9  # nothing at or past the fetch offset
    assert scan(data + data[:20], 0).next_offset == 9  # partial trailing batch ignored
    assert scan(data + data[:5], 0).next_offset == 9  # partial length prefix
    assert scan(data[:-1], 0).next_offset == 7
    assert scan(b"", 5).next_offset == 5 and scan(b"", 5).epoch is None
    # Out of order: the highest batch wins, with its epoch.
    reordered = scan(_epoch_batch(7, 2, 3) + _epoch_batch(0, 3, 1), 0)
    assert (reordered.next_offset, reordered.epoch) == (9, 3)
    mixed = scan(data + legacy(9), 0)
    assert (mixed.next_offset, mixed.epoch, mixed.legacy) == (10, None, True)
    assert scan(legacy(0) + _epoch_batch(1, 2, 4), 0).next_offset == 3
    assert len(scan(data, 0).batches) == 3 and not scan(data, 0).legacy
    for broken, error in (
        (data + b"\x00" * 8 + b"\x00\x00\x00\x05" + b"\x00" * 5, CorruptRecordError),
        (data + _batch(9, 1)[:16] + b"\x07" + _batch(9, 1)[17:], UnknownMagicError),
    ):
        try:
            scan(broken, 0)
        except error:
            pass
        else:
            raise AssertionError(f"{error.__name__} expected")


def _epoch_batch(base_offset: int, count: int, epoch: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        base_offset=base_offset, batch_size=1 << 20, partition_leader_epoch=epoch
    )
    for i in range(count):
        builder.append(1_700_000_000_000 + i, None, b"v%d" % (base_offset + i))
    return builder.build()


class _RecordingConnection:
    """Captures Fetch requests and answers each with an empty (session-less) response."""

    def __init__(self) -> None:
        from types import SimpleNamespace

        self.requests: list[Any] = []
        self.versions = SimpleNamespace(
            version_for=lambda key, max_version=None: (
                12 if max_version is None else min(12, max_version)
            )
        )

    async def send(self, request: Any, version: int, **_: Any) -> Any:
        from aiokafkawire.protocol.messages import FetchResponse

        self.requests.append(request)
        return FetchResponse(error_code=0, session_id=0, responses=[])


async def _sent_last_fetched_epoch(fetcher: _Parts, state: Any) -> int:
    from types import SimpleNamespace

    connection = _RecordingConnection()

    async def connect(node: int, purpose: str) -> _RecordingConnection:
        return connection

    fetcher.context.cluster = SimpleNamespace(  # type: ignore[assignment]
        metadata=SimpleNamespace(topics={}), connection=connect, request_update=lambda: None
    )
    await fetcher.source.fetch_once([(A, state)])
    [request] = connection.requests
    [topic] = request.topics
    [partition] = topic.partitions
    assert partition.fetch_offset == state.fetch_position
    return int(partition.last_fetched_epoch)


async def test_the_last_fetched_epoch_sent_is_that_of_the_fetch_position() -> None:
    # KIP-320: lastFetchedEpoch is the epoch of the batch before fetchOffset.  The fetch position
    # runs ahead of what the user consumed; sending the consumed record's epoch with a fetch
    # offset past the end of that epoch makes the broker report a divergence that is not there.
    fetcher, subs = _fetcher()
    state = subs.assignment[A]
    raw = _epoch_batch(0, 10, epoch=0) + _epoch_batch(10, 10, epoch=1)
    data = PartitionData(partition_index=0, high_watermark=20, records=raw)
    assert fetcher.source.handle_partition(A, data, (0, -1, -1, 1 << 20), state.version, 12)
    assert state.fetch_position == 20
    fetched, _ = fetcher.buffer.drain(5)  # the user is still in epoch 0
    assert [r.offset for r in fetched[A]] == [0, 1, 2, 3, 4]
    assert await _sent_last_fetched_epoch(fetcher, state) == 1


async def test_a_divergence_past_the_consumed_position_refetches_without_skipping() -> None:
    # The broker says the log diverged at offset 12, while the user has consumed up to 5 only:
    # records 5..11 are still good and must be handed out, once.
    from aiokafkawire.protocol.messages.fetch import EpochEndOffset

    fetcher, subs = _fetcher()
    state = subs.assignment[A]
    raw = _epoch_batch(0, 10, epoch=0) + _epoch_batch(10, 10, epoch=1)
    first = PartitionData(partition_index=0, high_watermark=20, records=raw)
    assert fetcher.source.handle_partition(A, first, (0, -1, -1, 1 << 20), state.version, 12)
    fetcher.buffer.drain(5)
    diverged = PartitionData(
        partition_index=0,
        high_watermark=12,
        records=b"",
        diverging_epoch=EpochEndOffset(epoch=1, end_offset=12),
    )
    assert not fetcher.source.handle_partition(A, diverged, (20, -1, 1, 1 << 20), state.version, 12)
    assert state.position == 5 and state.fetch_position == 5
    again = PartitionData(
        partition_index=0, high_watermark=12, records=raw[: len(_epoch_batch(0, 10, 0))]
    )
    assert fetcher.source.handle_partition(A, again, (5, -1, 0, 1 << 20), state.version, 12)
    fetched, _ = fetcher.buffer.drain(100)
    assert [r.offset for r in fetched[A]] == list(range(5, 10))


def test_decoding_leaves_the_garbage_collector_alone() -> None:
    # gc.disable() around decoding used to switch the collector off for every thread of the
    # process; a deserializer runs while records are decoded, so it sees the collector's state.
    import gc

    seen: list[bool] = []

    def deserialize(value: bytes | None) -> bytes | None:
        seen.append(gc.isenabled())
        return value

    subs = SubscriptionState("earliest")
    subs.assign_manually([A])
    subs.assignment[A].seek(0)
    config = FetchConfig(value_deserializer=deserialize)
    buffer = FetchBuffer(subs, RecordDecoder(config))
    source = BrokerSource(0, FetchContext(None, subs, config, buffer))  # type: ignore[arg-type]
    data = PartitionData(partition_index=0, high_watermark=3, records=_batch(0, 3))
    assert source.handle_partition(A, data, (0, -1, -1, 1000), subs.assignment[A].version, 11)
    assert gc.isenabled()
    records, _ = buffer.drain(10)
    assert [r.offset for r in records[A]] == [0, 1, 2]
    assert seen == [True, True, True]


async def test_a_failed_source_is_restarted_by_its_node_id() -> None:
    import asyncio

    from aiokafkawire.consumer.fetch import Fetcher

    subs = SubscriptionState("earliest")
    fetcher = Fetcher(None, subs, FetchConfig())  # type: ignore[arg-type]
    runs: list[int] = []
    restarted = asyncio.Event()

    class _Source:
        async def run(self) -> None:
            runs.append(7)
            restarted.set()

    fetcher._sources[7] = _Source()  # type: ignore[assignment]
    fetcher._task_failed(("fetch", 7), RuntimeError("boom"))
    await asyncio.wait_for(restarted.wait(), 5)
    assert runs == [7]
    await fetcher.close()


class _ScriptedOffsets:
    """A cluster whose one broker answers ListOffsets from a script of error codes."""

    def __init__(self, codes: list[int]) -> None:
        from types import SimpleNamespace

        self.codes = codes
        self.updates = 0
        self.metadata = SimpleNamespace(
            topics={"t": SimpleNamespace(partitions={})}, leader_for=lambda topic, p: 0
        )
        self.versions = SimpleNamespace(version_for=lambda key: 7)

    def request_update(self) -> None:
        self.updates += 1

    async def connection(self, node: int, purpose: str) -> _ScriptedOffsets:
        return self

    async def send(self, request: Any, version: int) -> Any:
        from aiokafkawire.protocol.messages.list_offsets import (
            ListOffsetsPartitionResponse,
            ListOffsetsResponse,
            ListOffsetsTopicResponse,
        )

        code = self.codes.pop(0) if self.codes else 0
        partition = ListOffsetsPartitionResponse(
            partition_index=0, error_code=code, offset=42, timestamp=-1, leader_epoch=3
        )
        return ListOffsetsResponse(
            topics=[ListOffsetsTopicResponse(name="t", partitions=[partition])]
        )


def _positions(cluster: _ScriptedOffsets, timeout_ms: int) -> Any:
    from aiokafkawire.consumer.fetch.position_lookup import PositionLookup

    subs = SubscriptionState("earliest")
    config = FetchConfig(request_timeout_ms=timeout_ms, retry_backoff_ms=10)
    buffer = FetchBuffer(subs, RecordDecoder(config))
    return PositionLookup(FetchContext(cluster, subs, config, buffer), None)  # type: ignore[arg-type]


async def test_list_offsets_retries_retriable_errors_until_the_deadline() -> None:
    from aiokafkawire.errors import (
        KafkaTimeoutError,
        NotLeaderOrFollowerError,
        TopicAuthorizationFailedError,
    )

    not_leader = NotLeaderOrFollowerError.code
    cluster = _ScriptedOffsets([not_leader, not_leader])
    found = await _positions(cluster, 5_000).list_offsets({A: -1})
    assert found == {A: (42, None, 3)}
    assert cluster.updates == 2  # metadata refreshed before each retry
    cluster = _ScriptedOffsets([not_leader] * 1000)
    try:
        await _positions(cluster, 200).list_offsets({A: -1})
    except KafkaTimeoutError as exc:
        assert "not found in time" in str(exc)
    else:
        raise AssertionError("KafkaTimeoutError expected")
    cluster = _ScriptedOffsets([TopicAuthorizationFailedError.code])
    try:
        await _positions(cluster, 5_000).list_offsets({A: -1})
    except TopicAuthorizationFailedError:
        assert cluster.updates == 0  # not retried
    else:
        raise AssertionError("TopicAuthorizationFailedError expected")
