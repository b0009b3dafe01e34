"""The admin client: topics, partitions, configs, groups, offsets and records.

Every call returns typed results, one per item (topic, group, partition, resource).  When any item
failed (a topic that already exists, a group that is not empty), the call raises
:class:`~aiokafkawire.errors.AdminOperationError`, which carries every item's result
(``exc.results``) and the failures (``exc.errors``).  Pass ``raise_on_error=False`` to get the
results back instead, each with its ``error`` (None on success).  Errors that concern the whole
call (no broker reachable, the client is closed, the request timed out) are always raised.

One module per family of calls, each a mixin of :class:`Admin` over ``_core.AdminCore``:
``topics``, ``configs``, ``groups``, ``share_groups``, ``offsets``, ``acls``, ``scram``,
``quotas``, ``transactions`` and ``log_dirs``; each holds its calls and its result types.
"""

from __future__ import annotations

from aiokafkawire.admin._client import Admin
from aiokafkawire.admin.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AclResourceType,
    AclResult,
    DeleteAclsResult,
    DeletedAcl,
    PatternType,
)
from aiokafkawire.admin.configs import (
    AlterOp,
    ConfigEntry,
    ConfigResource,
    ConfigResult,
    ResourceType,
)
from aiokafkawire.admin.groups import (
    GroupDescription,
    GroupListing,
    GroupOffset,
    GroupResult,
    MemberDescription,
    PartitionResult,
)
from aiokafkawire.admin.log_dirs import LogDirDescription, ReplicaInfo
from aiokafkawire.admin.offsets import ListedOffset, OffsetSpec
from aiokafkawire.admin.quotas import (
    QuotaAlteration,
    QuotaAlterationResult,
    QuotaEntity,
    QuotaEntityType,
    QuotaFilterComponent,
    QuotaMatchType,
)
from aiokafkawire.admin.scram import (
    SCRAM_MAX_ITERATIONS,
    SCRAM_MIN_ITERATIONS,
    ScramAlterationResult,
    ScramCredentialInfo,
    ScramDeletion,
    ScramMechanism,
    ScramUpsertion,
    UserScramCredentials,
    scram_salted_password,
)
from aiokafkawire.admin.share_groups import (
    ShareGroupDescription,
    ShareGroupListing,
    ShareGroupOffset,
    ShareMemberDescription,
)
from aiokafkawire.admin.topics import (
    ClusterDescription,
    NewTopic,
    PartitionDescription,
    TopicDescription,
    TopicResult,
)
from aiokafkawire.admin.transactions import (
    ProducerState,
    ProducerStates,
    TransactionDescription,
    TransactionListing,
)
from aiokafkawire.cluster.metadata import BrokerInfo, TopicInfo
from aiokafkawire.net.credentials import Secret
from aiokafkawire.structs import TopicPartition

__all__ = [
    "SCRAM_MAX_ITERATIONS",
    "SCRAM_MIN_ITERATIONS",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "AclResourceType",
    "AclResult",
    "Admin",
    "AlterOp",
    "BrokerInfo",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResult",
    "DeleteAclsResult",
    "DeletedAcl",
    "GroupDescription",
    "GroupListing",
    "GroupOffset",
    "GroupResult",
    "ListedOffset",
    "LogDirDescription",
    "MemberDescription",
    "NewTopic",
    "OffsetSpec",
    "PartitionDescription",
    "PartitionResult",
    "PatternType",
    "ProducerState",
    "ProducerStates",
    "QuotaAlteration",
    "QuotaAlterationResult",
    "QuotaEntity",
    "QuotaEntityType",
    "QuotaFilterComponent",
    "QuotaMatchType",
    "ReplicaInfo",
    "ResourceType",
    "ScramAlterationResult",
    "ScramCredentialInfo",
    "ScramDeletion",
    "ScramMechanism",
    "ScramUpsertion",
    "Secret",
    "ShareGroupDescription",
    "ShareGroupListing",
    "ShareGroupOffset",
    "ShareMemberDescription",
    "TopicDescription",
    "TopicInfo",
    "TopicPartition",
    "TopicResult",
    "TransactionDescription",
    "TransactionListing",
    "UserScramCredentials",
    "scram_salted_password",
]
