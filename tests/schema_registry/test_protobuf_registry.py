"""Protobuf serializers against a real registry (Apicurio, the Confluent API), checked both ways
against confluent-kafka's own Protobuf serializers (issue 22)."""

from __future__ import annotations

import base64
import uuid

import pytest

from aiokafkawire.errors import ConfigError
from aiokafkawire.schema_registry import (
    AsyncSchemaRegistryClient,
    MessageField,
    SchemaRegistryError,
    SerializationContext,
    SerializationError,
    topic_record_subject_name_strategy,
)
from aiokafkawire.testing.registry import SchemaRegistryServer

pytest.importorskip("google.protobuf")
ck_registry = pytest.importorskip("confluent_kafka.schema_registry")
ck_protobuf = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
ck_serialization = pytest.importorskip("confluent_kafka.serialization")

from aiokafkawire.schema_registry.protobuf import (  # noqa: E402
    ProtobufDeserializer,
    ProtobufSerializer,
    decode_message_indexes,
    encode_message_indexes,
    message_indexes,
)

from ._proto_messages import HeaderV1, TagV1, UserV1, UserV2  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def topic() -> str:
    return f"pb-{uuid.uuid4().hex[:8]}"


def user_v1(name: str = "ada", age: int = 36) -> object:
    user = UserV1(name=name, age=age)
    user.created.seconds = 1_700_000_000
    user.home.city = "Paris"
    return user


def their_registry(server: SchemaRegistryServer) -> object:
    return ck_registry.SchemaRegistryClient({"url": server.url, "timeout": 30})


def their_context(name: str) -> object:
    return ck_serialization.SerializationContext(name, ck_serialization.MessageField.VALUE)


# Apicurio 3.3.3 answers confluent-kafka's `GET /schemas/ids/N?format=serialized` (how its
# ProtobufDeserializer fetches a writer schema when given a registry client) with HTTP 500 for
# descriptors registered in base64: read as confluent-kafka's documented registry-less form,
# ProtobufDeserializer(msg_type, conf), which parses with the given class as ours does.
def their_deserializer(msg_type: object) -> object:
    return ck_protobuf.ProtobufDeserializer(msg_type, {"use.deprecated.format": False})


def test_message_indexes_match_the_wire_format() -> None:
    assert message_indexes(HeaderV1.DESCRIPTOR) == [0]
    assert message_indexes(UserV1.DESCRIPTOR) == [1]
    assert message_indexes(TagV1.DESCRIPTOR) == [1, 0]
    assert encode_message_indexes([0]) == b"\x00"
    assert encode_message_indexes([1]) == b"\x02\x02"
    assert encode_message_indexes([1, 0]) == b"\x04\x02\x00"
    assert encode_message_indexes([70]) == b"\x02\x8c\x01"
    for indexes in ([0], [1], [1, 0], [70, 3, 200]):
        decoded, rest = decode_message_indexes(memoryview(encode_message_indexes(indexes) + b"x"))
        assert (decoded, bytes(rest)) == (indexes, b"x")
    with pytest.raises(SerializationError, match="truncated"):
        decode_message_indexes(memoryview(b"\x04\x82"))


async def test_records_we_write_are_read_by_confluent_kafka(
    schema_registry: SchemaRegistryServer,
) -> None:
    name = topic()
    their_client = their_registry(schema_registry)
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        for message in (user_v1(), HeaderV1(id=7), TagV1(label="x")):
            data = await ProtobufSerializer(type(message), client)(
                message, SerializationContext(f"{name}-{type(message).__name__}")
            )
            assert data is not None and data[0] == 0
            assert their_deserializer(type(message))(data, their_context(name)) == message
        header = await ProtobufSerializer(HeaderV1, client)(
            HeaderV1(id=1), SerializationContext(name)
        )
        assert header is not None and header[5] == 0  # [0]: one zero byte
        # the file is registered as confluent-kafka registers it: same text, same id, and the
        # imported exp/address.proto as a reference (the well-known timestamp.proto is not)
        subject = f"{name}-User-value"
        ours = await client.get_latest_version(subject)
        theirs_id = ck_protobuf.ProtobufSerializer(UserV1, their_client, {})(
            user_v1(), their_context(f"{name}-User")
        )
        assert int.from_bytes(theirs_id[1:5], "big") == ours.schema_id
        assert [(r.name, r.subject) for r in ours.schema.references] == [
            ("exp/address.proto", "exp/address.proto")
        ]
        assert base64.b64decode(ours.schema.schema_str) == UserV1.DESCRIPTOR.file.serialized_pb


async def test_records_confluent_kafka_writes_are_read_by_us(
    schema_registry: SchemaRegistryServer,
) -> None:
    name = topic()
    their = ck_protobuf.ProtobufSerializer(UserV1, their_registry(schema_registry), {})
    data = their(user_v1("bo", 7), their_context(name))
    tag = ck_protobuf.ProtobufSerializer(TagV1, their_registry(schema_registry), {})(
        TagV1(label="t"), their_context(name + "-tag")
    )
    ours = ProtobufDeserializer(UserV1)
    assert await ours(data, SerializationContext(name)) == user_v1("bo", 7)
    assert await ProtobufDeserializer(TagV1)(tag, SerializationContext(name)) == TagV1(label="t")
    assert await ours(None, SerializationContext(name)) is None


async def test_schema_evolution_across_the_two_clients(
    schema_registry: SchemaRegistryServer,
) -> None:
    name = topic()
    their_client = their_registry(schema_registry)
    old = ck_protobuf.ProtobufSerializer(UserV1, their_client, {})(
        user_v1("cy", 1), their_context(name)
    )
    # our v2 reader: the field confluent-kafka's v1 writer lacks reads as its default
    read = await ProtobufDeserializer(UserV2)(old, SerializationContext(name))
    assert (read.name, read.age, read.email, read.home.city) == ("cy", 1, "", "Paris")
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        v2 = UserV2(name="di", age=2, email="di@example.org")
        new = await ProtobufSerializer(UserV2, client)(v2, SerializationContext(name))
        assert new is not None
        assert await client.get_versions(f"{name}-value") == [1, 2]
        # use.latest.version writes with the subject's newest schema id
        latest = ProtobufSerializer(UserV2, client, {"use.latest.version": True})
        again = await latest(v2, SerializationContext(name))
        assert again is not None and again[1:5] == new[1:5]
    # confluent-kafka's v1 reader keeps the field it does not know as an unknown field
    v1_read = their_deserializer(UserV1)(new, their_context(name))
    assert (v1_read.name, v1_read.age) == ("di", 2)
    assert UserV2.FromString(v1_read.SerializeToString()).email == "di@example.org"


async def test_subject_strategies_and_no_auto_register(
    schema_registry: SchemaRegistryServer,
) -> None:
    name = topic()
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        conf = {"subject.name.strategy": topic_record_subject_name_strategy}
        await ProtobufSerializer(UserV1, client, conf)(user_v1(), SerializationContext(name))
        assert await client.get_versions(f"{name}-exp.User") == [1]
        lookup_only = ProtobufSerializer(UserV1, client, {**conf, "auto.register.schemas": False})
        assert await lookup_only(user_v1(), SerializationContext(name)) is not None
        unregistered = ProtobufSerializer(UserV1, client, {"auto.register.schemas": False})
        with pytest.raises(SchemaRegistryError) as missing:
            await unregistered(user_v1(), SerializationContext(topic(), MessageField.KEY))
        assert missing.value.http_status_code == 404


async def test_bad_input_is_a_typed_error(schema_registry: SchemaRegistryServer) -> None:
    name = topic()
    ctx = SerializationContext(name, MessageField.KEY)
    async with AsyncSchemaRegistryClient({"url": schema_registry.url}) as client:
        with pytest.raises(SerializationError, match=f"{name} key: expected a User message"):
            await ProtobufSerializer(UserV1, client)(HeaderV1(id=1), ctx)
        with pytest.raises(ConfigError, match="generated Protobuf message class"):
            ProtobufSerializer(dict, client)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="unknown ProtobufSerializer settings"):
            ProtobufSerializer(UserV1, client, {"use.latest": True})
    with pytest.raises(ConfigError, match="unknown ProtobufDeserializer settings"):
        ProtobufDeserializer(UserV1, {"subject.name.strategy": None})
    with pytest.raises(SerializationError, match="unknown magic byte 7"):
        await ProtobufDeserializer(UserV1)(b"\x07\x00\x00\x00\x01\x00", ctx)
    with pytest.raises(SerializationError, match=f"{name} key: schema id 1: not a exp.User"):
        await ProtobufDeserializer(UserV1)(b"\x00\x00\x00\x00\x01\x00\xff\xff", ctx)
