"""aiokafka's error for a failed start: ``KafkaConnectionError`` ("Unable to bootstrap").

aiokafka treats a TLS handshake that fails on a certificate like any other unreachable bootstrap
server (an ``OSError``), so its ``start()`` raises ``KafkaConnectionError``.  aiokafkawire raises
:class:`~aiokafkawire.errors.SslAuthenticationError` at once (trying again cannot help).  The
layer raises :class:`TlsBootstrapError`, which is both, so ``except`` clauses written for either
library catch it.
"""

from __future__ import annotations

from collections.abc import Awaitable

from aiokafkawire.errors import KafkaConnectionError, SslAuthenticationError


class TlsBootstrapError(KafkaConnectionError, SslAuthenticationError):
    """The TLS handshake with the bootstrap servers failed (aiokafka: ``KafkaConnectionError``;
    aiokafkawire: ``SslAuthenticationError``)."""


async def start_client(start: Awaitable[None]) -> None:
    """Await a native client's ``start()``, raising a TLS failure as aiokafka would."""
    try:
        await start
    except SslAuthenticationError as exc:
        if isinstance(exc, KafkaConnectionError):
            raise
        raise TlsBootstrapError(f"Unable to bootstrap: {exc}") from exc
