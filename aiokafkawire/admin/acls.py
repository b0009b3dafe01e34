"""ACL bindings: create, describe and delete (the cluster needs an authorizer)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore
from aiokafkawire.admin._items import error_or_none, item_results
from aiokafkawire.protocol.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
)
from aiokafkawire.protocol.messages import create_acls as m_create_acls
from aiokafkawire.protocol.messages import delete_acls as m_delete_acls

# The ACL APIs carry a pattern type (prefixed bindings, KIP-290) from v1; v0 knows literal only.
_PATTERN_TYPE_VERSION = 1


class AclResourceType(enum.IntEnum):
    """What an ACL binding protects (Kafka's ``ResourceType``)."""

    UNKNOWN = 0
    ANY = 1  # filters only
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    """How an ACL binding's resource name matches (Kafka's ``PatternType``)."""

    UNKNOWN = 0
    ANY = 1  # filters only: any pattern type
    MATCH = 2  # filters only: every binding that applies to the named resource
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    """The operation an ACL binding allows or denies (Kafka's ``AclOperation``)."""

    UNKNOWN = 0
    ANY = 1  # filters only
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    """Whether an ACL binding allows or denies (Kafka's ``AclPermissionType``)."""

    UNKNOWN = 0
    ANY = 1  # filters only
    DENY = 2
    ALLOW = 3


# Enum members that only make sense in filters (compared by name: the enums share values).
_FILTER_ONLY_NAMES = frozenset({"ANY", "UNKNOWN", "MATCH"})


@dataclass(frozen=True)
class AclBinding:
    """One ACL: ``principal`` (``"User:alice"``) may or may not do ``operation`` on a resource.

    ``host`` is the client address the binding applies to, ``"*"`` for every host.
    """

    resource_type: AclResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def check_concrete(self) -> None:
        """Raise :class:`~aiokafkawire.errors.ConfigError` if a field holds a filter-only value."""
        for value in (self.resource_type, self.pattern_type, self.operation, self.permission_type):
            if value.name in _FILTER_ONLY_NAMES:
                raise errors.ConfigError(
                    f"an ACL binding cannot use {type(value).__name__}.{value.name}: {self}"
                )


@dataclass(frozen=True)
class AclBindingFilter:
    """Matches ACL bindings: None and the ``ANY`` members match everything.

    ``pattern_type=PatternType.MATCH`` with a resource name matches every binding that applies to
    that resource (literal, wildcard and prefixed ones).
    """

    resource_type: AclResourceType = AclResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    @classmethod
    def matching(cls, binding: AclBinding) -> AclBindingFilter:
        """The filter matching exactly ``binding``."""
        return cls(
            binding.resource_type,
            binding.resource_name,
            binding.pattern_type,
            binding.principal,
            binding.host,
            binding.operation,
            binding.permission_type,
        )


@dataclass(frozen=True)
class AclResult:
    """The outcome of creating one ACL binding."""

    binding: AclBinding
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when the binding was created."""
        return self.error is None


@dataclass(frozen=True)
class DeletedAcl:
    """A binding a delete filter matched, with the error of deleting it (None: deleted)."""

    binding: AclBinding
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class DeleteAclsResult:
    """What one delete filter matched, or the error of the whole filter."""

    filter: AclBindingFilter
    deleted: tuple[DeletedAcl, ...] = ()
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when the filter and every deletion it made succeeded."""
        return self.first_error() is None

    def first_error(self) -> errors.KafkaError | None:
        """The filter's error, else the first error of deleting a binding it matched."""
        if self.error is not None:
            return self.error
        return next((d.error for d in self.deleted if d.error is not None), None)


def _binding(resource: Any, acl: Any, version: int) -> AclBinding:
    """A binding as DescribeAcls (a resource and one of its ACLs) or DeleteAcls (a matching ACL
    as both) answer it; before v1 every binding is literal."""
    return AclBinding(
        AclResourceType(resource.resource_type),
        resource.resource_name,
        PatternType(
            resource.pattern_type if version >= _PATTERN_TYPE_VERSION else PatternType.LITERAL
        ),
        acl.principal,
        acl.host,
        AclOperation(acl.operation),
        AclPermissionType(acl.permission_type),
    )


def _check_pattern_filters(filters: Iterable[AclBindingFilter], version: int, api: str) -> None:
    """Before v1 a filter can only match literal bindings."""
    if version < _PATTERN_TYPE_VERSION and any(
        f.pattern_type not in (PatternType.LITERAL, PatternType.ANY) for f in filters
    ):
        raise errors.UnsupportedVersionForBrokerError(f"pattern filters need {api} v1+")


class AclCalls(AdminCore):
    """Admin calls about ACL bindings."""

    async def create_acls(
        self, bindings: Iterable[AclBinding], *, raise_on_error: bool = True
    ) -> dict[AclBinding, AclResult]:
        """Create ACL bindings (through any broker: the controller applies them).

        Needs an authorizer on the cluster; without one each binding fails with
        :class:`~aiokafkawire.errors.SecurityDisabledError`.
        """
        self._check()
        wanted = list(dict.fromkeys(bindings))
        for binding in wanted:
            binding.check_concrete()
        if not wanted:
            return {}
        request = CreateAclsRequest(
            creations=[
                m_create_acls.AclCreation(
                    resource_type=int(b.resource_type),
                    resource_name=b.resource_name,
                    resource_pattern_type=int(b.pattern_type),
                    principal=b.principal,
                    host=b.host,
                    operation=int(b.operation),
                    permission_type=int(b.permission_type),
                )
                for b in wanted
            ]
        )
        connection = await self._cluster.any_connection()
        version = connection.versions.version_for(CreateAclsRequest.API_KEY)
        if version < _PATTERN_TYPE_VERSION and any(
            b.pattern_type != PatternType.LITERAL for b in wanted
        ):
            raise errors.UnsupportedVersionForBrokerError("prefixed ACLs need CreateAcls v1+")
        response = await connection.send(request, version)
        _check_count("CreateAcls", response.results, wanted, "bindings")
        results = {
            b: AclResult(b, error_or_none(r.error_code, r.error_message))
            for b, r in zip(wanted, response.results, strict=True)
        }
        return item_results("create_acls", results, raise_on_error)

    async def describe_acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACL bindings matching ``acl_filter`` (all of them by default).

        The filter is the call's one item, so its error (no authorizer, not authorized) is raised.
        """
        self._check()
        flt = acl_filter or AclBindingFilter()
        connection = await self._cluster.any_connection()
        version = connection.versions.version_for(DescribeAclsRequest.API_KEY)
        _check_pattern_filters([flt], version, "DescribeAcls")
        request = DescribeAclsRequest(
            resource_type_filter=int(flt.resource_type),
            resource_name_filter=flt.resource_name,
            principal_filter=flt.principal,
            host_filter=flt.host,
            operation=int(flt.operation),
            permission_type=int(flt.permission_type),
        )
        if version >= _PATTERN_TYPE_VERSION:
            request.pattern_type_filter = int(flt.pattern_type)
        response = await connection.send(request, version)
        errors.raise_for_code(response.error_code, response.error_message or "DescribeAcls")
        return [
            _binding(resource, acl, version)
            for resource in response.resources
            for acl in resource.acls
        ]

    async def delete_acls(
        self, filters: Iterable[AclBindingFilter], *, raise_on_error: bool = True
    ) -> dict[AclBindingFilter, DeleteAclsResult]:
        """Delete every ACL binding matching each filter; returns what each filter deleted.

        A filter fails with its own error or the first error of deleting a binding it matched.
        """
        self._check()
        wanted = list(dict.fromkeys(filters))
        if not wanted:
            return {}
        connection = await self._cluster.any_connection()
        version = connection.versions.version_for(DeleteAclsRequest.API_KEY)
        _check_pattern_filters(wanted, version, "DeleteAcls")
        request = DeleteAclsRequest(
            filters=[
                m_delete_acls.DeleteAclsFilter(
                    resource_type_filter=int(f.resource_type),
                    resource_name_filter=f.resource_name,
                    pattern_type_filter=int(f.pattern_type),
                    principal_filter=f.principal,
                    host_filter=f.host,
                    operation=int(f.operation),
                    permission_type=int(f.permission_type),
                )
                for f in wanted
            ]
        )
        response = await connection.send(request, version)
        _check_count("DeleteAcls", response.filter_results, wanted, "filters")
        results = {
            flt: DeleteAclsResult(
                flt,
                tuple(
                    DeletedAcl(
                        _binding(m, m, version), error_or_none(m.error_code, m.error_message)
                    )
                    for m in answer.matching_acls
                ),
                error_or_none(answer.error_code, answer.error_message),
            )
            for flt, answer in zip(wanted, response.filter_results, strict=True)
        }
        return item_results("delete_acls", results, raise_on_error, DeleteAclsResult.first_error)


def _check_count(api: str, answers: list[Any], wanted: list[Any], what: str) -> None:
    """An ACL answer lists one result per item asked for, in order: anything else is a broken
    answer, which zipping would hide."""
    if len(answers) != len(wanted):
        raise errors.ProtocolError(
            f"{api} answered {len(answers)} results for {len(wanted)} {what}"
        )
