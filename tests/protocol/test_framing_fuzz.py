"""Hypothesis fuzzing of the framing: hostile or broken input only ever raises KafkaError.

The framing is fed random bytes, valid response streams with random chunking, truncations and
mutations, and size prefixes that are negative or too large.  Whatever happens, it must either
return events or raise a :class:`~aiokafkawire.errors.ProtocolError` (the family every framing error
belongs to), never another exception, and never hang: examples are bounded in number and size and
every test has a timeout.
"""

from __future__ import annotations

import itertools
import struct
from functools import cache
from typing import Any

import pytest
from _kafka_python_bridge import ValueGenerator, api_specs, ours_build
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiokafkawire.errors import FrameTooLargeError, KafkaError, ProtocolError
from aiokafkawire.protocol import messages
from aiokafkawire.protocol.framing import (
    FrameSplitter,
    KafkaFraming,
    ResponseEvent,
    decode_request,
    encode_response,
)

REQUEST_TYPES: dict[int, Any] = messages.REQUEST_TYPES
RESPONSE_TYPES: dict[int, Any] = messages.RESPONSE_TYPES

FUZZ = settings(
    max_examples=150,
    deadline=None,  # the machine is shared; hangs are caught by the timeout mark instead
    database=None,  # do not write .hypothesis/ into the repository
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
pytestmark = pytest.mark.timeout(60)

MAX_FRAME = 64 * 1024


@cache
def api_versions() -> list[tuple[int, int]]:
    """Every (api key, version) we implement."""
    return [
        (api_key, version)
        for api_key, cls in sorted(REQUEST_TYPES.items())
        for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
    ]


@cache
def valid_response(api_key: int, version: int) -> Any:
    """A non-trivial response object of this API and version (values from the official spec)."""
    spec = api_specs()[api_key][1]
    value = ValueGenerator(f"fuzz/{api_key}/{version}").struct(spec.fields, version)
    if api_key == 18:
        value["error_code"] = 0  # keep the ApiVersions v0 fallback out of the valid streams
    return ours_build(RESPONSE_TYPES[api_key], spec.fields, value)


@cache
def valid_request(api_key: int, version: int) -> Any:
    """A non-trivial request object of this API and version."""
    spec = api_specs()[api_key][0]
    value = ValueGenerator(f"fuzz-request/{api_key}/{version}").struct(spec.fields, version)
    if api_key == 0:
        value["acks"] = -1  # acks=0 would expect no response
    return ours_build(REQUEST_TYPES[api_key], spec.fields, value)


def framing_with_requests(
    pairs: list[tuple[int, int]], first_id: int = 0
) -> tuple[KafkaFraming, list[int]]:
    framing = KafkaFraming("fuzz", max_frame_size=MAX_FRAME, initial_correlation_id=first_id)
    ids = []
    for pair in pairs:
        correlation_id, _, expects = framing.send_request(valid_request(*pair), pair[1])
        assert expects
        ids.append(correlation_id)
    return framing, ids


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    """Split ``data`` at the given (unsorted, possibly repeated) offsets."""
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def feed_all(framing: KafkaFraming, chunks: list[bytes]) -> tuple[list[ResponseEvent], Any]:
    """Feed chunks until the end or the first error; return events and the error (or None)."""
    events: list[ResponseEvent] = []
    for chunk in chunks:
        try:
            events += framing.receive_data(chunk)
        except KafkaError as exc:
            assert isinstance(exc, ProtocolError), type(exc)
            assert framing.closed and framing.error is exc
            with pytest.raises(ProtocolError):
                framing.receive_data(b"\x00")
            return events, exc
    assert not framing.closed
    return events, None


api_version_pairs = st.sampled_from(api_versions())
cut_lists = st.lists(st.integers(min_value=0, max_value=10**6), max_size=12)

#: Up to six (position, new byte) changes; positions wrap around the frame.
byte_flips = st.lists(
    st.tuples(st.integers(min_value=0, max_value=10**6), st.integers(0, 255)),
    min_size=1,
    max_size=6,
)


# ------------------------------------------------------------------------------ random bytes


@FUZZ
@given(
    pairs=st.lists(api_version_pairs, min_size=0, max_size=4),
    data=st.binary(max_size=2048),
    cuts=cut_lists,
)
def test_random_bytes_only_raise_protocol_errors(
    pairs: list[tuple[int, int]], data: bytes, cuts: list[int]
) -> None:
    framing, _ = framing_with_requests(pairs)
    events, _error = feed_all(framing, chunked(data, cuts))
    assert len(events) <= len(pairs)


@FUZZ
@given(
    pair=api_version_pairs,
    correlation_id=st.integers(min_value=0, max_value=2**31 - 1),
    body=st.binary(max_size=512),
    header_tags=st.sampled_from([b"", b"\x00", b"\x01\x00\x00", b"\x01\x01\x05"]),
)
def test_random_bodies_behind_a_matching_header(
    pair: tuple[int, int], correlation_id: int, body: bytes, header_tags: bytes
) -> None:
    """Random bodies (and header tag sections) for the request actually in flight."""
    framing, [sent_id] = framing_with_requests([pair], first_id=correlation_id)
    payload = struct.pack(">i", sent_id) + header_tags + body
    events, error = feed_all(framing, [struct.pack(">i", len(payload)) + payload])
    assert (len(events), error is None) in ((1, True), (0, False))


# ------------------------------------------------------------------------------ valid streams


@FUZZ
@given(pairs=st.lists(api_version_pairs, min_size=1, max_size=4), cuts=cut_lists)
def test_valid_streams_decode_identically_under_any_chunking(
    pairs: list[tuple[int, int]], cuts: list[int]
) -> None:
    framing, ids = framing_with_requests(pairs)
    responses = [valid_response(*pair) for pair in pairs]
    stream = b"".join(
        encode_response(correlation_id, api_key, version, response)
        for correlation_id, (api_key, version), response in zip(ids, pairs, responses, strict=True)
    )
    events, error = feed_all(framing, chunked(stream, cuts))
    assert error is None
    assert [event.response for event in events] == responses
    assert [event.correlation_id for event in events] == ids
    assert framing.in_flight == 0 and framing.buffered == 0


@FUZZ
@given(
    pairs=st.lists(api_version_pairs, min_size=1, max_size=3),
    data=st.data(),
)
def test_truncated_streams_buffer_without_error(
    pairs: list[tuple[int, int]], data: st.DataObject
) -> None:
    """A stream cut anywhere yields the complete frames before the cut and waits for more."""
    framing, ids = framing_with_requests(pairs)
    frames = [
        encode_response(correlation_id, api_key, version, valid_response(api_key, version))
        for correlation_id, (api_key, version) in zip(ids, pairs, strict=True)
    ]
    stream = b"".join(frames)
    cut = data.draw(st.integers(min_value=0, max_value=len(stream)), label="cut")
    events, error = feed_all(framing, [stream[:cut]])
    assert error is None
    complete = 0
    offset = 0
    for frame in frames:
        offset += len(frame)
        if offset <= cut:
            complete += 1
    assert len(events) == complete
    assert framing.buffered == cut - sum(len(frame) for frame in frames[:complete])


@FUZZ
@given(pair=api_version_pairs, data=st.data())
def test_bodies_truncated_inside_their_frame_are_protocol_errors(
    pair: tuple[int, int], data: st.DataObject
) -> None:
    """A frame whose size says the body ends early never decodes silently."""
    framing, [correlation_id] = framing_with_requests([pair])
    frame = encode_response(correlation_id, *pair, valid_response(*pair))
    header_size = 4 + (1 if RESPONSE_TYPES[pair[0]].HEADER_VERSIONS[pair[1]] else 0)
    body_size = len(frame) - 4 - header_size
    keep = data.draw(st.integers(min_value=0, max_value=body_size - 1), label="keep")
    payload = frame[4 : 4 + header_size + keep]
    events, error = feed_all(framing, [struct.pack(">i", len(payload)) + payload])
    assert events == []
    assert isinstance(error, ProtocolError)


@FUZZ
@given(
    pair=api_version_pairs,
    flips=byte_flips,
    cuts=cut_lists,
)
def test_mutated_frames_decode_or_raise_protocol_errors(
    pair: tuple[int, int], flips: list[tuple[int, int]], cuts: list[int]
) -> None:
    """Random byte changes anywhere in a valid frame (size prefix included)."""
    framing, [correlation_id] = framing_with_requests([pair])
    frame = bytearray(encode_response(correlation_id, *pair, valid_response(*pair)))
    for position, value in flips:
        frame[position % len(frame)] = value
    events, error = feed_all(framing, chunked(bytes(frame), cuts))
    assert len(events) <= 1
    if events:
        assert error is None


# ------------------------------------------------------------------------------ size prefixes


@FUZZ
@given(
    size=st.one_of(
        st.integers(min_value=MAX_FRAME + 1, max_value=2**31 - 1),
        st.integers(min_value=-(2**31), max_value=-1),
    ),
    prefix_frames=st.integers(min_value=0, max_value=2),
    tail=st.binary(max_size=64),
    cuts=cut_lists,
)
def test_bad_size_prefixes_fail_fast(
    size: int, prefix_frames: int, tail: bytes, cuts: list[int]
) -> None:
    """Oversized or negative sizes raise as soon as their 4 bytes are in, after earlier frames."""
    pairs = [(3, 1)] * (prefix_frames + 1)
    framing, ids = framing_with_requests(pairs)
    good = b"".join(
        encode_response(correlation_id, 3, 1, valid_response(3, 1))
        for correlation_id in ids[:prefix_frames]
    )
    stream = good + struct.pack(">i", size) + tail
    events, error = feed_all(framing, chunked(stream, cuts))
    expected_error = FrameTooLargeError if size > 0 else ProtocolError
    assert isinstance(error, expected_error)
    assert (size > 0) == isinstance(error, FrameTooLargeError)
    # Frames before the bad one were delivered unless they shared a chunk with the bad size.
    assert len(events) <= prefix_frames


@FUZZ
@given(data=st.binary(max_size=1024), cuts=cut_lists, max_frame=st.integers(0, 300))
def test_frame_splitter_never_raises_anything_but_protocol_errors(
    data: bytes, cuts: list[int], max_frame: int
) -> None:
    splitter = FrameSplitter(max_frame_size=max_frame)
    total = 0
    for chunk in chunked(data, cuts):
        try:
            frames = splitter.feed(chunk)
        except KafkaError as exc:
            assert isinstance(exc, ProtocolError)
            return
        assert all(len(frame) <= max_frame for frame in frames)
        total += sum(4 + len(frame) for frame in frames)
    assert total + splitter.buffered == len(data)


LARGE_BODY = bytes(range(251)) * 1100  # 276 100 bytes: above the splitter's large-frame mode
MIXED_BODIES = [b"x", LARGE_BODY, b"", b"yz" * 50, LARGE_BODY[:-7], b"w"]
MIXED_STREAM = b"".join(struct.pack(">i", len(body)) + body for body in MIXED_BODIES)


@FUZZ
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=len(MIXED_STREAM)), max_size=40),
    use_bytearray=st.booleans(),
)
def test_frame_splitter_large_and_small_frames_under_any_chunking(
    cuts: list[int], use_bytearray: bool
) -> None:
    splitter = FrameSplitter()
    frames: list[bytes] = []
    for chunk in chunked(MIXED_STREAM, cuts):
        frames += splitter.feed(bytearray(chunk) if use_bytearray else chunk)
    assert frames == MIXED_BODIES
    assert splitter.buffered == 0


# ------------------------------------------------------------------------------ server side


@FUZZ
@given(data=st.binary(max_size=1024))
def test_decode_request_on_random_bytes(data: bytes) -> None:
    try:
        decode_request(data)
    except KafkaError as exc:
        assert isinstance(exc, ProtocolError)


@FUZZ
@given(
    pair=api_version_pairs,
    flips=byte_flips,
    cut=st.integers(min_value=0, max_value=10**6),
)
def test_decode_request_on_mutated_requests(
    pair: tuple[int, int], flips: list[tuple[int, int]], cut: int
) -> None:
    framing = KafkaFraming("fuzz-client")
    _, frame, _ = framing.send_request(valid_request(*pair), pair[1])
    body = bytearray(frame[4:])
    for position, value in flips:
        body[position % len(body)] = value
    body = body[: len(body) - cut % (len(body) + 1) // 2]
    try:
        decode_request(bytes(body))
    except KafkaError as exc:
        assert isinstance(exc, ProtocolError)
