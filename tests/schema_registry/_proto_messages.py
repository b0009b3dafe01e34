"""Generated-style Protobuf message classes for the registry tests, built from descriptors
(protoc is not needed): ``exp/user.proto`` in two versions (v2 adds ``email``), each in its own
pool, importing ``google/protobuf/timestamp.proto`` and ``exp/address.proto``."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
from google.protobuf.message_factory import GetMessageClass

_STRING, _INT32, _MESSAGE = 9, 5, 11
_OPTIONAL = 1


def _address_file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="exp/address.proto", package="exp", syntax="proto3"
    )
    address = proto.message_type.add(name="Address")
    address.field.add(name="city", number=1, type=_STRING, label=_OPTIONAL)
    return proto


def _user_file(with_email: bool) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="exp/user.proto",
        package="exp",
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto", "exp/address.proto"],
    )
    proto.message_type.add(name="Header").field.add(
        name="id", number=1, type=_INT32, label=_OPTIONAL
    )
    user = proto.message_type.add(name="User")
    user.field.add(name="name", number=1, type=_STRING, label=_OPTIONAL)
    user.field.add(name="age", number=2, type=_INT32, label=_OPTIONAL)
    user.field.add(
        name="created", number=3, type=_MESSAGE, label=_OPTIONAL,
        type_name=".google.protobuf.Timestamp",
    )  # fmt: skip
    user.field.add(name="home", number=4, type=_MESSAGE, label=_OPTIONAL, type_name=".exp.Address")
    if with_email:
        user.field.add(name="email", number=5, type=_STRING, label=_OPTIONAL)
    tag = user.nested_type.add(name="Tag")
    tag.field.add(name="label", number=1, type=_STRING, label=_OPTIONAL)
    return proto


def _classes(with_email: bool) -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(_address_file())
    pool.Add(_user_file(with_email))
    return {
        name: GetMessageClass(pool.FindMessageTypeByName(f"exp.{name}"))
        for name in ("Header", "User", "User.Tag", "Address")
    }


V1 = _classes(with_email=False)
V2 = _classes(with_email=True)
UserV1: Any = V1["User"]
UserV2: Any = V2["User"]
HeaderV1: Any = V1["Header"]
TagV1: Any = V1["User.Tag"]
