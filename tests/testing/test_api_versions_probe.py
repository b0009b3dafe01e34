"""Unit tests of the self-contained ApiVersions probe (no broker needed)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from aiokafkawire.errors import ProtocolError
from aiokafkawire.testing._probe import (
    decode_api_versions_response,
    encode_api_versions_request,
    probe_api_versions,
)


def test_v0_request_frame_layout() -> None:
    frame = encode_api_versions_request(0, 42, client_id="ab")
    # size, api_key 18, version 0, correlation 42, client id "ab"; no body.
    assert frame == struct.pack(">ihhih", 12, 18, 0, 42, 2) + b"ab"


def test_v3_request_frame_has_flexible_header_and_body() -> None:
    frame = encode_api_versions_request(3, 7, client_id="c")
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    assert frame[4:15] == struct.pack(">hhih", 18, 3, 7, 1) + b"c"
    # empty header tagged fields, then compact strings (length + 1) and body tagged fields
    rest = frame[15:]
    assert rest[0] == 0
    name_len = rest[1] - 1
    assert rest[2 : 2 + name_len] == b"aiokafkawire-probe"
    assert rest[-1] == 0


def test_request_version_out_of_range_rejected() -> None:
    with pytest.raises(ValueError):
        encode_api_versions_request(4, 1)


def _v0_body(error: int, entries: list[tuple[int, int, int]]) -> bytes:
    body = struct.pack(">hi", error, len(entries))
    for key, lo, hi in entries:
        body += struct.pack(">hhh", key, lo, hi)
    return body


def _v3_body(error: int, entries: list[tuple[int, int, int]], throttle: int) -> bytes:
    body = struct.pack(">h", error) + bytes([len(entries) + 1])
    for key, lo, hi in entries:
        body += struct.pack(">hhh", key, lo, hi) + b"\x00"
    # throttle, then one unknown tagged field (tag 0, 2 bytes) that must be skipped
    return body + struct.pack(">i", throttle) + b"\x01\x00\x02\xab\xcd"


def test_decode_v0_and_v3_bodies() -> None:
    entries = [(0, 3, 11), (18, 0, 4)]
    v0 = decode_api_versions_response(_v0_body(0, entries), 0)
    assert v0.api_versions == {0: (3, 11), 18: (0, 4)}
    v3 = decode_api_versions_response(_v3_body(0, entries, 25), 3)
    assert v3.api_versions == {0: (3, 11), 18: (0, 4)}
    assert v3.throttle_time_ms == 25


def test_decode_rejects_truncated_and_trailing_bytes() -> None:
    body = _v3_body(0, [(0, 0, 9)], 0)
    with pytest.raises(ProtocolError):
        decode_api_versions_response(body[:-3], 3)
    with pytest.raises(ProtocolError):
        decode_api_versions_response(body + b"\x00", 3)


def test_unsupported_version_answer_in_v0_layout_is_decoded() -> None:
    info = decode_api_versions_response(_v0_body(35, [(18, 0, 2)]), 3)
    assert info.error_code == 35
    assert info.api_versions == {18: (0, 2)}


@pytest.fixture
def silent_server() -> Iterator[tuple[str, int]]:
    """A loopback server that answers every request with a wrong correlation id."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(4096)
                body = struct.pack(">i", 999) + _v0_body(0, [])
                conn.sendall(struct.pack(">i", len(body)) + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


def test_probe_detects_correlation_mismatch(silent_server: tuple[str, int]) -> None:
    host, port = silent_server
    with pytest.raises(ProtocolError, match="correlation"):
        probe_api_versions(host, port, version=0, timeout=2)


def test_probe_connection_refused_is_oserror() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    with pytest.raises(OSError):
        probe_api_versions("127.0.0.1", port, timeout=1)
