"""``aiokafka.consumer.consumer``: ``AIOKafkaConsumer`` on aiokafkawire's :class:`Consumer`."""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from aiokafkawire import errors
from aiokafkawire.compat.aiokafka._bootstrap import start_client
from aiokafkawire.compat.aiokafka._options import connection_options
from aiokafkawire.compat.aiokafka.consumer._records import compat_record, compat_records
from aiokafkawire.compat.aiokafka.coordinator.assignors.abstract import native_assignor
from aiokafkawire.compat.aiokafka.coordinator.assignors.roundrobin import (
    RoundRobinPartitionAssignor,
)
from aiokafkawire.compat.aiokafka.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
)
from aiokafkawire.consumer import Consumer
from aiokafkawire.consumer.consumer import _DEFINED_ANEXT, _DEFINED_GETONE
from aiokafkawire.structs import OffsetAndMetadata as NativeOffsetAndMetadata
from aiokafkawire.structs import TopicPartition

__all__ = ["AIOKafkaConsumer"]

# aiokafka's max_poll_records=None: getmany hands out everything buffered.
_NO_RECORD_CAP = 2**31 - 1
Deserializer = Callable[[bytes], Any]


class _SubscriptionView:
    """``consumer._subscription`` as frameworks read it (``.topics``)."""

    def __init__(self, consumer: Consumer) -> None:
        self._consumer = consumer

    @property
    def topics(self) -> set[str]:
        return self._consumer.subscription()


class _CoordinatorView:
    """``consumer._coordinator`` as frameworks read it (``.member_id``)."""

    def __init__(self, consumer: Consumer) -> None:
        self._consumer = consumer

    @property
    def member_id(self) -> str:
        try:
            return self._consumer.group_metadata().member_id
        except errors.KafkaError:
            return ""


class AIOKafkaConsumer:  # long: aiokafka's whole consumer API, each method a thin delegation
    """aiokafka's consumer, with aiokafka's arguments and defaults, on aiokafkawire's engine.

    Without ``group_id`` the topics given (or subscribed) are read whole, every partition, with
    no group and no commits, as aiokafka does.  ``subscribe``/``assign`` may come before
    :meth:`start`.
    """

    def __init__(  # long: aiokafka's signature, one line per option
        self,
        *topics: str,
        loop: Any = None,
        bootstrap_servers: str | list[str] = "localhost",
        client_id: str = "aiokafka-0.14.0",
        group_id: str | None = None,
        group_instance_id: str | None = None,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52428800,
        fetch_min_bytes: int = 1,
        max_partition_fetch_bytes: int = 1 * 1024 * 1024,
        request_timeout_ms: int = 40 * 1000,
        retry_backoff_ms: int = 100,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        check_crcs: bool = True,
        metadata_max_age_ms: int = 5 * 60 * 1000,
        partition_assignment_strategy: Sequence[Any] = (RoundRobinPartitionAssignor,),
        max_poll_interval_ms: int = 300000,
        rebalance_timeout_ms: int | None = None,
        session_timeout_ms: int = 10000,
        heartbeat_interval_ms: int = 3000,
        consumer_timeout_ms: int = 200,
        max_poll_records: int | None = None,
        ssl_context: ssl.SSLContext | None = None,
        security_protocol: str = "PLAINTEXT",
        api_version: str | None = None,
        exclude_internal_topics: bool = True,
        connections_max_idle_ms: int = 540000,
        isolation_level: str = "read_uncommitted",
        sasl_mechanism: str = "PLAIN",
        sasl_plain_password: str | None = None,
        sasl_plain_username: str | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        sasl_oauth_token_provider: Any = None,
        client_rack: str | None = None,
    ) -> None:
        del consumer_timeout_ms, exclude_internal_topics  # see the migration guide
        if max_poll_records is not None and (
            not isinstance(max_poll_records, int) or max_poll_records < 1
        ):
            raise errors.ConfigError("max_poll_records should be positive integer")
        common = connection_options(locals())
        self._consumer = Consumer(
            group_id=group_id,
            group_instance_id=group_instance_id,
            partition_assignment_strategy=[
                native_assignor(strategy) for strategy in partition_assignment_strategy
            ],
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            max_poll_interval_ms=max_poll_interval_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            auto_offset_reset=auto_offset_reset,
            enable_auto_commit=enable_auto_commit,
            auto_commit_interval_ms=auto_commit_interval_ms,
            isolation_level=isolation_level,
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            max_poll_records=max_poll_records or _NO_RECORD_CAP,
            check_crcs=check_crcs,
            client_rack=client_rack,
            **common,
        )
        # A dropped client's warning names what the user made, and how to stop it.
        self._consumer._dropped_as = ("AIOKafkaConsumer", "consumer.stop()")
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self._group_id = group_id
        self._client_id = client_id
        self._subscription = _SubscriptionView(self._consumer)
        self._coordinator = _CoordinatorView(self._consumer)
        self._pending_subscription: tuple[Any, ...] | None = None
        self._pending_assignment: list[TopicPartition] | None = None
        self._running = False
        self._closed = False
        if topics:
            self.subscribe(topics=list(topics))

    @property
    def native(self) -> Consumer:
        """The aiokafkawire :class:`~aiokafkawire.Consumer` doing the work."""
        return self._consumer

    def __repr__(self) -> str:
        return f"<AIOKafkaConsumer group_id={self._group_id!r} on {self._consumer!r}>"

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Connect, then join the group or take the assignment given before."""
        await start_client(self._consumer.start())
        self._running = True
        pending_sub, self._pending_subscription = self._pending_subscription, None
        pending_assign, self._pending_assignment = self._pending_assignment, None
        try:
            if pending_sub is not None:
                topics, pattern, listener = pending_sub
                self._consumer.subscribe(topics, pattern=pattern, listener=listener)
            elif pending_assign is not None:
                self._consumer.assign(pending_assign)
        except BaseException:
            self._running = False
            await self._consumer.close()
            raise

    async def stop(self) -> None:
        """Commit (with auto-commit), leave the group and close."""
        if self._closed:
            return
        self._closed = True
        self._running = False
        await self._consumer.close()

    async def __aenter__(self) -> AIOKafkaConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ subscription

    def subscribe(
        self,
        topics: Iterable[str] = (),
        pattern: str | None = None,
        listener: Any = None,
    ) -> None:
        """Subscribe to ``topics`` or a regex ``pattern`` (before or after :meth:`start`)."""
        if isinstance(topics, str):
            topics = [topics]
        topics = list(topics)
        if not (topics or pattern) or (topics and pattern):
            raise errors.IllegalStateError(
                "You should provide either `topics` or `pattern`, but not both"
            )
        if listener is not None and not all(
            callable(getattr(listener, name, None))
            for name in ("on_partitions_revoked", "on_partitions_assigned")
        ):
            raise errors.KafkaTypeError(
                "listener should be an instance of ConsumerRebalanceListener"
            )
        compiled = re.compile(pattern) if pattern is not None else None
        if not self._consumer_running():
            self._pending_assignment = None
            self._pending_subscription = (topics, compiled, listener)
            return
        self._consumer.subscribe(topics, pattern=compiled, listener=listener)

    def _consumer_running(self) -> bool:
        return self._running

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly ``partitions`` (no group assignment)."""
        partitions = list(partitions)
        if not self._consumer_running():
            self._pending_subscription = None
            self._pending_assignment = partitions
            return
        self._consumer.assign(partitions)

    def assignment(self) -> set[TopicPartition]:
        """The partitions being read now."""
        if not self._consumer_running():
            return set(self._pending_assignment or ())
        return set(self._consumer.assignment())

    def subscription(self) -> frozenset[str]:
        """The subscribed topics."""
        if not self._consumer_running():
            pending = self._pending_subscription
            return frozenset(pending[0]) if pending else frozenset()
        return frozenset(self._consumer.subscription())

    def unsubscribe(self) -> None:
        """Leave the subscription (and the group's assignment)."""
        self._pending_subscription = None
        if self._consumer_running():
            self._consumer.unsubscribe()

    async def topics(self) -> set[str]:
        """Every topic of the cluster."""
        return set(await self._consumer.topics())

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The partition ids of ``topic`` from cached metadata (None when unknown)."""
        return self._consumer.partitions_for_topic(topic)

    # ------------------------------------------------------------------ reading

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[Any, Any]:
        """The next record (of ``partitions`` when given), waiting for one."""
        self._check_running()
        # Records the native iterator holds go out without a native coroutine each (see
        # __anext__); the native getone waits for more.
        held = self._consumer._iterated
        if (
            held.records
            and not partitions
            and Consumer.getone is _DEFINED_GETONE
            and Consumer.__anext__ is _DEFINED_ANEXT
        ):
            native = held.hand_out()
        else:
            native = await self._consumer.getone(*partitions)
        return compat_record(
            ConsumerRecord, native, self._key_deserializer, self._value_deserializer
        )

    async def getmany(
        self,
        *partitions: TopicPartition,
        timeout_ms: int = 0,
        max_records: int | None = None,
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        """Records fetched so far by partition, waiting up to ``timeout_ms`` for some."""
        self._check_running()
        if max_records is not None and (not isinstance(max_records, int) or max_records < 1):
            raise errors.ConfigError("`max_records` must be a positive Integer")
        batches = await self._consumer.getmany(
            *partitions, timeout_ms=timeout_ms, max_records=max_records
        )
        key_des, value_des = self._key_deserializer, self._value_deserializer
        # Each list is popped straight into the call: the compiled converter, holding its only
        # reference, then replaces the native records in place (and frees them as it goes).
        return {
            tp: compat_records(ConsumerRecord, batches.pop(tp), key_des, value_des)
            for tp in list(batches)
        }

    def __aiter__(self) -> AIOKafkaConsumer:
        return self

    async def __anext__(self) -> ConsumerRecord[Any, Any]:
        if self._closed:
            raise StopAsyncIteration
        # The per-record fast path: a record the native iterator already holds is handed out
        # as the native ``async for`` does (its partition's position moves past it, nothing
        # is taken from the fetcher ahead), without a coroutine of the native consumer.
        held = self._consumer._iterated
        if held.records and Consumer.__anext__ is _DEFINED_ANEXT:
            native = held.hand_out()
        else:
            try:
                native = await self._consumer.__anext__()  # waits, or traced
            except errors.ClientClosedError:
                raise StopAsyncIteration from None
        return compat_record(
            ConsumerRecord, native, self._key_deserializer, self._value_deserializer
        )

    def _check_running(self) -> None:
        if self._closed:
            raise errors.ClientClosedError("the consumer is stopped")

    # ------------------------------------------------------------------ positions

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` from ``offset`` next."""
        if not isinstance(offset, int) or offset < 0:
            raise errors.KafkaValueError(f"Offset must be a positive integer, got {offset!r}")
        self._consumer.seek(partition, offset)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        """Read ``partitions`` (all assigned by default) from their first offset."""
        await self._consumer.seek_to_beginning(*partitions)
        return True

    async def seek_to_end(self, *partitions: TopicPartition) -> bool:
        """Read only what is written from now on."""
        await self._consumer.seek_to_end(*partitions)
        return True

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int]:
        """Read from the committed offsets; returns them (-1... as aiokafka: only known ones)."""
        found = await self._consumer.seek_to_committed(*partitions)
        return {tp: offset for tp, offset in found.items() if offset is not None}

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record to read from ``partition``."""
        return await self._consumer.position(partition)

    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset of ``partition`` (None when none)."""
        return await self._consumer.committed(partition)

    async def commit(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata | tuple[int, str]] | None = None,
    ) -> None:
        """Commit the current positions, or ``offsets``."""
        if offsets is None:
            await self._consumer.commit()
            return
        native: dict[TopicPartition, int | NativeOffsetAndMetadata] = {}
        for tp, value in offsets.items():
            if isinstance(value, int):
                native[tp] = value
            else:
                native[tp] = NativeOffsetAndMetadata(value[0], value[1] or "")
        await self._consumer.commit(native)

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark from the last fetch."""
        return self._consumer.highwater(partition)

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The partition's last stable offset from the last fetch."""
        return self._consumer.last_stable_offset(partition)

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When the partition's high watermark was last updated (ms)."""
        return self._consumer.last_poll_timestamp(partition)

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching ``partitions`` until :meth:`resume`."""
        self._consumer.pause(*partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch paused ``partitions`` again."""
        self._consumer.resume(*partitions)

    def paused(self) -> set[TopicPartition]:
        """The paused partitions."""
        return set(self._consumer.paused())

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The first offset of each partition."""
        return await self._consumer.beginning_offsets(partitions)

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition."""
        return await self._consumer.end_offsets(partitions)

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset at or after each timestamp (ms), None past the end."""
        found = await self._consumer.offsets_for_times(timestamps)
        return {
            tp: None if item is None else OffsetAndTimestamp(item.offset, item.timestamp)
            for tp, item in found.items()
        }
