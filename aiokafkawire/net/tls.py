"""TLS helpers: build the client :class:`ssl.SSLContext` for broker connections.

Defaults are the safe ones: TLS 1.2 or newer, the server certificate verified against the given
CA (or the system trust store) and its name checked against the broker's host name.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable

from aiokafkawire.errors import (
    ConfigError,
    KafkaConnectionError,
    KafkaError,
    SslAuthenticationError,
)

__all__ = ["create_ssl_context", "tls_error"]

PathLike = str | os.PathLike[str]
#: What :meth:`ssl.SSLContext.load_cert_chain` accepts as the private key password.
KeyPassword = str | bytes | bytearray | Callable[[], str | bytes | bytearray]


def create_ssl_context(  # long: each load step with its own error message
    *,
    cafile: PathLike | None = None,
    capath: PathLike | None = None,
    cadata: str | bytes | None = None,
    certfile: PathLike | None = None,
    keyfile: PathLike | None = None,
    password: KeyPassword | None = None,
    check_hostname: bool = True,
    verify: bool = True,
) -> ssl.SSLContext:
    """Return a client-side TLS context for connecting to Kafka brokers.

    - ``cafile`` / ``capath`` / ``cadata``: trusted CA certificates (PEM; ``cadata`` may also be
      DER bytes).  With none of them the system's default trust store is loaded.
    - ``certfile`` / ``keyfile`` / ``password``: the client certificate chain for mutual TLS;
      ``keyfile`` defaults to ``certfile``; ``password`` decrypts the key (never echoed).
    - ``check_hostname``: match the broker's certificate against the host name connected to.
    - ``verify=False`` disables certificate verification *and* the host name check (testing
      only; it makes TLS useless against an active attacker).

    Raises :class:`~aiokafkawire.errors.ConfigError` when a file cannot be read or parsed, or a
    key does not match its certificate or cannot be decrypted.
    """
    if keyfile is not None and certfile is None:
        raise ConfigError("TLS: keyfile given without certfile")
    if password is not None and certfile is None:
        raise ConfigError("TLS: a key password was given without certfile")

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # Compression enables CRIME-style attacks (already off in current OpenSSL; make it explicit).
    context.options |= ssl.OP_NO_COMPRESSION
    if verify:
        context.verify_mode = ssl.CERT_REQUIRED
        context.check_hostname = check_hostname
    else:
        # check_hostname must be switched off before verification can be.
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE

    if cafile is not None or capath is not None or cadata is not None:
        try:
            context.load_verify_locations(cafile=cafile, capath=capath, cadata=cadata)
        except (OSError, ssl.SSLError, ValueError, TypeError) as exc:
            raise ConfigError(
                f"TLS: cannot load CA certificates (cafile={_show(cafile)}, "
                f"capath={_show(capath)}, cadata={'given' if cadata else None}): "
                f"{_describe(exc)}"
            ) from None
    elif verify:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)

    if certfile is not None:
        try:
            context.load_cert_chain(certfile=certfile, keyfile=keyfile, password=password)
        except (OSError, ssl.SSLError, ValueError, TypeError) as exc:
            # ``from None``: the original traceback frames hold the password in their locals.
            raise ConfigError(
                f"TLS: cannot load the client certificate (certfile={_show(certfile)}, "
                f"keyfile={_show(keyfile)}, password={'given' if password else None}): "
                f"{_describe(exc)}"
            ) from None
    return context


def _show(path: PathLike | None) -> str | None:
    return None if path is None else repr(os.fspath(path))


def _describe(exc: BaseException) -> str:
    """Describe an ssl/OS error by its kind and reason, without arguments that could be secret."""
    if isinstance(exc, ssl.SSLError):
        return f"{type(exc).__name__} {exc.library or 'ssl'}: {exc.reason or 'unknown reason'}"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or 'error'}"
    return type(exc).__name__


# OpenSSL reasons that mean a certificate was refused, on either side: not retriable.
_CERTIFICATE_REASONS = (
    "CERTIFICATE_VERIFY_FAILED",
    "BAD_CERTIFICATE",
    "CERTIFICATE_REQUIRED",
    "UNKNOWN_CA",
    "CERTIFICATE_UNKNOWN",
    "UNSUPPORTED_CERTIFICATE",
    "CERTIFICATE_EXPIRED",
    "CERTIFICATE_REVOKED",
    "HANDSHAKE_FAILURE",
)


def tls_error(context: str, exc: ssl.SSLError) -> KafkaError:
    """A typed error for a TLS failure: certificates are authentication, the rest connection."""
    reason = exc.reason or ""
    detail = getattr(exc, "verify_message", None) or reason or str(exc)
    if isinstance(exc, ssl.SSLCertVerificationError) or any(
        name in reason for name in _CERTIFICATE_REASONS
    ):
        return SslAuthenticationError(f"{context}: {detail}")
    return KafkaConnectionError(f"{context}: {detail}")
