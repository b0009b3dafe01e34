"""Runtime support shared by the generated message modules (hand-written, not generated).

The generated modules hold one straight-line encode and decode function per (struct, version); the
helpers here cover the variable-length parts (strings, bytes, array lengths, tagged-field sections)
and the :class:`Message` base class that gives every generated class ``encode``/``decode``,
equality and a readable ``repr``.

Decoders work on ``bytes`` and return ``(value, new_position)``.  A short buffer makes them raise
:class:`struct.error`, :class:`IndexError` or :class:`ValueError`, which :meth:`Message.decode`
turns into :class:`~aiokafkawire.errors.ProtocolError`; encoders append to a ``bytearray`` and
their ``TypeError``/``struct.error`` failures become :class:`~aiokafkawire.errors.EncodeError`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar
from uuid import UUID, SafeUUID

from aiokafkawire.errors import EncodeError, ProtocolError
from aiokafkawire.protocol.primitives import (
    INT16,
    INT32,
    encode_unsigned_varint,
    read_unsigned_varint,
)

__all__ = [
    "MISSING",
    "ZERO_UUID",
    "AbsentFieldError",
    "ApiMessage",
    "Message",
    "RequestMessage",
    "ResponseMessage",
    "VersionedData",
    "read_unsigned_varint",
]

ZERO_UUID = UUID(int=0)

#: Marks "argument not given" in generated ``__init__`` methods whose default is a fresh mutable
#: object (a list or a struct), so that an explicit ``None`` can still mean null.
MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "MISSING", "__slots__": ()})()

_T = TypeVar("_T", bound="Message")

_unpack_i16 = INT16.unpack_from
_unpack_i32 = INT32.unpack_from
_pack_i16 = INT16.pack
_pack_i32 = INT32.pack
_uvarint = read_unsigned_varint

_NULL_I16 = b"\xff\xff"
_NULL_I32 = b"\xff\xff\xff\xff"


class AbsentFieldError(Exception):
    """Internal: a field missing from the version being encoded has a non-default value."""

    def __init__(self, owner: str, field: str) -> None:
        super().__init__(owner, field)
        self.owner = owner
        self.field = field


# Exceptions that a malformed or truncated buffer can provoke inside the generated decoders.
_DECODE_FAILURES = (
    struct.error,
    IndexError,
    ValueError,
    TypeError,
    OverflowError,
    MemoryError,
)
# Exceptions that a value of the wrong type or range provokes inside the generated encoders.
_ENCODE_FAILURES = (struct.error, TypeError, AttributeError, ValueError, OverflowError)


class Message:
    """Base of every generated message, header and struct class."""

    __slots__ = ()

    _ENCODERS: ClassVar[tuple[Callable[[bytearray, Any], None] | None, ...]] = ()
    _DECODERS: ClassVar[tuple[Callable[[bytes, int], tuple[Any, int]] | None, ...]] = ()
    #: Field names in spec order (``__slots__`` is sorted).
    _FIELDS: ClassVar[tuple[str, ...]] = ()
    #: Field descriptions for tests and tooling; the codecs never read it.
    _SCHEMA: ClassVar[tuple[tuple[Any, ...], ...]] = ()

    def encode(self, version: int) -> bytes:
        """Serialise this object (body only, no header) in the given protocol ``version``."""
        out = bytearray()
        encoders = self._ENCODERS
        encoder = encoders[version] if 0 <= version < len(encoders) else None
        if encoder is None:
            raise EncodeError(f"{type(self).__name__} has no version {version}")
        try:
            encoder(out, self)
        except EncodeError:
            raise
        except (AbsentFieldError, *_ENCODE_FAILURES) as exc:
            raise _encode_error(self, version, exc) from exc
        return bytes(out)

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append this object's encoding in ``version`` to ``out``."""
        encoders = self._ENCODERS
        encoder = encoders[version] if 0 <= version < len(encoders) else None
        if encoder is None:
            raise EncodeError(f"{type(self).__name__} has no version {version}")
        try:
            encoder(out, self)
        except EncodeError:
            raise
        except (AbsentFieldError, *_ENCODE_FAILURES) as exc:
            raise _encode_error(self, version, exc) from exc

    @classmethod
    def decode(cls: type[_T], buf: bytes | bytearray | memoryview, version: int) -> _T:
        """Parse a complete body in ``version``; trailing bytes are a :class:`ProtocolError`."""
        if type(buf) is not bytes:
            buf = bytes(buf)
        decoders = cls._DECODERS
        decoder = decoders[version] if 0 <= version < len(decoders) else None
        if decoder is None:
            raise ProtocolError(f"{cls.__name__} has no version {version}")
        try:
            obj, end = decoder(buf, 0)
        except ProtocolError:
            raise
        except _DECODE_FAILURES as exc:
            raise _decode_error(cls, version, exc) from exc
        if end != len(buf):
            if end > len(buf):
                raise ProtocolError(f"{cls.__name__} v{version}: truncated")
            raise ProtocolError(
                f"{cls.__name__} v{version}: {len(buf) - end} unexpected trailing bytes"
            )
        return obj

    @classmethod
    def decode_from(cls: type[_T], buf: bytes, pos: int, version: int) -> tuple[_T, int]:
        """Parse one object starting at ``pos`` of ``buf`` (``bytes``); return it and the end."""
        decoders = cls._DECODERS
        decoder = decoders[version] if 0 <= version < len(decoders) else None
        if decoder is None:
            raise ProtocolError(f"{cls.__name__} has no version {version}")
        try:
            obj, end = decoder(buf, pos)
        except ProtocolError:
            raise
        except _DECODE_FAILURES as exc:
            raise _decode_error(cls, version, exc) from exc
        if end > len(buf):
            raise ProtocolError(f"{cls.__name__} v{version}: truncated")
        return obj, end

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable

    #: Struct-valued fields whose default object is only built when first read: decoders leave
    #: them unset when the wire omits them (absent or tagged), which saves building e.g. three
    #: default structs per partition of every Fetch response.
    _LAZY_DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {}

    if not TYPE_CHECKING:  # hidden from type checkers so that misspelt attributes stay errors

        def __getattr__(self, name: str) -> Any:
            factory = type(self)._LAZY_DEFAULTS.get(name)
            if factory is None:
                raise AttributeError(
                    f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self
                )
            value = factory()
            setattr(self, name, value)
            return value

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"{type(self).__name__}({fields})"


def _encode_error(message: Message, version: int, exc: Exception) -> EncodeError:
    """The EncodeError to raise for a failure inside a generated encoder."""
    name = type(message).__name__
    if isinstance(exc, AbsentFieldError):
        return EncodeError(
            f"{name} v{version}: field {exc.owner}.{exc.field} does not exist in this "
            "version and is set to a non-default value"
        )
    return EncodeError(f"{name} v{version}: cannot encode a field value: {exc}")


def _decode_error(cls: type[Message], version: int, exc: Exception) -> ProtocolError:
    """The ProtocolError to raise for a failure inside a generated decoder."""
    return ProtocolError(f"{cls.__name__} v{version}: malformed or truncated: {exc}")


class ApiMessage(Message):
    """Base of the generated request and response classes (class attributes typed here)."""

    __slots__ = ()

    API_KEY: ClassVar[int]
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]
    #: First flexible version (compact encodings, tagged fields), or None.
    FLEXIBLE_VERSION: ClassVar[int | None]
    #: The spec marks its newest version as unstable (brokers may not enable it).
    LATEST_VERSION_UNSTABLE: ClassVar[bool]
    #: Header version by API version: request header v1/v2, response header v0/v1.
    HEADER_VERSIONS: ClassVar[tuple[int, ...]]

    @classmethod
    def header_version(cls, version: int) -> int:
        """The request/response header version that goes with API ``version``."""
        if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
            raise EncodeError(f"{cls.__name__} has no version {version}")
        return cls.HEADER_VERSIONS[version]


class RequestMessage(ApiMessage):
    """Base of the generated request classes."""

    __slots__ = ()

    RESPONSE_TYPE: ClassVar[type[ResponseMessage]]


class ResponseMessage(ApiMessage):
    """Base of the generated response classes."""

    __slots__ = ()

    REQUEST_TYPE: ClassVar[type[RequestMessage]]


class VersionedData(Message):
    """Base of the "data" structures carried as opaque bytes (consumer protocol)."""

    __slots__ = ()

    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0

    def encode_versioned(self, version: int | None = None) -> bytes:
        """Encode with the int16 version prefix used in JoinGroup/SyncGroup (default: newest)."""
        if version is None:
            version = self.MAX_VERSION
        out = bytearray(_pack_i16(version))
        self.encode_into(out, version)
        return bytes(out)

    @classmethod
    def decode_versioned(
        cls: type[_T], buf: bytes | bytearray | memoryview
    ) -> tuple[_T, int]:
        """Decode bytes written by :meth:`encode_versioned`; return ``(object, version)``.

        A version newer than this client knows is read with the newest known layout and its
        extra trailing bytes are ignored, as the Kafka Java client does (newer versions only
        append fields).
        """
        if type(buf) is not bytes:
            buf = bytes(buf)
        if len(buf) < 2:
            raise ProtocolError(f"{cls.__name__}: missing version prefix")
        (version,) = _unpack_i16(buf, 0)
        max_version: int = cls.MAX_VERSION  # type: ignore[attr-defined]
        if version < cls.MIN_VERSION:  # type: ignore[attr-defined]
            raise ProtocolError(f"{cls.__name__}: unsupported version {version}")
        if version > max_version:
            obj, _ = cls.decode_from(buf, 2, max_version)
            return obj, version
        obj, end = cls.decode_from(buf, 2, version)
        if end != len(buf):
            raise ProtocolError(f"{cls.__name__} v{version}: {len(buf) - end} trailing bytes")
        return obj, version


# ---------------------------------------------------------------- writers (append to bytearray)


def write_uvarint(out: bytearray, value: int) -> None:
    """Append an unsigned varint."""
    if 0 <= value < 0x80:
        out.append(value)
    else:
        out += encode_unsigned_varint(value)


def write_string(out: bytearray, value: str) -> None:
    """int16-length string."""
    data = value.encode()
    out += _pack_i16(len(data))
    out += data


def write_nullable_string(out: bytearray, value: str | None) -> None:
    """int16-length string, -1 for null."""
    if value is None:
        out += _NULL_I16
    else:
        data = value.encode()
        out += _pack_i16(len(data))
        out += data


def write_compact_string(out: bytearray, value: str) -> None:
    """Unsigned-varint (length + 1) string."""
    data = value.encode()
    n = len(data) + 1
    if n < 0x80:
        out.append(n)
    else:
        out += encode_unsigned_varint(n)
    out += data


def write_compact_nullable_string(out: bytearray, value: str | None) -> None:
    """Unsigned-varint (length + 1) string, 0 for null."""
    if value is None:
        out.append(0)
    else:
        write_compact_string(out, value)


def write_bytes(out: bytearray, value: bytes) -> None:
    """int32-length bytes."""
    out += _pack_i32(len(value))
    out += value


def write_nullable_bytes(out: bytearray, value: bytes | None) -> None:
    """int32-length bytes, -1 for null."""
    if value is None:
        out += _NULL_I32
    else:
        out += _pack_i32(len(value))
        out += value


def write_compact_bytes(out: bytearray, value: bytes) -> None:
    """Unsigned-varint (length + 1) bytes."""
    n = len(value) + 1
    if n < 0x80:
        out.append(n)
    else:
        out += encode_unsigned_varint(n)
    out += value


def write_compact_nullable_bytes(out: bytearray, value: bytes | None) -> None:
    """Unsigned-varint (length + 1) bytes, 0 for null."""
    if value is None:
        out.append(0)
    else:
        write_compact_bytes(out, value)


def write_array_length(out: bytearray, value: list[Any]) -> None:
    """int32 element count of a non-null array."""
    out += _pack_i32(len(value))


def write_compact_array_length(out: bytearray, value: list[Any]) -> None:
    """Unsigned-varint (count + 1) of a non-null array."""
    n = len(value) + 1
    if n < 0x80:
        out.append(n)
    else:
        out += encode_unsigned_varint(n)


def write_fixed_array(out: bytearray, fmt: str, values: list[Any]) -> None:
    """Pack an array of fixed-width numbers (``fmt`` is one struct code) in one call."""
    out += struct.pack(f">{len(values)}{fmt}", *values)


def write_uuid_array(out: bytearray, values: list[UUID]) -> None:
    """Append the 16 raw bytes of each UUID."""
    for value in values:
        out += value.bytes


def write_tagged_fields(
    out: bytearray,
    known: Sequence[tuple[int, bytes | bytearray]],
    unknown: Iterable[tuple[int, bytes]] | None,
) -> None:
    """Write a tagged-field section: count, then (tag, size, data) in ascending tag order."""
    fields = list(known)
    if unknown:
        fields.extend(unknown)
        fields.sort(key=_tag_of)
    write_uvarint(out, len(fields))
    for tag, data in fields:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


def _tag_of(item: tuple[int, Any]) -> int:
    return item[0]


# ---------------------------------------------------------------- readers (bytes, pos) -> (v, pos)


def _check_end(buf: bytes, end: int) -> None:
    if end > len(buf):
        raise ProtocolError(f"length runs {end - len(buf)} bytes past the end of the buffer")


def read_string(buf: bytes, pos: int) -> tuple[str, int]:
    """int16-length string; a null is read as "" (librdkafka sends null hosts in error answers)."""
    (n,) = _unpack_i16(buf, pos)
    pos += 2
    if n < 0:
        return "", pos
    end = pos + n
    if end > len(buf):
        _check_end(buf, end)
    return buf[pos:end].decode(), end


def read_nullable_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    """int16-length string, negative length for null."""
    (n,) = _unpack_i16(buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(buf):
        _check_end(buf, end)
    return buf[pos:end].decode(), end


def read_compact_string(buf: bytes, pos: int) -> tuple[str, int]:
    """Unsigned-varint (length + 1) string; a null is read as "" (see :func:`read_string`)."""
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        return "", pos
    end = pos + n - 1
    if end > len(buf):
        _check_end(buf, end)
    return buf[pos:end].decode(), end


def read_compact_nullable_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    """Unsigned-varint (length + 1) string, 0 for null."""
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(buf):
        _check_end(buf, end)
    return buf[pos:end].decode(), end


def read_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    """int32-length bytes; a null reads as ``b""`` (librdkafka's mock sends null assignments)."""
    (n,) = _unpack_i32(buf, pos)
    pos += 4
    if n < 0:
        return b"", pos
    end = pos + n
    if end > len(buf):
        _check_end(buf, end)
    return buf[pos:end], end


def read_nullable_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    """int32-length bytes, negative length for null."""
    (n,) = _unpack_i32(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(buf):
        _check_end(buf, end)
    return buf[pos:end], end


def _read_length_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned varint with the one- and two-byte cases (lengths below 16 KiB) inline."""
    n = buf[pos]
    if n < 0x80:
        return n, pos + 1
    second = buf[pos + 1]
    if second < 0x80:
        return (n & 0x7F) | (second << 7), pos + 2
    return _uvarint(buf, pos)


def read_compact_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    """Unsigned-varint (length + 1) bytes; a null reads as ``b""`` (see :func:`read_bytes`)."""
    n, pos = _read_length_varint(buf, pos)
    if n == 0:
        return b"", pos
    end = pos + n - 1
    if end > len(buf):
        _check_end(buf, end)
    return buf[pos:end], end


def read_compact_nullable_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    """Unsigned-varint (length + 1) bytes, 0 for null."""
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = _read_length_varint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(buf):
        _check_end(buf, end)
    return buf[pos:end], end


def read_array_length(buf: bytes, pos: int) -> tuple[int, int]:
    """int32 count of a non-nullable array whose elements take at least one byte each."""
    (n,) = _unpack_i32(buf, pos)
    pos += 4
    if n < 0 or n > len(buf) - pos:
        raise ProtocolError(f"invalid array length {n}")
    return n, pos


def read_nullable_array_length(buf: bytes, pos: int) -> tuple[int, int]:
    """int32 count, -1 for a null array (elements take at least one byte each)."""
    (n,) = _unpack_i32(buf, pos)
    pos += 4
    if n < 0:
        return -1, pos
    if n > len(buf) - pos:
        raise ProtocolError(f"invalid array length {n}")
    return n, pos


def read_compact_array_length(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned-varint (count + 1) of a non-nullable array (elements of at least one byte)."""
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    n -= 1
    if n < 0 or n > len(buf) - pos:
        raise ProtocolError(f"invalid compact array length {n}")
    return n, pos


def read_compact_nullable_array_length(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned-varint (count + 1), returning -1 for a null array."""
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    n -= 1
    if n > len(buf) - pos:
        raise ProtocolError(f"invalid compact array length {n}")
    return n, pos


def read_array_length_unchecked(buf: bytes, pos: int, compact: bool) -> tuple[int, int]:
    """Array count for elements that may be empty (no bound from the remaining bytes)."""
    if compact:
        n, pos = _uvarint(buf, pos)
        return n - 1, pos
    (n,) = _unpack_i32(buf, pos)
    return (n if n >= 0 else -1), pos + 4


def read_fixed_array(buf: bytes, pos: int, n: int, fmt: str, width: int) -> tuple[list[Any], int]:
    """Unpack ``n`` fixed-width numbers (one struct code ``fmt`` of ``width`` bytes)."""
    return list(struct.unpack_from(f">{n}{fmt}", buf, pos)), pos + n * width


_set_attribute = object.__setattr__
_new_object = object.__new__
_UNKNOWN_SAFETY = SafeUUID.unknown


def uuid_from_bytes(raw: bytes) -> UUID:
    """Build a UUID from 16 bytes, sharing the all-zero instance.

    ``UUID(int=...)`` validates its keyword arguments on every call; filling the two slots
    directly is several times faster and yields an equal, hashable, immutable UUID.
    """
    value = int.from_bytes(raw, "big")
    if value == 0:
        return ZERO_UUID
    result: UUID = _new_object(UUID)
    _set_attribute(result, "int", value)
    _set_attribute(result, "is_safe", _UNKNOWN_SAFETY)
    return result


def read_uuid_array(buf: bytes, pos: int, n: int) -> tuple[list[UUID], int]:
    """Read ``n`` UUIDs."""
    end = pos + 16 * n
    _check_end(buf, end)
    return [uuid_from_bytes(buf[i : i + 16]) for i in range(pos, end, 16)], end


def read_unknown_tagged_fields(buf: bytes, pos: int) -> tuple[list[tuple[int, bytes]] | None, int]:
    """Read a tagged-field section of a struct that knows no tags in this version."""
    count, pos = _uvarint(buf, pos)
    unknown: list[tuple[int, bytes]] = []
    for _ in range(count):
        tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        end = pos + size
        _check_end(buf, end)
        unknown.append((tag, buf[pos:end]))
        pos = end
    return (unknown or None), pos


def read_tag_header(buf: bytes, pos: int) -> tuple[int, int, int]:
    """Read one tagged field's tag and size; return ``(tag, start, end)``."""
    tag, pos = _uvarint(buf, pos)
    size, pos = _uvarint(buf, pos)
    end = pos + size
    _check_end(buf, end)
    return tag, pos, end


def check_tagged_end(pos: int, end: int) -> None:
    """A known tagged field must fill exactly its declared size."""
    if pos != end:
        raise ProtocolError(f"tagged field size mismatch ({pos - end:+d} bytes)")


# ------------------------------------------------------------ arrays of fixed-width numbers

# Precompiled structs for the common short arrays (by struct code, indexed by element count);
# generated code uses them inline, longer arrays go through struct's own format cache.
SMALL_ARRAY = 32
NUMBER_ARRAY_STRUCTS: dict[str, tuple[struct.Struct, ...]] = {
    code: tuple(struct.Struct(f">{n}{code}") for n in range(SMALL_ARRAY))
    for code in ("b", "h", "i", "q", "H", "I", "d", "?")
}

ArrayReader = Callable[[bytes, int], tuple[Any, int]]
ArrayWriter = Callable[[bytearray, Any], None]


def _fixed_array_codec(code: str, width: int, compact: bool, nullable: bool) -> tuple[
    ArrayReader, ArrayWriter
]:
    """Reader and writer of an array of one fixed-width number type, length prefix included."""
    structs = NUMBER_ARRAY_STRUCTS[code]
    null_marker = b"\x00" if compact else _NULL_I32
    small = SMALL_ARRAY

    def read(buf: bytes, pos: int) -> tuple[list[Any] | None, int]:
        if compact:
            n = buf[pos]
            if n < 0x80:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            n -= 1
        else:
            (n,) = _unpack_i32(buf, pos)
            pos += 4
        if 0 <= n < small:
            return list(structs[n].unpack_from(buf, pos)), pos + n * width
        if n < 0:
            if nullable:
                return None, pos
            raise ProtocolError(f"invalid array length {n}")
        if n > len(buf) - pos:
            raise ProtocolError(f"invalid array length {n}")
        return list(struct.unpack_from(f">{n}{code}", buf, pos)), pos + n * width

    def write(out: bytearray, values: list[Any] | None) -> None:
        if values is None:
            if not nullable:
                raise EncodeError("null array in a non-nullable field")
            out += null_marker
            return
        n = len(values)
        if compact:
            if n < 0x7F:
                out.append(n + 1)
            else:
                out += encode_unsigned_varint(n + 1)
        else:
            out += _pack_i32(n)
        if n < small:
            out += structs[n].pack(*values)
        else:
            out += struct.pack(f">{n}{code}", *values)

    return read, write


read_int8_array, write_int8_array = _fixed_array_codec("b", 1, False, False)
read_nullable_int8_array, write_nullable_int8_array = _fixed_array_codec("b", 1, False, True)
read_compact_int8_array, write_compact_int8_array = _fixed_array_codec("b", 1, True, False)
read_compact_nullable_int8_array, write_compact_nullable_int8_array = _fixed_array_codec(
    "b", 1, True, True
)
read_int16_array, write_int16_array = _fixed_array_codec("h", 2, False, False)
read_nullable_int16_array, write_nullable_int16_array = _fixed_array_codec("h", 2, False, True)
read_compact_int16_array, write_compact_int16_array = _fixed_array_codec("h", 2, True, False)
read_compact_nullable_int16_array, write_compact_nullable_int16_array = _fixed_array_codec(
    "h", 2, True, True
)
read_int32_array, write_int32_array = _fixed_array_codec("i", 4, False, False)
read_nullable_int32_array, write_nullable_int32_array = _fixed_array_codec("i", 4, False, True)
read_compact_int32_array, write_compact_int32_array = _fixed_array_codec("i", 4, True, False)
read_compact_nullable_int32_array, write_compact_nullable_int32_array = _fixed_array_codec(
    "i", 4, True, True
)
read_int64_array, write_int64_array = _fixed_array_codec("q", 8, False, False)
read_nullable_int64_array, write_nullable_int64_array = _fixed_array_codec("q", 8, False, True)
read_compact_int64_array, write_compact_int64_array = _fixed_array_codec("q", 8, True, False)
read_compact_nullable_int64_array, write_compact_nullable_int64_array = _fixed_array_codec(
    "q", 8, True, True
)
read_uint16_array, write_uint16_array = _fixed_array_codec("H", 2, False, False)
read_nullable_uint16_array, write_nullable_uint16_array = _fixed_array_codec("H", 2, False, True)
read_compact_uint16_array, write_compact_uint16_array = _fixed_array_codec("H", 2, True, False)
read_compact_nullable_uint16_array, write_compact_nullable_uint16_array = _fixed_array_codec(
    "H", 2, True, True
)
read_float64_array, write_float64_array = _fixed_array_codec("d", 8, False, False)
read_nullable_float64_array, write_nullable_float64_array = _fixed_array_codec("d", 8, False, True)
read_compact_float64_array, write_compact_float64_array = _fixed_array_codec("d", 8, True, False)
read_compact_nullable_float64_array, write_compact_nullable_float64_array = _fixed_array_codec(
    "d", 8, True, True
)
read_bool_array, write_bool_array = _fixed_array_codec("?", 1, False, False)
read_nullable_bool_array, write_nullable_bool_array = _fixed_array_codec("?", 1, False, True)
read_compact_bool_array, write_compact_bool_array = _fixed_array_codec("?", 1, True, False)
read_compact_nullable_bool_array, write_compact_nullable_bool_array = _fixed_array_codec(
    "?", 1, True, True
)
