"""Admin calls against real Apache Kafka 4.x (KRaft): ACLs, SCRAM credentials, client quotas,
producers, transactions and log directories.

ACLs and SCRAM logins need a cluster of their own (an authorizer and a SASL listener); everything
else runs on the session's ``kafka_cluster``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from aiokafkawire import errors
from aiokafkawire.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AclResourceType,
    Admin,
    NewTopic,
    PatternType,
    QuotaAlteration,
    QuotaEntity,
    QuotaEntityType,
    QuotaFilterComponent,
    ScramDeletion,
    ScramMechanism,
    ScramUpsertion,
    scram_salted_password,
)
from aiokafkawire.cluster.cluster import Cluster
from aiokafkawire.net.connection import ConnectionConfig
from aiokafkawire.producer import Producer
from aiokafkawire.structs import TopicPartition

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def binding(
    name: str,
    principal: str,
    operation: AclOperation = AclOperation.READ,
    pattern: PatternType = PatternType.LITERAL,
    resource_type: AclResourceType = AclResourceType.TOPIC,
) -> AclBinding:
    return AclBinding(
        resource_type, name, pattern, principal, "*", operation, AclPermissionType.ALLOW
    )


# ----------------------------------------------------------------------------- pure helpers


def test_salted_password_is_pbkdf2_as_rfc_7677_computes_it() -> None:
    # RFC 7677's SCRAM-SHA-256 example: user "user", password "pencil", the salt below and 4096
    # iterations; its ClientProof is derived from this SaltedPassword.
    import base64
    import hashlib
    import hmac

    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    salted = scram_salted_password(ScramMechanism.SCRAM_SHA_256, "pencil", salt, 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    auth_message = (
        b"n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)"
        b"hNlF$k0"
    )
    signature = hmac.new(stored_key, auth_message, hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    assert base64.b64encode(proof) == b"dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="


def test_scram_upsertion_checks_and_hides_the_password() -> None:
    upsertion = ScramUpsertion("alice", ScramMechanism.SCRAM_SHA_512, "s3cret-pw")
    assert "s3cret-pw" not in repr(upsertion)
    with pytest.raises(errors.ConfigError, match="iterations"):
        ScramUpsertion("alice", ScramMechanism.SCRAM_SHA_256, "pw", iterations=100)
    with pytest.raises(errors.ConfigError, match="mechanism"):
        ScramUpsertion("alice", ScramMechanism.UNKNOWN, "pw")


def test_acl_binding_rejects_filter_only_values() -> None:
    with pytest.raises(errors.ConfigError, match="ANY"):
        binding("t", "User:a", operation=AclOperation.ANY).check_concrete()
    binding("t", "User:a").check_concrete()


# ----------------------------------------------------------------------------- ACLs


async def test_acls_create_describe_delete(secured_cluster: Any) -> None:
    topic = unique("acl-topic")
    alice, bob = f"User:{unique('alice')}", f"User:{unique('bob')}"
    read = binding(topic, alice)
    write = binding(topic, alice, AclOperation.WRITE)
    prefixed = binding(topic[:12], bob, pattern=PatternType.PREFIXED)
    group = binding("g-" + topic, bob, resource_type=AclResourceType.GROUP)
    async with Admin(bootstrap_servers=secured_cluster.bootstrap_servers) as admin:
        created = await admin.create_acls([read, write, prefixed, group])
        assert set(created) == {read, write, prefixed, group}
        assert all(result.ok for result in created.values()), created

        async def described(flt: AclBindingFilter) -> set[AclBinding]:
            # The controller applies ACLs; brokers see them shortly after.
            for _ in range(50):
                found = set(await admin.describe_acls(flt))
                if found:
                    return found
                await asyncio.sleep(0.1)
            return set()

        assert await described(AclBindingFilter(principal=alice)) == {read, write}
        matching = await described(
            AclBindingFilter(AclResourceType.TOPIC, topic, PatternType.MATCH)
        )
        assert matching == {read, write, prefixed}
        assert await admin.describe_acls(AclBindingFilter(principal=unique("User:nobody"))) == []

        deleted = await admin.delete_acls(
            [
                AclBindingFilter(principal=alice, operation=AclOperation.WRITE),
                AclBindingFilter(principal=bob),
            ]
        )
        by_alice = deleted[AclBindingFilter(principal=alice, operation=AclOperation.WRITE)]
        assert by_alice.ok and {d.binding for d in by_alice.deleted} == {write}
        assert {d.binding for d in deleted[AclBindingFilter(principal=bob)].deleted} == {
            prefixed,
            group,
        }
        remaining: set[AclBinding] = set()
        for _ in range(50):
            remaining = set(await admin.describe_acls(AclBindingFilter(principal=alice)))
            if remaining == {read}:
                break
            await asyncio.sleep(0.1)
        assert remaining == {read}
        await admin.delete_acls([AclBindingFilter.matching(read)])


async def test_acls_without_an_authorizer_are_typed_errors(kafka_cluster: Any) -> None:
    async with Admin(bootstrap_servers=kafka_cluster.bootstrap_servers) as admin:
        acl = binding(unique("t"), "User:alice")
        with pytest.raises(errors.AdminOperationError) as caught:
            await admin.create_acls([acl])
        assert isinstance(caught.value.errors[acl], errors.SecurityDisabledError)
        created = await admin.create_acls([acl], raise_on_error=False)
        (result,) = created.values()
        assert isinstance(result.error, errors.SecurityDisabledError)
        with pytest.raises(errors.SecurityDisabledError):
            await admin.describe_acls()


# ----------------------------------------------------------------------------- SCRAM


async def test_scram_credentials_are_described_back_and_log_in(secured_cluster: Any) -> None:
    user = unique("scram-user")
    # Non-ASCII (SASLprep leaves a precomposed "ä" alone): the salted password is computed from
    # the UTF-8 bytes, as Kafka's AdminClient does.
    password = "pässword-" + uuid.uuid4().hex[:6]
    async with Admin(bootstrap_servers=secured_cluster.bootstrap_servers) as admin:
        # Kafka refuses two alterations of one user in one request.
        both = [
            ScramUpsertion(user, ScramMechanism.SCRAM_SHA_256, password),
            ScramUpsertion(user, ScramMechanism.SCRAM_SHA_512, password),
        ]
        with pytest.raises(errors.AdminOperationError) as caught:
            await admin.alter_user_scram_credentials(both)
        assert isinstance(caught.value.errors[user], errors.DuplicateResourceError)
        twice = await admin.alter_user_scram_credentials(both, raise_on_error=False)
        assert isinstance(twice[user].error, errors.DuplicateResourceError)
        for upsertion in (
            ScramUpsertion(user, ScramMechanism.SCRAM_SHA_256, password),
            ScramUpsertion(user, ScramMechanism.SCRAM_SHA_512, password, iterations=8192),
        ):
            altered = await admin.alter_user_scram_credentials([upsertion])
            assert altered[user].ok, altered[user].error
        described = await admin.describe_user_scram_credentials([user])
        assert described[user].error is None
        assert sorted((c.mechanism, c.iterations) for c in described[user].credentials) == [
            (ScramMechanism.SCRAM_SHA_256, 4096),
            (ScramMechanism.SCRAM_SHA_512, 8192),
        ]
        everyone = await admin.describe_user_scram_credentials()
        assert user in everyone

        # The broker accepts a SCRAM login with the password (credentials propagate from the
        # controller to the broker shortly after the call returns).
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            config = ConnectionConfig(
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=mechanism,
                sasl_username=user,
                sasl_password=password,
            )
            for attempt in range(50):
                cluster = Cluster(secured_cluster.bootstrap_for("SASL_PLAINTEXT"), config)
                try:
                    await cluster.start()
                    break
                except errors.AuthenticationError:
                    if attempt == 49:
                        raise
                    await asyncio.sleep(0.1)
                finally:
                    await cluster.close()

        removed = await admin.alter_user_scram_credentials(
            [ScramDeletion(user, ScramMechanism.SCRAM_SHA_256)]
        )
        assert removed[user].ok
        for _ in range(50):  # the deletion, too, reaches the broker shortly after
            described = await admin.describe_user_scram_credentials([user])
            if len(described[user].credentials) == 1:
                break
            await asyncio.sleep(0.1)
        assert [c.mechanism for c in described[user].credentials] == [ScramMechanism.SCRAM_SHA_512]
        await admin.alter_user_scram_credentials(
            [ScramDeletion(user, ScramMechanism.SCRAM_SHA_512)]
        )
        for _ in range(50):
            left = await admin.describe_user_scram_credentials([user], raise_on_error=False)
            if left[user].error is not None:
                break
            await asyncio.sleep(0.1)
        with pytest.raises(errors.AdminOperationError) as info:
            await admin.describe_user_scram_credentials([user])
        assert isinstance(info.value.errors[user], errors.ResourceNotFoundError)
        gone = await admin.describe_user_scram_credentials([user], raise_on_error=False)
        assert isinstance(gone[user].error, errors.ResourceNotFoundError)


# ----------------------------------------------------------------------------- quotas


async def test_client_quotas_are_described_back(kafka_cluster: Any) -> None:
    user = unique("quota-user")
    client = unique("quota-client")
    alice = QuotaEntity.of({QuotaEntityType.USER: user})
    alice_app = QuotaEntity.of({QuotaEntityType.USER: user, QuotaEntityType.CLIENT_ID: client})
    async with Admin(bootstrap_servers=kafka_cluster.bootstrap_servers) as admin:
        altered = await admin.alter_client_quotas(
            [
                QuotaAlteration(alice, {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048}),
                QuotaAlteration(alice_app, {"request_percentage": 25.0}),
            ]
        )
        assert altered[alice].ok and altered[alice_app].ok, altered

        exact = [QuotaFilterComponent.of_entity(QuotaEntityType.USER, user)]
        found: dict[QuotaEntity, dict[str, float]] = {}
        for _ in range(50):
            found = await admin.describe_client_quotas(exact)
            if len(found) == 2:
                break
            await asyncio.sleep(0.1)
        assert found == {
            alice: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
            alice_app: {"request_percentage": 25.0},
        }
        strict = await admin.describe_client_quotas(exact, strict=True)
        assert strict == {alice: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}}

        await admin.alter_client_quotas(
            [
                QuotaAlteration(alice, {"producer_byte_rate": None, "consumer_byte_rate": None}),
                QuotaAlteration(alice_app, {"request_percentage": None}),
            ]
        )
        for _ in range(50):
            found = await admin.describe_client_quotas(exact)
            if not found:
                break
            await asyncio.sleep(0.1)
        assert found == {}

        with pytest.raises(errors.AdminOperationError):
            await admin.alter_client_quotas(
                [QuotaAlteration(alice, {"not_a_quota": 1.0})], validate_only=True
            )
        invalid = await admin.alter_client_quotas(
            [QuotaAlteration(alice, {"not_a_quota": 1.0})], validate_only=True, raise_on_error=False
        )
        assert isinstance(invalid[alice].error, errors.InvalidRequestError)


# ----------------------------------------------------------------------------- transactions


async def test_producers_and_transactions_are_described(kafka_cluster: Any) -> None:
    topic = unique("txn-admin")
    transactional_id = unique("txn-admin-id")
    servers = kafka_cluster.bootstrap_servers
    async with Admin(bootstrap_servers=servers) as admin:
        created = await admin.create_topics([NewTopic(topic, 2, 1)])
        assert created[topic].ok, created[topic].error
        async with Producer(bootstrap_servers=servers, transactional_id=transactional_id) as prod:
            await prod.begin_transaction()
            handle = await prod.send(topic, b"in-flight", partition=1)
            await prod.flush()
            offset = (await handle).offset

            with pytest.raises(errors.AdminOperationError):
                await admin.describe_transactions([transactional_id, unique("no-txn")])
            described = await admin.describe_transactions(
                [transactional_id, unique("no-txn")], raise_on_error=False
            )
            txn = described[transactional_id]
            assert txn.error is None, txn.error
            assert txn.state == "Ongoing"
            assert txn.partitions == (TopicPartition(topic, 1),)
            assert txn.producer_id >= 0 and txn.transaction_start_time_ms is not None
            missing = next(d for tid, d in described.items() if tid != transactional_id)
            assert isinstance(missing.error, errors.TransactionalIdNotFoundError)

            listed = await admin.list_transactions(states=["Ongoing"])
            assert any(t.transactional_id == transactional_id for t in listed)
            pattern = await admin.list_transactions(transactional_id_pattern=transactional_id)
            assert [t.transactional_id for t in pattern] == [transactional_id]
            assert pattern[0].producer_id == txn.producer_id

            states = await admin.describe_producers(
                [TopicPartition(topic, 0), TopicPartition(topic, 1)]
            )
            assert states[TopicPartition(topic, 0)].active_producers == ()
            (active,) = states[TopicPartition(topic, 1)].active_producers
            assert active.producer_id == txn.producer_id
            assert active.current_transaction_start_offset == offset

            await prod.commit_transaction()

        for _ in range(50):
            after = (await admin.describe_transactions([transactional_id]))[transactional_id]
            if after.state == "CompleteCommit":
                break
            await asyncio.sleep(0.1)
        assert after.state == "CompleteCommit" and after.partitions == ()
        states = await admin.describe_producers([TopicPartition(topic, 1)])
        (active,) = states[TopicPartition(topic, 1)].active_producers
        assert active.current_transaction_start_offset is None
        await admin.delete_topics([topic])


async def test_log_dirs_are_described(kafka_cluster: Any) -> None:
    topic = unique("logdirs")
    async with Admin(bootstrap_servers=kafka_cluster.bootstrap_servers) as admin:
        assert (await admin.create_topics([NewTopic(topic, 2, 1)]))[topic].ok
        async with Producer(bootstrap_servers=kafka_cluster.bootstrap_servers) as producer:
            await (await producer.send(topic, b"x" * 100, partition=0))
        dirs = await admin.describe_log_dirs()
        assert set(dirs) == set(kafka_cluster.broker_ids)
        (broker_dirs,) = dirs.values()
        replicas = {tp: info for d in broker_dirs.values() for tp, info in d.replicas.items()}
        assert replicas[TopicPartition(topic, 0)].size > 100
        assert replicas[TopicPartition(topic, 1)].size == 0
        for description in broker_dirs.values():
            assert description.error is None
            assert description.total_bytes and description.usable_bytes
        await admin.delete_topics([topic])
