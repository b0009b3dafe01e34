"""A TLS handshake failure at start is aiokafka's KafkaConnectionError and still aiokafkawire's
SslAuthenticationError (the SSL program shows it on a broker; this is the unit)."""

from __future__ import annotations

import pytest

from aiokafkawire import errors
from aiokafkawire.compat.aiokafka import errors as aiokafka_errors
from aiokafkawire.compat.aiokafka._bootstrap import TlsBootstrapError, start_client


async def _fail(exc: BaseException) -> None:
    raise exc


async def test_a_tls_failure_at_start_is_caught_by_either_librarys_clause() -> None:
    cause = errors.SslAuthenticationError("TLS handshake with h:1 failed: unknown CA")
    with pytest.raises(aiokafka_errors.KafkaConnectionError) as caught:
        await start_client(_fail(cause))
    assert isinstance(caught.value, errors.SslAuthenticationError)
    assert isinstance(caught.value, TlsBootstrapError)
    assert caught.value.__cause__ is cause
    assert "Unable to bootstrap" in str(caught.value) and "unknown CA" in str(caught.value)


async def test_other_start_errors_pass_unchanged() -> None:
    other = errors.AuthenticationError("bad password")
    with pytest.raises(errors.AuthenticationError) as caught:
        await start_client(_fail(other))
    assert caught.value is other
    await start_client(_fail_never())


async def _fail_never() -> None:
    return None
