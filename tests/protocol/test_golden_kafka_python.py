"""Golden-byte interoperability tests against kafka-python 3.x.

kafka-python 3.x builds its codec at runtime from its own copy of the Kafka JSON specs,
independently of our generator.  For every API x version x (request, response) we implement, a
non-trivial logical value is generated from the official spec (every field of that version
non-default, arrays non-empty, tagged fields set; a second variant makes every nullable field
null).  Then:

* our encoding and kafka-python's encoding of the same value must be byte-identical;
* our decoder must read kafka-python's bytes back to the same value (and object);
* kafka-python's decoder must read our bytes back to the same value;
* complete frames (size + header + body) from :mod:`aiokafkawire.protocol.framing` must equal the
  frames kafka-python writes, and the server-side helpers must read kafka-python's frames.

Where kafka-python's own spec copy lacks an API or version, its engine is fed the official spec
instead (case ids end in ``engine``), so the encoder is still an independent implementation.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("kafka.protocol.api_message", reason="kafka-python 3.x is not installed")

from _kafka_python_bridge import (
    KpMessage,
    MessageSpec,
    ValueGenerator,
    api_specs,
    from_kafka_python,
    kafka_python_message,
    kp_build,
    kp_decode,
    kp_decode_request_header,
    kp_encode,
    kp_frame,
    kp_request_header,
    kp_response_header,
    kp_value,
    load_spec,
    ours_build,
    ours_value,
    seed_for,
    to_kafka_python,
)

from aiokafkawire.protocol import messages
from aiokafkawire.protocol.framing import (
    FrameSplitter,
    KafkaFraming,
    decode_request,
    encode_request_header,
    encode_response,
    encode_response_header,
    request_header_version,
    response_header_version,
)

# Typed loosely: the generated registries are typed as the Message base class.
REQUEST_TYPES: dict[int, Any] = messages.REQUEST_TYPES
RESPONSE_TYPES: dict[int, Any] = messages.RESPONSE_TYPES

# ---------------------------------------------------------------------------------- the cases


def _cases() -> list[Any]:
    cases = []
    specs = api_specs()
    for api_key, request_type in sorted(REQUEST_TYPES.items()):
        request_spec, response_spec = specs[api_key]
        response_type = RESPONSE_TYPES[api_key]
        for cls, spec in ((request_type, request_spec), (response_type, response_spec)):
            for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
                kp = kafka_python_message(spec, version)
                origin = "kp" if kp.origin == "kafka-python" else "engine"
                case_id = f"{spec.name}-v{version}-{origin}"
                cases.append(pytest.param(cls, spec, version, kp, id=case_id))
    return cases


CASES = _cases()


def _first_difference(ours: bytes, theirs: bytes) -> str:
    index = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
        min(len(ours), len(theirs)),
    )
    return (
        f"lengths {len(ours)} (ours) vs {len(theirs)} (kafka-python), first difference at byte "
        f"{index}: ours ...{ours[max(0, index - 8) : index + 8].hex()} vs "
        f"theirs ...{theirs[max(0, index - 8) : index + 8].hex()}"
    )


def test_every_api_we_implement_is_covered() -> None:
    """The parametrisation is not silently empty and covers every request/response version."""
    covered = {(case.values[1].name, case.values[2]) for case in CASES}
    for api_key, request_type in REQUEST_TYPES.items():
        for version in range(request_type.MIN_VERSION, request_type.MAX_VERSION + 1):
            assert (api_specs()[api_key][0].name, version) in covered
    assert len(CASES) > 300
    # Most cases must use kafka-python's own classes, not just its engine.
    assert sum(1 for case in CASES if case.values[3].origin == "kafka-python") > 250


def test_versions_match_the_official_specs() -> None:
    """Our version ranges are the official ``validVersions``; flexible thresholds match too."""
    for api_key, (request_spec, response_spec) in api_specs().items():
        if api_key not in REQUEST_TYPES:
            continue
        for cls, spec in (
            (REQUEST_TYPES[api_key], request_spec),
            (RESPONSE_TYPES[api_key], response_spec),
        ):
            assert (cls.MIN_VERSION, cls.MAX_VERSION) == spec.valid, spec.name
            # The first flexible version among the valid ones (share APIs start at v1, "0+").
            expected_flexible = (
                max(spec.flexible[0], spec.valid[0])
                if spec.flexible and spec.flexible[0] <= spec.valid[1]
                else None
            )
            assert cls.FLEXIBLE_VERSION == expected_flexible, spec.name


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("cls", "spec", "version", "kp"), CASES)
def test_body_bytes_match_kafka_python(
    cls: Any, spec: MessageSpec, version: int, kp: KpMessage, nulls: bool
) -> None:
    """Encode here and in kafka-python; compare bytes; decode each side's bytes on the other."""
    generator = ValueGenerator(seed_for(spec.name, version, nulls), nulls=nulls)
    check_against_kafka_python(cls, spec, version, kp, generator.struct(spec.fields, version))


@settings(max_examples=150, deadline=None, database=None)
@given(
    case=st.sampled_from([case.values for case in CASES]),
    seed=st.integers(min_value=0, max_value=2**32),
    nulls=st.booleans(),
    max_items=st.integers(min_value=1, max_value=4),
)
def test_random_values_match_kafka_python(
    case: tuple[Any, MessageSpec, int, KpMessage], seed: int, nulls: bool, max_items: int
) -> None:
    """More value combinations than the fixed seeds: any case, any seed, longer arrays."""
    cls, spec, version, kp = case
    generator = ValueGenerator(str(seed), nulls=nulls, max_items=max_items)
    check_against_kafka_python(cls, spec, version, kp, generator.struct(spec.fields, version))


def check_against_kafka_python(
    cls: Any, spec: MessageSpec, version: int, kp: KpMessage, value: dict[str, Any]
) -> None:
    """Same bytes from both encoders; each decoder reads the other's bytes back to ``value``."""
    ours = ours_build(cls, spec.fields, value)
    theirs = kp_build(kp, spec, value, version)

    our_bytes = ours.encode(version)
    their_bytes = kp_encode(theirs, version)
    assert our_bytes == their_bytes, _first_difference(our_bytes, their_bytes)

    decoded_here = cls.decode(their_bytes, version)
    assert ours_value(decoded_here, spec.fields, version) == value
    assert decoded_here == ours
    assert decoded_here.encode(version) == their_bytes

    decoded_there = kp_decode(kp, our_bytes, version)
    assert kp_value(kp, spec, decoded_there, version) == value


@pytest.mark.parametrize(("cls", "spec", "version", "kp"), CASES)
def test_default_objects_match_kafka_python(
    cls: Any, spec: MessageSpec, version: int, kp: KpMessage
) -> None:
    """``Cls()`` (every field at its spec default: empty arrays, null strings, omitted tags)."""
    ours = cls()
    value = ours_value(ours, spec.fields, version)
    our_bytes = ours.encode(version)
    their_bytes = kp_encode(kp_build(kp, spec, value, version), version)
    assert our_bytes == their_bytes, _first_difference(our_bytes, their_bytes)
    assert kp_value(kp, spec, kp_decode(kp, our_bytes, version), version) == value
    assert cls.decode(their_bytes, version) == ours


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize("name", ["ConsumerProtocolSubscription", "ConsumerProtocolAssignment"])
def test_consumer_protocol_data_matches_kafka_python(name: str, nulls: bool) -> None:
    """The version-prefixed member metadata/assignment bytes inside JoinGroup/SyncGroup."""
    from kafka.protocol.consumer import metadata as kp_metadata

    spec = load_spec(name)
    ours_cls: Any = getattr(messages, name)
    kp_cls = getattr(kp_metadata, name)
    for version in spec.versions():
        value = ValueGenerator(seed_for(name, version, nulls), nulls=nulls).struct(
            spec.fields, version
        )
        ours = ours_build(ours_cls, spec.fields, value)
        theirs = kp_cls(
            version=version, **to_kafka_python(kp_cls._struct, spec.fields, value, version)
        )
        our_bytes = ours.encode_versioned(version)
        their_bytes = bytes(theirs.encode(version=version))
        assert our_bytes == their_bytes, (version, _first_difference(our_bytes, their_bytes))
        decoded, decoded_version = ours_cls.decode_versioned(their_bytes)
        assert (decoded, decoded_version) == (ours, version)
        back = kp_cls.decode(our_bytes)
        assert from_kafka_python(kp_cls._struct, spec.fields, back, version) == value


def test_values_are_non_trivial() -> None:
    """Guard the generator: non-default scalars, non-empty arrays, tagged fields set."""
    spec = api_specs()[3][1]  # MetadataResponse
    value = ValueGenerator("guard").struct(spec.fields, 12)
    assert value["topics"] and value["brokers"]
    assert all(topic["partitions"] for topic in value["topics"])
    assert value["controller_id"] != -1
    assert value["topics"][0]["topic_id"].int != 0
    produce = api_specs()[0][1]  # ProduceResponse: NodeEndpoints is tagged (tag 0) in v10+
    produce_value = ValueGenerator("guard").struct(produce.fields, 11)
    assert produce_value["node_endpoints"]
    nulls = ValueGenerator("guard", nulls=True).struct(spec.fields, 12)
    assert nulls["cluster_id"] is None


# ---------------------------------------------------------------------------------- headers


CLIENT_IDS = [None, "", "aiokafkawire", "clïent-ünïcode-🙂"]


@pytest.mark.parametrize("client_id", CLIENT_IDS, ids=["null", "empty", "ascii", "unicode"])
def test_request_headers_match_kafka_python(client_id: str | None) -> None:
    """Header v1 and v2 bytes for every API and version equal kafka-python's and ours decodes."""
    for api_key, request_type in REQUEST_TYPES.items():
        for version in range(request_type.MIN_VERSION, request_type.MAX_VERSION + 1):
            header_version = request_header_version(request_type.FLEXIBLE_VERSION, version)
            flexible = header_version == 2
            correlation_id = (api_key * 7919 + version) * 104729 % 2**31
            ours = encode_request_header(
                api_key, version, correlation_id, client_id, header_version
            )
            theirs = kp_request_header(api_key, version, correlation_id, client_id, flexible)
            assert ours == theirs, (api_key, version)
            assert kp_decode_request_header(ours, flexible) == (
                api_key,
                version,
                correlation_id,
                client_id,
            )
            generated = messages.RequestHeader(
                request_api_key=api_key,
                request_api_version=version,
                correlation_id=correlation_id,
                client_id=client_id,
            )
            assert generated.encode(header_version) == ours, (api_key, version)


@pytest.mark.parametrize("correlation_id", [0, 1, 2**31 - 1, -1, -(2**31)])
def test_response_headers_match_kafka_python(correlation_id: int) -> None:
    """Response header v0/v1 bytes equal kafka-python's and the generated ResponseHeader's."""
    for header_version in (0, 1):
        ours = encode_response_header(correlation_id, header_version)
        assert ours == kp_response_header(correlation_id, header_version == 1)
        generated = messages.ResponseHeader(correlation_id=correlation_id)
        assert generated.encode(header_version) == ours


def test_header_version_rules_agree_with_generated_tables() -> None:
    """Our header-version rule equals the generator's per-version HEADER_VERSIONS tables."""
    for api_key, request_type in REQUEST_TYPES.items():
        response_type = RESPONSE_TYPES[api_key]
        for version in range(request_type.MIN_VERSION, request_type.MAX_VERSION + 1):
            assert (
                request_header_version(
                    request_type.FLEXIBLE_VERSION,
                    version,
                )
                == request_type.HEADER_VERSIONS[version]
            )
            assert (
                response_header_version(
                    api_key,
                    response_type.FLEXIBLE_VERSION,
                    version,
                )
                == response_type.HEADER_VERSIONS[version]
            )


# ---------------------------------------------------------------------------------- frames


def _request_cases() -> list[Any]:
    return [case for case in CASES if case.values[1].type == "request"]


def _response_cases() -> list[Any]:
    return [case for case in CASES if case.values[1].type == "response"]


@pytest.mark.parametrize(("cls", "spec", "version", "kp"), _request_cases())
def test_request_frames_match_kafka_python(
    cls: Any, spec: MessageSpec, version: int, kp: KpMessage
) -> None:
    """KafkaFraming.send_request frames equal kafka-python's; decode_request reads them back."""
    value = ValueGenerator(seed_for("frame", spec.name, version)).struct(spec.fields, version)
    client_id = "golden-client"
    correlation_id = 1000 + version
    framing = KafkaFraming(client_id, initial_correlation_id=correlation_id)
    request = ours_build(cls, spec.fields, value)
    sent_id, frame, _expects_response = framing.send_request(request, version)
    assert sent_id == correlation_id
    theirs = kp_frame(kp_build(kp, spec, value, version), version, correlation_id, client_id)
    assert frame == theirs, _first_difference(frame, theirs)

    header, decoded = decode_request(theirs[4:])
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        spec.api_key,
        version,
        correlation_id,
        client_id,
    )
    assert decoded == request


@pytest.mark.parametrize(("cls", "spec", "version", "kp"), _response_cases())
def test_response_frames_match_kafka_python(
    cls: Any, spec: MessageSpec, version: int, kp: KpMessage
) -> None:
    """encode_response frames equal kafka-python's; KafkaFraming decodes kafka-python's frames."""
    value = ValueGenerator(seed_for("frame", spec.name, version)).struct(spec.fields, version)
    if spec.api_key == 18:
        # A non-zero ApiVersions error makes the client read the body as v0 (broker fallback).
        value["error_code"] = 0
    response = ours_build(cls, spec.fields, value)
    correlation_id = 77 + version
    ours = encode_response(correlation_id, cls.API_KEY, version, response)
    theirs = kp_frame(kp_build(kp, spec, value, version), version, correlation_id, None)
    assert ours == theirs, _first_difference(ours, theirs)

    framing = KafkaFraming("golden", initial_correlation_id=correlation_id)
    request: Any = REQUEST_TYPES[cls.API_KEY]()
    if cls.API_KEY == 0:
        request.acks = -1  # acks=0 would expect no response
    framing.send_request(request, version)
    events = framing.receive_data(theirs)
    assert len(events) == 1
    assert events[0].correlation_id == correlation_id
    assert events[0].api_version == version
    assert events[0].response == response
    assert framing.in_flight == 0


# ---------------------------------------------------------------------------------- streams


def _kp_own_cases_by_api() -> list[Any]:
    """For each API: kafka-python's own oldest and newest request version we both have."""
    chosen: dict[int, list[int]] = {}
    for case in _request_cases():
        _cls, spec, version, kp = case.values
        if kp.origin == "kafka-python":
            chosen.setdefault(spec.api_key, []).append(version)
    return [
        pytest.param(api_key, sorted({versions[0], versions[-1]}), id=f"api{api_key}")
        for api_key, versions in sorted(chosen.items())
    ]


@pytest.mark.parametrize(("api_key", "versions"), _kp_own_cases_by_api())
def test_kafka_python_client_stream_against_our_server_helpers(
    api_key: int, versions: list[int]
) -> None:
    """kafka-python's KafkaProtocol client <-> FrameSplitter/decode_request/encode_response."""
    from kafka.protocol.parser import KafkaProtocol

    request_spec, response_spec = api_specs()[api_key]
    client = KafkaProtocol(client_id="kp-client")
    sent = []
    for version in versions:
        value = ValueGenerator(seed_for("stream", api_key, version)).struct(
            request_spec.fields, version
        )
        if api_key == 0:
            value["acks"] = -1  # acks=0 would expect no response
        kp = kafka_python_message(request_spec, version)
        correlation_id = client.send_request(kp_build(kp, request_spec, value, version))
        sent.append((correlation_id, version, value))

    splitter = FrameSplitter()
    frames = splitter.feed(client.send_bytes())
    assert len(frames) == len(sent)
    response_stream = b""
    expected = []
    for frame, (correlation_id, version, value) in zip(frames, sent, strict=True):
        header, request = decode_request(frame)
        assert (header.api_key, header.api_version, header.correlation_id) == (
            api_key,
            version,
            correlation_id,
        )
        assert header.client_id == "kp-client"
        assert request == ours_build(REQUEST_TYPES[api_key], request_spec.fields, value)
        response_value = ValueGenerator(seed_for("stream-response", api_key, version)).struct(
            response_spec.fields, version
        )
        if api_key == 18:
            response_value["error_code"] = 0  # kafka-python would re-read the body as v0
        response = ours_build(RESPONSE_TYPES[api_key], response_spec.fields, response_value)
        response_stream += encode_response(correlation_id, api_key, version, response)
        expected.append((correlation_id, version, response_value))

    received = []
    for start in range(0, len(response_stream), 7):  # odd-sized chunks across frame boundaries
        received += client.receive_bytes(response_stream[start : start + 7])
    assert [correlation_id for correlation_id, _ in received] == [e[0] for e in expected]
    for (_, kp_response), (_, version, response_value) in zip(received, expected, strict=True):
        kp = kafka_python_message(response_spec, version)
        assert kp_value(kp, response_spec, kp_response, version) == response_value
