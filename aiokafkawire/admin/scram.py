"""SCRAM credentials of users: describe, and create, replace or delete them."""

from __future__ import annotations

import enum
import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

from aiokafkawire import errors
from aiokafkawire.admin._core import AdminCore
from aiokafkawire.admin._items import error_or_none, item_results
from aiokafkawire.net.credentials import Secret
from aiokafkawire.protocol.messages import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
)
from aiokafkawire.protocol.messages import alter_user_scram_credentials as m_alter_scram
from aiokafkawire.protocol.messages import (
    describe_user_scram_credentials as m_describe_scram,
)


class ScramMechanism(enum.IntEnum):
    """SCRAM mechanisms as the credential APIs number them."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """The SASL name: ``SCRAM-SHA-256`` or ``SCRAM-SHA-512``."""
        return self.name.replace("_", "-")


_SCRAM_HASHES = {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}
#: Kafka's bounds on SCRAM iterations (``ScramMechanism.minIterations``/``maxIterations``).
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 16384


def scram_salted_password(
    mechanism: ScramMechanism, password: str | Secret, salt: bytes, iterations: int
) -> bytes:
    """SCRAM's ``SaltedPassword`` = Hi(password, salt, i) (RFC 5802), i.e. PBKDF2-HMAC.

    Like Kafka's ``ScramFormatter``, the password's UTF-8 bytes are used as they are (no SASLprep).
    """
    hash_name = _SCRAM_HASHES.get(mechanism)
    if hash_name is None:
        raise errors.ConfigError(f"unknown SCRAM mechanism {mechanism!r}")
    secret = password.reveal() if isinstance(password, Secret) else password
    return hashlib.pbkdf2_hmac(hash_name, secret.encode("utf-8"), salt, iterations)


@dataclass(frozen=True)
class ScramUpsertion:
    """Create or replace ``user``'s credential for ``mechanism`` (the password never leaves here).

    ``salt`` defaults to 32 random bytes; ``iterations`` must lie in Kafka's 4096-16384.
    """

    user: str
    mechanism: ScramMechanism
    password: str | Secret = field(repr=False)
    iterations: int = SCRAM_MIN_ITERATIONS
    salt: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in _SCRAM_HASHES:
            raise errors.ConfigError(f"unknown SCRAM mechanism {self.mechanism!r}")
        if not SCRAM_MIN_ITERATIONS <= self.iterations <= SCRAM_MAX_ITERATIONS:
            raise errors.ConfigError(
                f"SCRAM iterations must be {SCRAM_MIN_ITERATIONS}-{SCRAM_MAX_ITERATIONS}, "
                f"not {self.iterations}"
            )
        if not self.user:
            raise errors.ConfigError("a SCRAM credential needs a user name")


@dataclass(frozen=True)
class ScramDeletion:
    """Delete ``user``'s credential for ``mechanism``."""

    user: str
    mechanism: ScramMechanism


@dataclass(frozen=True)
class ScramCredentialInfo:
    """One SCRAM credential of a user: its mechanism and iteration count."""

    mechanism: ScramMechanism
    iterations: int


@dataclass(frozen=True)
class UserScramCredentials:
    """A user's SCRAM credentials, or the error describing them."""

    user: str
    credentials: tuple[ScramCredentialInfo, ...] = ()
    error: errors.KafkaError | None = None


@dataclass(frozen=True)
class ScramAlterationResult:
    """The outcome of altering one user's SCRAM credentials."""

    user: str
    error: errors.KafkaError | None = None

    @property
    def ok(self) -> bool:
        """True when every alteration of this user succeeded."""
        return self.error is None


def _upsertion(change: ScramUpsertion) -> m_alter_scram.ScramCredentialUpsertion:
    """The upsertion as sent: salt and salted password, never the password."""
    salt = change.salt if change.salt is not None else secrets.token_bytes(32)
    return m_alter_scram.ScramCredentialUpsertion(
        name=change.user,
        mechanism=int(change.mechanism),
        iterations=change.iterations,
        salt=salt,
        salted_password=scram_salted_password(
            change.mechanism, change.password, salt, change.iterations
        ),
    )


class ScramCalls(AdminCore):
    """Admin calls about users' SCRAM credentials."""

    async def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None, *, raise_on_error: bool = True
    ) -> dict[str, UserScramCredentials]:
        """The SCRAM mechanisms and iteration counts of ``users`` (every user by default).

        A named user without credentials fails with
        :class:`~aiokafkawire.errors.ResourceNotFoundError`.
        """
        self._check()
        names = None if users is None else list(dict.fromkeys(users))
        request = DescribeUserScramCredentialsRequest(
            users=None if names is None else [m_describe_scram.UserName(name=n) for n in names]
        )
        response = await self._send_any(request)
        errors.raise_for_code(
            response.error_code, response.error_message or "DescribeUserScramCredentials"
        )
        results = {
            r.user: UserScramCredentials(
                r.user,
                tuple(
                    ScramCredentialInfo(ScramMechanism(c.mechanism), c.iterations)
                    for c in r.credential_infos
                ),
                error_or_none(r.error_code, r.error_message),
            )
            for r in response.results
        }
        return item_results("describe_user_scram_credentials", results, raise_on_error)

    async def alter_user_scram_credentials(
        self,
        alterations: Iterable[ScramUpsertion | ScramDeletion],
        *,
        raise_on_error: bool = True,
    ) -> dict[str, ScramAlterationResult]:
        """Create, replace or delete users' SCRAM credentials.

        As Kafka's AdminClient does, the salted password is computed here (PBKDF2 with the
        mechanism's hash over the password's UTF-8 bytes and a random salt), so the password itself
        never goes over the wire.  Kafka refuses two alterations of one user in one call
        (:class:`~aiokafkawire.errors.DuplicateResourceError` on that user's result).
        """
        self._check()
        changes = list(alterations)
        if not changes:
            return {}
        request = AlterUserScramCredentialsRequest(
            deletions=[
                m_alter_scram.ScramCredentialDeletion(name=c.user, mechanism=int(c.mechanism))
                for c in changes
                if not isinstance(c, ScramUpsertion)
            ],
            upsertions=[_upsertion(c) for c in changes if isinstance(c, ScramUpsertion)],
        )
        response = await self._send_any(request)
        results = {
            r.user: ScramAlterationResult(r.user, error_or_none(r.error_code, r.error_message))
            for r in response.results
        }
        return item_results("alter_user_scram_credentials", results, raise_on_error)
