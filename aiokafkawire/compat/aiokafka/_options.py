"""aiokafka's connection options, turned into aiokafkawire's.

aiokafka and aiokafkawire name most options alike; this module holds what differs: defaults
(``request_timeout_ms`` 40000, ``sasl_mechanism`` PLAIN), values (``api_version="auto"``) and the
options aiokafkawire has no use for (``loop``, ``connections_max_idle_ms``, Kerberos names).
"""

from __future__ import annotations

import ssl
import warnings
from collections.abc import Mapping
from typing import Any

from aiokafkawire.errors import ConfigError

__all__ = ["connection_options"]


#: aiokafka's connection arguments, shared by its producer, consumer and admin client.
CONNECTION_ARGUMENTS = (
    "loop",
    "bootstrap_servers",
    "client_id",
    "metadata_max_age_ms",
    "request_timeout_ms",
    "retry_backoff_ms",
    "api_version",
    "security_protocol",
    "ssl_context",
    "connections_max_idle_ms",
    "sasl_mechanism",
    "sasl_plain_username",
    "sasl_plain_password",
    "sasl_kerberos_service_name",
    "sasl_kerberos_domain_name",
    "sasl_oauth_token_provider",
)


def connection_options(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``_connection_options`` of the ``CONNECTION_ARGUMENTS`` in ``arguments`` (a client
    constructor's ``locals()``: every one of them must be there)."""
    return _connection_options(**{name: arguments[name] for name in CONNECTION_ARGUMENTS})


def _connection_options(
    *,
    loop: Any,
    bootstrap_servers: str | list[str],
    client_id: str | None,
    metadata_max_age_ms: int,
    request_timeout_ms: int,
    retry_backoff_ms: int,
    api_version: str | None,
    security_protocol: str,
    ssl_context: ssl.SSLContext | None,
    connections_max_idle_ms: int,
    sasl_mechanism: str,
    sasl_plain_username: str | None,
    sasl_plain_password: str | None,
    sasl_kerberos_service_name: str,
    sasl_kerberos_domain_name: str | None,
    sasl_oauth_token_provider: Any,
) -> dict[str, Any]:
    """aiokafkawire's common client options for aiokafka's connection arguments.

    ``connections_max_idle_ms`` is accepted and has no effect (aiokafkawire keeps a broker
    connection open until ``stop()``); ``loop`` must be ``None`` or the running loop.
    """
    if loop is not None:
        warnings.warn(
            "the loop argument is ignored: aiokafkawire uses the running event loop",
            DeprecationWarning,
            stacklevel=4,  # the user's call: _connection_options, connection_options, __init__
        )
    del connections_max_idle_ms, sasl_kerberos_service_name  # no counterpart, no effect
    if sasl_kerberos_domain_name is not None or sasl_mechanism == "GSSAPI":
        raise ConfigError(
            "sasl_mechanism='GSSAPI' (Kerberos) is not supported by aiokafkawire; use PLAIN, "
            "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
        )
    options: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers,
        "metadata_max_age_ms": metadata_max_age_ms,
        "request_timeout_ms": request_timeout_ms,
        "retry_backoff_ms": retry_backoff_ms,
        "api_version": None if api_version in (None, "auto") else api_version,
        "security_protocol": security_protocol,
        "ssl_context": ssl_context,
    }
    if client_id is not None:
        options["client_id"] = client_id
    if isinstance(security_protocol, str) and security_protocol.upper().startswith("SASL"):
        options["sasl_mechanism"] = sasl_mechanism
        options["sasl_plain_username"] = sasl_plain_username
        options["sasl_plain_password"] = sasl_plain_password
        options["sasl_oauth_token_provider"] = sasl_oauth_token_provider
    return options
