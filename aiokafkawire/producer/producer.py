"""The asyncio Kafka producer.

::

    async with Producer(bootstrap_servers="host:9092", acks="all", compression="lz4") as producer:
        handle = await producer.send("topic", b"value", key=b"key")
        metadata = await handle              # RecordMetadata(topic, partition, offset, timestamp)

``send`` appends the record to its partition's open batch and returns a :class:`DeliveryHandle`
at once; it only waits when ``buffer_memory`` is used up (back-pressure, at most ``max_block_ms``)
or the topic's metadata is not known yet.  One sender loop per producer ships batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from time import time as _wall_clock
from typing import TYPE_CHECKING, Any, NoReturn, cast

from aiokafkawire import errors
from aiokafkawire._compiled import load_accelerator
from aiokafkawire._unclosed import warn_unclosed
from aiokafkawire._waits import CloseBudget
from aiokafkawire.client_config import (
    CommonOptions,
    check_int,
    check_number,
    check_type,
    split_common_options,
    unknown_options_error,
)
from aiokafkawire.client_properties import translate_properties
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.metrics import ProducerStats, Rate
from aiokafkawire.producer._accumulator import RecordAccumulator
from aiokafkawire.producer._batch import DeliveryHandle, ProducerBatch, RecordMetadata
from aiokafkawire.producer._sender import PRODUCE_KEY, Sender
from aiokafkawire.producer._transactions import PreparedTransaction, Transactions
from aiokafkawire.producer._txn import TransactionManager
from aiokafkawire.producer.partitioner import Partitioner, create_partitioner
from aiokafkawire.protocol.messages import InitProducerIdRequest
from aiokafkawire.protocol.records import CompressionType
from aiokafkawire.protocol.records.codecs import ensure_available as ensure_codec_available
from aiokafkawire.serialization import AsyncSerializer, context_serializers
from aiokafkawire.serialization import Serializer as ContextSerializer
from aiokafkawire.structs import OffsetAndMetadata, TopicPartition
from aiokafkawire.telemetry import TelemetryReporter, producer_values, start_reporter
from aiokafkawire.telemetry import client_instance_id as telemetry_instance_id

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["BatchBuilder", "Producer"]

log = logging.getLogger("aiokafkawire.producer")

COMPRESSION_TYPES: dict[str | None, CompressionType] = {
    None: CompressionType.NONE,
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}
# Upper bound of what a record adds to a batch beyond key, value and headers (v2 record and
# legacy message framing), plus a batch header: used to refuse records that can never be sent.
_RECORD_OVERHEAD = 61 + 5 + 1 + 10 + 5 + 5 + 5 + 5
_HEADER_OVERHEAD = 10

# A plain ``obj -> bytes | None`` callable, or one taking a SerializationContext, or an async
# one (see aiokafkawire.serialization).
PlainSerializer = Callable[[Any], bytes | None]
Serializer = PlainSerializer | ContextSerializer | AsyncSerializer
# A list of (name, value) pairs, any iterable of them, or a mapping of names to values.
Headers = Iterable[tuple[str, bytes | None]] | Mapping[str, bytes | None]


_BYTES_LIKE = (bytes, bytearray, memoryview)


def _check_bytes(what: str, value: Any, serializer: Serializer | None) -> None:
    """Accept bytes-like ``value``; otherwise raise a KafkaTypeError that says what to do."""
    if isinstance(value, _BYTES_LIKE):
        return
    kind = type(value).__name__
    if serializer is not None:
        raise errors.KafkaTypeError(
            f"{what}_serializer returned {kind}; it must return bytes or None"
        )
    hint = ""
    if what in ("key", "value"):
        hint = f"; set a {what}_serializer" + (
            " (e.g. str.encode)" if isinstance(value, str) else ""
        )
    elif isinstance(value, str):
        hint = "; encode it (e.g. value.encode())"
    raise errors.KafkaTypeError(f"{what} must be bytes or None, got {kind}{hint}")


def _header_list(headers: Any) -> list[Any]:
    """Headers given as a mapping or any iterable of pairs, as a list of pairs."""
    if isinstance(headers, Mapping):
        return list(headers.items())
    if isinstance(headers, (str, bytes)):
        _bad_header(headers)
    try:
        return list(headers)
    except TypeError:
        raise errors.KafkaTypeError(
            "headers must be a list of (str, bytes | None) pairs or a mapping, got "
            f"{type(headers).__name__}"
        ) from None


def _bad_header(header: Any) -> NoReturn:
    raise errors.KafkaTypeError(f"each header must be a (str, bytes | None) pair, got {header!r}")


def _checked_headers(headers: Any) -> tuple[list[Any], int]:
    """``headers`` as a list of checked (str, bytes | None) pairs, and the bytes they add."""
    header_list = headers if type(headers) is list else _header_list(headers)
    size = 0
    try:
        for header_key, header_value in header_list:
            if type(header_key) is not str:
                _bad_header((header_key, header_value))
            if type(header_value) is bytes:
                size += len(header_key) + len(header_value) + _HEADER_OVERHEAD
            else:
                if header_value is not None:
                    _check_bytes(f"the value of header {header_key!r}", header_value, None)
                    size += len(header_value)
                size += len(header_key) + _HEADER_OVERHEAD
    except (TypeError, ValueError) as exc:
        if isinstance(exc, errors.KafkaError):
            raise
        # An item that is not a pair: find it and say so.
        for header in header_list:
            if not isinstance(header, (tuple, list)) or len(header) != 2:
                _bad_header(header)
        raise
    return header_list, size


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _checked_timestamp(timestamp: Any) -> int:
    if isinstance(timestamp, int) and not isinstance(timestamp, bool):
        return int(timestamp)
    raise errors.KafkaTypeError(
        "timestamp must be an int (milliseconds since the epoch) or None, got "
        f"{type(timestamp).__name__}"
    )


def check_type_arg(name: str, value: Any, expected: type) -> None:
    """A call argument of the wrong type: KafkaTypeError naming it (``bool`` is not an int)."""
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise errors.KafkaTypeError(
            f"{name} must be {expected.__name__}, got {type(value).__name__}"
        )


class BatchBuilder:
    """Records collected for :meth:`Producer.send_batch` (aiokafka's ``create_batch`` API)."""

    def __init__(
        self,
        max_size: int,
        key_serializer: PlainSerializer | None = None,
        value_serializer: PlainSerializer | None = None,
        *,
        deferred: bool = False,
    ) -> None:
        self._max_size = max_size
        # deferred: the producer's serializers need a context; send_batch applies them (the
        # size of keys and values that are not bytes yet is then unknown here, counted as 0).
        self._deferred = deferred
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self.records: list[tuple[Any, Any, int | None, Any]] = []
        self._size = 0
        self._closed = False

    def append(
        self,
        *,
        key: Any = None,
        value: Any = None,
        timestamp: int | None = None,
        headers: Headers | None = None,
    ) -> int | None:
        """Add a record; its estimated size in bytes, or None when the batch is full.

        The first record is always taken (a record larger than the limit then fails at
        :meth:`Producer.send_batch` with RecordTooLargeError).
        """
        if self._closed:
            raise errors.IllegalStateError("the batch was already sent")
        if self._key_serializer is not None:
            key = self._key_serializer(key)
        if self._value_serializer is not None:
            value = self._value_serializer(value)
        size = _RECORD_OVERHEAD
        for what, item in (("key", key), ("value", value)):
            if item is not None:
                if self._deferred and not isinstance(item, _BYTES_LIKE):
                    continue
                _check_bytes(what, item, None)
                size += len(item)
        header_list = None if headers is None else _header_list(headers)
        for header in header_list or ():
            try:
                header_key, header_value = header
            except (TypeError, ValueError):
                _bad_header(header)
            size += len(header_key) + _HEADER_OVERHEAD + (len(header_value or b""))
        if self.records and self._size + size > self._max_size:
            return None
        self.records.append((key, value, timestamp, header_list))
        self._size += size
        return size

    def close(self) -> None:
        """No more appends (done by ``send_batch``)."""
        self._closed = True

    def size(self) -> int:
        """The estimated size of the records so far, in bytes."""
        return self._size

    def record_count(self) -> int:
        """How many records were appended."""
        return len(self.records)


async def _first_metadata(
    handles: list[DeliveryHandle], topic: str, partition: int
) -> RecordMetadata:
    if not handles:
        raise errors.IllegalStateError(f"send_batch to {topic}-{partition}: the batch is empty")
    results = await asyncio.gather(*handles, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    first = results[0]
    assert isinstance(first, RecordMetadata)
    return first


def _parse_acks(acks: int | str) -> int:
    if acks in ("all", -1, "-1"):
        return -1
    if acks in (0, 1, "0", "1"):
        return int(acks)
    raise errors.ConfigError(f"acks must be 0, 1 or 'all' (-1), not {acks!r}")


class Producer:  # long: the public API (send, transactions, batches, metrics) and its checks
    """An asyncio Kafka producer; see the module docstring and :meth:`send`.

    Options (besides the common connection options of
    :class:`~aiokafkawire.client_config.CommonConfig`):

    - ``acks``: 0 (do not wait), 1 (leader), ``"all"``/-1 (all in-sync replicas; default).
    - ``compression``: ``None``, ``"gzip"``, ``"snappy"``, ``"lz4"`` or ``"zstd"``;
      ``compression_type`` is the same option under the Java/aiokafka name.
    - ``linger_ms`` (default 5): how long a batch may wait for more records.
    - ``batch_size`` (1,000,000, as librdkafka's): uncompressed bytes per partition batch.  A
      batch takes ``buffer_memory`` as it fills (16 KiB first, then doubling), so a large limit
      costs nothing for partitions that see few records; keep it below the topics'
      ``max.message.bytes``.
    - ``max_request_size`` (1 MiB): limit of a Produce request and of one record.
    - ``buffer_memory`` (32 MiB): bytes of undelivered batches before ``send`` blocks.
    - ``max_block_ms`` (60000): how long ``send`` may block (buffer full, metadata) before
      :class:`~aiokafkawire.errors.BufferFullError` / ``UnknownTopicError``; also how long a
      transactional producer's ``start`` waits for its coordinator and producer id.
    - ``delivery_timeout_ms`` (120000): give up on a record this long after ``send``.
    - ``retry_backoff_ms`` (100), ``request_timeout_ms`` (30000),
      ``max_in_flight_requests_per_connection`` (5).
    - ``enable_idempotence`` (default: on when ``acks="all"``): producer id + sequence numbers,
      so retries never duplicate or reorder records.  Explicitly ``True`` requires ``acks="all"``.
    - ``transactional_id``: enables transactions (implies idempotence);
      ``transaction_timeout_ms`` (60000).
    - ``partitioner``: a name, class, instance or function (see
      :func:`~aiokafkawire.producer.partitioner.create_partitioner`).
    - ``key_serializer`` / ``value_serializer``: turn keys/values into bytes: a plain
      ``obj -> bytes | None`` callable, or ``serializer(obj, ctx)`` receiving a
      :class:`~aiokafkawire.serialization.SerializationContext` (topic, key or value, headers
      it may add to), possibly ``async`` (a schema-registry serializer): see
      :mod:`aiokafkawire.serialization`.
    """

    # A slot: the compiled send reads it per record (a member, not an instance dict lookup).
    __slots__ = ("__dict__", "__weakref__", "_fast_append")

    def __init__(  # long: one checked line per option of the documented signature
        self,
        *,
        acks: int | str = "all",
        compression: str | None = None,
        compression_type: str | None = None,
        linger_ms: float = 5,
        batch_size: int = 1_000_000,
        max_request_size: int = 1_048_576,
        buffer_memory: int = 33_554_432,
        max_block_ms: int = 60_000,
        delivery_timeout_ms: int = 120_000,
        enable_idempotence: bool | None = None,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
        partitioner: Any = None,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
        **options: Unpack[CommonOptions],
    ) -> None:  # long: one check per option, in the order of the class docstring
        """Configure the producer; nothing connects until :meth:`start` (or ``async with``)."""
        common, unknown = split_common_options(dict(options))
        if unknown:
            own = inspect.signature(Producer.__init__).parameters
            raise unknown_options_error("Producer", unknown, own)
        self.config = common
        self.acks = _parse_acks(acks)
        codec_name = compression if compression is not None else compression_type
        if isinstance(codec_name, str):
            codec_name = codec_name.lower()
        if codec_name not in COMPRESSION_TYPES:
            raise errors.ConfigError(
                f"compression must be one of None, 'gzip', 'snappy', 'lz4', 'zstd', "
                f"not {codec_name!r}"
            )
        self.compression_type = COMPRESSION_TYPES[codec_name]
        ensure_codec_available(int(self.compression_type))  # a missing library fails here
        for name, value in (
            ("batch_size", batch_size),
            ("max_request_size", max_request_size),
            ("buffer_memory", buffer_memory),
        ):
            check_int(name, value)
            if value <= 0:
                raise errors.ConfigError(f"{name} must be positive, not {value}")
        for name, duration in (
            ("linger_ms", linger_ms),
            ("max_block_ms", max_block_ms),
            ("delivery_timeout_ms", delivery_timeout_ms),
            ("transaction_timeout_ms", transaction_timeout_ms),
        ):
            check_number(name, duration)
        check_type("enable_idempotence", enable_idempotence, bool, none_ok=True)
        check_type("transactional_id", transactional_id, str, none_ok=True)
        if transactional_id == "":
            raise errors.ConfigError("transactional_id must not be empty (None: no transactions)")
        for name, function in (
            ("key_serializer", key_serializer),
            ("value_serializer", value_serializer),
        ):
            if function is not None and not callable(function):
                raise errors.ConfigTypeError(
                    f"{name} must be a callable returning bytes or None, got "
                    f"{type(function).__name__}"
                )
        if linger_ms < 0 or max_block_ms < 0 or delivery_timeout_ms <= 0:
            raise errors.ConfigError(
                "linger_ms and max_block_ms must be >= 0, delivery_timeout_ms > 0"
            )
        if delivery_timeout_ms < linger_ms + common.request_timeout_ms:
            raise errors.ConfigError(
                "delivery_timeout_ms must be at least linger_ms + request_timeout_ms "
                f"({linger_ms} + {common.request_timeout_ms}), not {delivery_timeout_ms}"
            )
        if transactional_id is not None:
            if enable_idempotence is False:
                raise errors.ConfigError(
                    "a transactional producer is idempotent: enable_idempotence=False "
                    "conflicts with transactional_id"
                )
            enable_idempotence = True
        if enable_idempotence:
            if self.acks != -1:
                raise errors.ConfigError(
                    f"enable_idempotence=True (or transactional_id) requires acks='all', "
                    f"got acks={acks!r}; set acks='all' or enable_idempotence=False"
                )
            if common.max_in_flight_requests_per_connection > 5:
                raise errors.ConfigError(
                    "enable_idempotence=True allows at most 5 max_in_flight_requests_per_connection"
                )
        self._idempotence_setting = enable_idempotence
        # Default: idempotent whenever acks="all" allows it (decided for good at start()).
        self.idempotent = bool(enable_idempotence) or (
            enable_idempotence is None and self.acks == -1
        )
        self.transactional_id = transactional_id
        self.linger_ms = linger_ms
        self.batch_size = batch_size
        self.max_request_size = max_request_size
        self.buffer_memory = buffer_memory
        self.max_block_ms = max_block_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.transaction_timeout_ms = transaction_timeout_ms
        self.partitioner: Partitioner = create_partitioner(partitioner)
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        # Context / async serializers (None: plain ones or none, applied on the fast path).
        self._context_serializers = context_serializers(key_serializer, value_serializer)
        # Per topic, the future of the last async-serializing send's append (ordering).
        self._serializing: dict[str, asyncio.Future[None]] = {}
        plain = self._context_serializers is None
        # Plain ones are called as obj -> bytes on the Python path (and by BatchBuilder).
        self._plain_key_serializer = cast(
            "PlainSerializer | None", key_serializer if plain else None
        )
        self._plain_value_serializer = cast(
            "PlainSerializer | None", value_serializer if plain else None
        )
        self._cluster: Cluster | None = None
        self._accumulator = RecordAccumulator(
            batch_size=batch_size,
            buffer_memory=buffer_memory,
            compression_type=int(self.compression_type),
            transactional=transactional_id is not None,
            partitioner=self.partitioner,
            max_block_ms=max_block_ms,
        )
        self._sender: Sender | None = None
        self._telemetry: TelemetryReporter | None = None
        self._txn: TransactionManager | None = None
        self._txn_ops: Transactions | None = None
        self._started = False
        self._closed = False
        self._closing: asyncio.Future[None] | None = None
        self._max_record_size = min(max_request_size, buffer_memory)
        self._send_checks = True
        self._send_rate = Rate()
        # The accumulator's compiled common case (see _install_fast_append); None: Python only.
        self._fast_append: Callable[..., DeliveryHandle | None] | None = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else "started" if self._started else "new"
        return f"<Producer acks={self.acks} idempotent={self.idempotent} {state}>"

    #: What a dropped producer's warning names: its class, how to stop it (compat sets its own).
    _dropped_as = ("Producer", "producer.stop()")

    def __del__(self) -> None:
        # Started and dropped without close(): say so, and what it loses (as aiokafka does).
        if not getattr(self, "_started", False) or getattr(self, "_closed", True):
            return
        undelivered = self._accumulator.undelivered_records()
        lost = (
            f"{undelivered} record(s) were still pending delivery and were never sent"
            if undelivered
            else ""
        )
        warn_unclosed(self, *self._dropped_as, lost)

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Connect to the cluster, choose the record format and (if needed) get a producer id."""
        if self._started:
            return
        if self._closed:
            raise errors.ClientClosedError("the producer is closed")
        cluster = self._cluster = self.config.build_cluster()
        try:
            await cluster.start()
            connection = await cluster.any_connection()
            versions = connection.versions
            if not versions.supports(PRODUCE_KEY):
                raise errors.UnsupportedVersionForBrokerError("the broker does not support Produce")
            produce_version = versions.version_for(PRODUCE_KEY)
            magic = 2 if produce_version >= 3 else 1 if produce_version == 2 else 0
            if magic < 2 and self.compression_type == CompressionType.ZSTD:
                raise errors.ConfigError("zstd compression needs a broker with Produce v7+")
            if self.idempotent and magic < 2:
                if self._idempotence_setting:
                    raise errors.ConfigError(
                        "enable_idempotence needs Produce v3+ (Kafka 0.11+); "
                        f"the broker speaks v{produce_version}"
                    )
                self.idempotent = False
            if self.idempotent and not versions.supports(InitProducerIdRequest.API_KEY):
                if self._idempotence_setting:
                    raise errors.ConfigError("enable_idempotence needs InitProducerId support")
                self.idempotent = False
            txn = self._txn = TransactionManager(
                cluster,
                transactional_id=self.transactional_id,
                transaction_timeout_ms=self.transaction_timeout_ms,
                request_timeout_ms=self.config.request_timeout_ms,
                retry_backoff_ms=self.config.retry_backoff_ms,
            )
            self._accumulator.start(cluster, txn, magic)
            if self.transactional_id is not None:
                await txn.init_producer_id(timeout_ms=self.max_block_ms)
            max_in_flight = self.config.max_in_flight_requests_per_connection
            self._sender = Sender(
                cluster,
                self._accumulator,
                txn,
                acks=self.acks,
                idempotent=self.idempotent,
                linger_ms=self.linger_ms,
                max_request_size=self.max_request_size,
                max_in_flight=max_in_flight,
                request_timeout_ms=self.config.request_timeout_ms,
                delivery_timeout_ms=self.delivery_timeout_ms,
                retry_backoff_ms=self.config.retry_backoff_ms,
                retry_backoff_max_ms=self.config.retry_backoff_max_ms,
                metrics=self.config.metrics,
            )
            self._sender.start()
            self._telemetry = self._start_telemetry(cluster, self._sender)
            self._install_fast_append()
        except BaseException:
            await self._abandon_start()
            raise
        self._started = True
        self._update_send_checks()

    async def _abandon_start(self) -> None:
        """After a failed or cancelled :meth:`start`: stop what it started, as if never begun."""
        sender, cluster = self._sender, self._cluster
        self._sender = self._txn = self._cluster = None
        self._fast_append = None
        try:
            if sender is not None:
                await sender.stop()
        finally:
            if cluster is not None:
                await cluster.close()

    async def close(self, timeout: float | None = None, *, flush: bool = True) -> None:
        """Deliver what is buffered (unless ``flush=False``), then stop and disconnect.

        ``timeout`` bounds the flush and the terminating telemetry push (seconds); records
        still undelivered then fail with :class:`~aiokafkawire.errors.ClientClosedError`.
        Without it, as the Java client's
        ``close()``, a record the cluster cannot take waits up to ``delivery_timeout_ms``
        (2 minutes by default): a service stopping on a signal should pass a ``timeout``.
        """
        if self._closing is not None:
            await asyncio.shield(self._closing)
            return
        self._closing = asyncio.get_running_loop().create_future()
        self._closed = True
        self._update_send_checks()
        self._fast_append = None
        self._accumulator.close()
        budget = CloseBudget("producer", timeout, log)
        try:
            if self._started and flush and self._sender is not None:
                self._sender.ensure_running()
                try:
                    await self._flush(timeout)
                except (TimeoutError, errors.KafkaError) as exc:
                    log.warning("producer close: flush did not complete: %s", exc)
            if self._telemetry is not None:
                await budget.step("the terminating telemetry push", self._telemetry.close())
            if self._sender is not None:
                await self._sender.stop()
            self._accumulator.fail_all(errors.ClientClosedError("the producer was closed"))
            if self._cluster is not None:
                await self._cluster.close()
        finally:
            self._closing.set_result(None)

    async def stop(self) -> None:
        """The same as :meth:`close` (aiokafka's name): flush, then disconnect."""
        await self.close()

    def _start_telemetry(self, cluster: Cluster, sender: Sender) -> TelemetryReporter | None:
        stats, metrics = sender.stats, self.config.metrics
        return start_reporter(
            self.config,
            cluster,
            sender.tasks,
            "producer",
            lambda: producer_values(stats, self._accumulator.used, self.buffer_memory, metrics),
            {"transactional_id": self.transactional_id},
        )

    async def client_instance_id(self, timeout: float = 5.0) -> uuid.UUID | None:
        """The client instance id the cluster gave this producer (KIP-714), as Java's
        ``clientInstanceId(timeout)``; None when the broker does not support client telemetry or
        gave none within ``timeout`` seconds.

        Raises :class:`~aiokafkawire.errors.IllegalStateError` with ``enable_metrics_push=False``
        or before :meth:`start`.
        """
        return await telemetry_instance_id(
            self._telemetry, self.config.enable_metrics_push, "producer", timeout
        )

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- sending

    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        *,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Headers | None = None,
    ) -> DeliveryHandle:
        """Append a record to its partition's batch; returns its :class:`DeliveryHandle`.

        ``timestamp`` is in milliseconds since the epoch (default: now).  Waits only while the
        buffer is full or, for a record without an explicit ``partition``, while the topic's
        metadata is unknown (the partition is part of the answer): at most ``max_block_ms`` in
        all, as the Java client's ``send`` (the memory wait gets what the metadata wait left).
        Raises
        :class:`~aiokafkawire.errors.RecordTooLargeError` for a record larger than
        ``max_request_size``, ``ClientClosedError`` after :meth:`close`, ``BufferFullError``,
        and, without ``partition``, ``UnknownTopicError``.

        With an explicit ``partition`` of a topic whose metadata is not known yet, ``send``
        does not wait: the record waits in its batch while the producer looks the topic up (the
        first lookups of many topics share one request), then goes out like any other.  If the
        topic is still unknown after ``max_block_ms``, or has no such partition, the record's
        handle fails with the error ``send`` raises otherwise
        (:class:`~aiokafkawire.errors.UnknownTopicError`,
        :class:`~aiokafkawire.errors.ConfigError`), naming the topic and partition.
        """
        fast_append = self._fast_append
        if fast_append is not None:
            # The common case in one C call; None means "take the Python path below",
            # which is complete on its own (the C code returns None before any side effect).
            handle = fast_append(topic, value, key, partition, timestamp, headers)
            if handle is not None:
                return handle
        if self._send_checks:
            # Rare cases kept off the hot path: not started, closed, serializers, transactions.
            key, value = self._check_send(key, value)
            if self._context_serializers is not None:
                return await self._send_in_context(topic, value, key, partition, timestamp, headers)
        else:
            fatal = self._txn.fatal  # type: ignore[union-attr]  # started: _send_checks is off
            if fatal is not None:
                raise fatal
        # _record_size inline: a method call per record costs the Python path ~3% (callgrind).
        size = _RECORD_OVERHEAD
        if type(key) is bytes:
            size += len(key)
        elif key is not None:
            _check_bytes("key", key, self.key_serializer)
            size += len(key)
        if type(value) is bytes:
            size += len(value)
        elif value is not None:
            _check_bytes("value", value, self.value_serializer)
            size += len(value)
        if headers is None:
            header_list = None
        else:
            header_list, header_size = _checked_headers(headers)
            size += header_size
        if size > self._max_record_size:
            raise self._too_large(size)
        if timestamp is None:
            timestamp = int(_wall_clock() * 1000)
        elif type(timestamp) is not int:
            timestamp = _checked_timestamp(timestamp)
        accumulator = self._accumulator
        handle = await accumulator.append(
            topic, partition, timestamp, key, value, header_list, size
        )
        if accumulator.full_batch_waiting:
            await self._write_full_batch()
        return handle

    async def _append(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp: int | None,
        headers: Headers | None,
    ) -> DeliveryHandle:
        """The record (serialized) into its partition's batch: the tail of :meth:`send`, kept
        inline there (a coroutine call per record costs the plain path), for the context path
        and :meth:`send_batch`."""
        size, header_list = self._record_size(key, value, headers)
        if timestamp is None:
            timestamp = int(_wall_clock() * 1000)
        elif type(timestamp) is not int:
            timestamp = _checked_timestamp(timestamp)
        accumulator = self._accumulator
        handle = await accumulator.append(
            topic, partition, timestamp, key, value, header_list, size
        )
        if accumulator.full_batch_waiting:
            await self._write_full_batch()
        return handle

    def _record_size(
        self, key: Any, value: Any, headers: Headers | None
    ) -> tuple[int, list[tuple[str, bytes | None]] | None]:
        """The record's size estimate and checked header list.  Types are checked before
        anything changes (a builder that failed half-way would leave a broken batch); exact
        bytes pass with one comparison each."""
        size = _RECORD_OVERHEAD
        if type(key) is bytes:
            size += len(key)
        elif key is not None:
            _check_bytes("key", key, self.key_serializer)
            size += len(key)
        if type(value) is bytes:
            size += len(value)
        elif value is not None:
            _check_bytes("value", value, self.value_serializer)
            size += len(value)
        if headers is None:
            header_list = None
        else:
            header_list, header_size = _checked_headers(headers)
            size += header_size
        if size > self._max_record_size:
            raise self._too_large(size)
        return size, header_list

    def _too_large(self, size: int) -> errors.RecordTooLargeError:
        return errors.RecordTooLargeError(
            f"the record is about {size} bytes, more than max_request_size "
            f"({self.max_request_size}) or buffer_memory ({self.buffer_memory})"
        )

    async def _write_full_batch(self) -> None:
        """A batch filled up: write it now, then give the loop a turn (answers, other tasks),
        so that a tight send loop overlaps with the network instead of buffering everything
        first.  The one place that pumps the sender eagerly (the accumulator raises
        ``full_batch_waiting`` when it opens a second batch for a partition)."""
        self._accumulator.full_batch_waiting = False
        sender = self._sender
        assert sender is not None
        sender.pump()
        await asyncio.sleep(0)

    def _check_send(self, key: Any, value: Any) -> tuple[Any, Any]:
        if self._closed:
            raise errors.ClientClosedError("send() on a closed producer")
        if not self._started:
            raise errors.IllegalStateError("start the producer (or use `async with`) first")
        txn = self._txn
        assert txn is not None
        if txn.fatal is not None or txn.transactional:
            txn.check_can_send()
        key_serializer = self._plain_key_serializer
        if key_serializer is not None:
            key = key_serializer(key)
        value_serializer = self._plain_value_serializer
        if value_serializer is not None:
            value = value_serializer(value)
        return key, value

    def _check_can_send(self) -> None:
        if self._closed:
            raise errors.ClientClosedError("send() on a closed producer")
        if not self._started:
            raise errors.IllegalStateError("start the producer (or use `async with`) first")
        txn = self._txn
        assert txn is not None
        if txn.fatal is not None or txn.transactional:
            txn.check_can_send()

    async def _send_in_context(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp: int | None,
        headers: Headers | None,
    ) -> DeliveryHandle:
        """send with context or async serializers: they get the topic, the field and a copy of
        the headers (which they may add to).

        Async serialization runs concurrently with other sends, but records of one topic join
        their batches in the order of the ``send`` calls: each waits for the append of the
        send before it to the same topic (its partition is only known once the key is
        serialized), so a record still being serialized is never overtaken.
        """
        serializers = self._context_serializers
        assert serializers is not None
        header_list: list[Any] = [] if headers is None else list(_header_list(headers))
        if not serializers.is_async:
            key, value = serializers.apply(topic, key, value, header_list)
            return await self._append(topic, value, key, partition, timestamp, header_list or None)
        tails = self._serializing
        before = tails.get(topic)
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        tails[topic] = mine
        try:
            key, value = await serializers.apply_async(topic, key, value, header_list)
            if before is not None and not before.done():
                await asyncio.shield(before)
            return await self._append(topic, value, key, partition, timestamp, header_list or None)
        finally:
            if tails.get(topic) is mine:
                del tails[topic]
            if before is None or before.done():
                mine.set_result(None)
            else:  # cancelled while waiting: the sends after this one still wait for `before`
                before.add_done_callback(lambda _: _resolve(mine))

    def _install_fast_append(self) -> None:
        """Use the accumulator's compiled common case in :meth:`send` where it can apply."""
        if (
            # These keep the Python checks of send on for good: the C path would only decline.
            self.key_serializer is not None or self.value_serializer is not None
        ):
            return
        self._fast_append = self._accumulator.fast_path(
            _wall_clock, self._max_record_size, _RECORD_OVERHEAD
        )

    def _update_send_checks(self) -> None:
        self._send_checks = (
            self._closed
            or not self._started
            or self.key_serializer is not None
            or self.value_serializer is not None
            or self.transactional_id is not None
        )

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        *,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Headers | None = None,
    ) -> RecordMetadata:
        """:meth:`send`, then wait for the delivery (sends the batch without lingering)."""
        handle = await self.send(
            topic, value, key, partition=partition, timestamp=timestamp, headers=headers
        )
        # Nobody else will add to this batch soon enough to be worth the linger.
        self._accumulator.flush_batch_of(handle)
        return await handle

    async def flush(self, timeout: float | None = None) -> None:
        """Send every buffered record now and wait until each is delivered or failed.

        Raises :class:`~aiokafkawire.errors.KafkaTimeoutError` (a ``TimeoutError``) if
        ``timeout`` (seconds) passes first.
        """
        if not self._started:
            return
        await self._flush(timeout)

    async def _flush(self, timeout: float | None) -> None:
        sender = self._sender
        assert sender is not None
        pending: list[ProducerBatch] = list(self._accumulator.incomplete)
        if not pending:
            return
        sender.flushing += 1
        sender.wakeup.set()
        try:
            futures = [batch.future for batch in pending]
            _, not_done = await asyncio.wait(futures, timeout=timeout)
            if not_done:
                raise errors.KafkaTimeoutError(
                    f"flush: {len(not_done)} batches undelivered after {timeout}s"
                )
        finally:
            sender.flushing -= 1

    async def _wait_for_topic(self, topic: str) -> None:
        """Wait (up to ``max_block_ms``) for ``topic``'s metadata, as ``send`` does for a record
        without a partition; raises ``UnknownTopicError`` (the aiokafka compat ``send``)."""
        if self._started and not self._closed:
            await self._accumulator.partitions_of(topic)

    async def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic``, once its metadata is known and its leaders connected.

        Waits for the topic's metadata (up to ``max_block_ms``, as the Java client's
        ``partitionsFor``, even while a metadata request is slower; then raises
        :class:`~aiokafkawire.errors.UnknownTopicError`), then for the connections that
        Produce requests to its partitions' leaders use, so that the first full batch goes out
        at once instead of after a connection setup.  A leader that cannot be reached is not
        an error here: the sender keeps trying and reports on the records.
        """
        if not self._started:
            raise errors.IllegalStateError("start the producer first")
        cluster = self._cluster
        assert cluster is not None
        started = time.monotonic()
        info = await cluster.wait_for_topic(topic, timeout_ms=self.max_block_ms)
        remaining = self.max_block_ms / 1000 - (time.monotonic() - started)
        await self._connect_leaders(topic, info.partition_ids, max(remaining, 0.0))
        return info.partition_ids

    async def _connect_leaders(self, topic: str, partitions: list[int], timeout: float) -> None:
        """Open the produce connections to the leaders of ``partitions`` (bounded; no errors)."""
        cluster = self._cluster
        assert cluster is not None
        metadata = cluster.metadata
        leaders = {
            leader
            for partition in partitions
            if (leader := metadata.leader_for(topic, partition)) is not None
        }
        if not leaders or timeout <= 0:
            return
        connects = [cluster.connection(node, purpose="produce") for node in leaders]
        try:
            outcomes = await asyncio.wait_for(
                asyncio.gather(*connects, return_exceptions=True), timeout
            )
        except (TimeoutError, asyncio.TimeoutError):
            log.debug("connecting to the leaders of %r took longer than %.1fs", topic, timeout)
            return
        for outcome in outcomes:
            if isinstance(outcome, errors.KafkaError):
                log.debug("cannot connect to a leader of %r yet: %s", topic, outcome)
            elif isinstance(outcome, BaseException):
                raise outcome

    # ---------------------------------------------------------------- transactions

    def _check_open(self, operation: str) -> None:
        if self._closed:
            raise errors.ClientClosedError(f"{operation}() on a closed producer")
        if self._txn is None or not self._started:
            raise errors.IllegalStateError("start the producer first")

    def _transactions(self, operation: str) -> Transactions:
        """The transaction operations (``_transactions.py``), once ``operation`` may run."""
        self._check_open(operation)
        ops, txn, sender = self._txn_ops, self._txn, self._sender
        assert txn is not None and sender is not None
        if ops is None or ops.txn is not txn:
            flush = functools.partial(self._flush, None)
            ops = self._txn_ops = Transactions(
                txn, self._accumulator, sender, flush, self._check_open
            )
        return ops.require(operation)

    async def begin_transaction(self) -> None:
        """Start a transaction: records sent until commit/abort belong to it."""
        self._transactions("begin_transaction").begin()

    async def commit_transaction(self) -> None:
        """Deliver the transaction's records, then commit it (EndTxn).

        If any record failed, the transaction is aborted instead and the error is raised.
        """
        await self._transactions("commit_transaction").commit()

    async def prepare_transaction(self) -> PreparedTransaction:
        """Deliver the open transaction's records and return its identity, leaving it open.

        For a two-phase commit decided elsewhere (as KIP-939's ``prepareTransaction``): whoever
        holds the :class:`PreparedTransaction` ends the transaction with EndTxn, commit or
        abort, from any connection.  This producer must not send in, commit or abort the
        transaction afterwards: close it (closing does not end a transaction).  Raises the
        delivery error if a record failed (then only an abort is possible).
        """
        return await self._transactions("prepare_transaction").prepare()

    async def abort_transaction(self) -> None:
        """Drop the transaction's unsent records and abort it (its records stay invisible)."""
        await self._transactions("abort_transaction").abort()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Producer]:
        """``async with producer.transaction():`` commits on success, aborts on an exception."""
        async with self._transactions("begin_transaction").block(self) as producer:
            yield producer

    async def send_offsets_to_transaction(
        self,
        offsets: dict[TopicPartition, int | OffsetAndMetadata],
        group_id: str | None = None,
        *,
        group_metadata: Any = None,
    ) -> None:
        """Commit consumer offsets as part of the transaction (consume-transform-produce).

        Pass ``group_id``, or ``group_metadata`` (an object with ``group_id``, and optionally
        ``generation_id``, ``member_id`` and ``group_instance_id``) for fencing of zombie members.
        """
        ops = self._transactions("send_offsets_to_transaction")
        await ops.send_offsets(offsets, group_id, group_metadata)

    # ---------------------------------------------------------------- batches (aiokafka API)

    def create_batch(self) -> BatchBuilder:
        """An empty :class:`BatchBuilder` to fill and pass to :meth:`send_batch`.

        Its size is bounded by ``batch_size`` and ``max_request_size``; ``append`` returns None
        once a record does not fit.
        """
        if self._context_serializers is not None:
            # Context serializers need the topic, given to send_batch: they run there.
            return BatchBuilder(min(self.batch_size, self.max_request_size), deferred=True)
        return BatchBuilder(
            min(self.batch_size, self.max_request_size),
            self._plain_key_serializer,
            self._plain_value_serializer,
        )

    async def send_batch(
        self, batch: BatchBuilder, topic: str, *, partition: int
    ) -> asyncio.Future[RecordMetadata]:
        """Send every record of ``batch`` to one partition; a future of the first's metadata.

        The records join the partition's batches as with :meth:`send` (so they are compressed
        and retried together); the returned future resolves once all are delivered, with the
        :class:`RecordMetadata` of the first record (the batch's base offset), or fails with the
        first delivery error.
        """
        if not isinstance(batch, BatchBuilder):
            raise errors.KafkaTypeError(
                f"send_batch needs a BatchBuilder from create_batch(), got {type(batch).__name__}"
            )
        check_type_arg("partition", partition, int)
        batch.close()
        handles = []
        for key, value, timestamp, headers in batch.records:
            # Plain serializers already ran in BatchBuilder.append; context ones run here.
            self._check_can_send()
            if self._context_serializers is not None:
                handle = await self._send_in_context(
                    topic, value, key, partition, timestamp, headers
                )
            else:
                handle = await self._append(topic, value, key, partition, timestamp, headers)
            handles.append(handle)
        if handles:
            self._accumulator.flush_batch_of(handles[-1])  # nothing more is coming: no linger
        return asyncio.ensure_future(_first_metadata(handles, topic, partition))

    # ---------------------------------------------------------------- introspection

    def metrics(self) -> dict[str, Any]:
        """A snapshot of this producer's counters (see :mod:`aiokafkawire.metrics`).

        ``brokers``: per broker request counts, latency percentiles per API (``Produce``),
        in-flight requests, bytes in/out, throttle time.  ``producer``: records and batches
        delivered, records per second over the last 30 s (``metrics.RATE_WINDOW_S``), average
        batch size, compression ratio (bytes sent / uncompressed bytes), retries, failed batches
        and records, buffer use.
        """
        stats = self._sender.stats if self._sender is not None else ProducerStats()
        return {
            "brokers": self.config.metrics.snapshot(),
            "producer": {
                "records_sent": stats.records,
                "records_per_sec": self._send_rate.per_second(stats.records),
                "batches_sent": stats.batches,
                "batch_size_avg": round(stats.bytes / stats.batches, 1) if stats.batches else 0,
                "records_per_batch_avg": round(stats.records / stats.batches, 1)
                if stats.batches
                else 0,
                "compression_ratio": round(stats.bytes / stats.uncompressed_bytes, 4)
                if stats.uncompressed_bytes
                else 1.0,
                "bytes_sent": stats.bytes,
                "retries": stats.retries,
                "batch_errors": stats.batch_errors,
                "records_failed": stats.records_failed,
                "buffer_bytes_used": self.buffered_bytes,
                "buffer_memory": self.buffer_memory,
                "buffer_use": round(self.buffered_bytes / self.buffer_memory, 4),
            },
        }

    @property
    def buffered_bytes(self) -> int:
        """Bytes of ``buffer_memory`` held by undelivered batches."""
        return self._accumulator.used

    @property
    def record_format(self) -> int:
        """The record format (magic 0, 1 or 2) chosen for the cluster at start."""
        return self._accumulator.magic

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Producer:
        """A producer configured with Java or librdkafka property names.

        ``Producer.from_config({"bootstrap.servers": "host:9092", ...})``: each property maps to
        one option (see :data:`aiokafkawire.client_properties.PROPERTIES`); aiokafkawire's own
        option names may be mixed in.  An unsupported property raises ConfigError naming it.
        """
        return cls(**translate_properties("producer", config))


_send_accelerator: Any = load_accelerator("aiokafkawire.producer._cproducer")
if _send_accelerator is not None and not TYPE_CHECKING:
    # send without a coroutine frame per call: a compiled coroutine that calls _fast_append
    # when awaited, else this class's send (see _cproducer.c, "send calls").
    Producer.send = _send_accelerator.SendMethod(Producer.send)

# Producer.send as defined here, whoever wraps it later (aiokafkawire.otel.instrument()): a
# caller that skips it for the compiled append (the aiokafka compat send) checks it is unwrapped.
_DEFINED_SEND = Producer.send
