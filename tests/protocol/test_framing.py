"""Unit tests of the sans-I/O framing (aiokafkawire.protocol.framing)."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from _kafka_python_bridge import api_specs

from aiokafkawire.errors import EncodeError, FrameTooLargeError, KafkaError, ProtocolError
from aiokafkawire.protocol import messages
from aiokafkawire.protocol.framing import (
    FrameSplitter,
    KafkaFraming,
    ResponseEvent,
    decode_request,
    decode_request_header,
    encode_response,
)
from aiokafkawire.protocol.messages.api_versions import ApiVersion
from aiokafkawire.protocol.messages.fetch import FetchableTopicResponse, PartitionData
from aiokafkawire.protocol.messages.metadata import MetadataResponseBroker
from aiokafkawire.protocol.messages.produce import PartitionProduceData, TopicProduceData

REQUEST_TYPES: dict[int, Any] = messages.REQUEST_TYPES
RESPONSE_TYPES: dict[int, Any] = messages.RESPONSE_TYPES
INT32_MAX = 2**31 - 1


def size_prefixed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def response_frame(correlation_id: int, body: bytes, *, header_tags: bytes | None = None) -> bytes:
    """A response frame; ``header_tags`` (e.g. b"\\x00") makes it a v1 header."""
    header = struct.pack(">i", correlation_id) + (header_tags or b"")
    return size_prefixed(header + body)


def metadata_response(controller_id: int) -> Any:
    return messages.MetadataResponse(
        controller_id=controller_id,
        brokers=[MetadataResponseBroker(node_id=controller_id, host="h", port=9092)],
    )


def sent_metadata(framing: KafkaFraming, version: int) -> int:
    correlation_id, _frame, expects = framing.send_request(messages.MetadataRequest(), version)
    assert expects
    return correlation_id


def flexible_from_spec(api_key: int, version: int) -> bool:
    flexible = api_specs()[api_key][0].flexible
    return flexible is not None and flexible[0] <= version <= flexible[1]


# ------------------------------------------------------------------------------ request frames


@pytest.mark.parametrize("client_id", [None, "", "client-ü"])
def test_request_frame_layout_for_every_api_and_version(client_id: str | None) -> None:
    """size | api_key | version | correlation id | client_id | [tags if flexible] | body."""
    framing = KafkaFraming(client_id)
    encoded_client_id = (
        b"\xff\xff"
        if client_id is None
        else struct.pack(">h", len(client_id.encode())) + client_id.encode()
    )
    expected_id = 0
    for api_key, request_type in sorted(REQUEST_TYPES.items()):
        for version in range(request_type.MIN_VERSION, request_type.MAX_VERSION + 1):
            request = request_type()
            correlation_id, frame, _ = framing.send_request(request, version)
            assert correlation_id == expected_id
            expected_id += 1
            header = struct.pack(">hhi", api_key, version, correlation_id) + encoded_client_id
            if flexible_from_spec(api_key, version):
                header += b"\x00"  # request header v2: empty tagged-field section
            assert frame == size_prefixed(header + request.encode(version)), (api_key, version)


def test_request_header_v1_and_v2_choice_examples() -> None:
    """Metadata v8 is the last non-flexible version (header v1), v9 the first flexible (v2)."""
    framing = KafkaFraming("c")
    _, frame_v8, _ = framing.send_request(messages.MetadataRequest(), 8)
    _, frame_v9, _ = framing.send_request(messages.MetadataRequest(), 9)
    header_v1 = struct.pack(">hhi", 3, 8, 0) + b"\x00\x01c"
    header_v2 = struct.pack(">hhi", 3, 9, 1) + b"\x00\x01c\x00"
    assert frame_v8[4 : 4 + len(header_v1)] == header_v1
    assert frame_v9[4 : 4 + len(header_v2)] == header_v2


def test_version_outside_range_raises_encode_error_without_consuming_an_id() -> None:
    framing = KafkaFraming()
    with pytest.raises(EncodeError):
        framing.send_request(messages.MetadataRequest(), messages.MetadataRequest.MAX_VERSION + 1)
    with pytest.raises(EncodeError):
        framing.send_request(messages.MetadataRequest(), -1)
    assert framing.in_flight == 0
    assert not framing.closed
    assert framing.send_request(messages.MetadataRequest(), 1)[0] == 0


def test_body_encode_error_leaves_state_untouched() -> None:
    framing = KafkaFraming()
    # group_instance_id does not exist in Heartbeat v0: a non-default value cannot be encoded.
    bad = messages.HeartbeatRequest(group_instance_id="instance")
    with pytest.raises(EncodeError):
        framing.send_request(bad, 0)
    assert framing.in_flight == 0
    assert framing.send_request(messages.HeartbeatRequest(), 0)[0] == 0


# ------------------------------------------------------------------------------ response headers


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_response_always_uses_header_v0(version: int) -> None:
    """Even the flexible ApiVersions v3+ responses carry a v0 header (no tagged fields)."""
    response = messages.ApiVersionsResponse(
        api_keys=[ApiVersion(api_key=3, min_version=0, max_version=12)]
    )
    framing = KafkaFraming()
    correlation_id, _, _ = framing.send_request(messages.ApiVersionsRequest(), version)
    [event] = framing.receive_data(response_frame(correlation_id, response.encode(version)))
    assert event == ResponseEvent(correlation_id, 18, version, response)
    assert encode_response(correlation_id, 18, version, response) == response_frame(
        correlation_id, response.encode(version)
    )


def test_api_versions_v3_response_with_a_v1_header_is_a_protocol_error() -> None:
    framing = KafkaFraming()
    correlation_id, _, _ = framing.send_request(messages.ApiVersionsRequest(), 3)
    body = messages.ApiVersionsResponse().encode(3)
    with pytest.raises(ProtocolError):
        framing.receive_data(response_frame(correlation_id, body, header_tags=b"\x00"))


@pytest.mark.parametrize(("version", "flexible"), [(8, False), (9, True), (12, True)])
def test_response_header_version_follows_flexibility(version: int, flexible: bool) -> None:
    response = metadata_response(5)
    framing = KafkaFraming()
    correlation_id = sent_metadata(framing, version)
    tags = b"\x00" if flexible else None
    frame = response_frame(correlation_id, response.encode(version), header_tags=tags)
    assert encode_response(correlation_id, 3, version, response) == frame
    [event] = framing.receive_data(frame)
    assert event.response == response
    assert (event.api_key, event.api_version, event.version) == (3, version, version)


def test_unknown_tagged_fields_in_a_response_header_are_skipped() -> None:
    framing = KafkaFraming()
    correlation_id = sent_metadata(framing, 12)
    response = metadata_response(9)
    # Two unknown header tags: (tag 3, 2 bytes) and (tag 200 as a 2-byte varint, 0 bytes).
    tags = b"\x02" + b"\x03\x02ab" + b"\xc8\x01\x00"
    [event] = framing.receive_data(
        response_frame(correlation_id, response.encode(12), header_tags=tags)
    )
    assert event.response == response


def test_truncated_response_header_tags_are_a_protocol_error() -> None:
    framing = KafkaFraming()
    correlation_id = sent_metadata(framing, 12)
    with pytest.raises(ProtocolError):
        framing.receive_data(response_frame(correlation_id, b"", header_tags=b"\x01\x05\x7f"))


def test_api_versions_error_response_in_v0_is_read_as_v0() -> None:
    """A broker that does not support the requested version answers with a v0 body."""
    framing = KafkaFraming()
    correlation_id, _, _ = framing.send_request(messages.ApiVersionsRequest(), 4)
    v0_body = messages.ApiVersionsResponse(
        error_code=35, api_keys=[ApiVersion(api_key=18, min_version=0, max_version=2)]
    ).encode(0)
    [event] = framing.receive_data(response_frame(correlation_id, v0_body))
    assert event.api_version == 0
    assert event.response.error_code == 35
    assert event.response.api_keys == [ApiVersion(api_key=18, min_version=0, max_version=2)]


def test_api_versions_error_response_in_the_requested_version_is_read_as_such() -> None:
    framing = KafkaFraming()
    correlation_id, _, _ = framing.send_request(messages.ApiVersionsRequest(), 3)
    response = messages.ApiVersionsResponse(error_code=42, throttle_time_ms=7)
    [event] = framing.receive_data(response_frame(correlation_id, response.encode(3)))
    assert event.api_version == 3
    assert event.response == response


def test_api_versions_error_body_fitting_no_version_still_reports_the_error() -> None:
    """librdkafka's mock answers with a body no version parses; the error code is enough."""
    framing = KafkaFraming()
    correlation_id, _, _ = framing.send_request(messages.ApiVersionsRequest(), 3)
    [event] = framing.receive_data(response_frame(correlation_id, b"\x00\x23\xff\xff\xff"))
    assert (event.api_version, event.response.error_code) == (0, 35)
    assert not framing.closed


# ------------------------------------------------------------------------------ chunking


def three_responses() -> tuple[KafkaFraming, bytes, list[ResponseEvent]]:
    framing = KafkaFraming("chunky")
    expected = []
    stream = b""
    for index, version in enumerate((1, 9, 12)):
        correlation_id = sent_metadata(framing, version)
        response = metadata_response(100 + index)
        stream += encode_response(correlation_id, 3, version, response)
        expected.append(ResponseEvent(correlation_id, 3, version, response))
    return framing, stream, expected


def test_every_split_point_of_a_stream_yields_the_same_events() -> None:
    _, stream, expected = three_responses()
    for split in range(len(stream) + 1):
        framing, _, _ = three_responses()
        events = framing.receive_data(stream[:split]) + framing.receive_data(stream[split:])
        assert events == expected, split
        assert framing.in_flight == 0
        assert framing.buffered == 0


def test_one_byte_at_a_time() -> None:
    framing, stream, expected = three_responses()
    frame_ends = set()
    offset = 0
    while offset < len(stream):
        offset += 4 + struct.unpack_from(">i", stream, offset)[0]
        frame_ends.add(offset)
    events: list[ResponseEvent] = []
    for index in range(len(stream)):
        new = framing.receive_data(stream[index : index + 1])
        events += new
        # An event appears exactly when the last byte of its frame arrives.
        assert len(new) == (1 if index + 1 in frame_ends else 0), index
    assert events == expected
    assert framing.buffered == 0


def test_all_frames_in_one_chunk_and_empty_chunks() -> None:
    framing, stream, expected = three_responses()
    assert framing.receive_data(b"") == []
    assert framing.receive_data(bytearray(stream)) == expected
    assert framing.receive_data(memoryview(b"")) == []


def test_partial_frame_is_buffered_until_complete() -> None:
    framing, stream, expected = three_responses()
    first_frame_size = 4 + struct.unpack(">i", stream[:4])[0]
    assert framing.receive_data(stream[: first_frame_size + 6]) == expected[:1]
    assert framing.buffered == 6
    assert framing.pending() == [expected[1].correlation_id, expected[2].correlation_id]
    assert framing.receive_data(stream[first_frame_size + 6 :]) == expected[1:]


def test_frame_splitter_handles_large_frames_in_small_chunks() -> None:
    payload = bytes(range(256)) * 2000  # 512 KB
    stream = size_prefixed(payload) + size_prefixed(b"x") + size_prefixed(b"")
    splitter = FrameSplitter(max_frame_size=len(payload))
    frames: list[bytes] = []
    for start in range(0, len(stream), 4093):
        frames += splitter.feed(stream[start : start + 4093])
    assert frames == [payload, b"x", b""]
    assert splitter.buffered == 0


@pytest.mark.parametrize("chunk_type", [bytes, bytearray, memoryview])
@pytest.mark.parametrize("chunk_size", [1000, 65536, 300_001])
def test_frame_splitter_large_frames_between_small_ones(chunk_type: Any, chunk_size: int) -> None:
    """Frames over the large-frame threshold (collected as chunks) mixed with small frames."""
    large = bytes(range(251)) * 1300  # 326 300 bytes, above the 256 KiB threshold
    bodies = [b"a", large, b"", b"bc", large[:-1], b"d"]
    stream = b"".join(size_prefixed(body) for body in bodies)
    splitter = FrameSplitter()
    frames: list[bytes] = []
    received = 0
    for start in range(0, len(stream), chunk_size):
        chunk = stream[start : start + chunk_size]
        new = splitter.feed(chunk_type(chunk))
        frames += new
        received += len(chunk)
        assert all(type(frame) is bytes for frame in new)
        assert splitter.buffered == received - sum(4 + len(frame) for frame in frames)
    assert frames == bodies
    assert splitter.buffered == 0


def test_large_response_in_many_reads_decodes() -> None:
    framing = KafkaFraming()
    correlation_id, _, _ = framing.send_request(messages.FetchRequest(), 16)
    records = bytes(range(256)) * 4096  # 1 MiB
    response = messages.FetchResponse(
        responses=[FetchableTopicResponse(partitions=[PartitionData(records=records)])]
    )
    frame = encode_response(correlation_id, 1, 16, response)
    events = []
    fed = 0
    for start in range(0, len(frame), 65536):
        chunk = frame[start : start + 65536]
        events += framing.receive_data(chunk)
        fed += len(chunk)
        assert framing.buffered == (0 if events else fed)
    assert [event.response for event in events] == [response]
    assert framing.buffered == 0


def test_frame_splitter_compacts_after_many_small_frames() -> None:
    splitter = FrameSplitter()
    frame = size_prefixed(b"abc")
    # Each chunk completes the dangling frame, carries 2999 more and starts another, so every
    # chunk goes through the internal buffer.
    chunk = frame[3:] + frame * 2999 + frame[:3]
    splitter.feed(frame[:3])
    total = 0
    for _ in range(20):
        total += len(splitter.feed(chunk))
        assert splitter.buffered == 3  # always a dangling partial size prefix
        # White-box: the consumed prefix is dropped once it is large, so memory stays bounded
        # (the buffer would otherwise grow by every chunk fed).
        assert len(splitter._buffer) < 64 * 1024 + len(chunk) + 8
    assert total == 20 * 3000


# ------------------------------------------------------------------------------ produce acks=0


def test_produce_with_acks_zero_expects_no_response() -> None:
    framing = KafkaFraming()
    correlation_id, frame, expects = framing.send_request(messages.ProduceRequest(acks=0), 9)
    assert (correlation_id, expects) == (0, False)
    assert framing.in_flight == 0 and framing.pending() == []
    assert frame[8:12] == struct.pack(">i", 0)
    # The id is still consumed; the next request's response matches normally.
    next_id = sent_metadata(framing, 1)
    assert next_id == 1
    [event] = framing.receive_data(encode_response(1, 3, 1, metadata_response(1)))
    assert event.correlation_id == 1


def test_produce_with_acks_expects_a_response() -> None:
    framing = KafkaFraming()
    for acks in (-1, 1):
        _, _, expects = framing.send_request(messages.ProduceRequest(acks=acks), 9)
        assert expects
    assert framing.pending() == [0, 1]
    response = messages.ProduceResponse(throttle_time_ms=3)
    events = framing.receive_data(
        encode_response(0, 0, 9, response) + encode_response(1, 0, 9, response)
    )
    assert [event.correlation_id for event in events] == [0, 1]


def produce_request(*sizes: int, transactional_id: str | None = None) -> Any:
    """A Produce request with one partition per size, two topics, records of those sizes."""
    topics = [
        TopicProduceData(
            name=f"t{t}",
            partition_data=[
                PartitionProduceData(index=p, records=bytes([p]) * size)
                for p, size in enumerate(sizes)
            ],
        )
        for t in range(2)
    ]
    return messages.ProduceRequest(
        transactional_id=transactional_id, acks=1, timeout_ms=30_000, topic_data=topics
    )


@pytest.mark.parametrize("version", [3, 8, 9, 12])
@pytest.mark.parametrize("sizes", [(10,), (40_000,), (40_000, 5), (100, 40_000, 70_000)])
def test_request_parts_reference_large_records_and_join_to_the_frame(
    version: int, sizes: tuple[int, ...]
) -> None:
    request = produce_request(*sizes, transactional_id="tx" if version > 8 else None)
    expected = KafkaFraming("c").send_request(request, version)
    framing = KafkaFraming("c")
    correlation_id, parts, expects = framing.send_request_parts(request, version)
    assert (correlation_id, b"".join(parts), expects) == expected
    assert framing.pending() == [0]
    batches = {
        id(p.records)
        for topic in request.topic_data
        for p in topic.partition_data
        if len(p.records) >= 32 * 1024
    }
    # Every large batch is a part itself (the same object: not copied), nothing else is.
    assert {id(part) for part in parts if id(part) in batches} == batches
    assert len(parts) == (1 if not batches else len([p for p in parts if p]))
    assert all(len(part) < 32 * 1024 for part in parts if id(part) not in batches)


def test_request_parts_copy_mutable_buffers() -> None:
    request = produce_request(40_000)
    record_buffer = bytearray(40_000)
    request.topic_data[0].partition_data[0].records = record_buffer
    _, parts, _ = KafkaFraming().send_request_parts(request, 9)
    held = request.topic_data[1].partition_data[0].records
    # The bytearray was copied: only the other topic's batch is held.
    assert [part is held for part in parts] == [False, True, False]
    record_buffer[:] = b"x" * 40_000
    assert b"x" not in b"".join(parts)


# ------------------------------------------------------------------------------ errors


def assert_dead(framing: KafkaFraming, error: BaseException) -> None:
    assert framing.closed
    assert framing.error is error
    with pytest.raises(ProtocolError) as again:
        framing.receive_data(b"")
    assert again.value is error
    with pytest.raises(ProtocolError) as on_send:
        framing.send_request(messages.MetadataRequest(), 1)
    assert on_send.value is error


def test_out_of_order_correlation_id_is_a_protocol_error() -> None:
    framing = KafkaFraming()
    first = sent_metadata(framing, 1)
    second = sent_metadata(framing, 1)
    with pytest.raises(ProtocolError, match="oldest") as caught:
        framing.receive_data(encode_response(second, 3, 1, metadata_response(1)))
    assert first != second
    assert_dead(framing, caught.value)


def test_response_with_nothing_in_flight_is_a_protocol_error() -> None:
    framing = KafkaFraming()
    with pytest.raises(ProtocolError, match="none in flight") as caught:
        framing.receive_data(encode_response(0, 3, 1, metadata_response(1)))
    assert_dead(framing, caught.value)


def test_negative_size_is_a_protocol_error() -> None:
    framing = KafkaFraming()
    sent_metadata(framing, 1)
    with pytest.raises(ProtocolError, match="negative") as caught:
        framing.receive_data(struct.pack(">i", -5))
    assert not isinstance(caught.value, FrameTooLargeError)
    assert_dead(framing, caught.value)


def test_oversized_frame_fails_as_soon_as_its_size_arrives() -> None:
    framing = KafkaFraming(max_frame_size=100)
    sent_metadata(framing, 1)
    assert framing.receive_data(b"\x00\x00") == []
    with pytest.raises(FrameTooLargeError) as caught:
        framing.receive_data(b"\x00\x65")  # 101
    assert isinstance(caught.value, ProtocolError)
    assert_dead(framing, caught.value)


def test_frame_of_exactly_the_maximum_size_is_accepted() -> None:
    response = metadata_response(3)
    frame = encode_response(0, 3, 1, response)
    framing = KafkaFraming(max_frame_size=len(frame) - 4)
    sent_metadata(framing, 1)
    [event] = framing.receive_data(frame)
    assert event.response == response


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_truncated_body_is_a_protocol_error(cut: int) -> None:
    framing = KafkaFraming()
    correlation_id = sent_metadata(framing, 1)
    body = metadata_response(1).encode(1)
    with pytest.raises(ProtocolError) as caught:
        framing.receive_data(response_frame(correlation_id, body[:-cut]))
    assert_dead(framing, caught.value)


def test_trailing_bytes_after_a_response_body_are_ignored() -> None:
    # As in the Java client and librdkafka: a broker may append bytes (librdkafka's mock does).
    framing = KafkaFraming()
    correlation_id = sent_metadata(framing, 1)
    response = metadata_response(1)
    body = response.encode(1)
    (event,) = framing.receive_data(response_frame(correlation_id, body + b"\x00"))
    assert event.response == response
    assert not framing.closed


def test_trailing_bytes_after_a_request_body_are_a_protocol_error() -> None:
    framing = KafkaFraming("c")
    _, frame, _ = framing.send_request(messages.MetadataRequest(topics=None), 1)
    with pytest.raises(ProtocolError, match="trailing"):
        decode_request(frame[4:] + b"\x00")


def test_frame_too_short_for_a_correlation_id() -> None:
    framing = KafkaFraming()
    sent_metadata(framing, 1)
    with pytest.raises(ProtocolError):
        framing.receive_data(size_prefixed(b"\x00\x00"))


def test_fail_marks_the_framing_dead() -> None:
    framing = KafkaFraming()
    error = ProtocolError("connection lost")
    framing.fail(error)
    framing.fail(ProtocolError("later errors do not replace the first"))
    assert_dead(framing, error)


# ------------------------------------------------------------------------------ bookkeeping


def test_correlation_ids_wrap_around_int32() -> None:
    framing = KafkaFraming(initial_correlation_id=INT32_MAX - 1)
    ids = [sent_metadata(framing, 1) for _ in range(4)]
    assert ids == [INT32_MAX - 1, INT32_MAX, 0, 1]
    assert framing.pending() == ids
    stream = b"".join(
        encode_response(correlation_id, 3, 1, metadata_response(i))
        for i, correlation_id in enumerate(ids)
    )
    events = framing.receive_data(stream)
    assert [event.correlation_id for event in events] == ids
    assert [event.response.controller_id for event in events] == [0, 1, 2, 3]


def test_initial_correlation_id_must_be_a_non_negative_int32() -> None:
    with pytest.raises(ValueError):
        KafkaFraming(initial_correlation_id=-1)
    with pytest.raises(ValueError):
        KafkaFraming(initial_correlation_id=INT32_MAX + 1)


def test_in_flight_and_pending_track_send_order() -> None:
    framing = KafkaFraming()
    ids = [sent_metadata(framing, 1) for _ in range(3)]
    assert framing.in_flight == 3
    assert framing.pending() == ids
    framing.receive_data(encode_response(ids[0], 3, 1, metadata_response(0)))
    assert framing.pending() == ids[1:]
    assert framing.in_flight == 2


def test_reset_forgets_requests_and_buffered_bytes() -> None:
    framing = KafkaFraming()
    ids = [sent_metadata(framing, 1) for _ in range(2)]
    partial = encode_response(ids[0], 3, 1, metadata_response(0))[:7]
    framing.receive_data(partial)
    assert framing.buffered == 7
    assert framing.reset() == ids
    assert (framing.in_flight, framing.pending(), framing.buffered) == (0, [], 0)
    assert not framing.closed
    # Ids keep increasing after a reset, so a stale response can never match a new request.
    new_id = sent_metadata(framing, 1)
    assert new_id == 2
    with pytest.raises(ProtocolError):
        framing.receive_data(encode_response(ids[1], 3, 1, metadata_response(0)))


def test_client_id_too_long_is_an_encode_error() -> None:
    with pytest.raises(EncodeError):
        KafkaFraming("x" * 40000)


# ------------------------------------------------------------------------------ server side


def test_decode_request_round_trips_every_api_at_its_newest_version() -> None:
    framing = KafkaFraming("server-test")
    for api_key, request_type in sorted(REQUEST_TYPES.items()):
        version = request_type.MAX_VERSION
        correlation_id, frame, _ = framing.send_request(request_type(), version)
        header, request = decode_request(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id) == (
            api_key,
            version,
            correlation_id,
        )
        assert header.client_id == "server-test"
        assert header.header_version == (2 if flexible_from_spec(api_key, version) else 1)
        assert request == request_type()


def test_decode_request_accepts_memoryview_and_null_client_id() -> None:
    framing = KafkaFraming(None)
    _, frame, _ = framing.send_request(messages.MetadataRequest(allow_auto_topic_creation=False), 9)
    header, request = decode_request(memoryview(frame)[4:])
    assert header.client_id is None
    assert request.allow_auto_topic_creation is False


def test_decode_request_header_reports_the_body_offset() -> None:
    framing = KafkaFraming("abc")
    _, frame, _ = framing.send_request(messages.MetadataRequest(), 12)
    header, offset = decode_request_header(frame[4:])
    assert offset == 8 + 2 + 3 + 1
    assert messages.MetadataRequest.decode(frame[4 + offset :], 12) == messages.MetadataRequest()
    assert header.header_version == 2


@pytest.mark.parametrize(
    "body",
    [
        b"",
        struct.pack(">hhi", 3, 1, 0),  # no client_id
        struct.pack(">hhi", 999, 0, 0) + b"\xff\xff",  # unknown api key
        struct.pack(">hhi", 3, 99, 0) + b"\xff\xff",  # version out of range
        struct.pack(">hhi", 3, 1, 0) + b"\x00\x09ab",  # client_id longer than the frame
        struct.pack(">hhi", 3, 1, 0) + b"\xff\xf0",  # negative client_id length
        struct.pack(">hhi", 3, 1, 0) + b"\x00\x02\xff\xfe",  # invalid UTF-8
        struct.pack(">hhi", 3, 12, 0) + b"\xff\xff\x05",  # tagged fields run past the end
        struct.pack(">hhi", 3, 1, 0) + b"\xff\xff\x00",  # truncated body
    ],
    ids=[
        "empty",
        "no-client-id",
        "unknown-api-key",
        "version-out-of-range",
        "client-id-past-end",
        "negative-client-id-length",
        "client-id-not-utf8",
        "tags-past-end",
        "truncated-body",
    ],
)
def test_decode_request_rejects_malformed_frames(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_request(body)


def test_errors_are_kafka_errors() -> None:
    assert issubclass(ProtocolError, KafkaError)
    assert issubclass(FrameTooLargeError, ProtocolError)
