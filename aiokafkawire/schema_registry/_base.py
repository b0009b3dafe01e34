"""What the registry serializers of every format share: settings, the subject, the schema id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiokafkawire.errors import ConfigError
from aiokafkawire.schema_registry._client import AsyncSchemaRegistryClient, Schema
from aiokafkawire.schema_registry.serde import (
    SerializationContext,
    SerializationError,
    SubjectNameStrategy,
    topic_subject_name_strategy,
)

__all__ = ["RegistrySerializer"]

_CONF = {
    "auto.register.schemas",
    "normalize.schemas",
    "use.latest.version",
    "subject.name.strategy",
}


class RegistrySerializer:
    """Finds the schema id a value is written with: registered (``auto.register.schemas``,
    the default), looked up, or the subject's latest (``use.latest.version``)."""

    schema_type = ""

    def __init__(
        self,
        client: AsyncSchemaRegistryClient,
        schema: str | Schema | None,
        conf: Mapping[str, Any] | None,
    ) -> None:
        settings = dict(conf or {})
        unknown = set(settings) - _CONF
        if unknown:
            raise ConfigError(
                f"unknown {type(self).__name__} settings {sorted(unknown)} (known: {sorted(_CONF)})"
            )
        self._client = client
        self._auto_register = bool(settings.get("auto.register.schemas", True))
        self._use_latest = bool(settings.get("use.latest.version", False))
        self._normalize = bool(settings.get("normalize.schemas", False))
        self._strategy: SubjectNameStrategy = settings.get(
            "subject.name.strategy", topic_subject_name_strategy
        )
        if schema is None and not self._use_latest:
            raise ConfigError(f"{type(self).__name__} needs a schema unless use.latest.version")
        self._schema = Schema(schema, self.schema_type) if isinstance(schema, str) else schema
        self._by_subject: dict[str, tuple[int, Schema]] = {}

    def record_name(self) -> str | None:
        """The schema's full name, for the record subject name strategies (None: unnamed)."""
        return None

    def subject(self, ctx: SerializationContext) -> str:
        """The subject of ``ctx``'s topic and field under the configured strategy."""
        subject = self._strategy(ctx, self.record_name())
        if not subject:
            raise SerializationError("the subject name strategy named no subject")
        return subject

    async def schema_for(self, ctx: SerializationContext) -> tuple[int, Schema]:
        """The schema id and schema to write ``ctx``'s value with."""
        subject = self.subject(ctx)
        known = self._by_subject.get(subject)
        if known is not None:
            return known
        if self._use_latest:
            latest = await self._client.get_latest_version(subject)
            found = (latest.schema_id, latest.schema)
        else:
            assert self._schema is not None
            if self._auto_register:
                schema_id = await self._client.register_schema(
                    subject, self._schema, self._normalize
                )
            else:
                schema_id = (await self._client.lookup_schema(subject, self._schema)).schema_id
            found = (schema_id, self._schema)
        self._by_subject[subject] = found
        return found
