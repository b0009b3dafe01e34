"""Containers for secrets (passwords, bearer tokens) that never show their value by accident.

:class:`Secret` wraps a string so that ``repr()``, ``str()``, f-strings, logging and tracebacks
print a placeholder; code that really needs the value calls :meth:`Secret.reveal`.
:class:`OAuthBearerToken` is what an OAUTHBEARER token provider may return.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from types import MappingProxyType
from typing import NoReturn

__all__ = ["REDACTED", "OAuthBearerToken", "Secret"]

REDACTED = "**********"


class Secret:
    """A string value that hides itself from ``repr()``, ``str()`` and formatting.

    Equality compares the wrapped values in constant time, so secrets can be compared without
    revealing them; they are deliberately unhashable and unpicklable to keep them out of
    caches and serialised state.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str | Secret) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            # The message names the type only; the value may be the secret itself.
            raise TypeError(f"a secret must be a str, not {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        """Return the wrapped value; call this only where the value is sent or hashed."""
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __len__(self) -> int:
        return len(self._value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Secret('{REDACTED}')"

    def __str__(self) -> str:
        return REDACTED

    def __format__(self, format_spec: str) -> str:
        return format(REDACTED, format_spec)

    def __reduce__(self) -> NoReturn:
        raise TypeError("Secret objects cannot be pickled")


class OAuthBearerToken:
    """An OAuth 2 bearer token plus the SASL extensions (KIP-342) to send with it.

    ``lifetime_ms`` is the token's expiry as a Unix timestamp in milliseconds, if known; the
    SASL layer does not use it, a connection may use it to plan re-authentication.
    """

    __slots__ = ("_token", "extensions", "lifetime_ms")

    def __init__(
        self,
        token: str | Secret,
        extensions: Mapping[str, str] | None = None,
        lifetime_ms: int | None = None,
    ) -> None:
        self._token = Secret(token)
        self.extensions: Mapping[str, str] = MappingProxyType(dict(extensions or {}))
        self.lifetime_ms = lifetime_ms

    @property
    def token(self) -> str:
        """The bearer token (compact JWS or any RFC 6750 ``b64token``)."""
        return self._token.reveal()

    def __repr__(self) -> str:
        return (
            f"OAuthBearerToken(token='{REDACTED}', extension_keys={sorted(self.extensions)!r}, "
            f"lifetime_ms={self.lifetime_ms!r})"
        )

    __str__ = __repr__
