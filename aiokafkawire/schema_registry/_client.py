"""An asyncio client of the Confluent Schema Registry REST API.

aiohttp carries the requests (asyncio-native, well kept, already the project's web-test client):
nothing here blocks the event loop.  Schemas by id are cached in a bounded LRU and fetched once
however many records ask for the same id at the same time (one request in flight per id).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from aiokafkawire.errors import ConfigError, KafkaError

__all__ = [
    "AsyncSchemaRegistryClient",
    "RegisteredSchema",
    "Schema",
    "SchemaReference",
    "SchemaRegistryError",
]

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_KNOWN_CONFIG = frozenset(
    {
        "url",
        "basic.auth.user.info",
        "basic.auth.credentials.source",
        "bearer.auth.token",
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "timeout",
        "cache.capacity",
    }
)

K = TypeVar("K")
V = TypeVar("V")


class SchemaRegistryError(KafkaError):
    """The registry refused a request: ``http_status_code`` and the registry's ``error_code``."""

    def __init__(self, http_status_code: int, error_code: int, message: str) -> None:
        super().__init__(f"schema registry: {message} (HTTP {http_status_code}, {error_code})")
        self.http_status_code = http_status_code
        self.error_code = error_code
        self.retriable = http_status_code >= 500  # type: ignore[misc]


@dataclass(frozen=True)
class SchemaReference:
    """A schema another schema refers to by ``name``: ``subject`` at ``version``."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class Schema:
    """A schema's text, its type (``AVRO``, ``PROTOBUF``, ``JSON``) and its references."""

    schema_str: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = field(default_factory=tuple)

    def request_body(self) -> dict[str, Any]:
        """The schema as the registry's register/lookup requests carry it."""
        body: dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type != "AVRO":
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [
                {"name": r.name, "subject": r.subject, "version": r.version}
                for r in self.references
            ]
        return body

    @classmethod
    def from_response(cls, body: Mapping[str, Any]) -> Schema:
        """A schema from a registry answer."""
        return cls(
            body["schema"],
            body.get("schemaType", "AVRO"),
            tuple(
                SchemaReference(r["name"], r["subject"], int(r["version"]))
                for r in body.get("references") or ()
            ),
        )


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as registered under ``subject`` at ``version`` with id ``schema_id``."""

    schema_id: int
    schema: Schema
    subject: str
    version: int


class _BoundedCache(Generic[K, V]):
    """An LRU of at most ``capacity`` entries whose loads run once per key at a time."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._loading: dict[K, asyncio.Future[V]] = {}

    async def get(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        pending = self._loading.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._loading[key] = future
        try:
            value = await load()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # waiters re-raise it; nobody else must report it
            raise
        finally:
            del self._loading[key]
        future.set_result(value)
        self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)


class AsyncSchemaRegistryClient:  # long: the registry's REST calls, one short method each
    """The Confluent Schema Registry API (Confluent, Apicurio's ``/apis/ccompat/v7``, Karapace).

    ``conf`` takes confluent-kafka's names: ``url`` (required), ``basic.auth.user.info``
    (``"user:password"``), ``bearer.auth.token``, ``ssl.ca.location``,
    ``ssl.certificate.location``, ``ssl.key.location``, ``ssl.key.password``, ``timeout``
    (seconds, default 30) and ``cache.capacity`` (default 1000).  Use ``async with`` or call
    :meth:`close`.
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        unknown = set(conf) - _KNOWN_CONFIG
        if unknown:
            raise ConfigError(
                f"unknown schema registry settings {sorted(unknown)} "
                f"(known: {', '.join(sorted(_KNOWN_CONFIG))})"
            )
        url = conf.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"schema registry 'url' must be an http(s) URL, got {url!r}")
        self._url = url.split(",")[0].rstrip("/")
        self._headers = {"Accept": _CONTENT_TYPE, "Content-Type": _CONTENT_TYPE}
        user_info = conf.get("basic.auth.user.info")
        token = conf.get("bearer.auth.token")
        if user_info is not None and token is not None:
            raise ConfigError("give basic.auth.user.info or bearer.auth.token, not both")
        self._basic: tuple[str, str] | None = None
        if user_info is not None:
            user, _, password = str(user_info).partition(":")
            self._basic = (user, password)
        self._bearer = str(token) if token is not None else None
        self._ssl = _ssl_context(conf) if self._url.startswith("https://") else None
        self._timeout = float(conf.get("timeout", 30))
        capacity = int(conf.get("cache.capacity", 1000))
        self._by_id: _BoundedCache[int | tuple[int, str], Schema] = _BoundedCache(capacity)
        self._ids: _BoundedCache[tuple[str, Schema], int] = _BoundedCache(capacity)
        self._latest: dict[str, RegisteredSchema] = {}
        self._session: Any = None
        self.requests_sent = 0  # observable: how many HTTP requests went out

    def __repr__(self) -> str:
        auth = "basic" if self._basic else "bearer" if self._bearer else "none"
        return f"<AsyncSchemaRegistryClient url={self._url!r} auth={auth}>"

    async def __aenter__(self) -> AsyncSchemaRegistryClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP session."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    # ------------------------------------------------------------------ transport

    def _new_session(self) -> Any:
        import aiohttp

        headers = dict(self._headers)
        if self._bearer is not None:
            headers["Authorization"] = f"Bearer {self._bearer}"
        auth = aiohttp.BasicAuth(*self._basic) if self._basic else None
        return aiohttp.ClientSession(
            headers=headers,
            auth=auth,
            timeout=aiohttp.ClientTimeout(total=self._timeout),
            connector=aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else True),
        )

    async def _request(self, method: str, path: str, body: Any = None) -> Any:
        import aiohttp

        if self._session is None:
            self._session = self._new_session()
        self.requests_sent += 1
        data = None if body is None else json.dumps(body)
        try:
            async with self._session.request(method, self._url + path, data=data) as response:
                text = await response.text()
                status = response.status
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise SchemaRegistryError(0, -1, f"{method} {path} failed: {exc!r}") from exc
        payload = json.loads(text) if text else None
        if status >= 400:
            error = payload if isinstance(payload, dict) else {}
            raise SchemaRegistryError(
                status, int(error.get("error_code", status)), str(error.get("message", text))
            )
        return payload

    # ------------------------------------------------------------------ schemas

    async def register_schema(self, subject: str, schema: Schema, normalize: bool = False) -> int:
        """Register ``schema`` under ``subject`` (or find it there); its id."""

        async def load() -> int:
            query = "?normalize=true" if normalize else ""
            path = f"/subjects/{quote(subject, safe='')}/versions{query}"
            answer = await self._request("POST", path, schema.request_body())
            return int(answer["id"])

        schema_id = await self._ids.get((subject, schema), load)
        self._by_id.put(schema_id, schema)
        return schema_id

    async def get_schema(
        self, schema_id: int, subject_name: str | None = None, fmt: str | None = None
    ) -> Schema:
        """The schema with id ``schema_id`` (cached; one request however many ask at once).

        ``fmt`` asks for another form of the schema (the registry's ``format`` parameter, as
        confluent-kafka's ``fmt``): ``"serialized"`` is a Protobuf schema's base64
        ``FileDescriptorProto`` instead of ``.proto`` text (Confluent Schema Registry).
        """

        async def load() -> Schema:
            query = _query(subject=subject_name, format=fmt)
            return Schema.from_response(
                await self._request("GET", f"/schemas/ids/{schema_id}{query}")
            )

        return await self._by_id.get(schema_id if fmt is None else (schema_id, fmt), load)

    async def lookup_schema(
        self, subject: str, schema: Schema, normalize: bool = False
    ) -> RegisteredSchema:
        """Where ``schema`` is registered under ``subject``."""
        query = "?normalize=true" if normalize else ""
        answer = await self._request(
            "POST", f"/subjects/{quote(subject, safe='')}{query}", schema.request_body()
        )
        return self._registered(answer, subject)

    async def get_latest_version(self, subject: str, fmt: str | None = None) -> RegisteredSchema:
        """The newest version registered under ``subject`` (``fmt``: as :meth:`get_schema`)."""
        path = f"/subjects/{quote(subject, safe='')}/versions/latest{_query(format=fmt)}"
        found = self._registered(await self._request("GET", path), subject, fmt)
        if fmt is None:
            self._latest[subject] = found
        return found

    async def get_version(
        self, subject: str, version: int, fmt: str | None = None
    ) -> RegisteredSchema:
        """Version ``version`` of ``subject`` (``fmt``: as :meth:`get_schema`)."""
        path = f"/subjects/{quote(subject, safe='')}/versions/{int(version)}{_query(format=fmt)}"
        return self._registered(await self._request("GET", path), subject, fmt)

    async def get_subjects(self) -> list[str]:
        """Every subject."""
        return list(await self._request("GET", "/subjects"))

    async def get_versions(self, subject: str) -> list[int]:
        """The versions registered under ``subject``."""
        return [
            int(v)
            for v in await self._request("GET", f"/subjects/{quote(subject, safe='')}/versions")
        ]

    async def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Delete ``subject`` (soft; ``permanent`` after a soft delete); the versions deleted."""
        path = f"/subjects/{quote(subject, safe='')}"
        deleted = await self._request("DELETE", path)
        if permanent:
            deleted = await self._request("DELETE", path + "?permanent=true")
        self._latest.pop(subject, None)
        return [int(v) for v in deleted]

    async def test_compatibility(
        self, subject: str, schema: Schema, version: int | str = "latest"
    ) -> bool:
        """Whether ``schema`` may be registered under ``subject`` after ``version``."""
        path = f"/compatibility/subjects/{quote(subject, safe='')}/versions/{version}"
        answer = await self._request("POST", path, schema.request_body())
        return bool(answer.get("is_compatible"))

    async def set_compatibility(
        self, subject_name: str | None = None, level: str = "BACKWARD"
    ) -> str:
        """Set the compatibility level of a subject (or the global default)."""
        path = f"/config/{quote(subject_name, safe='')}" if subject_name else "/config"
        answer = await self._request("PUT", path, {"compatibility": level.upper()})
        return str(answer.get("compatibility", level.upper()))

    async def get_compatibility(self, subject_name: str | None = None) -> str:
        """The compatibility level of a subject (or the global default)."""
        path = f"/config/{quote(subject_name, safe='')}" if subject_name else "/config"
        answer = await self._request("GET", path)
        return str(answer.get("compatibilityLevel") or answer.get("compatibility"))

    def _registered(
        self, answer: Mapping[str, Any], subject: str, fmt: str | None = None
    ) -> RegisteredSchema:
        schema = Schema.from_response(answer)
        schema_id = int(answer["id"])
        self._by_id.put(schema_id if fmt is None else (schema_id, fmt), schema)
        return RegisteredSchema(
            schema_id, schema, answer.get("subject", subject), int(answer["version"])
        )


def _query(**parameters: str | None) -> str:
    """``?name=value&...`` of the parameters given (None: left out), or ``""``."""
    given = [f"{name}={quote(value, safe='')}" for name, value in parameters.items() if value]
    return "?" + "&".join(given) if given else ""


def _ssl_context(conf: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=conf.get("ssl.ca.location"))
    certificate = conf.get("ssl.certificate.location")
    if certificate:
        context.load_cert_chain(
            certificate, conf.get("ssl.key.location"), conf.get("ssl.key.password")
        )
    return context
