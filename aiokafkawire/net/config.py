"""Settings shared by every connection of one client, and the reconnect backoff."""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import errors
from aiokafkawire._retry import Backoff
from aiokafkawire.metrics import ClientMetrics
from aiokafkawire.net.credentials import Secret
from aiokafkawire.net.sasl import SUPPORTED_MECHANISMS
from aiokafkawire.net.tls import create_ssl_context
from aiokafkawire.net.versions import ApiVersionCap

__all__ = ["SECURITY_PROTOCOLS", "ConnectionConfig", "ReconnectBackoff"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass
class ConnectionConfig:
    """Settings shared by every connection of one client.  Secrets are kept out of ``repr``."""

    client_id: str | None = "aiokafkawire"
    request_timeout_ms: int = 30_000
    connect_timeout_ms: int = 10_000
    max_in_flight_requests_per_connection: int = 5
    max_frame_size: int = 100 * 1024 * 1024
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1_000
    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | Secret | None = field(default=None, repr=False)
    sasl_oauth_token_provider: Any = field(default=None, repr=False)
    api_version: ApiVersionCap = None
    client_software_name: str = "aiokafkawire"
    client_software_version: str = "0.1.0"
    # The client's counters and hooks (None: counted per connection, reported nowhere).
    metrics: ClientMetrics | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.security_protocol = self.security_protocol.upper()
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise errors.ConfigError(
                f"security_protocol must be one of {SECURITY_PROTOCOLS}, "
                f"got {self.security_protocol!r}"
            )
        if self.max_in_flight_requests_per_connection < 1:
            raise errors.ConfigError("max_in_flight_requests_per_connection must be >= 1")
        if self.security_protocol.startswith("SASL") and not self.sasl_mechanism:
            raise errors.ConfigError(f"{self.security_protocol} needs sasl_mechanism")
        if self.security_protocol in ("SSL", "SASL_SSL") and self.ssl_context is None:
            self.ssl_context = create_ssl_context()
        if isinstance(self.sasl_password, str):
            # Held as a Secret so no repr, log line or traceback can show it.
            self.sasl_password = Secret(self.sasl_password)
        if self.sasl_mechanism is not None:
            mechanism = self.sasl_mechanism.upper()
            if mechanism not in SUPPORTED_MECHANISMS:
                raise errors.ConfigError(
                    f"unsupported SASL mechanism {self.sasl_mechanism!r}; "
                    f"supported: {', '.join(SUPPORTED_MECHANISMS)}"
                )

    @property
    def uses_tls(self) -> bool:
        """Whether connections are wrapped in TLS."""
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        """Whether connections authenticate with SASL after connecting."""
        return self.security_protocol.startswith("SASL")


class ReconnectBackoff:
    """When a broker may be dialled again: the shared :class:`~aiokafkawire._retry.Backoff`
    (doubling from ``base_ms``, +-20% jitter to spread reconnect storms), capped at ``max_ms``."""

    __slots__ = ("_backoff", "_max", "_next_allowed")

    def __init__(self, base_ms: int, max_ms: int) -> None:
        self._backoff = Backoff(max(base_ms, 0), max(max_ms, base_ms, 0), jitter=0.2)
        self._max = max(max_ms, base_ms) / 1000
        self._next_allowed = 0.0

    def failed(self) -> float:
        """Record a failed attempt; returns the delay before the next one may start."""
        delay = min(self._backoff.next_delay(), self._max)
        self._next_allowed = time.monotonic() + delay
        return delay

    def succeeded(self) -> None:
        """Reset after a successful connection."""
        self._backoff.reset()
        self._next_allowed = 0.0

    def remaining(self) -> float:
        """Seconds to wait before the next attempt is allowed (0 when allowed now)."""
        return max(0.0, self._next_allowed - time.monotonic())
