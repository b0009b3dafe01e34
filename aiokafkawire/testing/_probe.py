"""A tiny, self-contained ApiVersions client used to check that a broker really answers Kafka.

It is deliberately independent of the rest of the library (framing, generated messages), so that
the embedded brokers can be verified even while those layers are broken: a test harness must not
depend on the code under test.
"""

from __future__ import annotations

import socket
import ssl
import struct
from dataclasses import dataclass, field

from aiokafkawire.errors import ProtocolError, error_for_code

__all__ = ["ApiVersionsInfo", "encode_api_versions_request", "probe_api_versions"]

API_VERSIONS_KEY = 18
_UNSUPPORTED_VERSION = 35
_MAX_RESPONSE_SIZE = 1 << 20


@dataclass
class ApiVersionsInfo:
    """The decoded ApiVersions response of a broker."""

    error_code: int
    #: api_key -> (min_version, max_version)
    api_versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    throttle_time_ms: int = 0
    #: the ApiVersions version of the request that produced this answer
    version: int = 0


def encode_api_versions_request(
    version: int, correlation_id: int, client_id: str = "aiokafkawire-probe"
) -> bytes:
    """Return a complete size-prefixed ApiVersions request frame (versions 0 to 3)."""
    if not 0 <= version <= 3:
        raise ValueError(f"ApiVersions probe supports versions 0-3, not {version}")
    client = client_id.encode()
    header = struct.pack(">hhih", API_VERSIONS_KEY, version, correlation_id, len(client)) + client
    body = b""
    if version >= 3:
        # Flexible header v2 ends with an empty tagged-field section; the body carries the
        # client software name and version as compact strings, then its own tagged fields.
        header += b"\x00"
        name, soft_version = b"aiokafkawire-probe", b"0"
        body = (
            bytes([len(name) + 1]) + name + bytes([len(soft_version) + 1]) + soft_version + b"\x00"
        )
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProtocolError("truncated varint in ApiVersions response")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise ProtocolError("varint too long in ApiVersions response")


def decode_api_versions_response(body: bytes, version: int) -> ApiVersionsInfo:
    """Decode an ApiVersions response body (after the 4-byte correlation id header).

    An UNSUPPORTED_VERSION answer should have a v0 body (KIP-511), but some brokers (librdkafka's
    mock) send it in the requested flexible format, so both layouts are tried.
    """
    try:
        (error_code,) = struct.unpack_from(">h", body, 0)
    except struct.error as exc:
        raise ProtocolError(f"malformed ApiVersions response: {exc}") from exc
    if error_code == _UNSUPPORTED_VERSION and version > 0:
        for layout in (0, version):
            try:
                return _decode_layout(body, layout)
            except (ProtocolError, struct.error):
                continue
        return ApiVersionsInfo(error_code)
    try:
        return _decode_layout(body, version)
    except struct.error as exc:
        raise ProtocolError(f"malformed ApiVersions response: {exc}") from exc


def _decode_layout(body: bytes, version: int) -> ApiVersionsInfo:
    (error_code,) = struct.unpack_from(">h", body, 0)
    pos = 2
    flexible = version >= 3
    if flexible:
        count, pos = _read_uvarint(body, pos)
        count -= 1
    else:
        (count,) = struct.unpack_from(">i", body, pos)
        pos += 4
    if count < 0 or count * 6 > len(body) - pos:
        raise ProtocolError(f"implausible ApiVersions array length {count}")
    versions: dict[int, tuple[int, int]] = {}
    for _ in range(count):
        key, lo, hi = struct.unpack_from(">hhh", body, pos)
        pos += 6
        if flexible:
            pos = _skip_tagged_fields(body, pos)
        versions[key] = (lo, hi)
    throttle = 0
    if version >= 1:
        (throttle,) = struct.unpack_from(">i", body, pos)
        pos += 4
    if flexible:
        pos = _skip_tagged_fields(body, pos)
    if pos != len(body):
        raise ProtocolError(f"{len(body) - pos} trailing bytes in ApiVersions v{version} response")
    return ApiVersionsInfo(error_code, versions, throttle)


def _skip_tagged_fields(buf: bytes, pos: int) -> int:
    count, pos = _read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = _read_uvarint(buf, pos)
        size, pos = _read_uvarint(buf, pos)
        pos += size
    return pos


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("connection closed by the broker mid-response")
        chunks += chunk
    return bytes(chunks)


def probe_api_versions(  # long: the exchange, its checks and the version fallback
    host: str,
    port: int,
    *,
    version: int = 3,
    timeout: float = 2.0,
    ssl_context: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
    correlation_id: int = 0x5EED,
    fallback: bool = True,
) -> ApiVersionsInfo:
    """Send one ApiVersions request over a fresh blocking socket and return the decoded answer.

    Raises ``OSError`` when the connection fails or is closed, :class:`ProtocolError` when the
    answer is not a well-formed ApiVersions response, and the broker error class when it reports
    an error other than UNSUPPORTED_VERSION.  With ``fallback`` (the default), a broker that
    does not support ``version`` is asked again with the highest version it supports;
    :attr:`ApiVersionsInfo.version` tells which version answered.
    """
    raw = socket.create_connection((host, port), timeout=timeout)
    sock: socket.socket = raw
    try:
        if ssl_context is not None:
            sock = ssl_context.wrap_socket(raw, server_hostname=server_hostname or host)
        sock.settimeout(timeout)
        sock.sendall(encode_api_versions_request(version, correlation_id))
        (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
        if not 4 <= size <= _MAX_RESPONSE_SIZE:
            raise ProtocolError(f"implausible ApiVersions response size {size}")
        frame = _recv_exactly(sock, size)
    finally:
        sock.close()
    (got_correlation,) = struct.unpack_from(">i", frame, 0)
    if got_correlation != correlation_id:
        raise ProtocolError(
            f"correlation id mismatch: sent {correlation_id}, got {got_correlation}"
        )
    info = decode_api_versions_response(frame[4:], version)
    info.version = version
    if info.error_code == _UNSUPPORTED_VERSION and version > 0 and fallback:
        # Retry once with the highest ApiVersions version the broker says it supports
        # (asking v0 first when its UNSUPPORTED_VERSION answer was not decodable).
        known = (
            info.api_versions
            or probe_api_versions(
                host,
                port,
                version=0,
                timeout=timeout,
                ssl_context=ssl_context,
                server_hostname=server_hostname,
                fallback=False,
            ).api_versions
        )
        best = min(known.get(API_VERSIONS_KEY, (0, 0))[1], version - 1)
        return probe_api_versions(
            host,
            port,
            version=best,
            timeout=timeout,
            ssl_context=ssl_context,
            server_hostname=server_hostname,
            fallback=False,
        )
    if info.error_code not in (0, _UNSUPPORTED_VERSION):
        raise error_for_code(info.error_code)("ApiVersions probe failed")
    return info
