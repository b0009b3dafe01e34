"""SASL mechanisms: SCRAM against scramp's independent server, PLAIN/OAUTHBEARER byte layouts."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import pickle
from collections.abc import Callable
from typing import Any

import pytest
import scramp

from aiokafkawire.errors import AuthenticationError, ConfigError, IllegalStateError
from aiokafkawire.net.credentials import OAuthBearerToken, Secret
from aiokafkawire.net.sasl import (
    SUPPORTED_MECHANISMS,
    OAuthBearerMechanism,
    PlainMechanism,
    SaslMechanism,
    ScramMechanism,
    ScramSha256Mechanism,
    ScramSha512Mechanism,
    create_mechanism,
    saslprep,
)

PASSWORD = "Tr0ub4dor&3-horse-battery"
TOKEN = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
SCRAM_NAMES = ("SCRAM-SHA-256", "SCRAM-SHA-512")


# ---------------------------------------------------------------------------------------------
# Helpers: an independent SCRAM server (scramp)
# ---------------------------------------------------------------------------------------------


class ScrampServer:
    """scramp's server for one user, with the username it was asked for recorded."""

    def __init__(self, mechanism: str, username: str, password: str, iterations: int = 4096):
        self.mechanism = scramp.ScramMechanism(mechanism)
        self.username = username
        self.auth_info = self.mechanism.make_auth_info(password, iteration_count=iterations)
        self.requested_usernames: list[str] = []
        self.server = self.mechanism.make_server(self._lookup)

    def _lookup(self, username: str) -> tuple[bytes, bytes, bytes, int]:
        self.requested_usernames.append(username)
        if username != self.username:
            raise scramp.ScramException("unknown user", scramp.ServerError.UNKNOWN_USER)
        return self.auth_info

    def first(self, client_first: bytes) -> bytes:
        self.server.set_client_first(client_first.decode())
        return str(self.server.get_server_first()).encode()

    def final(self, client_final: bytes) -> bytes:
        """Return server-final: ``v=...`` on success, ``e=...`` when the proof was wrong."""
        try:
            self.server.set_client_final(client_final.decode())
        except scramp.ScramException:
            pass  # scramp records the error; get_server_final() turns it into "e=..."
        return str(self.server.get_server_final()).encode()


def run_scram(
    mechanism: ScramMechanism,
    server: ScrampServer,
    tamper_first: Callable[[bytes], bytes] = lambda message: message,
    tamper_final: Callable[[bytes], bytes] = lambda message: message,
) -> None:
    client_first = mechanism.start()
    server_first = tamper_first(server.first(client_first))
    client_final = mechanism.step(server_first)
    assert client_final is not None
    server_final = tamper_final(server.final(client_final))
    assert mechanism.step(server_final) is None


def replace_attribute(message: bytes, key: str, value: str) -> bytes:
    parts = message.decode().split(",")
    return ",".join(
        f"{key}={value}" if part.startswith(f"{key}=") else part for part in parts
    ).encode()


# ---------------------------------------------------------------------------------------------
# SCRAM
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCRAM_NAMES)
def test_scram_happy_path_against_scramp(name: str) -> None:
    mechanism = create_mechanism(name, username="alice", password=PASSWORD)
    assert isinstance(mechanism, ScramMechanism) and mechanism.name == name
    server = ScrampServer(name, "alice", PASSWORD)
    run_scram(mechanism, server)
    assert mechanism.complete
    assert server.requested_usernames == ["alice"]


def test_scram_sha256_rfc7677_vector() -> None:
    mechanism = ScramSha256Mechanism("user", "pencil", client_nonce="rOprNGfwEbeRWgbNEkqO")
    assert mechanism.start() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert mechanism.step(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert not mechanism.complete
    assert mechanism.step(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None
    assert mechanism.complete


@pytest.mark.parametrize("name", SCRAM_NAMES)
def test_scram_wrong_password_fails_with_server_error(name: str) -> None:
    mechanism = create_mechanism(name, username="alice", password="not-" + PASSWORD)
    assert isinstance(mechanism, ScramMechanism)
    server = ScrampServer(name, "alice", PASSWORD)
    with pytest.raises(AuthenticationError, match="invalid-proof") as excinfo:
        run_scram(mechanism, server)
    assert not mechanism.complete
    assert PASSWORD not in str(excinfo.value)


@pytest.mark.parametrize("name", SCRAM_NAMES)
def test_scram_refuses_nonce_not_extending_client_nonce(name: str) -> None:
    mechanism = create_mechanism(name, username="alice", password=PASSWORD)
    assert isinstance(mechanism, ScramMechanism)
    server = ScrampServer(name, "alice", PASSWORD)
    with pytest.raises(AuthenticationError, match="nonce"):
        run_scram(mechanism, server, tamper_first=lambda m: replace_attribute(m, "r", "forged"))


def test_scram_refuses_nonce_equal_to_client_nonce() -> None:
    mechanism = ScramSha256Mechanism("alice", PASSWORD, client_nonce="abc")
    mechanism.start()
    with pytest.raises(AuthenticationError, match="nonce"):
        mechanism.step(b"r=abc,s=c2FsdA==,i=4096")


@pytest.mark.parametrize("name", SCRAM_NAMES)
def test_scram_refuses_bad_server_signature(name: str) -> None:
    def flip_signature(message: bytes) -> bytes:
        assert message.startswith(b"v=")
        signature = bytearray(base64.b64decode(message[2:]))
        signature[0] ^= 0x01
        return b"v=" + base64.b64encode(bytes(signature))

    mechanism = create_mechanism(name, username="alice", password=PASSWORD)
    assert isinstance(mechanism, ScramMechanism)
    with pytest.raises(AuthenticationError, match="signature"):
        run_scram(mechanism, ScrampServer(name, "alice", PASSWORD), tamper_final=flip_signature)
    assert not mechanism.complete


@pytest.mark.parametrize(
    ("iterations", "fragment"), [(4095, "fewer than the minimum"), (10**7, "more than")]
)
def test_scram_iteration_count_bounds(iterations: int, fragment: str) -> None:
    mechanism = ScramSha256Mechanism("alice", PASSWORD, client_nonce="clientnonce")
    mechanism.start()
    with pytest.raises(AuthenticationError, match=fragment):
        mechanism.step(f"r=clientnonceSERVER,s=c2FsdA==,i={iterations}".encode())


@pytest.mark.parametrize(
    "server_first",
    [
        b"",
        b"garbage",
        b"\xff\xfe",
        b"s=c2FsdA==,r=clientnonceS,i=4096",
        b"r=clientnonceS,s=not base64!,i=4096",
        b"r=clientnonceS,s=c2FsdA==,i=4k",
        b"r=clientnonceS,s=c2FsdA==",
        b"m=mandatory-ext,r=clientnonceS,s=c2FsdA==,i=4096",
        b"e=other-error",
    ],
)
def test_scram_refuses_malformed_server_first(server_first: bytes) -> None:
    mechanism = ScramSha256Mechanism("alice", PASSWORD, client_nonce="clientnonce")
    mechanism.start()
    with pytest.raises(AuthenticationError):
        mechanism.step(server_first)


def test_scram_username_escaping_round_trips_through_scramp() -> None:
    username = "a=b,c"
    mechanism = ScramSha256Mechanism(username, PASSWORD, client_nonce="n0nce")
    server = ScrampServer("SCRAM-SHA-256", username, PASSWORD)
    assert mechanism.start() == b"n,,n=a=3Db=2Cc,r=n0nce"
    mechanism2 = ScramSha256Mechanism(username, PASSWORD)
    run_scram(mechanism2, server)
    assert server.requested_usernames == [username]


def test_scram_extensions_follow_the_nonce() -> None:
    mechanism = ScramSha256Mechanism(
        "token-id", "hmac", client_nonce="n0nce", extensions={"tokenauth": "true"}
    )
    assert mechanism.start() == b"n,,n=token-id,r=n0nce,tokenauth=true"


def test_scram_nonce_is_random_per_mechanism() -> None:
    first = ScramSha256Mechanism("alice", PASSWORD).start()
    second = ScramSha256Mechanism("alice", PASSWORD).start()
    assert first != second and len(first) > len(b"n,,n=alice,r=") + 16


def test_scram_saslprep_matches_scramp() -> None:
    # scramp SASLpreps the stored password: a no-break space maps to SPACE, a soft hyphen to
    # nothing, a ligature to its NFKC letters.
    raw = "pass\u00a0wo\u00adrd\ufb01"
    server = ScrampServer("SCRAM-SHA-256", "alice", "pass wordfi")
    run_scram(ScramSha256Mechanism("alice", raw), server)

    raw_bytes_client = ScramSha256Mechanism("alice", raw, saslprep=False)
    with pytest.raises(AuthenticationError):
        run_scram(raw_bytes_client, ScrampServer("SCRAM-SHA-256", "alice", "pass wordfi"))


def _raw_utf8_auth_info(password: str, salt: bytes) -> tuple[bytes, bytes, bytes, int]:
    """SCRAM-SHA-256 credentials as Kafka's ScramFormatter derives them: raw UTF-8, no SASLprep."""
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    return salt, hashlib.sha256(client_key).digest(), server_key, 4096


def test_scram_without_saslprep_matches_kafka_style_credentials() -> None:
    raw = "pass\u00a0word\ufb01"
    server = ScrampServer("SCRAM-SHA-256", "alice", "placeholder")
    server.auth_info = _raw_utf8_auth_info(raw, b"kafka-salt-16byte")
    run_scram(ScramSha256Mechanism("alice", raw, saslprep=False), server)

    server = ScrampServer("SCRAM-SHA-256", "alice", "placeholder")
    server.auth_info = _raw_utf8_auth_info(raw, b"kafka-salt-16byte")
    with pytest.raises(AuthenticationError):
        run_scram(ScramSha256Mechanism("alice", raw), server)


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # RFC 4013 section 3 examples
        ("I\u00adX", "IX"),
        ("user", "user"),
        ("USER", "USER"),
        ("\u00aa", "a"),
        ("\u2168", "IX"),
    ],
)
def test_saslprep_rfc4013_examples(text: str, expected: str) -> None:
    assert saslprep(text) == expected


@pytest.mark.parametrize("text", ["\u0007", "\u0627\u0031", "a\ue000b", "\u0627a\u0628"])
def test_saslprep_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="SASLprep"):
        saslprep(text)


def test_saslprep_unassigned_code_points_only_for_queries() -> None:
    unassigned = "a\u0221"  # unassigned in Unicode 3.2
    assert saslprep(unassigned) == unassigned
    with pytest.raises(ValueError, match="unassigned"):
        saslprep(unassigned, allow_unassigned=False)


def test_scram_password_rejected_by_saslprep_is_config_error_without_password() -> None:
    password = "secret\u0007bell"
    with pytest.raises(ConfigError) as excinfo:
        ScramSha256Mechanism("alice", password)
    assert password not in str(excinfo.value) and "secret" not in str(excinfo.value)


# ---------------------------------------------------------------------------------------------
# PLAIN
# ---------------------------------------------------------------------------------------------


def test_plain_layout_and_completion() -> None:
    mechanism = create_mechanism("PLAIN", username="alice", password=PASSWORD)
    assert mechanism.start() == b"\0alice\0" + PASSWORD.encode()
    assert not mechanism.complete
    assert mechanism.step(b"") is None
    assert mechanism.complete


def test_plain_with_authorization_id_and_utf8() -> None:
    mechanism = PlainMechanism("zoë", "pässword", authorization_id="admin")
    assert mechanism.start() == b"admin\0zo\xc3\xab\0p\xc3\xa4ssword"


def test_plain_refuses_a_challenge() -> None:
    mechanism = PlainMechanism("alice", PASSWORD)
    mechanism.start()
    with pytest.raises(AuthenticationError):
        mechanism.step(b"unexpected")


@pytest.mark.parametrize(
    ("username", "password"), [("", PASSWORD), ("alice", ""), ("al\0ice", PASSWORD)]
)
def test_plain_rejects_bad_credentials(username: str, password: str) -> None:
    with pytest.raises(ConfigError):
        PlainMechanism(username, password)


def test_plain_password_with_nul_error_does_not_echo_it() -> None:
    password = "sec\0ret-value"
    with pytest.raises(ConfigError) as excinfo:
        PlainMechanism("alice", password)
    assert "ret-value" not in str(excinfo.value)


# ---------------------------------------------------------------------------------------------
# OAUTHBEARER
# ---------------------------------------------------------------------------------------------


async def test_oauthbearer_layout_with_sync_provider() -> None:
    mechanism = create_mechanism("OAUTHBEARER", token_provider=lambda: TOKEN)
    await mechanism.prepare()
    assert mechanism.start() == b"n,,\x01auth=Bearer " + TOKEN.encode() + b"\x01\x01"
    assert mechanism.step(b"") is None
    assert mechanism.complete


def test_oauthbearer_sync_provider_works_without_prepare() -> None:
    mechanism = OAuthBearerMechanism(lambda: TOKEN)
    assert mechanism.start() == b"n,,\x01auth=Bearer " + TOKEN.encode() + b"\x01\x01"


async def test_oauthbearer_async_provider_with_extensions() -> None:
    calls = 0

    async def provider() -> OAuthBearerToken:
        nonlocal calls
        calls += 1
        return OAuthBearerToken(TOKEN, extensions={"logicalCluster": "lkc-1"})

    mechanism = OAuthBearerMechanism(
        provider, extensions={"identityPoolId": "pool-2", "logicalCluster": "overridden"}
    )
    with pytest.raises(IllegalStateError, match="prepare"):
        mechanism.start()
    await mechanism.prepare()
    assert calls == 1  # the coroutine the refused start() got was closed unrun
    assert mechanism.start() == (
        b"n,,\x01auth=Bearer " + TOKEN.encode() + b"\x01"
        b"identityPoolId=pool-2\x01logicalCluster=lkc-1\x01\x01"
    )


async def test_oauthbearer_accepts_kafka_python_style_provider_object() -> None:
    class Provider:
        async def token(self) -> str:
            return TOKEN

        def extensions(self) -> dict[str, str]:
            return {"traceId": "abc"}

    mechanism = OAuthBearerMechanism(Provider())
    await mechanism.prepare()
    assert mechanism.start().endswith(b"\x01traceId=abc\x01\x01")


async def test_oauthbearer_with_authorization_id() -> None:
    mechanism = OAuthBearerMechanism(lambda: TOKEN, authorization_id="alice")
    await mechanism.prepare()
    assert mechanism.start().startswith(b"n,a=alice,\x01auth=Bearer ")


async def test_oauthbearer_server_error_is_acknowledged_then_fails() -> None:
    mechanism = OAuthBearerMechanism(lambda: TOKEN)
    await mechanism.prepare()
    mechanism.start()
    challenge = b'{"status":"invalid_token","scope":"kafka"}'
    assert mechanism.step(challenge) == b"\x01"
    assert not mechanism.complete
    assert mechanism.server_error == {"status": "invalid_token", "scope": "kafka"}
    with pytest.raises(AuthenticationError, match="invalid_token") as excinfo:
        mechanism.step(b"")
    assert TOKEN not in str(excinfo.value)
    assert not mechanism.complete


async def test_oauthbearer_provider_failure_is_authentication_error() -> None:
    class IdentityProviderDown(RuntimeError):
        pass

    async def failing_provider() -> str:
        raise IdentityProviderDown("https://idp.example/token returned 503")

    with pytest.raises(AuthenticationError, match="IdentityProviderDown") as excinfo:
        await OAuthBearerMechanism(failing_provider).prepare()
    assert isinstance(excinfo.value.__cause__, IdentityProviderDown)

    def failing_sync_provider() -> str:
        raise IdentityProviderDown("down")

    with pytest.raises(AuthenticationError):
        OAuthBearerMechanism(failing_sync_provider).start()


@pytest.mark.parametrize(
    "provider_result",
    [
        "not a token",  # spaces are outside RFC 6750 b64token
        TOKEN + "\x01",
        "",
        42,
        OAuthBearerToken(TOKEN, extensions={"auth": "x"}),
        OAuthBearerToken(TOKEN, extensions={"bad-key": "x"}),
        OAuthBearerToken(TOKEN, extensions={"key": "bad\x01value"}),
    ],
)
async def test_oauthbearer_rejects_bad_tokens_and_extensions(provider_result: Any) -> None:
    mechanism = OAuthBearerMechanism(lambda: provider_result)
    with pytest.raises(ConfigError) as excinfo:
        await mechanism.prepare()
    if isinstance(provider_result, str) and provider_result:
        assert provider_result not in str(excinfo.value)


# ---------------------------------------------------------------------------------------------
# Factory, state machine misuse
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["GSSAPI", "SCRAM-SHA-1", "", "PLAIN "])
def test_factory_rejects_unknown_names(name: str) -> None:
    with pytest.raises(ConfigError, match="unsupported SASL mechanism"):
        create_mechanism(name, username="alice", password=PASSWORD)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("PLAIN", {"username": "alice"}),
        ("SCRAM-SHA-256", {"password": PASSWORD}),
        ("OAUTHBEARER", {}),
    ],
)
def test_factory_requires_credentials(name: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        create_mechanism(name, **kwargs)


@pytest.mark.parametrize("name", SUPPORTED_MECHANISMS)
def test_factory_builds_every_supported_mechanism(name: str) -> None:
    mechanism = create_mechanism(
        name.lower(), username="alice", password=PASSWORD, token_provider=lambda: TOKEN
    )
    assert isinstance(mechanism, SaslMechanism)
    assert mechanism.name == name


def test_state_machine_misuse() -> None:
    mechanism = PlainMechanism("alice", PASSWORD)
    with pytest.raises(IllegalStateError):
        mechanism.step(b"")
    mechanism.start()
    with pytest.raises(IllegalStateError):
        mechanism.start()
    mechanism.step(b"")
    with pytest.raises(AuthenticationError):
        mechanism.step(b"")


# ---------------------------------------------------------------------------------------------
# Secrets stay secret
# ---------------------------------------------------------------------------------------------


def _all_mechanisms() -> list[SaslMechanism]:
    return [
        PlainMechanism("alice", PASSWORD),
        ScramSha256Mechanism("alice", PASSWORD),
        ScramSha512Mechanism("alice", Secret(PASSWORD)),
        OAuthBearerMechanism(lambda: TOKEN),
    ]


async def test_repr_and_str_hide_secrets() -> None:
    for mechanism in _all_mechanisms():
        await mechanism.prepare()
        mechanism.start()  # the token/password is loaded into the object by now
        for text in (repr(mechanism), str(mechanism), f"{mechanism}"):
            assert PASSWORD not in text and TOKEN not in text
        for value in vars(mechanism).values():  # secrets are held only inside Secret objects
            if isinstance(value, (str, bytes)):
                assert PASSWORD not in str(value) and TOKEN not in str(value)
    secret = Secret(PASSWORD)
    token = OAuthBearerToken(TOKEN, extensions={"k": "v"})
    for text in (repr(secret), str(secret), f"{secret:>40}", repr(token), str(token)):
        assert PASSWORD not in text and TOKEN not in text
    assert secret.reveal() == PASSWORD and token.token == TOKEN
    assert secret == Secret(PASSWORD) and secret != Secret("other")
    with pytest.raises(TypeError):
        pickle.dumps(secret)


async def test_log_records_hide_secrets(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    run_scram(
        ScramSha256Mechanism("alice", PASSWORD), ScrampServer("SCRAM-SHA-256", "alice", PASSWORD)
    )
    oauth = OAuthBearerMechanism(lambda: TOKEN)
    await oauth.prepare()
    oauth.start()
    oauth.step(b'{"status":"invalid_token"}')
    plain = PlainMechanism("alice", PASSWORD)
    plain.start()
    plain.step(b"")
    assert caplog.records, "the mechanisms are expected to log at DEBUG"
    for record in caplog.records:
        assert PASSWORD not in record.getMessage() and TOKEN not in record.getMessage()


def test_error_messages_hide_secrets() -> None:
    failures: list[BaseException] = []
    scenarios: list[Callable[[], object]] = [
        lambda: run_scram(
            ScramSha256Mechanism("alice", PASSWORD), ScrampServer("SCRAM-SHA-256", "alice", "x")
        ),
        lambda: PlainMechanism("", PASSWORD),
        lambda: create_mechanism("NOPE", username="alice", password=PASSWORD),
        lambda: OAuthBearerMechanism(lambda: TOKEN + " trailing").start(),
    ]
    for scenario in scenarios:
        with pytest.raises((AuthenticationError, ConfigError)) as excinfo:
            scenario()
        failures.append(excinfo.value)
    for error in failures:
        chain: BaseException | None = error
        while chain is not None:
            assert PASSWORD not in str(chain) and TOKEN not in str(chain), chain
            chain = chain.__cause__ or chain.__context__
