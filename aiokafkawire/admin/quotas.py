"""Client quotas (bytes and request rates per user, client id or IP): describe and alter."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore
from aiokafkawire.admin._items import error_or_none, item_results
from aiokafkawire.protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest
from aiokafkawire.protocol.messages import alter_client_quotas as m_alter_quotas
from aiokafkawire.protocol.messages import describe_client_quotas as m_describe_quotas


class QuotaEntityType:
    """The entity types client quotas apply to."""

    USER = "user"
    CLIENT_ID = "client-id"
    IP = "ip"


@dataclass(frozen=True)
class QuotaEntity:
    """The entity a set of quotas applies to: entity type -> name (None: the default entity).

    Build with ``QuotaEntity.of({"user": "alice", "client-id": None})``.
    """

    entries: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(cls, entries: Mapping[str, str | None]) -> QuotaEntity:
        """The entity with these type -> name entries (order does not matter)."""
        return cls(tuple(sorted(entries.items())))

    def as_dict(self) -> dict[str, str | None]:
        """Entity type -> name (None: the default entity of that type)."""
        return dict(self.entries)


class QuotaMatchType(enum.IntEnum):
    """How a quota filter component matches an entity type's name."""

    EXACT = 0
    DEFAULT = 1
    ANY = 2  # any name, including the default


@dataclass(frozen=True)
class QuotaFilterComponent:
    """Matches one entity type: an exact name, the default entity, or any name."""

    entity_type: str
    match_type: QuotaMatchType = QuotaMatchType.ANY
    match: str | None = None

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> QuotaFilterComponent:
        """Entities whose ``entity_type`` is exactly ``name``."""
        return cls(entity_type, QuotaMatchType.EXACT, name)

    @classmethod
    def of_default_entity(cls, entity_type: str) -> QuotaFilterComponent:
        """The default entity of ``entity_type``."""
        return cls(entity_type, QuotaMatchType.DEFAULT)

    @classmethod
    def of_entity_type(cls, entity_type: str) -> QuotaFilterComponent:
        """Any entity with an ``entity_type`` part."""
        return cls(entity_type, QuotaMatchType.ANY)


@dataclass(frozen=True)
class QuotaAlteration:
    """Set (a float) or remove (None) quota values, e.g. ``{"producer_byte_rate": 1024.0}``."""

    entity: QuotaEntity
    ops: Mapping[str, float | None]


@dataclass(frozen=True)
class QuotaAlterationResult:
    """The outcome of altering one entity's quotas."""

    entity: QuotaEntity
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when the entity's quotas were altered."""
        return self.error is None


def _entry(change: QuotaAlteration) -> m_alter_quotas.EntryData:
    """One entity's alteration as AlterClientQuotas carries it."""
    return m_alter_quotas.EntryData(
        entity=[
            m_alter_quotas.EntityData(entity_type=t, entity_name=n)
            for t, n in change.entity.entries
        ],
        ops=[
            m_alter_quotas.OpData(
                key=key, value=0.0 if value is None else float(value), remove=value is None
            )
            for key, value in change.ops.items()
        ],
    )


class QuotaCalls(AdminCore):
    """Admin calls about client quotas."""

    async def describe_client_quotas(
        self, components: Iterable[QuotaFilterComponent] = (), *, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        """Quotas of the entities matching every component (``strict``: no other entity types).

        No components and ``strict=False`` match every entity with quotas.
        """
        self._check()
        request = DescribeClientQuotasRequest(
            components=[
                m_describe_quotas.ComponentData(
                    entity_type=c.entity_type, match_type=int(c.match_type), match=c.match
                )
                for c in components
            ],
            strict=strict,
        )
        response = await self._send_any(request)
        errors.raise_for_code(response.error_code, response.error_message or "DescribeClientQuotas")
        return {
            QuotaEntity.of({e.entity_type: e.entity_name for e in entry.entity}): {
                v.key: v.value for v in entry.values
            }
            for entry in response.entries or ()
        }

    async def alter_client_quotas(
        self,
        alterations: Iterable[QuotaAlteration],
        *,
        validate_only: bool = False,
        raise_on_error: bool = True,
    ) -> dict[QuotaEntity, QuotaAlterationResult]:
        """Set (a float) or remove (None) quota values of entities."""
        self._check()
        changes = list(alterations)
        if not changes:
            return {}
        request = AlterClientQuotasRequest(
            entries=[_entry(change) for change in changes], validate_only=validate_only
        )
        response = await self._send_any(request)
        results = {
            entity: QuotaAlterationResult(entity, error_or_none(e.error_code, e.error_message))
            for e in response.entries
            for entity in (QuotaEntity.of({d.entity_type: d.entity_name for d in e.entity}),)
        }
        return item_results("alter_client_quotas", results, raise_on_error)
