"""A Confluent-compatible registry that answers Protobuf schemas as ``.proto`` text: the Spark
Protobuf format asks it for the serialized descriptor (``?format=serialized``, as
confluent-kafka's deserializer does), and says what to do when it cannot give one.

The registry is a small aiohttp app on loopback that behaves as Confluent Schema Registry for
these two endpoints: ``.proto`` text by default, the base64 ``FileDescriptorProto`` with
``format=serialized`` (or, ``refuse_format``, a 501 for the parameter, as registries without
it answer).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("google.protobuf")
aiohttp = pytest.importorskip("aiohttp")
from aiohttp import web  # noqa: E402

from aiokafkawire.errors import ConfigError  # noqa: E402
from aiokafkawire.schema_registry import AsyncSchemaRegistryClient  # noqa: E402
from aiokafkawire.spark._registry_protobuf import (  # noqa: E402
    build_file,
    fetch_files,
    message_at,
    message_class,
    to_row,
)

from ._proto_messages import UserV1, _address_file, _user_file  # noqa: E402

USER, ADDRESS = _user_file(with_email=False), _address_file()
USER_REFS = [
    {"name": "google/protobuf/timestamp.proto", "subject": "ts", "version": 1},
    {"name": "exp/address.proto", "subject": "address", "version": 1},
]
#: subject -> (id, version, descriptor, references)
SUBJECTS = {"users-value": (1, 1, USER, USER_REFS), "address": (2, 1, ADDRESS, [])}


class FakeRegistry:
    """Confluent's answers for GET /schemas/ids/{id} and /subjects/{s}/versions/{v}."""

    def __init__(self, refuse_format: bool = False) -> None:
        self.refuse_format = refuse_format
        self.queries: list[str] = []  # "path?query" of each request

    def _body(self, subject: str, request: web.Request) -> dict[str, Any]:
        self.queries.append(request.path_qs)
        fmt = request.query.get("format")
        if fmt is not None and self.refuse_format:
            raise web.HTTPNotImplemented(
                text='{"error_code": 501, "message": "format not supported"}'
            )
        schema_id, version, proto, refs = SUBJECTS[subject]
        schema = (
            base64.b64encode(proto.SerializeToString()).decode()
            if fmt == "serialized"
            else f'syntax = "proto3";\npackage {proto.package};\n// .proto text of {proto.name}\n'
        )
        return {
            "subject": subject,
            "version": version,
            "id": schema_id,
            "schemaType": "PROTOBUF",
            "schema": schema,
            "references": refs,
        }

    async def by_id(self, request: web.Request) -> web.Response:
        schema_id = int(request.match_info["id"])
        subject = next(s for s, (i, *_) in SUBJECTS.items() if i == schema_id)
        body = self._body(subject, request)
        return web.json_response({k: body[k] for k in ("schemaType", "schema", "references")})

    async def version(self, request: web.Request) -> web.Response:
        return web.json_response(self._body(request.match_info["subject"], request))


async def _serve(registry: FakeRegistry) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/schemas/ids/{id}", registry.by_id)
    app.router.add_get("/subjects/{subject}/versions/{version}", registry.version)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def confluent() -> AsyncIterator[tuple[FakeRegistry, str]]:
    registry = FakeRegistry()
    async for url in _serve(registry):
        yield registry, url


@pytest.fixture
async def without_format() -> AsyncIterator[tuple[FakeRegistry, str]]:
    registry = FakeRegistry(refuse_format=True)
    async for url in _serve(registry):
        yield registry, url


async def test_the_client_asks_for_a_form_and_caches_each_form_apart(
    confluent: tuple[FakeRegistry, str],
) -> None:
    registry, url = confluent
    async with AsyncSchemaRegistryClient({"url": url}) as client:
        text = await client.get_schema(1)
        serialized = await client.get_schema(1, fmt="serialized")
        assert text.schema_str.startswith("syntax")
        assert base64.b64decode(serialized.schema_str) == USER.SerializeToString()
        assert await client.get_schema(1) is text  # cached, each form under its own key
        assert await client.get_schema(1, fmt="serialized") is serialized
        found = await client.get_version("address", 1, fmt="serialized")
        assert base64.b64decode(found.schema.schema_str) == ADDRESS.SerializeToString()
    assert registry.queries == [
        "/schemas/ids/1",
        "/schemas/ids/1?format=serialized",
        "/subjects/address/versions/1?format=serialized",
    ]


async def test_proto_text_answers_are_fetched_again_serialized_and_decode(
    confluent: tuple[FakeRegistry, str],
) -> None:
    registry, url = confluent
    async with AsyncSchemaRegistryClient({"url": url}) as client:
        schema = await client.get_schema(1)  # what the Spark reader asks first: .proto text

        async def again(fmt: str | None) -> Any:
            return await client.get_schema(1, fmt=fmt)

        files = await fetch_files(client, schema, "schema id 1", again)
    # The import first (its reference fetched serialized too), the well-known one left out.
    assert [base64.b64decode(f) for f in files] == [
        ADDRESS.SerializeToString(),
        USER.SerializeToString(),
    ]
    assert "/schemas/ids/1?format=serialized" in registry.queries
    assert "/subjects/address/versions/1?format=serialized" in registry.queries
    # The descriptors decode what the producer's classes wrote.
    user = message_class(message_at(build_file(files), [1]))
    written = UserV1(name="ada", age=36)
    written.home.city = "London"
    row = to_row(user.FromString(written.SerializeToString()))
    assert (row["name"], row["age"], row["home"]["city"]) == ("ada", 36, "London")


async def test_a_registry_without_the_serialized_form_gets_a_typed_error_saying_what_to_do(
    without_format: tuple[FakeRegistry, str],
) -> None:
    registry, url = without_format
    async with AsyncSchemaRegistryClient({"url": url}) as client:
        found = await client.get_version("users-value", 1)

        async def again(fmt: str | None) -> Any:
            return (await client.get_version("users-value", 1, fmt=fmt)).schema

        with pytest.raises(ConfigError, match=r"\?format=serialized.*Confluent Schema Registry"):
            await fetch_files(client, found.schema, "subject 'users-value'", again)
    assert "/subjects/users-value/versions/1?format=serialized" in registry.queries
