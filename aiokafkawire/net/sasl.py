"""SASL mechanisms as sans-I/O state machines: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.

A connection drives a mechanism over SaslAuthenticate (or raw SASL frames after SaslHandshake v0)::

    mechanism = create_mechanism("SCRAM-SHA-512", username="alice", password="s3cret")
    await mechanism.prepare()                  # fetches an OAUTHBEARER token; no-op otherwise
    client_message: bytes | None = mechanism.start()
    while client_message is not None:
        server_message = await send(client_message)   # the auth_bytes of the broker's reply
        client_message = mechanism.step(server_message)
    assert mechanism.complete

A broker reply with an error code ends the exchange on the connection's side; the mechanisms only
see successful replies.  Every failure the mechanism detects (server error, forged nonce, bad
server signature, malformed message) raises :class:`~aiokafkawire.errors.AuthenticationError`;
invalid settings raise :class:`~aiokafkawire.errors.ConfigError`.  Passwords and tokens are kept
in :class:`~aiokafkawire.net.credentials.Secret` objects and never appear in ``repr()``, log
records or exception messages.

SASLprep (RFC 4013) for SCRAM passwords is implemented in full with the ``stringprep`` tables
(Unicode 3.2, as the RFC requires): mapping, NFKC, prohibited output, bidi rules; unassigned code
points are allowed (RFC 5802 treats the password as a query string).  Apache Kafka's own
``ScramFormatter`` hashes the raw UTF-8 bytes instead, so for passwords SASLprep changes (non-ASCII
spaces, compatibility characters, decomposed forms) pass ``saslprep=False`` to match credentials
created by Kafka's tools.  Usernames are only escaped (``=`` -> ``=3D``, ``,`` -> ``=2C``): Kafka
looks them up byte for byte.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import inspect
import json
import logging
import re
import secrets
import stringprep
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from aiokafkawire.errors import AuthenticationError, ConfigError, IllegalStateError
from aiokafkawire.net.credentials import OAuthBearerToken, Secret

__all__ = [
    "SUPPORTED_MECHANISMS",
    "OAuthBearerMechanism",
    "OAuthBearerToken",
    "PlainMechanism",
    "SaslMechanism",
    "ScramMechanism",
    "ScramSha256Mechanism",
    "ScramSha512Mechanism",
    "TokenProvider",
    "TokenSource",
    "create_mechanism",
    "saslprep",
]

log = logging.getLogger(__name__)


class TokenSource(Protocol):
    """A kafka-python / aiokafka style provider object (``extensions()`` is optional)."""

    def token(self) -> Any:
        """Return the token (str or object with ``.token``), or an awaitable of it."""
        ...


#: A callable (sync or async) returning the token as ``str`` or an object with a ``token``
#: attribute and an optional ``extensions`` mapping; or a :class:`TokenSource` object.
TokenProvider = Callable[[], Any] | TokenSource


@runtime_checkable
class SaslMechanism(Protocol):
    """The interface a connection uses to run one SASL authentication exchange."""

    @property
    def name(self) -> str:
        """The IANA mechanism name sent in SaslHandshake, e.g. ``"SCRAM-SHA-256"``."""
        ...

    @property
    def complete(self) -> bool:
        """True once the exchange finished successfully (the server was verified, if it can be)."""
        ...

    async def prepare(self) -> None:
        """Acquire what the mechanism needs before :meth:`start` (an OAuth token); call once."""
        ...

    def start(self) -> bytes:
        """Return the initial client response."""
        ...

    def step(self, server_message: bytes) -> bytes | None:
        """Consume a server challenge; return the next client message, or None when done."""
        ...


class _MechanismBase:
    """State shared by the mechanisms: started/complete flags and misuse checks."""

    name: ClassVar[str]

    def __init__(self) -> None:
        self._started = False
        self._complete = False

    @property
    def complete(self) -> bool:
        """True once the exchange finished successfully."""
        return self._complete

    async def prepare(self) -> None:
        """Nothing to acquire for this mechanism."""

    def _begin(self) -> None:
        if self._started:
            raise IllegalStateError(f"{self.name}: start() was already called")
        self._started = True

    def _check_can_step(self) -> None:
        if not self._started:
            raise IllegalStateError(f"{self.name}: step() called before start()")
        if self._complete:
            raise AuthenticationError(
                f"{self.name}: the server sent a message after authentication completed"
            )


# ---------------------------------------------------------------------------------------------
# PLAIN (RFC 4616)
# ---------------------------------------------------------------------------------------------


class PlainMechanism(_MechanismBase):
    """SASL PLAIN: sends ``authzid NUL authcid NUL passwd`` once; use it only over TLS."""

    name: ClassVar[str] = "PLAIN"

    def __init__(
        self, username: str, password: str | Secret, *, authorization_id: str = ""
    ) -> None:
        super().__init__()
        secret = Secret(password)
        if not isinstance(username, str) or not username:
            raise ConfigError("PLAIN: the username must be a non-empty string")
        if not secret:
            raise ConfigError("PLAIN: the password must not be empty")
        if "\0" in username or "\0" in authorization_id:
            raise ConfigError("PLAIN: the username and authorization id must not contain NUL")
        if "\0" in secret.reveal():
            raise ConfigError("PLAIN: the password must not contain NUL")
        self.username = username
        self.authorization_id = authorization_id
        self._password = secret

    def start(self) -> bytes:
        """Return ``authzid NUL username NUL password`` in UTF-8."""
        self._begin()
        return "\0".join((self.authorization_id, self.username, self._password.reveal())).encode()

    def step(self, server_message: bytes) -> bytes | None:
        """Accept the server's empty success reply."""
        self._check_can_step()
        if server_message:
            raise AuthenticationError(
                f"PLAIN: unexpected {len(server_message)}-byte server challenge"
            )
        self._complete = True
        return None

    def __repr__(self) -> str:
        return f"PlainMechanism(username={self.username!r})"


# ---------------------------------------------------------------------------------------------
# SASLprep (RFC 4013)
# ---------------------------------------------------------------------------------------------

_PROHIBITED_TABLES = (
    stringprep.in_table_c12,  # non-ASCII space
    stringprep.in_table_c21_c22,  # control characters
    stringprep.in_table_c3,  # private use
    stringprep.in_table_c4,  # non-character code points
    stringprep.in_table_c5,  # surrogates
    stringprep.in_table_c6,  # inappropriate for plain text
    stringprep.in_table_c7,  # inappropriate for canonical representation
    stringprep.in_table_c8,  # change display properties / deprecated
    stringprep.in_table_c9,  # tagging characters
)


def saslprep(text: str, *, allow_unassigned: bool = True) -> str:
    """Prepare ``text`` with the SASLprep profile of stringprep (RFC 4013).

    Raises :class:`ValueError` naming the rule broken, never the text (it is usually a password).
    """
    # 2.1 mapping: non-ASCII spaces become SPACE, "commonly mapped to nothing" disappear.
    mapped = "".join(
        " " if stringprep.in_table_c12(ch) else ch for ch in text if not stringprep.in_table_b1(ch)
    )
    # 2.2 normalisation: NFKC over Unicode 3.2, the version stringprep is defined against.
    prepared = unicodedata.ucd_3_2_0.normalize("NFKC", mapped)
    if not prepared:
        return prepared
    for position, ch in enumerate(prepared):
        if any(in_table(ch) for in_table in _PROHIBITED_TABLES):
            raise ValueError(f"SASLprep: prohibited character at position {position}")
        if not allow_unassigned and stringprep.in_table_a1(ch):
            raise ValueError(f"SASLprep: unassigned code point at position {position}")
    # 2.4 bidi: right-to-left text must not mix in left-to-right characters and must start and
    # end with a right-to-left character.
    if any(stringprep.in_table_d1(ch) for ch in prepared):
        if any(stringprep.in_table_d2(ch) for ch in prepared):
            raise ValueError("SASLprep: mixes right-to-left and left-to-right characters")
        if not (stringprep.in_table_d1(prepared[0]) and stringprep.in_table_d1(prepared[-1])):
            raise ValueError("SASLprep: right-to-left text must start and end with RandALCat")
    return prepared


# ---------------------------------------------------------------------------------------------
# SCRAM (RFC 5802, RFC 7677)
# ---------------------------------------------------------------------------------------------

#: Kafka refuses SCRAM credentials with fewer iterations (ScramMechanism.minIterations()).
KAFKA_MIN_SCRAM_ITERATIONS = 4096
#: Upper bound so a hostile server cannot make the client burn seconds of CPU in PBKDF2.
DEFAULT_MAX_SCRAM_ITERATIONS = 1_000_000

_SCRAM_EXTENSION_KEY = re.compile(r"[A-Za-z]+\Z")
_PRINTABLE_NONCE = re.compile(r"[\x21-\x2b\x2d-\x7e]+\Z")  # printable ASCII except ","


def _escape_scram_username(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def _parse_scram_attributes(message: str, mechanism: str) -> list[tuple[str, str]]:
    """Split ``a=value,b=value`` into pairs, refusing anything that is not that shape."""
    attributes = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=" or not ("a" <= part[0].lower() <= "z"):
            raise AuthenticationError(f"{mechanism}: malformed server message")
        attributes.append((part[0], part[2:]))
    return attributes


def _server_error(mechanism: str, value: str) -> AuthenticationError:
    return AuthenticationError(f"{mechanism}: the server reported error {value!r}")


class ScramMechanism(_MechanismBase):
    """SCRAM-SHA-256 / SCRAM-SHA-512 client (no channel binding, GS2 header ``n,,``).

    ``extensions`` are SCRAM extension attributes appended to client-first (Kafka uses
    ``tokenauth=true`` for delegation tokens).  ``client_nonce`` fixes the nonce for tests
    against published vectors; leave it unset otherwise.
    """

    _HASHES: ClassVar[dict[str, str]] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str | Secret,
        *,
        saslprep: bool = True,
        extensions: Mapping[str, str] | None = None,
        min_iterations: int = KAFKA_MIN_SCRAM_ITERATIONS,
        max_iterations: int = DEFAULT_MAX_SCRAM_ITERATIONS,
        client_nonce: str | None = None,
    ) -> None:
        super().__init__()
        try:
            self._hash_name = self._HASHES[mechanism]
        except KeyError:
            raise ConfigError(f"unknown SCRAM mechanism {mechanism!r}") from None
        self._name = mechanism
        if not isinstance(username, str) or not username:
            raise ConfigError(f"{mechanism}: the username must be a non-empty string")
        secret = Secret(password)
        if saslprep:
            try:
                secret = Secret(_saslprep_function(secret.reveal()))
            except ValueError as exc:
                # The message of saslprep() names a rule and a position, never the password.
                raise ConfigError(f"{mechanism}: password rejected by {exc}") from None
        if not secret:
            raise ConfigError(f"{mechanism}: the password must not be empty")
        self.username = username
        self._password = secret
        self._extensions = dict(extensions or {})
        for key, value in self._extensions.items():
            if not _SCRAM_EXTENSION_KEY.match(key) or "," in value:
                raise ConfigError(f"{mechanism}: invalid SCRAM extension {key!r}")
        if min_iterations < 1 or max_iterations < min_iterations:
            raise ConfigError(f"{mechanism}: invalid iteration bounds")
        self._min_iterations = min_iterations
        self._max_iterations = max_iterations
        if client_nonce is None:
            client_nonce = secrets.token_urlsafe(24)
        elif not _PRINTABLE_NONCE.match(client_nonce):
            raise ConfigError(f"{mechanism}: the client nonce must be printable ASCII without ','")
        self._client_nonce = client_nonce
        self._client_first_bare = ""
        self._expected_server_signature: bytes | None = None

    @property
    def name(self) -> str:  # type: ignore[override]
        """``SCRAM-SHA-256`` or ``SCRAM-SHA-512``."""
        return self._name

    def start(self) -> bytes:
        """Return client-first: ``n,,n=<user>,r=<nonce>[,ext=value...]``."""
        self._begin()
        parts = [f"n={_escape_scram_username(self.username)}", f"r={self._client_nonce}"]
        parts.extend(f"{key}={value}" for key, value in self._extensions.items())
        self._client_first_bare = ",".join(parts)
        return ("n,," + self._client_first_bare).encode()

    def step(self, server_message: bytes) -> bytes | None:
        """Answer server-first with client-final, then verify server-final and return None."""
        self._check_can_step()
        try:
            text = server_message.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationError(f"{self._name}: server message is not UTF-8") from None
        if self._expected_server_signature is None:
            return self._client_final(text)
        self._verify_server_final(text)
        return None

    def _client_final(self, server_first: str) -> bytes:
        attributes = _parse_scram_attributes(server_first, self._name)
        if attributes[0][0] == "e":
            raise _server_error(self._name, attributes[0][1])
        if attributes[0][0] == "m":
            raise AuthenticationError(f"{self._name}: server requires an unsupported extension")
        if [key for key, _ in attributes[:3]] != ["r", "s", "i"]:
            raise AuthenticationError(f"{self._name}: malformed server-first message")
        nonce, salt_b64, iterations_text = (value for _, value in attributes[:3])
        if not nonce.startswith(self._client_nonce) or len(nonce) <= len(self._client_nonce):
            raise AuthenticationError(
                f"{self._name}: the server nonce does not extend the client nonce"
            )
        if not _PRINTABLE_NONCE.match(nonce):
            raise AuthenticationError(f"{self._name}: the server nonce is not printable ASCII")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
        except binascii.Error:
            raise AuthenticationError(f"{self._name}: the salt is not valid base64") from None
        if not iterations_text.isdigit() or not iterations_text.isascii():
            raise AuthenticationError(f"{self._name}: the iteration count is not a number")
        iterations = int(iterations_text)
        if iterations < self._min_iterations:
            raise AuthenticationError(
                f"{self._name}: the server asked for {iterations} iterations, "
                f"fewer than the minimum {self._min_iterations}"
            )
        if iterations > self._max_iterations:
            raise AuthenticationError(
                f"{self._name}: the server asked for {iterations} iterations, "
                f"more than the maximum {self._max_iterations}"
            )

        salted_password = hashlib.pbkdf2_hmac(
            self._hash_name, self._password.reveal().encode(), salt, iterations
        )
        client_key = self._hmac(salted_password, b"Client Key")
        stored_key = hashlib.new(self._hash_name, client_key).digest()
        # "biws" is base64("n,,"): the GS2 header without channel binding or authzid.
        client_final_without_proof = f"c=biws,r={nonce}"
        auth_message = ",".join(
            (self._client_first_bare, server_first, client_final_without_proof)
        ).encode()
        client_signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, client_signature, strict=True))
        server_key = self._hmac(salted_password, b"Server Key")
        self._expected_server_signature = self._hmac(server_key, auth_message)
        return f"{client_final_without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server_final(self, server_final: str) -> None:
        attributes = _parse_scram_attributes(server_final, self._name)
        key, value = attributes[0]
        if key == "e":
            raise _server_error(self._name, value)
        if key != "v":
            raise AuthenticationError(f"{self._name}: malformed server-final message")
        try:
            signature = base64.b64decode(value, validate=True)
        except binascii.Error:
            raise AuthenticationError(
                f"{self._name}: the server signature is not valid base64"
            ) from None
        assert self._expected_server_signature is not None
        if not hmac.compare_digest(signature, self._expected_server_signature):
            raise AuthenticationError(
                f"{self._name}: the server signature is wrong; the server does not know "
                "the credentials (possible impostor)"
            )
        self._complete = True
        log.debug("%s: server signature verified for user %r", self._name, self.username)

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self._hash_name).digest()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, username={self.username!r})"


_saslprep_function = saslprep  # ScramMechanism's ``saslprep`` parameter shadows the function.


class ScramSha256Mechanism(ScramMechanism):
    """SCRAM-SHA-256 (RFC 7677)."""

    def __init__(self, username: str, password: str | Secret, **options: Any) -> None:
        super().__init__("SCRAM-SHA-256", username, password, **options)


class ScramSha512Mechanism(ScramMechanism):
    """SCRAM-SHA-512."""

    def __init__(self, username: str, password: str | Secret, **options: Any) -> None:
        super().__init__("SCRAM-SHA-512", username, password, **options)


# ---------------------------------------------------------------------------------------------
# OAUTHBEARER (RFC 7628, KIP-255, extensions KIP-342)
# ---------------------------------------------------------------------------------------------

_SEPARATOR = "\x01"
# RFC 6750 b64token, the form Kafka's OAuthBearerClientInitialResponse accepts.
_BEARER_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*\Z")
# RFC 7628 section 3.1: key = 1*(ALPHA), value = *(VCHAR / SP / HTAB / CR / LF).
_EXTENSION_KEY = re.compile(r"[A-Za-z]+\Z")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7e \t\r\n]*\Z")


def _validate_extensions(extensions: Mapping[str, str]) -> dict[str, str]:
    checked: dict[str, str] = {}
    for key, value in extensions.items():
        if not isinstance(key, str) or not _EXTENSION_KEY.match(key):
            raise ConfigError(f"OAUTHBEARER: invalid SASL extension name {key!r}")
        if key == "auth":
            raise ConfigError("OAUTHBEARER: the SASL extension name 'auth' is reserved")
        # The value is not echoed: deployments sometimes put credentials in extensions.
        if not isinstance(value, str) or not _EXTENSION_VALUE.match(value):
            raise ConfigError(f"OAUTHBEARER: invalid value for SASL extension {key!r}")
        checked[key] = value
    return checked


class OAuthBearerMechanism(_MechanismBase):
    """SASL OAUTHBEARER with a user-supplied token provider.

    ``token_provider`` is called once per authentication, by :meth:`prepare` (it may be a
    coroutine function) or, for a synchronous provider, lazily by :meth:`start`.  It returns the
    token as ``str``, or an object with a ``token`` attribute and an optional ``extensions``
    mapping (:class:`~aiokafkawire.net.credentials.OAuthBearerToken`).  An object with a
    ``token()`` method and an optional ``extensions()`` method (kafka-python / aiokafka style)
    is accepted as the provider too.  ``extensions`` given here are sent with every token;
    extensions returned with a token override them.
    """

    name: ClassVar[str] = "OAUTHBEARER"

    def __init__(
        self,
        token_provider: TokenProvider,
        *,
        extensions: Mapping[str, str] | None = None,
        authorization_id: str = "",
    ) -> None:
        super().__init__()
        if not callable(token_provider) and not callable(getattr(token_provider, "token", None)):
            raise ConfigError("OAUTHBEARER: token_provider must be callable or have token()")
        if any(ch in authorization_id for ch in ",=\x01"):
            raise ConfigError("OAUTHBEARER: the authorization id must not contain ',', '=', ^A")
        self._provider = token_provider
        self._static_extensions = _validate_extensions(extensions or {})
        self.authorization_id = authorization_id
        self._token: Secret | None = None
        self._extensions: dict[str, str] = {}
        self._awaiting_error_ack = False
        self.server_error: dict[str, Any] | None = None

    async def prepare(self) -> None:
        """Fetch the token (awaiting the provider if it is asynchronous).

        An exception from the provider becomes :class:`AuthenticationError` (chained, so the
        cause stays visible to whoever debugs it; its text is not copied into the message).
        """
        try:
            result = self._call_provider()
            while inspect.isawaitable(result):
                result = await result
            extensions = await self._provider_extensions()
        except Exception as exc:
            raise AuthenticationError(
                f"OAUTHBEARER: the token provider failed ({type(exc).__name__})"
            ) from exc
        self._accept(result, extensions)

    def start(self) -> bytes:
        """Return ``n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A]*^A``."""
        if self._token is None:
            try:
                result = self._call_provider()
            except Exception as exc:
                raise AuthenticationError(
                    f"OAUTHBEARER: the token provider failed ({type(exc).__name__})"
                ) from exc
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()  # never awaited; closing avoids a "never awaited" warning
                raise IllegalStateError(
                    "OAUTHBEARER: the token provider is asynchronous; await prepare() first"
                )
            provider_extensions = self._provider_extensions_sync()
            self._accept(result, provider_extensions)
        self._begin()
        assert self._token is not None
        gs2_header = f"n,a={self.authorization_id}," if self.authorization_id else "n,,"
        fields = [f"auth=Bearer {self._token.reveal()}"]
        fields.extend(f"{key}={value}" for key, value in self._extensions.items())
        return (gs2_header + _SEPARATOR + _SEPARATOR.join(fields) + _SEPARATOR * 2).encode()

    def step(self, server_message: bytes) -> bytes | None:
        """Accept an empty success reply; answer an error challenge with ``^A``, then fail."""
        self._check_can_step()
        if self._awaiting_error_ack:
            raise self._failure()
        if not server_message:
            self._complete = True
            return None
        # RFC 7628 3.2.2: an error challenge is JSON; the client acknowledges it with a lone
        # ^A so the server can finish the exchange with a failure.
        try:
            parsed = json.loads(server_message.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            parsed = None
        self.server_error = parsed if isinstance(parsed, dict) else {"status": "unparseable"}
        self._awaiting_error_ack = True
        log.debug("OAUTHBEARER: server rejected the token: %s", self._failure())
        return _SEPARATOR.encode()

    def _failure(self) -> AuthenticationError:
        error = self.server_error or {}
        details = ", ".join(f"{key}={value!r}" for key, value in error.items())
        return AuthenticationError(f"OAUTHBEARER: the server rejected the token ({details})")

    def _call_provider(self) -> Any:
        provider: Any = self._provider
        token_method = getattr(provider, "token", None)
        if callable(token_method):
            return token_method()
        return provider()

    async def _provider_extensions(self) -> Mapping[str, str] | None:
        extensions = self._provider_extensions_sync()
        while inspect.isawaitable(extensions):
            extensions = await extensions
        return extensions

    def _provider_extensions_sync(self) -> Any:
        method = getattr(self._provider, "extensions", None)
        return method() if callable(method) else None

    def _accept(self, result: Any, provider_extensions: Mapping[str, str] | None) -> None:
        if isinstance(result, (str, Secret)):
            token, token_extensions = Secret(result), None
        else:
            raw_token = getattr(result, "token", None)
            if not isinstance(raw_token, (str, Secret)):
                raise ConfigError(
                    "OAUTHBEARER: the token provider returned neither a str nor an object "
                    f"with a str 'token' (got {type(result).__name__})"
                )
            token, token_extensions = Secret(raw_token), getattr(result, "extensions", None)
        if not _BEARER_TOKEN.match(token.reveal()):
            raise ConfigError("OAUTHBEARER: the token is not a valid RFC 6750 bearer token")
        extensions = dict(self._static_extensions)
        extensions.update(_validate_extensions(provider_extensions or {}))
        extensions.update(_validate_extensions(token_extensions or {}))
        self._token = token
        self._extensions = extensions

    def __repr__(self) -> str:
        return f"OAuthBearerMechanism(extension_keys={sorted(self._static_extensions)!r})"


# ---------------------------------------------------------------------------------------------
# Factory
# ---------------------------------------------------------------------------------------------

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def create_mechanism(
    name: str,
    username: str | None = None,
    password: str | Secret | None = None,
    token_provider: TokenProvider | None = None,
    **options: Any,
) -> SaslMechanism:
    """Build a fresh mechanism for one authentication exchange.

    ``name`` is matched case-insensitively against :data:`SUPPORTED_MECHANISMS`; ``options`` go
    to the mechanism's constructor (``authorization_id``, ``saslprep``, ``extensions``...).
    Raises :class:`~aiokafkawire.errors.ConfigError` for an unknown name or missing credentials.
    """
    canonical = name.upper() if isinstance(name, str) else ""
    if canonical not in SUPPORTED_MECHANISMS:
        raise ConfigError(
            f"unsupported SASL mechanism {name!r}; supported: {', '.join(SUPPORTED_MECHANISMS)}"
        )
    if canonical == "OAUTHBEARER":
        if token_provider is None:
            raise ConfigError("OAUTHBEARER needs a token_provider")
        return OAuthBearerMechanism(token_provider, **options)
    if username is None or password is None:
        raise ConfigError(f"{canonical} needs a username and a password")
    if canonical == "PLAIN":
        return PlainMechanism(username, password, **options)
    return ScramMechanism(canonical, username, password, **options)
