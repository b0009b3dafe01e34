"""Serializer and deserializer interfaces: what a client's ``key_serializer`` /
``value_serializer`` (producer) and ``key_deserializer`` / ``value_deserializer`` (consumers)
may be.

Three kinds are accepted, told apart once, when the client is constructed (never per record):

- a **plain** one-argument callable, ``serializer(obj) -> bytes | None`` (``str.encode``,
  ``json.dumps``-based lambdas): the fast path, as before;
- a **context** callable, ``serializer(obj, ctx) -> bytes | None``, ``ctx`` a
  :class:`SerializationContext` carrying the topic, whether the key or the value is being
  (de)serialized and the record's headers (a serializer may append to them).  This is
  confluent-kafka's ``Serializer.__call__(obj, ctx)``, so its serializers and the ones of
  :mod:`aiokafkawire.schema_registry` plug in directly;
- an **async** callable, ``async def serializer(obj, ctx)``: awaited (a registry lookup).

A callable is a context one when its second positional parameter is named ``ctx`` or
``context`` or is annotated with :class:`SerializationContext`; it is async when it is a
coroutine function (or an object whose ``__call__`` is one).  Anything else is plain.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, Union

from aiokafkawire.errors import KafkaError

__all__ = [
    "AsyncDeserializer",
    "AsyncSerializer",
    "Deserializer",
    "MessageField",
    "RecordDeserializationError",
    "SerializationContext",
    "SerializationError",
    "Serializer",
]

T_co = TypeVar("T_co", covariant=True)
_T = TypeVar("_T")

if TYPE_CHECKING:
    from typing_extensions import TypeVar as DefaultTypeVar

    #: The types of a consumer's record keys and values: its deserializers' return types
    #: (``Any`` without one, as before).
    K = DefaultTypeVar("K", default=Any)
    V = DefaultTypeVar("V", default=Any)
else:
    K = TypeVar("K")
    V = TypeVar("V")

Header = tuple[str, "bytes | None"]


class SerializationError(KafkaError):
    """A value could not be serialized or deserialized (the message says which and why)."""


class MessageField(str, enum.Enum):
    """Which part of a record a serializer works on."""

    KEY = "key"
    VALUE = "value"


@dataclass
class SerializationContext:
    """The record a serializer works for: its ``topic``, ``field`` (key or value) and
    ``headers`` (a list of ``(str, bytes | None)`` pairs; a serializer may append to them, a
    deserializer reads them)."""

    topic: str
    field: MessageField = MessageField.VALUE
    headers: list[tuple[str, bytes | None]] | None = None


class RecordDeserializationError(SerializationError):
    """A record's key or value could not be deserialized (Java's
    ``RecordDeserializationException``).

    Raised by ``getmany`` / ``async for`` / ``getone`` when the consumer's position reaches the
    record: the records before it were handed out, the position stays *at* it, so the error
    repeats until the application moves on: ``consumer.seek(err.topic_partition, err.offset
    + 1)`` skips it (after writing ``err.key`` / ``err.value``, the raw bytes, to a
    dead-letter topic if wanted).  ``__cause__`` is the deserializer's own exception.
    """

    def __init__(
        self,
        message: str,
        *,
        topic: str,
        partition: int,
        offset: int,
        field: MessageField,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes | None], ...] = (),
        timestamp: int = -1,
    ) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.field = field
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp

    @property
    def topic_partition(self) -> Any:
        """The record's partition as a :class:`~aiokafkawire.structs.TopicPartition`."""
        from aiokafkawire.structs import TopicPartition

        return TopicPartition(self.topic, self.partition)


class Serializer(Protocol):
    """``serializer(obj, ctx) -> bytes | None`` (confluent-kafka's signature)."""

    def __call__(self, obj: Any, ctx: SerializationContext) -> bytes | None: ...


class AsyncSerializer(Protocol):
    """``await serializer(obj, ctx) -> bytes | None`` (a registry serializer)."""

    def __call__(self, obj: Any, ctx: SerializationContext) -> Awaitable[bytes | None]: ...


class Deserializer(Protocol, Generic[T_co]):
    """``deserializer(data, ctx) -> T`` (confluent-kafka's signature)."""

    def __call__(self, data: bytes | None, ctx: SerializationContext) -> T_co: ...


class AsyncDeserializer(Protocol, Generic[T_co]):
    """``await deserializer(data, ctx) -> T`` (a registry deserializer)."""

    def __call__(self, data: bytes | None, ctx: SerializationContext) -> Awaitable[T_co]: ...


#: What a consumer's ``key_deserializer`` / ``value_deserializer`` may be.
#: (generic in the type it returns: ``AnyDeserializer[int]``).
# Union: a `|` of these generics is not subscriptable at run time on Python 3.10.
AnyDeserializer = Union[  # noqa: UP007
    AsyncDeserializer[_T],
    Deserializer[_T],
    Callable[[bytes | None, SerializationContext], Awaitable[_T]],
    Callable[[bytes | None], _T],
]

#: A synchronous deserializer, as ``Callable`` types (see :data:`AnyAsyncDeserializer`).
SyncDeserializer = Union[  # noqa: UP007
    Callable[[bytes | None, SerializationContext], _T], Callable[[bytes | None], _T]
]

#: An ``async`` deserializer ``async def f(data, ctx) -> T``: the consumers' constructor
#: overloads match it first, so that the records are typed ``T`` (an async function also fits
#: :class:`Deserializer` with an awaitable result, which alone leaves the type ambiguous,
#: hence ``Any``).  A one-argument ``async def f(data)`` still types the records ``Any``.
#: (A ``Callable``, not the :class:`AsyncDeserializer` protocol: mypy does not infer a
#: defaulted type variable through a protocol in an overload.)
AnyAsyncDeserializer = Callable[[bytes | None, SerializationContext], Awaitable[_T]]

# ---------------------------------------------------------------- telling the kinds apart

PLAIN = 0
CONTEXT = 1
ASYNC = 2


def _is_async(function: Any) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    if inspect.isfunction(function) or inspect.ismethod(function) or isinstance(function, type):
        return False
    return inspect.iscoroutinefunction(type(function).__call__)


def _takes_context(function: Any) -> bool:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: plain
        return False
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) < 2:
        return False
    second = positional[1]
    annotation = second.annotation
    named = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return second.name in ("ctx", "context") or "SerializationContext" in str(named)


def kind_of(function: Any) -> int:
    """:data:`PLAIN`, :data:`CONTEXT` or :data:`ASYNC` (async ones always get a context when
    their signature takes one, else only the object)."""
    if _is_async(function):
        return ASYNC
    return CONTEXT if _takes_context(function) else PLAIN


def _bound(function: Any, field: MessageField) -> Callable[[Any, str, Any], Any] | None:
    """``function`` as ``call(obj, topic, headers)`` (None: no function)."""
    if function is None:
        return None
    if _takes_context(function):
        return lambda obj, topic, headers: function(
            obj, SerializationContext(topic, field, headers)
        )
    return lambda obj, topic, headers: function(obj)


class SerializerPair:
    """The producer's key and value serializers when one of them wants a context or is async.

    ``plain_key`` / ``plain_value``: the serializers to apply the old way (None otherwise).
    """

    __slots__ = ("_key", "_key_async", "_value", "_value_async", "is_async")

    def __init__(self, key_serializer: Any, value_serializer: Any) -> None:
        self._key = _bound(key_serializer, MessageField.KEY)
        self._value = _bound(value_serializer, MessageField.VALUE)
        self._key_async = key_serializer is not None and _is_async(key_serializer)
        self._value_async = value_serializer is not None and _is_async(value_serializer)
        self.is_async = self._key_async or self._value_async

    def apply(self, topic: str, key: Any, value: Any, headers: list[Any]) -> tuple[Any, Any]:
        """Both serialized (sync serializers only)."""
        if self._key is not None:
            key = self._key(key, topic, headers)
        if self._value is not None:
            value = self._value(value, topic, headers)
        return key, value

    async def apply_async(
        self, topic: str, key: Any, value: Any, headers: list[Any]
    ) -> tuple[Any, Any]:
        """Both serialized, the async ones awaited (key first, as confluent-kafka does)."""
        if self._key is not None:
            key = self._key(key, topic, headers)
            if self._key_async:
                key = await key
        if self._value is not None:
            value = self._value(value, topic, headers)
            if self._value_async:
                value = await value
        return key, value


def context_serializers(key_serializer: Any, value_serializer: Any) -> SerializerPair | None:
    """A :class:`SerializerPair` when either serializer is a context or async one, else None
    (plain serializers keep their fast path)."""
    if any(s is not None and kind_of(s) != PLAIN for s in (key_serializer, value_serializer)):
        return SerializerPair(key_serializer, value_serializer)
    return None


_D = TypeVar("_D")


def plain_only(function: _D | None) -> _D | None:
    """``function`` when it is a plain one-argument callable, else None (applied later, with a
    context, by :class:`DeserializerPair`)."""
    if function is None or kind_of(function) != PLAIN:
        return None
    return function


def _raw_error(
    record: Any, field: MessageField, cause: BaseException
) -> RecordDeserializationError:
    topic, partition, offset, timestamp = record[0], record[1], record[2], record[3]
    error = RecordDeserializationError(
        f"{topic}-{partition} offset {offset}: the {field.value} could not be deserialized: "
        f"{cause!r} (seek past it to skip the record)",
        topic=topic,
        partition=partition,
        offset=offset,
        field=field,
        key=record[5],
        value=record[6],
        headers=record[7],
        timestamp=timestamp,
    )
    error.__cause__ = cause
    return error


def locate_failure(
    records: list[Any], key_deserializer: Any, value_deserializer: Any
) -> tuple[list[Any], RecordDeserializationError | None]:
    """Raw records (not deserialized yet) with plain deserializers that failed on one of them:
    the records before the failing one, deserialized, and the error for it (None, with every
    record, if none fails this time)."""
    good: list[Any] = []
    for record in records:
        key, value = record[5], record[6]
        field = MessageField.KEY
        try:
            if key_deserializer is not None:
                key = key_deserializer(key)
            field = MessageField.VALUE
            if value_deserializer is not None:
                value = value_deserializer(value)
        except Exception as exc:
            return good, _raw_error(record, field, exc)
        good.append(tuple.__new__(type(record), (*record[:5], key, value, *record[7:])))
    return good, None


class DeserializerPair:
    """The consumer's key and value deserializers that want a context or are async (a plain
    one is applied by the record decoder, in C, and left out here)."""

    __slots__ = ("_key", "_key_async", "_value", "_value_async")

    def __init__(
        self, key_deserializer: Any, value_deserializer: Any, *, plain_too: bool = False
    ) -> None:
        key, value = MessageField.KEY, MessageField.VALUE
        self._key, self._key_async = _context_only(key_deserializer, key, plain_too)
        self._value, self._value_async = _context_only(value_deserializer, value, plain_too)

    async def apply(
        self, records: list[Any]
    ) -> tuple[list[Any], RecordDeserializationError | None]:
        """``records`` (one partition's, in order) deserialized; on a failure, those before
        the failing record and the error for it.

        Records are done one after the other: an async registry deserializer asks for a schema
        id once (its first record) and finds it in its cache for the others.
        """
        key_call, key_async = self._key, self._key_async
        value_call, value_async = self._value, self._value_async
        out: list[Any] = []
        append = out.append
        new = tuple.__new__
        for record in records:
            topic = record[0]
            headers = record[7]
            key, value = record[5], record[6]
            field = MessageField.KEY
            try:
                if key_call is not None:
                    key = key_call(key, topic, headers)
                    if key_async:
                        key = await key
                field = MessageField.VALUE
                if value_call is not None:
                    value = value_call(value, topic, headers)
                    if value_async:
                        value = await value
            except Exception as exc:
                return out, _raw_error(record, field, exc)
            append(new(type(record), (*record[:5], key, value, *record[7:])))
        return out, None


def _context_only(
    function: Any, field: MessageField, plain_too: bool
) -> tuple[Callable[[Any, str, Any], Any] | None, bool]:
    if function is None or (kind_of(function) == PLAIN and not plain_too):
        return None, False
    if _takes_context(function):

        def call(data: Any, topic: str, headers: Any) -> Any:
            return function(data, SerializationContext(topic, field, list(headers)))

    else:

        def call(data: Any, topic: str, headers: Any) -> Any:
            return function(data)

    return call, _is_async(function)


def context_deserializers(
    key_deserializer: Any, value_deserializer: Any, *, plain_too: bool = False
) -> DeserializerPair | None:
    """A :class:`DeserializerPair` when either deserializer is a context or async one."""
    if plain_too:
        if key_deserializer is None and value_deserializer is None:
            return None
        return DeserializerPair(key_deserializer, value_deserializer, plain_too=True)
    if any(d is not None and kind_of(d) != PLAIN for d in (key_deserializer, value_deserializer)):
        return DeserializerPair(key_deserializer, value_deserializer)
    return None
