"""Every name ``aiokafkawire.admin`` exported when it was one module is still importable from it
(it became a package, one module per family of calls).

Listed explicitly, not computed: a name dropped by a later change must fail here.  Not listed:
what the old module merely imported for its own use (protocol request classes, ``Cluster``,
``split_common_options``, typing and standard-library names).
"""

from __future__ import annotations

import importlib

import pytest

import aiokafkawire

NAMES_EXPORTED_BEFORE = """
    AclBinding AclBindingFilter AclOperation AclPermissionType AclResourceType AclResult Admin
    AlterOp BrokerInfo ClusterDescription ConfigEntry ConfigResource ConfigResult
    DeleteAclsResult DeletedAcl GroupDescription GroupListing GroupOffset GroupResult
    ListedOffset LogDirDescription MemberDescription NewTopic OffsetSpec PartitionResult
    PatternType ProducerState ProducerStates QuotaAlteration QuotaAlterationResult QuotaEntity
    QuotaEntityType QuotaFilterComponent QuotaMatchType ReplicaInfo ResourceType
    SCRAM_MAX_ITERATIONS SCRAM_MIN_ITERATIONS ScramAlterationResult ScramCredentialInfo
    ScramDeletion ScramMechanism ScramUpsertion Secret ShareGroupDescription ShareGroupListing
    ShareGroupOffset TopicInfo TopicPartition TopicResult TransactionDescription
    TransactionListing UserScramCredentials scram_salted_password
""".split()


@pytest.mark.parametrize("name", NAMES_EXPORTED_BEFORE)
def test_every_name_of_the_old_admin_module_imports(name: str) -> None:
    module = importlib.import_module("aiokafkawire.admin")
    assert getattr(module, name) is not None
    assert name in module.__all__


def test_top_level_admin_names_are_the_admin_package_objects() -> None:
    import aiokafkawire.admin as admin

    for name in ("Admin", "NewTopic", "ConfigResource", "OffsetSpec"):
        assert getattr(aiokafkawire, name) is getattr(admin, name)


def test_admin_has_every_call_it_had() -> None:
    from aiokafkawire.admin import Admin

    calls = """
        start close stop metrics find_coordinator cluster create_topics delete_topics
        create_partitions list_topics describe_topics describe_cluster describe_configs
        alter_configs list_groups describe_groups delete_groups list_group_offsets
        alter_group_offsets delete_group_offsets list_share_groups describe_share_groups
        list_share_group_offsets alter_share_group_offsets delete_share_group_offsets
        list_offsets delete_records create_acls describe_acls delete_acls
        describe_user_scram_credentials alter_user_scram_credentials describe_client_quotas
        alter_client_quotas describe_producers list_transactions describe_transactions
        describe_log_dirs
    """.split()
    assert [c for c in calls if not hasattr(Admin, c)] == []
