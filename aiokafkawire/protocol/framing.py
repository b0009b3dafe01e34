"""Sans-I/O Kafka framing: correlation ids, request/response headers, size-delimited frames.

:class:`KafkaFraming` is the client side of one broker connection.  It turns request objects into
bytes to write (:meth:`KafkaFraming.send_request`) and bytes read from the socket into decoded
responses (:meth:`KafkaFraming.receive_data`), remembering which request each outstanding
correlation id belongs to.  It never touches sockets or the event loop, so the connection layer owns
all I/O and timing, and tests can drive it byte by byte.

Wire rules implemented here (see ``protocol.html`` of the Kafka protocol guide):

* every frame is an ``int32`` size followed by that many bytes;
* request header v1 is ``api_key:int16 api_version:int16 correlation_id:int32 client_id:string``
  (a classic nullable string, even in v2); v2 (used iff the request version is flexible) appends a
  tagged-field section;
* response header v0 is ``correlation_id:int32``; v1 (used iff the response version is flexible,
  except for ApiVersions whose response header is always v0) appends a tagged-field section;
* a broker answers the requests of one connection in order, so a response must match the oldest
  outstanding request;
* a Produce request with ``acks == 0`` gets no response at all;
* bytes after the last field of a response body are ignored, as the Java client and librdkafka do
  (request bodies decoded by the server helpers must fit exactly);
* a broker that does not support the requested ApiVersions version answers in v0; such a response
  is decoded as v0 and reported with ``api_version == 0``.

Module-level helpers (:func:`decode_request`, :func:`encode_response`, :class:`FrameSplitter`) give
the server side of the same rules, for test brokers and relays.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple

from aiokafkawire.errors import EncodeError, FrameTooLargeError, KafkaError, ProtocolError
from aiokafkawire.protocol.messages import (
    REQUEST_TYPES,
    RequestMessage,
    ResponseMessage,
)
from aiokafkawire.protocol.primitives import Buffer, read_unsigned_varint

__all__ = [
    "API_VERSIONS_API_KEY",
    "DEFAULT_MAX_FRAME_SIZE",
    "PRODUCE_API_KEY",
    "FramePart",
    "FrameSplitter",
    "KafkaFraming",
    "RequestHeaderData",
    "ResponseEvent",
    "decode_request",
    "decode_request_header",
    "encode_request_header",
    "encode_response",
    "encode_response_header",
    "request_header_version",
    "response_header_version",
]

PRODUCE_API_KEY = 0
API_VERSIONS_API_KEY = 18
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

_MAX_CORRELATION_ID = 0x7FFFFFFF
# Compacting the receive buffer moves the unread tail to the front; doing it only once the consumed
# prefix is large keeps the total copying linear in the bytes received.
_COMPACT_THRESHOLD = 64 * 1024
# Frames at least this large are collected chunk by chunk and joined once (see FrameSplitter).
_LARGE_FRAME = 256 * 1024

_SIZE = struct.Struct(">i")
_REQUEST_HEADER_FIXED = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_EMPTY_TAGGED_FIELDS = b"\x00"
_NULL_STRING = b"\xff\xff"


@dataclass(frozen=True, slots=True)
class ResponseEvent:
    """One decoded response, matched to the request that asked for it.

    ``api_version`` is the version the body was decoded with: the request's version, except for an
    ApiVersions error answered in v0.
    """

    correlation_id: int
    api_key: int
    api_version: int
    response: Any

    @property
    def version(self) -> int:
        """Alias of :attr:`api_version` (the name used in docs/DESIGN.md)."""
        return self.api_version


class RequestHeaderData(NamedTuple):
    """A decoded request header (server side)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int


class _InFlight(NamedTuple):
    correlation_id: int
    api_key: int
    api_version: int
    response_type: type[ResponseMessage]
    response_header_version: int


def _is_flexible(flexible_version: int | None, version: int) -> bool:
    return flexible_version is not None and version >= flexible_version


def request_header_version(flexible_version: int | None, api_version: int) -> int:
    """Request header version for an API whose first flexible version is ``flexible_version``.

    v2 iff the request version is flexible, else v1.  (v0, which lacks ``client_id``, is only needed
    by ControlledShutdown v0, which this client never sends.)
    """
    return 2 if _is_flexible(flexible_version, api_version) else 1


def response_header_version(api_key: int, flexible_version: int | None, api_version: int) -> int:
    """Response header version: v1 iff the response is flexible, but always v0 for ApiVersions.

    ApiVersions is the exception because a client must be able to read the answer (an
    UNSUPPORTED_VERSION error) before it knows which versions the broker speaks.
    """
    if api_key == API_VERSIONS_API_KEY:
        return 0
    return 1 if _is_flexible(flexible_version, api_version) else 0


def _encode_client_id(client_id: str | None) -> bytes:
    if client_id is None:
        return _NULL_STRING
    raw = client_id.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise EncodeError(f"client_id is {len(raw)} bytes, more than a Kafka string can hold")
    return _INT16.pack(len(raw)) + raw


def encode_request_header(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    header_version: int,
) -> bytes:
    """Encode a request header of the given header version (0, 1 or 2)."""
    fixed = _REQUEST_HEADER_FIXED.pack(api_key, api_version, correlation_id)
    if header_version == 0:
        return fixed
    if header_version == 1:
        return fixed + _encode_client_id(client_id)
    if header_version == 2:
        return fixed + _encode_client_id(client_id) + _EMPTY_TAGGED_FIELDS
    raise EncodeError(f"unknown request header version {header_version}")


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    """Encode a response header of the given header version (0 or 1)."""
    if header_version == 0:
        return _INT32.pack(correlation_id)
    if header_version == 1:
        return _INT32.pack(correlation_id) + _EMPTY_TAGGED_FIELDS
    raise EncodeError(f"unknown response header version {header_version}")


def _skip_tagged_fields(buf: Buffer, pos: int, end: int) -> int:
    """Skip a tagged-field section (headers define no tags, so every one is unknown)."""
    count, pos = read_unsigned_varint(buf, pos)
    for _ in range(count):
        _tag, pos = read_unsigned_varint(buf, pos)
        size, pos = read_unsigned_varint(buf, pos)
        pos += size
        if pos > end:
            raise ProtocolError("tagged field runs past the end of the header")
    if pos > end:
        raise ProtocolError("tagged fields run past the end of the frame")
    return pos


class FrameSplitter:
    """Cuts a byte stream into the bodies of size-prefixed Kafka frames.

    Feed it chunks of any size; it returns each complete frame body (without the 4-byte size) as
    ``bytes``.  Small frames are assembled in one ``bytearray`` with a read offset, compacted only
    when the consumed prefix grows large, so the work stays linear in the bytes received.  A large
    frame (a big Fetch response) is instead collected as a list of chunks and joined once at the
    end, so its bytes are copied only once however many reads it spans.
    """

    __slots__ = ("_buffer", "_large_chunks", "_large_missing", "_max_frame_size", "_offset")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._buffer = bytearray()
        self._offset = 0
        self._max_frame_size = max_frame_size
        # Pieces of the large frame being received (None when there is none) and its missing bytes.
        self._large_chunks: list[bytes] | None = None
        self._large_missing = 0

    @property
    def buffered(self) -> int:
        """Number of received bytes not yet returned as part of a frame."""
        if self._large_chunks is not None:
            return 4 + sum(len(chunk) for chunk in self._large_chunks)
        return len(self._buffer) - self._offset

    def clear(self) -> None:
        """Drop every buffered byte."""
        self._buffer = bytearray()
        self._offset = 0
        self._large_chunks = None
        self._large_missing = 0

    def _check_size(self, size: int) -> None:
        if size < 0:
            raise ProtocolError(f"negative frame size {size}")
        if size > self._max_frame_size:
            raise FrameTooLargeError(
                f"frame of {size} bytes exceeds the maximum of {self._max_frame_size} bytes"
            )

    def feed(self, data: Buffer) -> list[bytes]:
        """Add received bytes; return the bodies of the frames completed by them, in order.

        Raises :class:`ProtocolError` on a negative size and :class:`FrameTooLargeError` on a size
        above the maximum, as soon as the 4 size bytes have arrived (the splitter is then unusable).
        """
        frames: list[bytes] = []
        if (
            self._large_chunks is not None
            and type(data) is bytes
            and len(data) < self._large_missing
        ):
            # Hot path while a big frame streams in: keep the chunk itself, no copy.
            self._large_chunks.append(data)
            self._large_missing -= len(data)
            return frames
        with memoryview(data) as raw, raw.cast("B") as view:
            start = 0
            if self._large_chunks is not None:
                start = self._continue_large(view, frames)
                if self._large_chunks is not None:
                    return frames
            if start < len(view):
                self._feed_small(view[start:], frames)
        return frames

    def _continue_large(self, view: memoryview, frames: list[bytes]) -> int:
        """Add to the pending large frame; return how much of ``view`` it used."""
        chunks = self._large_chunks
        assert chunks is not None
        missing = self._large_missing
        if len(view) < missing:
            chunks.append(view.tobytes())
            self._large_missing = missing - len(view)
            return len(view)
        chunks.append(view[:missing].tobytes())
        frames.append(b"".join(chunks))
        self._large_chunks = None
        self._large_missing = 0
        return missing

    def _feed_small(self, view: memoryview, frames: list[bytes]) -> None:
        if self._offset == len(self._buffer):
            # Nothing buffered: cut whole frames straight out of the chunk, buffering only the rest.
            pos = self._cut(view, 0, frames)
            self._buffer = bytearray(view[pos:]) if pos < len(view) else bytearray()
            self._offset = 0
        else:
            buffer = self._buffer
            buffer += view
            # The view must be released before the bytearray is resized below.
            with memoryview(buffer) as buffer_view:
                pos = self._cut(buffer_view, self._offset, frames)
            if pos == len(buffer):
                self._buffer = bytearray()
                self._offset = 0
            elif pos >= _COMPACT_THRESHOLD:
                del buffer[:pos]
                self._offset = 0
            else:
                self._offset = pos
        self._maybe_start_large()

    def _maybe_start_large(self) -> None:
        """Switch to chunk collection when the incomplete frame in the buffer is large."""
        buffer = self._buffer
        available = len(buffer) - self._offset
        if available < 4:
            return
        (size,) = _SIZE.unpack_from(buffer, self._offset)
        if size < _LARGE_FRAME:
            return
        body_start = self._offset + 4
        self._large_chunks = [bytes(buffer[body_start:])]
        self._large_missing = size - (len(buffer) - body_start)
        self._buffer = bytearray()
        self._offset = 0

    def _cut(self, view: memoryview, pos: int, frames: list[bytes]) -> int:
        """Append the complete frames of ``view`` from ``pos`` on; return where the rest starts."""
        end = len(view)
        unpack_size = _SIZE.unpack_from
        while end - pos >= 4:
            (size,) = unpack_size(view, pos)
            if size < 0 or size > self._max_frame_size:
                self._check_size(size)
            if end - pos - 4 < size:
                break
            # One copy per frame: the decoders need immutable ``bytes``.
            frames.append(view[pos + 4 : pos + 4 + size].tobytes())
            pos += 4 + size
        return pos


def _expects_response(request: Any) -> bool:
    # Produce with acks=0 is the only request the broker never answers.
    return not (request.API_KEY == PRODUCE_API_KEY and getattr(request, "acks", -1) == 0)


# ``bytes`` fields at least this long are referenced by a frame, not copied
# (KafkaFraming.send_request_parts): below it, a copy costs less than writing one more buffer.
_REFERENCE_MIN = 32 * 1024

#: A part of a frame (:meth:`KafkaFraming.send_request_parts`).
FramePart = bytes | memoryview


class _ReferencingBuffer(bytearray):
    """A request body being encoded, which keeps large ``bytes`` fields out of itself.

    The generated encoders append every field with ``out += value``; a ``bytes`` value, or a
    read-only ``memoryview`` (a built record batch, which its holder never changes), of
    :data:`_REFERENCE_MIN` bytes or more is noted with its position instead of copied, and
    :meth:`parts` puts it back between the bytes around it.  Anything mutable is copied.
    """

    __slots__ = ("_references", "referenced")

    def __init__(self) -> None:
        super().__init__()
        self._references: list[tuple[int, FramePart]] = []
        self.referenced = 0  # bytes held by reference

    def __iadd__(self, value: Any) -> _ReferencingBuffer:  # type: ignore[misc]
        kind = type(value)
        immutable = kind is bytes or (kind is memoryview and value.readonly)
        if immutable and len(value) >= _REFERENCE_MIN:
            self._references.append((len(self), value))
            self.referenced += len(value)
            return self
        bytearray.__iadd__(self, value)
        return self

    def parts(self) -> list[FramePart]:
        """The encoding, as the bytes between references and the references themselves (the
        first part is always there, maybe empty: the frame's header joins it)."""
        if not self._references:
            return [bytes(self)]
        parts: list[FramePart] = []
        start = 0
        with memoryview(self) as view:
            for position, value in self._references:
                if position > start or not parts:
                    parts.append(bytes(view[start:position]))
                parts.append(value)
                start = position
            if start < len(view):
                parts.append(bytes(view[start:]))
        return parts


class KafkaFraming:
    """Client-side framing state of one broker connection (no I/O).

    ``send_request`` assigns correlation ids (int32, wrapping back to 0 after 2**31 - 1) and
    returns complete frames; ``receive_data`` consumes raw bytes and returns
    :class:`ResponseEvent` objects in arrival order.  A protocol violation by the peer raises
    :class:`~aiokafkawire.errors.ProtocolError` (or its subclass
    :class:`~aiokafkawire.errors.FrameTooLargeError`), after which this object is dead:
    :attr:`closed` is true, :attr:`error` holds the exception and every later call raises it
    again.  The connection must then be closed.
    """

    def __init__(
        self,
        client_id: str | None = None,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        initial_correlation_id: int = 0,
    ) -> None:
        """Create the framing for a new connection.

        ``initial_correlation_id`` is the first id handed out (useful to test wrap-around).
        """
        if not 0 <= initial_correlation_id <= _MAX_CORRELATION_ID:
            raise ValueError(f"initial_correlation_id out of int32 range: {initial_correlation_id}")
        self.client_id = client_id
        self.max_frame_size = max_frame_size
        self._encoded_client_id = _encode_client_id(client_id)
        self._next_correlation_id = initial_correlation_id
        self._in_flight: deque[_InFlight] = deque()
        self._splitter = FrameSplitter(max_frame_size)
        self._error: KafkaError | None = None

    # -- state ------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Number of requests sent and still waiting for their response."""
        return len(self._in_flight)

    def pending(self) -> list[int]:
        """Correlation ids of the outstanding requests, oldest first."""
        return [entry.correlation_id for entry in self._in_flight]

    @property
    def closed(self) -> bool:
        """True once a protocol error has made this framing unusable."""
        return self._error is not None

    @property
    def error(self) -> KafkaError | None:
        """The protocol error that killed this framing, if any."""
        return self._error

    @property
    def buffered(self) -> int:
        """Received bytes that do not yet form a complete frame."""
        return self._splitter.buffered

    def reset(self) -> list[int]:
        """Forget every outstanding request and buffered byte; return the forgotten ids.

        For the connection layer when it fails all waiters.  A dead framing stays dead.
        """
        forgotten = self.pending()
        self._in_flight.clear()
        self._splitter.clear()
        return forgotten

    def fail(self, error: KafkaError) -> None:
        """Mark this framing dead with ``error`` (e.g. when the connection breaks)."""
        if self._error is None:
            self._error = error

    def _raise_if_dead(self) -> None:
        if self._error is not None:
            raise self._error

    # -- sending ----------------------------------------------------------------------------

    def send_request(self, request: RequestMessage, version: int) -> tuple[int, bytes, bool]:
        """Frame ``request`` in ``version``: return ``(correlation_id, frame, expects_response)``.

        The frame includes the size prefix and the header.  A request that expects a response is
        remembered as in flight.  An :class:`EncodeError` from the body leaves the state untouched
        (no id is consumed).
        """
        self._check_version(request, version)
        body = request.encode(version)
        correlation_id, frame, expects_response = self._framed(request, version, [body], len(body))
        return correlation_id, frame[0], expects_response

    def send_request_parts(
        self, request: RequestMessage, version: int
    ) -> tuple[int, list[FramePart], bool]:
        """As :meth:`send_request`, with the frame as a list of buffers to write in order.

        ``bytes`` fields (or read-only ``memoryview`` ones) of 32 KiB or more, a Produce
        request's record batches, are parts of the list themselves, not copied into the frame;
        the other bytes are joined around them.  One part when the request has no such field.
        """
        self._check_version(request, version)
        out = _ReferencingBuffer()
        request.encode_into(out, version)
        return self._framed(request, version, out.parts(), len(out) + out.referenced)

    def _check_version(self, request: RequestMessage, version: int) -> None:
        self._raise_if_dead()
        if not request.MIN_VERSION <= version <= request.MAX_VERSION:
            raise EncodeError(
                f"{type(request).__name__} has versions {request.MIN_VERSION}-"
                f"{request.MAX_VERSION}, not {version}"
            )

    def _framed(
        self, request: RequestMessage, version: int, body: list[Any], body_size: int
    ) -> tuple[int, list[Any], bool]:
        """The frame of an encoded body, the request taken in flight: ``body`` itself, its
        first part joined to the size prefix and the header."""
        api_key = request.API_KEY
        correlation_id = self._next_correlation_id
        fixed = _REQUEST_HEADER_FIXED.pack(api_key, version, correlation_id)
        if _is_flexible(request.FLEXIBLE_VERSION, version):
            header_size = 8 + len(self._encoded_client_id) + 1
            head: tuple[bytes, ...] = (
                _SIZE.pack(header_size + body_size),
                fixed,
                self._encoded_client_id,
                _EMPTY_TAGGED_FIELDS,
                body[0],
            )
        else:
            header_size = 8 + len(self._encoded_client_id)
            head = (_SIZE.pack(header_size + body_size), fixed, self._encoded_client_id, body[0])
        body[0] = b"".join(head)
        self._next_correlation_id = (
            0 if correlation_id == _MAX_CORRELATION_ID else correlation_id + 1
        )
        expects_response = _expects_response(request)
        if expects_response:
            response_type = request.RESPONSE_TYPE
            self._in_flight.append(
                _InFlight(
                    correlation_id,
                    api_key,
                    version,
                    response_type,
                    response_header_version(api_key, response_type.FLEXIBLE_VERSION, version),
                )
            )
        return correlation_id, body, expects_response

    # -- receiving --------------------------------------------------------------------------

    def receive_data(self, data: Buffer) -> list[ResponseEvent]:
        """Consume bytes read from the socket; return the responses they complete, in order.

        Raises :class:`ProtocolError` (unexpected or out-of-order correlation id, negative size,
        undecodable body) or :class:`FrameTooLargeError`; the framing is dead afterwards.
        """
        self._raise_if_dead()
        try:
            frames = self._splitter.feed(data)
        except KafkaError as exc:
            self._error = exc
            raise
        events: list[ResponseEvent] = []
        for frame in frames:
            try:
                events.append(self._decode_response_frame(frame))
            except KafkaError as exc:
                # Responses decoded earlier in this call are dropped too: the connection is about
                # to fail every outstanding request anyway.
                self._error = exc
                raise
        return events

    def _decode_response_frame(self, frame: bytes) -> ResponseEvent:
        if len(frame) < 4:
            raise ProtocolError(f"response frame of {len(frame)} bytes has no correlation id")
        (correlation_id,) = _INT32.unpack_from(frame, 0)
        if not self._in_flight:
            raise ProtocolError(f"response with correlation id {correlation_id}, none in flight")
        expected = self._in_flight[0]
        if correlation_id != expected.correlation_id:
            raise ProtocolError(
                f"response correlation id {correlation_id} does not match the oldest request "
                f"in flight ({expected.correlation_id})"
            )
        self._in_flight.popleft()
        pos = 4
        if expected.response_header_version >= 1:
            try:
                pos = _skip_tagged_fields(frame, pos, len(frame))
            except (IndexError, ValueError) as exc:
                raise ProtocolError(f"malformed response header: {exc}") from exc
        response, version = _decode_response_body(
            expected.response_type, expected.api_key, expected.api_version, frame, pos
        )
        return ResponseEvent(correlation_id, expected.api_key, version, response)


def _decode_body(
    message_type: Any, frame: bytes, pos: int, version: int, *, allow_trailing: bool = False
) -> Any:
    """Decode the body that fills ``frame`` from ``pos`` to its end.

    ``allow_trailing`` tolerates bytes after the last field, as the Java client and librdkafka do
    for responses (librdkafka's mock broker appends one to some flexible responses).
    """
    name = getattr(message_type, "__name__", repr(message_type))
    try:
        decode_from = getattr(message_type, "decode_from", None)
        if decode_from is None:
            return message_type.decode(frame[pos:], version)
        # Decoding in place avoids copying the body (a Fetch response can be megabytes).
        message, end = decode_from(frame, pos, version)
    except ProtocolError:
        raise
    except Exception as exc:
        # Any failure inside a generated decoder (short buffer, bad UTF-8, invalid varint...) means
        # the peer sent bytes that are not this message: report it as a protocol violation.
        raise ProtocolError(f"cannot decode {name} v{version}: {exc!r}") from exc
    if end != len(frame) and not (allow_trailing and end < len(frame)):
        raise ProtocolError(f"{name} v{version}: {len(frame) - end} unexpected trailing bytes")
    return message


def _decode_response_body(
    response_type: Any, api_key: int, version: int, frame: bytes, pos: int
) -> tuple[Any, int]:
    """Decode a response body starting at ``pos``; return it and the version it was decoded with."""
    if api_key == API_VERSIONS_API_KEY and version > 0 and len(frame) - pos >= 2:
        (error_code,) = _INT16.unpack_from(frame, pos)
        if error_code != 0:
            # A broker that does not support the requested ApiVersions version answers
            # UNSUPPORTED_VERSION in v0 (so the client can read its version list); other errors
            # come in the requested version.  Try v0 first and fall back.
            try:
                return _decode_body(response_type, frame, pos, 0), 0
            except ProtocolError:
                pass
            try:
                return _decode_body(response_type, frame, pos, version), version
            except ProtocolError:
                # Some brokers (librdkafka's mock) send a body that fits neither version; the
                # error code alone is enough for the client to retry with version 0.
                return response_type(error_code=error_code), 0
    return _decode_body(response_type, frame, pos, version, allow_trailing=True), version


# -- server side ------------------------------------------------------------------------------


def decode_request_header(frame_body: Buffer) -> tuple[RequestHeaderData, int]:
    """Decode the request header at the start of a frame body (server side).

    Returns the header and the offset of the request body.  The header version follows from the
    API key and version (v2 iff that request version is flexible).  Raises :class:`ProtocolError`
    for a truncated header or an API key this library does not know.
    """
    end = len(frame_body)
    if end < 8:
        raise ProtocolError(f"request frame of {end} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _REQUEST_HEADER_FIXED.unpack_from(frame_body, 0)
    request_type = REQUEST_TYPES.get(api_key)
    if request_type is None:
        raise ProtocolError(f"unknown API key {api_key}")
    (length,) = _INT16.unpack_from(frame_body, 8) if end >= 10 else (None,)
    if length is None:
        raise ProtocolError("request header ends before its client_id")
    pos = 10
    client_id: str | None
    if length == -1:
        client_id = None
    elif length < -1 or pos + length > end:
        raise ProtocolError(f"bad client_id length {length} in request header")
    else:
        try:
            client_id = bytes(frame_body[pos : pos + length]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError("client_id is not valid UTF-8") from exc
        pos += length
    header_version = request_header_version(request_type.FLEXIBLE_VERSION, api_version)
    if header_version == 2:
        try:
            pos = _skip_tagged_fields(frame_body, pos, end)
        except (IndexError, ValueError) as exc:
            raise ProtocolError(f"malformed request header: {exc}") from exc
    header = RequestHeaderData(api_key, api_version, correlation_id, client_id, header_version)
    return header, pos


def decode_request(frame_body: Buffer) -> tuple[RequestHeaderData, Any]:
    """Decode one request frame body (without its size prefix): ``(header, request)``.

    Raises :class:`ProtocolError` for an unknown API key, a version outside the class's range, or a
    body that does not decode.
    """
    header, pos = decode_request_header(frame_body)
    request_type = REQUEST_TYPES[header.api_key]
    if not request_type.MIN_VERSION <= header.api_version <= request_type.MAX_VERSION:
        raise ProtocolError(
            f"{request_type.__name__} version {header.api_version} is outside "
            f"{request_type.MIN_VERSION}-{request_type.MAX_VERSION}"
        )
    frame = frame_body if type(frame_body) is bytes else bytes(frame_body)
    return header, _decode_body(request_type, frame, pos, header.api_version)


def encode_response(
    correlation_id: int, api_key: int, version: int, response: ResponseMessage
) -> bytes:
    """Encode a complete response frame (size prefix, header, body) for the given request.

    The header version follows the client-side rule (ApiVersions responses use header v0).
    """
    header = encode_response_header(
        correlation_id, response_header_version(api_key, response.FLEXIBLE_VERSION, version)
    )
    body = response.encode(version)
    return b"".join((_SIZE.pack(len(header) + len(body)), header, body))
