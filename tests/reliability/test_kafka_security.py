"""Security on a real Apache Kafka broker's listeners: TLS, mTLS, SASL, re-authentication, ACLs.

One broker serves the module, with listeners PLAINTEXT (the fixture's and the tests' admin work:
its anonymous principal is a super user), SSL with ``ssl.client.auth=required``, SASL_PLAINTEXT
and SASL_SSL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER), the ACL authorizer, and
``connections.max.reauth.ms`` so every SASL connection must re-authenticate (KIP-368).  The TLS
certificate names ``localhost`` only, so connecting to ``127.0.0.1`` is a hostname mismatch.

Every log record of the module is captured at DEBUG, and the last test scans them, with the
reprs and error messages the tests met, for any password, token or private key.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiokafkawire import Admin, Consumer, Producer, errors
from aiokafkawire.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AclResourceType,
    PatternType,
    ScramMechanism,
    ScramUpsertion,
)
from aiokafkawire.net.credentials import OAuthBearerToken
from aiokafkawire.net.tls import create_ssl_context
from aiokafkawire.structs import TopicPartition
from aiokafkawire.testing import KafkaCluster
from aiokafkawire.testing._errors import BrokerUnavailableError
from aiokafkawire.testing.pytest_plugin import skip_or_fail_unavailable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ALICE_PASSWORD = "alice-pw-" + uuid.uuid4().hex  # PLAIN user with ACLs given per test
CAROL_PASSWORD = "carol-pw-" + uuid.uuid4().hex  # PLAIN user with no ACL at all
SCRAM_USER = "sam"
SCRAM_PASSWORD = "sam-pw-" + uuid.uuid4().hex
WRONG_PASSWORD = "wrong-pw-" + uuid.uuid4().hex
REAUTH_MS = 4_000
SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
FAST = 10.0  # seconds: an authentication or authorization failure must come well before this

# Everything the tests must never show: filled as secrets are made.
SECRETS: set[str] = {ALICE_PASSWORD, CAROL_PASSWORD, SCRAM_PASSWORD, WRONG_PASSWORD}
# Texts the scan looks at besides the log records: reprs, error messages, tracebacks.
SEEN_TEXTS: list[str] = []


class Capture(logging.Handler):
    """Keeps every record of the module, formatted the way a DEBUG log would show it."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


CAPTURE = Capture()


@pytest.fixture(scope="module", autouse=True)
def debug_logging() -> Iterator[None]:
    """DEBUG logging of aiokafkawire for the whole module, captured for the secrets scan."""
    logger = logging.getLogger("aiokafkawire")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(CAPTURE)
    try:
        yield
    finally:
        logger.removeHandler(CAPTURE)
        logger.setLevel(level)


@pytest.fixture(scope="module")
def secure_cluster() -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(
        brokers=1,
        host="localhost",
        tls_hostnames=("localhost",),
        listeners=("SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        sasl_users={"alice": ALICE_PASSWORD, "carol": CAROL_PASSWORD},
        ssl_client_auth="required",
        authorizer=True,
        config={
            # Mutual TLS on the SSL listener only; SASL_SSL authenticates with SASL.
            "listener.name.sasl_ssl.ssl.client.auth": "none",
            "connections.max.reauth.ms": REAUTH_MS,
        },
    )
    try:
        cluster.start()
    except BrokerUnavailableError as exc:
        skip_or_fail_unavailable("Apache Kafka (secured)", exc)
    try:
        assert cluster.client_key_path is not None
        key = Path(cluster.client_key_path).read_text()
        # Any line of the private key's body would be a leak.
        SECRETS.update(line for line in key.splitlines() if line and not line.startswith("-----"))
        asyncio.run(_prepare(cluster))
        yield cluster
    finally:
        cluster.stop()


async def _prepare(cluster: KafkaCluster) -> None:
    """SCRAM credentials through our own Admin, and the ACLs the round trips need."""
    async with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        results = await admin.alter_user_scram_credentials(
            [
                ScramUpsertion(SCRAM_USER, ScramMechanism.SCRAM_SHA_256, SCRAM_PASSWORD),
            ]
        )
        assert all(r.error is None for r in results.values()), results
        results = await admin.alter_user_scram_credentials(
            [ScramUpsertion(SCRAM_USER, ScramMechanism.SCRAM_SHA_512, SCRAM_PASSWORD)]
        )
        assert all(r.error is None for r in results.values()), results
        # Every authenticated principal may use the round-trip topics and groups ("rt-").
        # carol is denied them: with WRITE on no topic at all she may not be idempotent.
        bindings = [
            AclBinding(kind, "rt-", PatternType.PREFIXED, principal, "*", AclOperation.ALL, grant)
            for kind in (AclResourceType.TOPIC, AclResourceType.GROUP)
            for principal, grant in (
                ("User:*", AclPermissionType.ALLOW),
                ("User:carol", AclPermissionType.DENY),
            )
        ]
        created = await admin.create_acls(bindings)
        assert all(r.ok for r in created.values()), created


def _jwt_part(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def unsecured_token(subject: str, lifetime_s: float) -> str:
    """A JWS with ``alg: none``, as Kafka's unsecured OAUTHBEARER validator accepts."""
    now = time.time()
    token = (
        _jwt_part({"alg": "none"})
        + "."
        + _jwt_part({"sub": subject, "iat": int(now), "exp": int(now + lifetime_s)})
        + "."
    )
    SECRETS.add(token)
    return token


class TokenProvider:
    """Makes a fresh token per call (and counts the calls)."""

    def __init__(self, subject: str, lifetime_s: float = 3600) -> None:
        self.subject = subject
        self.lifetime_s = lifetime_s
        self.calls = 0

    def __call__(self) -> OAuthBearerToken:
        self.calls += 1
        token = unsecured_token(self.subject, self.lifetime_s)
        return OAuthBearerToken(token, lifetime_ms=int((time.time() + self.lifetime_s) * 1000))


def sasl_options(
    cluster: KafkaCluster, listener: str, mechanism: str, **overrides: Any
) -> dict[str, Any]:
    options: dict[str, Any] = {
        "bootstrap_servers": cluster.bootstrap_for(listener),
        "security_protocol": listener,
        "sasl_mechanism": mechanism,
        "request_timeout_ms": 5_000,
    }
    if listener == "SASL_SSL":
        options["ssl_context"] = create_ssl_context(cafile=cluster.ca_path)
    if mechanism == "PLAIN":
        options.update(sasl_plain_username="alice", sasl_plain_password=ALICE_PASSWORD)
    elif mechanism.startswith("SCRAM"):
        options.update(sasl_plain_username=SCRAM_USER, sasl_plain_password=SCRAM_PASSWORD)
    else:
        options["sasl_oauth_token_provider"] = TokenProvider("olivia")
    options.update(overrides)
    return options


def note(*objects: object) -> None:
    """Keep the reprs and messages the scan must look at."""
    for obj in objects:
        SEEN_TEXTS.append(repr(obj))
        if isinstance(obj, BaseException):
            SEEN_TEXTS.append(str(obj))
            SEEN_TEXTS.append("".join(traceback.format_exception(obj)))


async def round_trip(options: dict[str, Any], topic: str) -> None:
    """Produce one record and read it back with a group, with ``options``."""
    async with Producer(acks="all", **options) as producer:
        note(producer)
        metadata = await (await producer.send(topic, b"secret-free value", key=b"k"))
    async with Consumer(
        topic, group_id=f"rt-{uuid.uuid4().hex[:8]}", auto_offset_reset="earliest", **options
    ) as consumer:
        note(consumer)
        record = await asyncio.wait_for(consumer.getone(), 30)
    assert (record.partition, record.offset) == (metadata.partition, metadata.offset)
    assert record.value == b"secret-free value"


async def create_topic(cluster: KafkaCluster, topic: str) -> None:
    async with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        results = await admin.create_topics([topic])
        assert all(r.error is None for r in results.values()), results


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def expect_fast(awaitable: Any, kind: type[BaseException]) -> BaseException:
    """``awaitable`` must raise ``kind`` well within FAST seconds (no retry loop)."""
    started = time.monotonic()
    with pytest.raises(kind) as caught:
        await asyncio.wait_for(awaitable, FAST * 3)
    elapsed = time.monotonic() - started
    assert elapsed < FAST, f"{caught.value!r} took {elapsed:.1f}s"
    note(caught.value)
    return caught.value


# ------------------------------------------------------------------------------------------ TLS


def tls_options(cluster: KafkaCluster, **context: Any) -> dict[str, Any]:
    settings = {
        "cafile": cluster.ca_path,
        "certfile": cluster.client_cert_path,
        "keyfile": cluster.client_key_path,
        **context,
    }
    return {
        "bootstrap_servers": cluster.bootstrap_for("SSL"),
        "security_protocol": "SSL",
        "ssl_context": create_ssl_context(**settings),
        "request_timeout_ms": 5_000,
    }


async def test_mutual_tls_with_the_ca_and_a_client_certificate(
    secure_cluster: KafkaCluster,
) -> None:
    topic = unique("rt-tls")
    await create_topic(secure_cluster, topic)
    # The certificate's principal ("User:O=trustme,...") has the "rt-" ACLs given to User:*.
    await round_trip(tls_options(secure_cluster), topic)


async def test_without_a_client_certificate_mutual_tls_refuses_with_a_typed_error(
    secure_cluster: KafkaCluster,
) -> None:
    options = tls_options(secure_cluster, certfile=None, keyfile=None)
    error = await expect_fast(Producer(**options).start(), errors.AuthenticationError)
    assert "TLS" in str(error) or "SSL" in str(error)


async def test_a_hostname_mismatch_is_refused(secure_cluster: KafkaCluster) -> None:
    _, port = secure_cluster.address(1, "SSL")
    options = tls_options(secure_cluster)
    options["bootstrap_servers"] = f"127.0.0.1:{port}"  # the certificate names localhost only
    error = await expect_fast(Producer(**options).start(), errors.AuthenticationError)
    assert "127.0.0.1" in str(error)
    # The same connection without hostname checking: the refusal was about the name.
    lax = tls_options(secure_cluster, check_hostname=False)
    lax["bootstrap_servers"] = f"127.0.0.1:{port}"
    async with Admin(**lax) as admin:
        assert (await admin.describe_cluster()).brokers


async def test_a_wrong_ca_is_a_typed_error_at_once(
    secure_cluster: KafkaCluster, tmp_path: Path
) -> None:
    trustme = pytest.importorskip("trustme")
    other = trustme.CA()
    other.cert_pem.write_to_path(str(tmp_path / "other-ca.pem"))
    options = tls_options(secure_cluster, cafile=str(tmp_path / "other-ca.pem"))
    await expect_fast(Producer(**options).start(), errors.AuthenticationError)
    await expect_fast(Consumer("rt-x", **options).start(), errors.AuthenticationError)
    sasl = sasl_options(secure_cluster, "SASL_SSL", "PLAIN")
    sasl["ssl_context"] = create_ssl_context(cafile=str(tmp_path / "other-ca.pem"))
    await expect_fast(Admin(**sasl).start(), errors.AuthenticationError)


# ----------------------------------------------------------------------------------------- SASL


@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_sasl_round_trip(secure_cluster: KafkaCluster, listener: str, mechanism: str) -> None:
    topic = unique("rt-sasl")
    await create_topic(secure_cluster, topic)
    await round_trip(sasl_options(secure_cluster, listener, mechanism), topic)


@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_a_wrong_password_fails_fast_without_retrying(
    secure_cluster: KafkaCluster, listener: str, mechanism: str
) -> None:
    options = sasl_options(secure_cluster, listener, mechanism, sasl_plain_password=WRONG_PASSWORD)
    error = await expect_fast(Producer(**options).start(), errors.AuthenticationError)
    assert WRONG_PASSWORD not in str(error)
    await expect_fast(Admin(**options).start(), errors.AuthenticationError)


@pytest.mark.parametrize("listener", SASL_LISTENERS)
async def test_an_expired_token_fails_fast_without_retrying(
    secure_cluster: KafkaCluster, listener: str
) -> None:
    provider = TokenProvider("olivia", lifetime_s=-60)
    options = sasl_options(
        secure_cluster, listener, "OAUTHBEARER", sasl_oauth_token_provider=provider
    )
    await expect_fast(Producer(**options).start(), errors.AuthenticationError)
    assert provider.calls <= 3, f"asked {provider.calls} times: a retry loop"


# ---------------------------------------------------------------------------- re-authentication


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "OAUTHBEARER"])
async def test_long_lived_connections_reauthenticate_without_failing_requests(
    secure_cluster: KafkaCluster, mechanism: str
) -> None:
    topic = unique("rt-reauth")
    await create_topic(secure_cluster, topic)
    options = sasl_options(secure_cluster, "SASL_SSL", mechanism)
    provider = options.get("sasl_oauth_token_provider")
    sent = 0
    async with Producer(acks="all", linger_ms=2, **options) as producer:
        started = time.monotonic()
        handles = []
        # Three sessions' worth of steady sending: each connection re-authenticates twice.
        while time.monotonic() - started < REAUTH_MS / 1000 * 2.6:
            handles.append(await producer.send(topic, b"%d" % sent))
            sent += 1
            await asyncio.sleep(0.005)
        outcomes = await asyncio.gather(*handles, return_exceptions=True)
        cluster = producer._cluster
        assert cluster is not None
        connections = list(cluster.pool._connections.values())
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    assert not failures, failures[:3]
    produce = [c for c in connections if c.purpose == "produce"]
    assert produce and all(c.reauthentications >= 2 for c in produce), [
        (c, c.reauthentications) for c in connections
    ]
    if isinstance(provider, TokenProvider):
        # A fresh token for every (re-)authentication of every connection.
        assert provider.calls >= len(connections) + 2
    async with Consumer(
        bootstrap_servers=secure_cluster.bootstrap_servers, auto_offset_reset="earliest"
    ) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        seen = 0
        while seen < sent:
            batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
            seen += sum(len(v) for v in batch.values())
    assert seen == sent


# ---------------------------------------------------------------------------------- authorization


def alice(cluster: KafkaCluster, **overrides: Any) -> dict[str, Any]:
    return sasl_options(cluster, "SASL_PLAINTEXT", "PLAIN", **overrides)


async def allow(cluster: KafkaCluster, *bindings: tuple[AclResourceType, str, str, AclOperation]):
    async with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        created = await admin.create_acls(
            [
                AclBinding(
                    kind, name, PatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW
                )
                for kind, name, principal, op in bindings
            ]
        )
        assert all(r.ok for r in created.values()), created


async def test_no_write_on_a_topic_fails_the_send_at_once_and_a_grant_takes_effect_live(
    secure_cluster: KafkaCluster,
) -> None:
    denied, allowed = unique("acl-denied"), unique("acl-allowed")
    for topic in (denied, allowed):
        await create_topic(secure_cluster, topic)
    await allow(
        secure_cluster,
        (AclResourceType.TOPIC, allowed, "User:alice", AclOperation.WRITE),
        (AclResourceType.TOPIC, denied, "User:alice", AclOperation.DESCRIBE),
    )
    async with Producer(acks="all", **alice(secure_cluster)) as producer:
        handle = await producer.send(denied, b"no")
        error = await expect_fast(handle, errors.TopicAuthorizationFailedError)
        assert denied in str(error) or error.code == errors.TopicAuthorizationFailedError.code
        assert handle._batch.attempts == 1, "an authorization error was retried"
        # Still usable for a topic it may write.
        await asyncio.wait_for(await producer.send(allowed, b"yes"), FAST)
        # Granted at run time: the same producer writes there, no restart.
        await allow(
            secure_cluster, (AclResourceType.TOPIC, denied, "User:alice", AclOperation.WRITE)
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                await asyncio.wait_for(await producer.send(denied, b"now yes"), FAST)
                break
            except errors.TopicAuthorizationFailedError:
                assert time.monotonic() < deadline, "the grant never took effect"
                await asyncio.sleep(0.5)


async def test_no_read_on_a_group_is_a_group_authorization_error(
    secure_cluster: KafkaCluster,
) -> None:
    topic, group = unique("acl-read"), unique("acl-group")
    await create_topic(secure_cluster, topic)
    await allow(
        secure_cluster,
        (AclResourceType.TOPIC, topic, "User:alice", AclOperation.READ),
        (AclResourceType.TOPIC, topic, "User:alice", AclOperation.DESCRIBE),
    )
    consumer = Consumer(
        topic, group_id=group, auto_offset_reset="earliest", **alice(secure_cluster)
    )
    async with consumer:
        await expect_fast(consumer.getmany(timeout_ms=20_000), errors.GroupAuthorizationFailedError)


async def test_transactional_id_and_idempotent_write_authorization_errors_are_typed(
    secure_cluster: KafkaCluster,
) -> None:
    topic = unique("acl-txn")
    await create_topic(secure_cluster, topic)
    await allow(secure_cluster, (AclResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE))
    # alice may write the topic but has no WRITE on this transactional id.
    txn = Producer(transactional_id=unique("txn"), **alice(secure_cluster))
    await expect_fast(txn.start(), errors.TransactionalIdAuthorizationFailedError)
    await txn.close()
    # carol may only describe the topic: without WRITE on any topic or IDEMPOTENT_WRITE on the
    # cluster, an idempotent producer gets no producer id (KIP-679).
    await allow(secure_cluster, (AclResourceType.TOPIC, topic, "User:carol", AclOperation.DESCRIBE))
    carol = alice(secure_cluster, sasl_plain_username="carol", sasl_plain_password=CAROL_PASSWORD)
    async with Producer(acks="all", enable_idempotence=True, **carol) as producer:
        handle = await producer.send(topic, b"x")
        await expect_fast(handle, errors.ClusterAuthorizationFailedError)


# --------------------------------------------------------------------------------------- secrets


def test_no_secret_in_logs_reprs_or_error_messages(secure_cluster: KafkaCluster) -> None:
    # Runs last in this module (file order): everything above was logged at DEBUG.
    assert len(CAPTURE.lines) > 10, "DEBUG logging captured almost nothing"
    assert any("authenticated" in line for line in CAPTURE.lines)
    texts = CAPTURE.lines + SEEN_TEXTS
    leaks = [
        (secret[:6] + "...", text[:200])
        for secret in SECRETS
        for text in texts
        if secret and secret in text
    ]
    assert not leaks, leaks[:5]
    assert len(SECRETS) >= 6  # passwords, tokens and key lines were all collected
