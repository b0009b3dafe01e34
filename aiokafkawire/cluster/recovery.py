"""Metadata recovery: when a client goes back to its bootstrap addresses (KIP-899, KIP-1102).

With ``metadata_recovery_strategy="rebootstrap"`` (the default, as in the Java client since 4.0)
the cluster manager *rebootstraps* (closes every connection, forgets the brokers it knew, and
asks the bootstrap addresses again, resolving their names anew) when

- no known broker answers a metadata request (KIP-899),
- a metadata request has been failing for ``metadata_recovery_rebootstrap_trigger_ms`` since the
  first failed attempt (KIP-1102),
- a broker answers Metadata with REBOOTSTRAP_REQUIRED (KIP-1102), or refuses a connection as
  misrouted in ApiVersions (KIP-1242).

With ``"none"`` the bootstrap addresses serve the first metadata only; afterwards the client asks
the brokers it knows, and a connection's cluster and node are not checked (as in Java, where the
check is only made when the client can recover from a refusal).

This module keeps the decision (state and clock); :class:`~aiokafkawire.cluster.cluster.Cluster`
does the I/O.
"""

from __future__ import annotations

import logging
import time

from aiokafkawire import errors

__all__ = ["METADATA_RECOVERY_STRATEGIES", "MetadataRecovery"]

log = logging.getLogger("aiokafkawire.cluster")

METADATA_RECOVERY_STRATEGIES = ("rebootstrap", "none")


class MetadataRecovery:
    """One cluster manager's recovery state: whether it asks the bootstrap addresses, whether a
    rebootstrap is due, and how many it made."""

    __slots__ = ("_failing_since", "_reason", "bootstrapping", "enabled", "rebootstraps", "trigger")

    def __init__(self, strategy: str = "rebootstrap", trigger_ms: float = 300_000) -> None:
        if strategy not in METADATA_RECOVERY_STRATEGIES:
            raise errors.ConfigError(
                f"metadata_recovery_strategy must be one of {METADATA_RECOVERY_STRATEGIES}, "
                f"got {strategy!r}"
            )
        if trigger_ms <= 0:
            raise errors.ConfigError(
                f"metadata_recovery_rebootstrap_trigger_ms must be positive, got {trigger_ms}"
            )
        #: Whether the client rebootstraps at all (strategy "rebootstrap").
        self.enabled = strategy == "rebootstrap"
        self.trigger = trigger_ms / 1000
        #: True until the first metadata, and again from a rebootstrap until metadata arrives:
        #: only the bootstrap addresses are asked meanwhile.
        self.bootstrapping = True
        #: How many times the client went back to its bootstrap addresses.
        self.rebootstraps = 0
        self._failing_since: float | None = None
        self._reason: str | None = None

    def __repr__(self) -> str:
        strategy = "rebootstrap" if self.enabled else "none"
        return f"<MetadataRecovery {strategy} rebootstraps={self.rebootstraps}>"

    def attempt_started(self) -> None:
        """A metadata request is about to go out; the trigger's clock starts at the first one
        since the last success."""
        if self._failing_since is None:
            self._failing_since = time.monotonic()

    def succeeded(self) -> None:
        """Metadata arrived: the known brokers are to be asked from now on."""
        self._failing_since = None
        self._reason = None
        self.bootstrapping = False

    def request(self, reason: str) -> None:
        """A broker asked for a rebootstrap (REBOOTSTRAP_REQUIRED, a misrouted connection)."""
        if self.enabled and not self.bootstrapping:
            self._reason = reason

    def due(self) -> str | None:
        """Why the client should rebootstrap now instead of asking another known broker."""
        if not self.enabled or self.bootstrapping:
            return None
        if self._reason is not None:
            return self._reason
        since = self._failing_since
        if since is not None and time.monotonic() - since >= self.trigger:
            return f"no metadata for {self.trigger:.0f}s (metadata_recovery_rebootstrap_trigger_ms)"
        return None

    def begin(self, reason: str) -> None:
        """Count and log a rebootstrap; the bootstrap addresses are asked until one answers."""
        self.rebootstraps += 1
        self.bootstrapping = True
        self._reason = None
        log.warning("rebootstrapping from the bootstrap addresses: %s", reason)
