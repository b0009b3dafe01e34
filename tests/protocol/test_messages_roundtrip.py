"""Generated message codecs: round trips for every API/version, defaults, tagged fields, errors.

Values are drawn from each class's ``_SCHEMA`` (field name, type, versions, nullable versions,
tagged versions, tag, ignorable, field-level flexible versions), so a strategy only produces what
the chosen version can carry.
"""

from __future__ import annotations

import copy
import pickle
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _kafka_python_bridge import load_generator as load_generator_as
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiokafkawire.errors import EncodeError, ProtocolError
from aiokafkawire.protocol import SUPPORTED_VERSIONS, ApiKey
from aiokafkawire.protocol.messages import (
    REQUEST_TYPES,
    RESPONSE_TYPES,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    FetchRequest,
    FetchResponse,
    JoinGroupRequest,
    ListOffsetsRequest,
    Message,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    RequestHeader,
    ResponseHeader,
    SyncGroupResponse,
)
from aiokafkawire.protocol.messages import api_versions as api_versions_module
from aiokafkawire.protocol.messages import consumer_group_heartbeat as cgh_module
from aiokafkawire.protocol.messages import fetch as fetch_module
from aiokafkawire.protocol.messages import metadata as metadata_module

REPO_ROOT = Path(__file__).resolve().parents[2]
MESSAGES_DIR = REPO_ROOT / "aiokafkawire" / "protocol" / "messages"

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
SETTINGS = settings(
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def in_range(rng: tuple[int, int | None] | None, version: int) -> bool:
    if rng is None:
        return False
    lo, hi = rng
    return lo <= version and (hi is None or version <= hi)


def primitive_strategy(type_name: str) -> st.SearchStrategy[Any]:
    if type_name in INT_RANGES:
        lo, hi = INT_RANGES[type_name]
        return st.integers(lo, hi)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.floats(allow_nan=False)
    if type_name == "string":
        return st.text(max_size=6)
    if type_name in ("bytes", "records"):
        return st.binary(max_size=8)
    if type_name == "uuid":
        return st.uuids() | st.just(uuid.UUID(int=0))
    raise AssertionError(f"no strategy for {type_name}")


def message_strategy(
    cls: type[Message], version: int, flexible: bool, depth: int = 0
) -> st.SearchStrategy[Message]:
    """Objects of ``cls`` whose every field is valid in ``version`` (absent ones keep defaults)."""
    module = sys.modules[cls.__module__]
    known_tags: list[int] = []
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for name, type_str, versions, nullable, tagged, tag, _ignorable, _flex in cls._SCHEMA:
        if not in_range(versions, version):
            continue
        if tag is not None and in_range(tagged, version):
            known_tags.append(tag)
        is_array = type_str.startswith("[]")
        base = type_str[2:] if is_array else type_str
        struct_cls = getattr(module, base, None)
        if struct_cls is not None:
            elem = message_strategy(struct_cls, version, flexible, depth + 1)
        else:
            elem = primitive_strategy(base)
        strategy: st.SearchStrategy[Any] = (
            st.lists(elem, max_size=3 if depth < 2 else 1) if is_array else elem
        )
        if in_range(nullable, version) or (base == "records" and not is_array):
            strategy = st.none() | strategy
        fields[name] = strategy
    if flexible and "unknown_tagged_fields" in cls._FIELDS:
        first_free = max(known_tags, default=-1) + 1
        tags = st.lists(st.integers(first_free, first_free + 300), unique=True, max_size=2)
        fields["unknown_tagged_fields"] = tags.flatmap(
            lambda ts: st.tuples(*[st.binary(max_size=4) for _ in ts]).map(
                lambda datas: [(t, d) for t, d in zip(sorted(ts), datas, strict=True)] or None
            )
        )
    return st.fixed_dictionaries(fields).map(lambda kwargs: cls(**kwargs))


def all_cases() -> Iterator[Any]:
    for api_key in sorted(REQUEST_TYPES):
        for cls in (REQUEST_TYPES[api_key], RESPONSE_TYPES[api_key]):
            for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
                yield pytest.param(cls, version, id=f"{cls.__name__}-v{version}")
    others: tuple[Any, ...] = (
        RequestHeader,
        ResponseHeader,
        ConsumerProtocolSubscription,
        ConsumerProtocolAssignment,
    )
    for other in others:
        for version in range(other.MIN_VERSION, other.MAX_VERSION + 1):
            yield pytest.param(other, version, id=f"{other.__name__}-v{version}")


def is_flexible(cls: Any, version: int) -> bool:
    first = cls.FLEXIBLE_VERSION
    return first is not None and version >= first


@pytest.mark.parametrize(("cls", "version"), list(all_cases()))
def test_round_trip(cls: Any, version: int) -> None:
    @SETTINGS
    @given(message_strategy(cls, version, is_flexible(cls, version)))
    def check(message: Message) -> None:
        data = message.encode(version)
        assert isinstance(data, bytes)
        decoded = cls.decode(data, version)
        assert decoded == message
        assert decoded.encode(version) == data
        # Every proper prefix is truncated input; check a few of them.
        for cut in {0, len(data) // 2, len(data) - 1}:
            if 0 <= cut < len(data):
                with pytest.raises(ProtocolError):
                    cls.decode(data[:cut], version)

    check()


# ----------------------------------------------------------------------------- hand-checked bytes


def test_api_versions_request_v3_layout() -> None:
    request = ApiVersionsRequest(client_software_name="aiokafkawire", client_software_version="0.1")
    data = request.encode(3)
    # compact string: unsigned varint (length + 1), then UTF-8; then an empty tagged-field section
    assert data == b"\x0daiokafkawire" + b"\x040.1" + b"\x00"
    assert ApiVersionsRequest.decode(data, 3) == request
    # v0-v2 have no fields at all; the two fields are ignorable, so they are silently dropped
    assert request.encode(2) == b""


def test_metadata_request_v0_two_topics_layout() -> None:
    request = MetadataRequest(
        topics=[
            metadata_module.MetadataRequestTopic(name="foo"),
            metadata_module.MetadataRequestTopic(name="ab"),
        ]
    )
    data = request.encode(0)
    assert data == b"\x00\x00\x00\x02" + b"\x00\x03foo" + b"\x00\x02ab"
    decoded = MetadataRequest.decode(data, 0)
    assert [t.name for t in decoded.topics or []] == ["foo", "ab"]


def test_metadata_request_v12_layout() -> None:
    topic_id = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    request = MetadataRequest(
        topics=[metadata_module.MetadataRequestTopic(topic_id=topic_id, name=None)],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=True,
    )
    data = request.encode(12)
    assert data == (
        b"\x02"  # compact array of one topic
        + topic_id.bytes
        + b"\x00"  # null compact string
        + b"\x00"  # topic's tagged fields
        + b"\x00\x01"  # allow_auto_topic_creation, include_topic_authorized_operations
        + b"\x00"  # top-level tagged fields
    )
    assert MetadataRequest.decode(data, 12) == request
    # null topics means "all topics" from v1 on
    assert MetadataRequest(topics=None).encode(1) == b"\xff\xff\xff\xff"
    assert MetadataRequest(topics=None).encode(9)[:1] == b"\x00"


def test_request_header_v2_client_id_is_not_compact() -> None:
    header = RequestHeader(
        request_api_key=18, request_api_version=3, correlation_id=7, client_id="cli"
    )
    assert header.encode(1) == b"\x00\x12\x00\x03\x00\x00\x00\x07\x00\x03cli"
    # ClientId keeps its int16 length in v2 (field-level flexibleVersions "none"), then tags
    assert header.encode(2) == b"\x00\x12\x00\x03\x00\x00\x00\x07\x00\x03cli\x00"
    assert RequestHeader(client_id=None).encode(2)[-3:] == b"\xff\xff\x00"
    assert RequestHeader.decode(header.encode(2), 2) == header
    assert header.encode(0) == b"\x00\x12\x00\x03\x00\x00\x00\x07"


def test_response_header_versions() -> None:
    assert ResponseHeader(correlation_id=258).encode(0) == b"\x00\x00\x01\x02"
    assert ResponseHeader(correlation_id=258).encode(1) == b"\x00\x00\x01\x02\x00"


def test_header_versions() -> None:
    assert MetadataRequest.HEADER_VERSIONS[8] == 1
    assert MetadataRequest.HEADER_VERSIONS[9] == 2
    assert MetadataResponse.HEADER_VERSIONS[8] == 0
    assert MetadataResponse.HEADER_VERSIONS[9] == 1
    assert ApiVersionsRequest.HEADER_VERSIONS[3] == 2
    # ApiVersions responses always use header v0, so a client can read them from any broker
    assert set(ApiVersionsResponse.HEADER_VERSIONS) == {0}
    assert MetadataRequest.header_version(9) == 2
    assert ApiVersionsResponse.header_version(4) == 0
    with pytest.raises(EncodeError):
        MetadataRequest.header_version(MetadataRequest.MAX_VERSION + 1)
    assert MetadataRequest.RESPONSE_TYPE is MetadataResponse
    assert MetadataResponse.REQUEST_TYPE is MetadataRequest
    for api_key, request_cls in REQUEST_TYPES.items():
        response_cls = RESPONSE_TYPES[api_key]
        assert request_cls.API_KEY == response_cls.API_KEY == api_key
        first_flexible = request_cls.FLEXIBLE_VERSION
        for version in range(request_cls.MIN_VERSION, request_cls.MAX_VERSION + 1):
            flexible = first_flexible is not None and version >= first_flexible
            assert request_cls.HEADER_VERSIONS[version] == (2 if flexible else 1)


# ------------------------------------------------------------------------------- defaults, errors


def test_defaults_from_spec() -> None:
    fetch = FetchRequest()
    assert fetch.max_bytes == 0x7FFFFFFF  # "0x7fffffff"
    assert fetch.replica_id == -1
    assert fetch.isolation_level == 0
    assert fetch.cluster_id is None  # "null"
    assert fetch.topics == [] and fetch.forgotten_topics_data == []
    assert MetadataRequest().allow_auto_topic_creation is True  # "true"
    assert ListOffsetsRequest().replica_id == 0
    assert ApiVersionsResponse().finalized_features_epoch == -1
    assert ApiVersionsResponse().zk_migration_ready is False
    # mutable defaults are fresh objects
    assert FetchRequest().topics is not fetch.topics
    leader = fetch_module.PartitionData().current_leader
    assert leader == fetch_module.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    assert fetch_module.PartitionData().current_leader is not leader


def test_absent_fields_decode_to_defaults() -> None:
    response = MetadataResponse(
        brokers=[metadata_module.MetadataResponseBroker(node_id=1, host="h", port=9092)]
    )
    decoded = MetadataResponse.decode(response.encode(0), 0)
    assert decoded.throttle_time_ms == 0
    assert decoded.cluster_id is None
    assert decoded.controller_id == -1
    assert decoded.brokers[0].rack is None
    assert decoded.cluster_authorized_operations == -2147483648


def test_non_ignorable_absent_field_raises_encode_error() -> None:
    partition = fetch_module.FetchPartition(partition=0, last_fetched_epoch=5)  # 12+, not ignorable
    request = FetchRequest(topics=[fetch_module.FetchTopic(topic="t", partitions=[partition])])
    request.encode(12)
    with pytest.raises(EncodeError) as info:
        request.encode(11)
    text = str(info.value)
    assert "FetchRequest" in text and "FetchPartition.last_fetched_epoch" in text and "v11" in text
    # the default value is fine in any version
    default_partition = fetch_module.FetchPartition()
    FetchRequest(topics=[fetch_module.FetchTopic(partitions=[default_partition])]).encode(0)
    with pytest.raises(EncodeError, match="isolation_level"):
        ListOffsetsRequest(isolation_level=1).encode(1)
    ListOffsetsRequest(isolation_level=0).encode(1)


def test_ignorable_absent_uuid_is_dropped() -> None:
    # FetchTopic.TopicId (13+) and .Topic (0-12) are both ignorable: each version keeps its own
    topic = fetch_module.FetchTopic(topic_id=uuid.uuid4(), topic="t")
    assert FetchRequest.decode(FetchRequest(topics=[topic]).encode(12), 12).topics[0].topic_id == (
        uuid.UUID(int=0)
    )
    assert FetchRequest.decode(FetchRequest(topics=[topic]).encode(13), 13).topics[0].topic == ""


def test_ignorable_absent_field_is_dropped() -> None:
    request = JoinGroupRequest(group_id="g", reason="because")  # Reason: 8+, ignorable
    assert JoinGroupRequest.decode(request.encode(7), 7).reason is None


def test_encode_errors_for_bad_values() -> None:
    with pytest.raises(EncodeError):
        MetadataRequest(topics=None).encode(0)  # topics nullable only from v1
    with pytest.raises(EncodeError):
        ApiVersionsResponse(error_code=1 << 15).encode(0)  # int16 overflow
    with pytest.raises(EncodeError):
        FetchRequest(replica_id="x").encode(4)  # type: ignore[arg-type]
    with pytest.raises(EncodeError):
        metadata_module.MetadataRequestTopic(name=None).encode(9)  # name nullable from v10
    with pytest.raises(EncodeError):
        MetadataRequest().encode(MetadataRequest.MAX_VERSION + 1)  # no such version


def test_tagged_fields_known_and_unknown() -> None:
    response = ApiVersionsResponse(
        api_keys=[api_versions_module.ApiVersion(api_key=3, min_version=0, max_version=12)],
        finalized_features_epoch=5,
        zk_migration_ready=True,
    )
    data = response.encode(3)
    body = b"\x00\x00" + b"\x02" + b"\x00\x03\x00\x00\x00\x0c\x00" + b"\x00\x00\x00\x00"
    # two known tags, in tag order: 1 (int64, 8 bytes) and 3 (bool, 1 byte); defaults are omitted
    tags = b"\x02" + b"\x01\x08" + (5).to_bytes(8, "big") + b"\x03\x01\x01"
    assert data == body + tags
    assert ApiVersionsResponse.decode(data, 3) == response
    # An unknown tag (7) from a newer broker is kept and written back in tag order.
    with_unknown = body + b"\x03" + b"\x01\x08" + (5).to_bytes(8, "big") + b"\x03\x01\x01"
    with_unknown += b"\x07\x02hi"
    decoded = ApiVersionsResponse.decode(with_unknown, 3)
    assert decoded.finalized_features_epoch == 5
    assert decoded.unknown_tagged_fields == [(7, b"hi")]
    assert decoded.encode(3) == with_unknown
    # In a non-flexible version the tagged fields do not exist (they are ignorable)
    assert ApiVersionsResponse.decode(response.encode(2), 2).finalized_features_epoch == -1


def test_tagged_struct_field() -> None:
    leader = fetch_module.LeaderIdAndEpoch(leader_id=2, leader_epoch=3)
    partition = fetch_module.PartitionData(partition_index=1, current_leader=leader)
    topic = fetch_module.FetchableTopicResponse(partitions=[partition])
    response = FetchResponse(responses=[topic])
    data = response.encode(12)
    decoded = FetchResponse.decode(data, 12)
    assert decoded.responses[0].partitions[0].current_leader == leader
    # tag 1, size 9: int32 leader id, int32 epoch, empty tagged section of the struct
    tagged = b"\x01\x01\x09" + b"\x00\x00\x00\x02\x00\x00\x00\x03\x00"
    assert tagged in data
    # A known tagged field whose declared size disagrees with its content is rejected.
    bad = data.replace(tagged, b"\x01\x01\x0a" + tagged[3:] + b"\x00")
    with pytest.raises(ProtocolError, match="tagged field size"):
        FetchResponse.decode(bad, 12)
    # Without a value set, the default leader is not written at all.
    plain = FetchResponse(
        responses=[
            fetch_module.FetchableTopicResponse(
                partitions=[fetch_module.PartitionData(partition_index=1)]
            )
        ]
    )
    assert len(plain.encode(12)) == len(data) - len(tagged) + 1


def test_absent_tagged_struct_default_is_fresh_per_object() -> None:
    data = FetchResponse(
        responses=[
            fetch_module.FetchableTopicResponse(
                partitions=[fetch_module.PartitionData(partition_index=i) for i in range(2)]
            )
        ]
    ).encode(12)
    first, second = FetchResponse.decode(data, 12).responses[0].partitions
    assert first.current_leader == fetch_module.LeaderIdAndEpoch()
    first.current_leader.leader_id = 7  # a default object is never shared
    assert second.current_leader.leader_id == -1
    assert first == fetch_module.PartitionData(
        partition_index=0, current_leader=fetch_module.LeaderIdAndEpoch(leader_id=7)
    )
    with pytest.raises(AttributeError):
        first.no_such_field  # type: ignore[attr-defined]  # noqa: B018
    untouched = FetchResponse.decode(data, 12)
    assert copy.deepcopy(untouched) == untouched
    assert pickle.loads(pickle.dumps(untouched)) == untouched


@pytest.mark.parametrize("size", [0, 1, 126, 127, 128, 300, 16382, 16383, 16384, 70000])
def test_variable_length_sizes_across_varint_widths(size: int) -> None:
    from aiokafkawire.protocol.messages import produce as produce_module

    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    name = "t" * (size % 2000)
    partition = produce_module.PartitionProduceData(index=1, records=payload)
    request = ProduceRequest(
        topic_data=[produce_module.TopicProduceData(name=name, partition_data=[partition])]
    )
    for version in (3, 9):  # int32/int16 lengths, then compact (varint) lengths
        data = request.encode(version)
        decoded = ProduceRequest.decode(data, version)
        assert decoded == request
        with pytest.raises(ProtocolError):
            ProduceRequest.decode(data[:-2], version)
    sync = SyncGroupResponse(assignment=payload)  # non-nullable bytes
    for version in (3, 4):
        assert SyncGroupResponse.decode(sync.encode(version), version) == sync


def test_nullable_struct_field() -> None:
    response = cgh_module.ConsumerGroupHeartbeatResponse(
        assignment=cgh_module.Assignment(
            topic_partitions=[cgh_module.TopicPartitions(topic_id=uuid.UUID(int=1), partitions=[4])]
        )
    )
    data = response.encode(0)
    assert cgh_module.ConsumerGroupHeartbeatResponse.decode(data, 0) == response
    # Request and response define TopicPartitions identically: one shared class.
    topics = cgh_module.TopicPartitions(topic_id=uuid.UUID(int=1), partitions=[4])
    request = cgh_module.ConsumerGroupHeartbeatRequest(topic_partitions=[topics])
    assert cgh_module.ConsumerGroupHeartbeatRequest.decode(request.encode(0), 0) == request
    null = cgh_module.ConsumerGroupHeartbeatResponse(assignment=None).encode(0)
    assert null[-2:] == b"\xff\x00"  # int8 -1 marks the null struct, then tagged fields
    # 0x01 marker replaces 0xff; then the Assignment: compact array of one TopicPartitions
    # (uuid, compact int32 array of one, tags) and its own tags
    assignment = b"\x02" + uuid.UUID(int=1).bytes + b"\x02\x00\x00\x00\x04\x00" + b"\x00"
    assert data[16:] == b"\x01" + assignment + b"\x00"


def test_records_field_is_bytes_or_none() -> None:
    produce = ProduceRequest(
        acks=-1,
        topic_data=[
            {"name": "t", "partition_data": []}  # type: ignore[list-item]
        ],
    )
    with pytest.raises(EncodeError):
        produce.encode(3)  # dicts are not structs
    from aiokafkawire.protocol.messages import produce as produce_module

    partition = produce_module.PartitionProduceData(index=0, records=b"\x01\x02\x03")
    request = ProduceRequest(
        acks=-1, topic_data=[produce_module.TopicProduceData(name="t", partition_data=[partition])]
    )
    for version in (3, 9):
        decoded = ProduceRequest.decode(request.encode(version), version)
        records = decoded.topic_data[0].partition_data[0].records
        assert type(records) is bytes and records == b"\x01\x02\x03"
    null = produce_module.PartitionProduceData(index=0, records=None)
    assert null.encode(3) == b"\x00\x00\x00\x00\xff\xff\xff\xff"
    assert null.encode(9) == b"\x00\x00\x00\x00\x00\x00"


# ----------------------------------------------------------------------------------- bad input


def test_trailing_bytes_are_a_protocol_error() -> None:
    data = MetadataRequest().encode(4)
    with pytest.raises(ProtocolError, match="trailing"):
        MetadataRequest.decode(data + b"\x00", 4)


def test_decode_accepts_bytearray_and_memoryview() -> None:
    request = MetadataRequest(topics=[metadata_module.MetadataRequestTopic(name="x")])
    data = request.encode(9)
    assert MetadataRequest.decode(bytearray(data), 9) == request
    assert MetadataRequest.decode(memoryview(data), 9) == request


def test_invalid_lengths_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError):
        MetadataRequest.decode(b"\x00\x00\x00\x05", 0)  # array longer than the buffer
    with pytest.raises(ProtocolError):
        MetadataRequest.decode(b"\xff\xff\xff\xfe", 0)  # negative length, not nullable in v0
    # A null in a non-nullable string reads as "" (librdkafka sends null hosts in error answers).
    topics = MetadataRequest.decode(b"\x00\x00\x00\x01\xff\xff", 0).topics
    assert topics is not None and topics[0].name == ""
    with pytest.raises(ProtocolError):
        MetadataRequest.decode(b"\x00\x00\x00\x01\x00\x02\xff\xfe", 0)  # invalid UTF-8
    with pytest.raises(ProtocolError):
        MetadataRequest.decode(b"\xff" * 11, 10)  # unsigned varint longer than 10 bytes
    with pytest.raises(ProtocolError):
        MetadataRequest.decode(b"\x02" + b"\x00" * 16 + b"\x05ab\x00\x00\x00\x00\x00", 10)
    with pytest.raises(ProtocolError):
        ApiVersionsResponse.decode(b"\x00\x00\x01\x00\x00\x00\x00\x01\xff", 3)  # bad varint


@SETTINGS
@given(st.sampled_from(sorted(RESPONSE_TYPES)), st.binary(max_size=64), st.integers(0, 20))
def test_garbage_never_escapes_as_other_exceptions(api_key: int, data: bytes, version: int) -> None:
    cls = RESPONSE_TYPES[api_key]
    version = min(version, cls.MAX_VERSION)
    try:
        cls.decode(data, version)
    except ProtocolError:
        pass


# ---------------------------------------------------------------------------- consumer protocol


def test_consumer_protocol_versioned_helpers() -> None:
    subscription = ConsumerProtocolSubscription(topics=["a"], user_data=None, generation_id=4)
    data = subscription.encode_versioned(2)
    assert data == b"\x00\x02" + b"\x00\x00\x00\x01\x00\x01a" + b"\xff\xff\xff\xff" + (
        b"\x00\x00\x00\x00" + b"\x00\x00\x00\x04"
    )
    assert ConsumerProtocolSubscription.decode_versioned(data) == (subscription, 2)
    # A newer version than we know is read with our newest layout, extra bytes ignored.
    newer = b"\x00\x09" + subscription.encode(3) + b"future"
    decoded, version = ConsumerProtocolSubscription.decode_versioned(newer)
    assert version == 9 and decoded.generation_id == 4
    assignment = ConsumerProtocolAssignment(user_data=b"u")
    assert ConsumerProtocolAssignment.decode_versioned(assignment.encode_versioned()) == (
        assignment,
        ConsumerProtocolAssignment.MAX_VERSION,
    )
    with pytest.raises(ProtocolError):
        ConsumerProtocolAssignment.decode_versioned(b"\x00")


# --------------------------------------------------------------------------------- registries


def _spec_json(path: Path) -> dict[str, Any]:
    import json
    import re

    return dict(json.loads(re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M)))


def _bounds(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def test_registries_cover_the_specs(spec_root: Path) -> None:
    """Every API a client reaches on a broker, from the lowest legacy to the newest stable one."""
    legacy_root = spec_root.parent / "kafka-3.9.2" / "message"
    expected: dict[int, tuple[int, int]] = {}
    names: dict[int, str] = {}
    for path in sorted((spec_root / "message").glob("*Request.json")):
        spec = _spec_json(path)
        if "broker" not in spec.get("listeners", []) or spec["validVersions"] == "none":
            continue
        low, high = _bounds(spec["validVersions"])
        if spec.get("latestVersionUnstable"):
            high -= 1  # unstable versions are left out
        legacy_path = legacy_root / path.name
        if legacy_path.exists():
            legacy = _spec_json(legacy_path)
            legacy_low, legacy_high = _bounds(legacy["validVersions"])
            if legacy.get("latestVersionUnstable"):
                legacy_high -= 1
            if legacy_high >= legacy_low:
                low = min(low, legacy_low)  # versions Kafka 4 dropped stay for old brokers
        expected[spec["apiKey"]] = (low, high)
        names[spec["apiKey"]] = spec["name"]
    assert len(expected) > 70
    assert {0, 1, 29, 30, 31, 48, 49, 50, 51, 75, 76, 77, 78, 79, 90, 91, 92} <= set(expected)
    assert dict(SUPPORTED_VERSIONS) == expected
    assert set(REQUEST_TYPES) == set(RESPONSE_TYPES) == set(expected)
    assert {int(k) for k in ApiKey} == set(expected)
    assert ApiKey.METADATA == 3 and ApiKey.CONSUMER_GROUP_DESCRIBE == 69
    assert ApiKey.SHARE_FETCH == 78 and ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS == 50
    for api_key, request_cls in REQUEST_TYPES.items():
        assert request_cls.__name__ == names[api_key]
        assert (request_cls.MIN_VERSION, request_cls.MAX_VERSION) == expected[api_key]
        response_cls = RESPONSE_TYPES[api_key]
        assert (response_cls.MIN_VERSION, response_cls.MAX_VERSION) == expected[api_key]


def test_unstable_versions_are_left_out() -> None:
    from aiokafkawire.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

    # InitProducerId v6 (KIP-939 two-phase commit) is marked latestVersionUnstable in Kafka 4.4.
    assert InitProducerIdRequest.MAX_VERSION == InitProducerIdResponse.MAX_VERSION == 5
    assert "enable2_pc" not in InitProducerIdRequest._FIELDS
    assert "ongoing_txn_producer_id" not in InitProducerIdResponse._FIELDS


def test_legacy_versions_keep_their_fields() -> None:
    from aiokafkawire.protocol.messages import ListOffsetsRequest, OffsetCommitRequest
    from aiokafkawire.protocol.messages.list_offsets import ListOffsetsPartition
    from aiokafkawire.protocol.messages.offset_commit import OffsetCommitRequestPartition

    # Kafka 4 dropped ListOffsets v0 (with MaxNumOffsets) and OffsetCommit v1 (with
    # CommitTimestamp) from its specs; the 3.9.2 specs supply them.
    assert ListOffsetsRequest.MIN_VERSION == 0 and OffsetCommitRequest.MIN_VERSION == 0
    assert "max_num_offsets" in ListOffsetsPartition._FIELDS
    assert "commit_timestamp" in OffsetCommitRequestPartition._FIELDS


# ------------------------------------------------------------------------------------ generator


def load_generator() -> Any:
    return load_generator_as("gen_messages_under_test", stay_registered=False)


def test_generated_files_are_up_to_date_and_deterministic(spec_root: Path, tmp_path: Path) -> None:
    generator = load_generator()
    first = tmp_path / "a"
    second = tmp_path / "b"
    assert generator.main(["--out", str(first)]) == 0  # the vendored specs by default
    legacy = spec_root.parent / "kafka-3.9.2"
    assert generator.main([str(spec_root), "--legacy", str(legacy), "--out", str(second)]) == 0
    generated = sorted(p.name for p in first.glob("*.py"))
    assert "metadata.py" in generated and "__init__.py" in generated
    for name in generated:
        text = (first / name).read_text(encoding="utf-8")
        assert text == (second / name).read_text(encoding="utf-8"), name
        assert text.startswith(
            "# generated by tools/gen_messages.py from the Apache Kafka message specs"
        )
        assert text == (MESSAGES_DIR / name).read_text(encoding="utf-8"), (
            f"{name} is stale: run python tools/gen_messages.py"
        )


def test_legacy_merge_takes_over_only_removed_versions() -> None:
    generator = load_generator()

    def spec(valid: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
        return {"name": "XRequest", "type": "request", "validVersions": valid, "fields": fields}

    current = spec("2-3", [{"name": "A", "type": "int32", "versions": "0+"}])
    legacy = spec(
        "0-2",
        [
            {"name": "A", "type": "int32", "versions": "0+"},
            {"name": "Old", "type": "int64", "versions": "0-1"},
        ],
    )
    assert generator.merge_legacy(current, legacy) == 2
    assert current["validVersions"] == "0-3"
    assert [f["name"] for f in current["fields"]] == ["A", "Old"]
    generator.check_legacy_layouts(current, legacy, 2)

    # A legacy-only field in a version the current spec still defines is a real difference.
    clash = spec(
        "0-2",
        [
            {"name": "A", "type": "int32", "versions": "0+"},
            {"name": "Gone", "type": "int64", "versions": "0-2"},
        ],
    )
    with pytest.raises(SystemExit, match="Gone"):
        generator.merge_legacy(
            spec("2-3", [{"name": "A", "type": "int32", "versions": "0+"}]), clash
        )
    # A changed layout of a taken-over version is caught by the check.
    retyped = spec("0-1", [{"name": "A", "type": "int64", "versions": "0+"}])
    merged = spec("2-3", [{"name": "A", "type": "int32", "versions": "0+"}])
    assert generator.merge_legacy(merged, retyped) == 2
    with pytest.raises(SystemExit, match="v0 differs"):
        generator.check_legacy_layouts(merged, retyped, 2)


def test_unstable_latest_version_is_cut_with_its_fields() -> None:
    generator = load_generator()
    raw = {
        "name": "XRequest",
        "validVersions": "0-2",
        "latestVersionUnstable": True,
        "fields": [
            {"name": "A", "type": "int32", "versions": "0+"},
            {"name": "New", "type": "int32", "versions": "2+"},
        ],
    }
    generator.cap_versions(raw, generator.stable_top(raw))
    assert raw["validVersions"] == "0-1"
    assert [f["name"] for f in raw["fields"]] == ["A"]


def test_snake_case_names() -> None:
    generator = load_generator()
    assert generator.snake_case("TopicId") == "topic_id"
    assert generator.snake_case("ISRNodes") == "isr_nodes"
    assert generator.snake_case("ThrottleTimeMs") == "throttle_time_ms"
    assert generator.snake_case("ZkMigrationReady") == "zk_migration_ready"
    assert generator.snake_case("ProducerIdStart") == "producer_id_start"


def test_null_in_non_nullable_bytes_reads_as_empty() -> None:
    # librdkafka's mock answers a late SyncGroup with REBALANCE_IN_PROGRESS and a null assignment.
    from aiokafkawire.protocol.messages import SyncGroupResponse

    body = b"\x00\x1b" + b"\xff\xff\xff\xff"  # v0: error_code 27, assignment null
    response = SyncGroupResponse.decode(body, 0)
    assert response.error_code == 27 and response.assignment == b""
    flexible = b"\x00\x00\x00\x00" + b"\x00\x1b" + b"\x00" + b"\x00" + b"\x00" + b"\x00"
    response = SyncGroupResponse.decode(flexible, 5)  # compact null, then tags
    assert response.assignment == b""
