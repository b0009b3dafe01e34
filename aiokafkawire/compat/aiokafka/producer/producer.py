"""``aiokafka.producer.producer``: ``AIOKafkaProducer`` on aiokafkawire's :class:`Producer`."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

from aiokafkawire.compat.aiokafka._bootstrap import start_client
from aiokafkawire.compat.aiokafka._options import connection_options
from aiokafkawire.compat.aiokafka.partitioner import DefaultPartitioner
from aiokafkawire.compat.aiokafka.structs import OffsetAndMetadata, RecordMetadata
from aiokafkawire.producer import Producer
from aiokafkawire.producer import RecordMetadata as NativeRecordMetadata
from aiokafkawire.producer._batch import fail_delivery_future
from aiokafkawire.producer.producer import _DEFINED_SEND
from aiokafkawire.producer.producer import BatchBuilder as NativeBatchBuilder
from aiokafkawire.structs import OffsetAndMetadata as NativeOffsetAndMetadata
from aiokafkawire.structs import TopicPartition

__all__ = ["AIOKafkaProducer"]

_missing = object()  # aiokafka's "not given" marker for acks (frameworks import it)
_DEFAULT_PARTITIONER = DefaultPartitioner()

Headers = Sequence[tuple[str, bytes | None]]


_new_tuple = tuple.__new__


def _record_metadata(native: NativeRecordMetadata) -> RecordMetadata:
    """aiokafka's RecordMetadata of a native one (tuples made without NamedTuple's __new__:
    the batch's completion pass runs this once per record sent)."""
    topic, partition, offset, timestamp = native
    return _new_tuple(
        RecordMetadata,
        (
            topic,
            partition,
            _new_tuple(TopicPartition, (topic, partition)),
            offset,
            timestamp,
            0,
            None,
        ),
    )


def _chain(native: asyncio.Future[NativeRecordMetadata]) -> asyncio.Future[RecordMetadata]:
    """A future of ``native``'s outcome with aiokafka's RecordMetadata (one for a batch).

    Cancelling it cancels ``native``.
    """
    future: asyncio.Future[RecordMetadata] = native.get_loop().create_future()

    def done(finished: asyncio.Future[NativeRecordMetadata]) -> None:
        if future.done():
            return
        if finished.cancelled():
            future.cancel()
            return
        error = finished.exception()
        if error is None:
            future.set_result(_record_metadata(finished.result()))
        else:
            fail_delivery_future(future, error)  # as DeliveryHandle.as_future (aiokafka's rule)

    def cancelled(mine: asyncio.Future[RecordMetadata]) -> None:
        if mine.cancelled():
            native.cancel()

    native.add_done_callback(done)
    future.add_done_callback(cancelled)
    return future


class BatchBuilder:
    """Records for one :meth:`AIOKafkaProducer.send_batch` call (aiokafka's BatchBuilder)."""

    def __init__(self, native: NativeBatchBuilder) -> None:
        self._native = native

    def append(
        self,
        *,
        timestamp: int | None,
        key: Any,
        value: Any,
        headers: Headers = (),
    ) -> BatchRecordMetadata | None:
        """Add a record (``timestamp`` in ms or None); its metadata, or None when full."""
        size = self._native.append(
            key=key, value=value, timestamp=timestamp, headers=list(headers) or None
        )
        return None if size is None else BatchRecordMetadata(size, timestamp)

    def size(self) -> int:
        """The estimated size of the batch in bytes."""
        return self._native.size()

    def record_count(self) -> int:
        """How many records the batch holds."""
        return self._native.record_count()

    def close(self) -> None:
        """No more appends."""
        self._native.close()


class BatchRecordMetadata:
    """What ``BatchBuilder.append`` returns for an appended record."""

    __slots__ = ("crc", "offset", "size", "timestamp")

    def __init__(self, size: int, timestamp: int | None) -> None:
        self.offset = 0
        self.size = size
        self.timestamp = timestamp
        self.crc = None


class AIOKafkaProducer:  # long: aiokafka's whole producer API, each method a thin delegation
    """aiokafka's producer, with aiokafka's arguments and defaults, on aiokafkawire's engine.

    Differences that remain (see docs/migrating-from-aiokafka.md): keyless records go to a
    sticky partition rather than a random one each, and ``connections_max_idle_ms`` has no
    effect.
    """

    _PRODUCER_CLIENT_ID_SEQUENCE = 0

    def __init__(
        self,
        *,
        loop: Any = None,
        bootstrap_servers: str | list[str] = "localhost",
        client_id: str | None = None,
        metadata_max_age_ms: int = 300000,
        request_timeout_ms: int = 40000,
        api_version: str | None = None,
        acks: Any = _missing,
        key_serializer: Callable[[Any], bytes | None] | None = None,
        value_serializer: Callable[[Any], bytes | None] | None = None,
        compression_type: str | None = None,
        max_batch_size: int = 16384,
        partitioner: Any = _DEFAULT_PARTITIONER,
        max_request_size: int = 1048576,
        linger_ms: int = 0,
        retry_backoff_ms: int = 100,
        security_protocol: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        connections_max_idle_ms: int = 540000,
        enable_idempotence: bool = False,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        sasl_mechanism: str = "PLAIN",
        sasl_plain_password: str | None = None,
        sasl_plain_username: str | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        sasl_oauth_token_provider: Any = None,
    ) -> None:
        if client_id is None:
            AIOKafkaProducer._PRODUCER_CLIENT_ID_SEQUENCE += 1
            client_id = f"aiokafka-producer-{AIOKafkaProducer._PRODUCER_CLIENT_ID_SEQUENCE}"
        if transactional_id is not None:
            enable_idempotence = True
        if acks is _missing:
            acks = "all" if enable_idempotence else 1
        common = connection_options(locals())
        native_partitioner = None if isinstance(partitioner, DefaultPartitioner) else partitioner
        self._producer = Producer(
            acks=acks,
            compression_type=compression_type,
            linger_ms=linger_ms,
            batch_size=max_batch_size,
            max_request_size=max_request_size,
            # aiokafka has no delivery timeout: a record is retried until request_timeout_ms
            # passes for its batch; the engine's floor is linger_ms + request_timeout_ms.
            delivery_timeout_ms=max(120_000, linger_ms + request_timeout_ms),
            enable_idempotence=enable_idempotence,
            transactional_id=transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
            partitioner=native_partitioner,
            key_serializer=key_serializer,
            value_serializer=value_serializer,
            **common,
        )
        # A dropped client's warning names what the user made, and how to stop it.
        self._producer._dropped_as = ("AIOKafkaProducer", "producer.stop()")
        self.client_id = client_id
        self._closed = False

    @property
    def native(self) -> Producer:
        """The aiokafkawire :class:`~aiokafkawire.Producer` doing the work."""
        return self._producer

    def __repr__(self) -> str:
        return f"<AIOKafkaProducer client_id={self.client_id!r} on {self._producer!r}>"

    async def start(self) -> None:
        """Connect to the cluster (and initialise the transactional producer id)."""
        await start_client(self._producer.start())

    async def stop(self) -> None:
        """Send every buffered record, wait for their deliveries, and close."""
        if self._closed:
            return
        self._closed = True
        await self._producer.close()

    async def __aenter__(self) -> AIOKafkaProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def flush(self) -> None:
        """Wait until every record sent so far is delivered (or failed)."""
        await self._producer.flush()

    async def partitions_for(self, topic: str) -> set[int]:
        """The partition ids of ``topic`` (waits for its metadata)."""
        return set(await self._producer.partitions_for(topic))

    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Headers | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Buffer a record; returns a future of its :class:`RecordMetadata`."""
        if partition is not None:
            # aiokafka's send waits for the topic's metadata (and raises for an unknown topic)
            # even for an explicit partition, which the native send queues without waiting.
            await self._producer._wait_for_topic(topic)
        # The native send's compiled common case, called as its SendMethod calls it (None when
        # the producer's checks need the full path), without a native send coroutine to await.
        fast = self._producer._fast_append
        handle = None
        if fast is not None and not headers and type(self._producer).send is _DEFINED_SEND:
            handle = fast(topic, value, key, partition, timestamp_ms, None)
        if handle is None:
            handle = await self._producer.send(
                topic,
                value,
                key,
                partition=partition,
                timestamp=timestamp_ms,
                headers=list(headers) if headers else None,
            )
        # Resolved by the record's batch in its own completion pass, already converted.
        return handle.as_future(_record_metadata)

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Headers | None = None,
    ) -> RecordMetadata:
        """Send a record and wait for its delivery."""
        if partition is not None:
            await self._producer._wait_for_topic(topic)  # as in send()
        native = await self._producer.send_and_wait(
            topic,
            value,
            key,
            partition=partition,
            timestamp=timestamp_ms,
            headers=list(headers) if headers else None,
        )
        return _record_metadata(native)

    def create_batch(self) -> BatchBuilder:
        """An empty batch for :meth:`send_batch`."""
        return BatchBuilder(self._producer.create_batch())

    async def send_batch(
        self, batch: BatchBuilder, topic: str, *, partition: int | None
    ) -> asyncio.Future[RecordMetadata]:
        """Send a whole batch to one partition; a future of the first record's metadata.

        ``partition=None`` lets the partitioner choose, as for a keyless record (aiokafka).
        """
        if partition is None:
            partitions = await self._producer.partitions_for(topic)
            partition = self._producer.partitioner.partition(topic, None, partitions, partitions)
        else:
            await self._producer._wait_for_topic(topic)  # as in send()
        native_future = await self._producer.send_batch(batch._native, topic, partition=partition)
        return _chain(native_future)

    # ---------------------------------------------------------------- transactions

    async def begin_transaction(self) -> None:
        """Start a transaction (needs ``transactional_id``)."""
        await self._producer.begin_transaction()

    async def commit_transaction(self) -> None:
        """Commit the open transaction."""
        await self._producer.commit_transaction()

    async def abort_transaction(self) -> None:
        """Abort the open transaction."""
        await self._producer.abort_transaction()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """``async with producer.transaction():`` commits, or aborts on an exception."""
        async with self._producer.transaction():
            yield None

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata | tuple[int, str]],
        group_id: str,
    ) -> None:
        """Commit consumer offsets as part of the open transaction."""
        await self._producer.send_offsets_to_transaction(_native_offsets(offsets), group_id)


def _native_offsets(
    offsets: Mapping[TopicPartition, Any] | Iterable[Any],
) -> dict[TopicPartition, int | NativeOffsetAndMetadata]:
    """aiokafka's offsets (ints or (offset, metadata) pairs) as aiokafkawire's."""
    converted: dict[TopicPartition, int | NativeOffsetAndMetadata] = {}
    for tp, value in dict(offsets).items():
        if isinstance(value, int):
            converted[tp] = value
        else:
            offset, metadata = value[0], value[1]
            converted[tp] = NativeOffsetAndMetadata(offset, metadata or "")
    return converted
