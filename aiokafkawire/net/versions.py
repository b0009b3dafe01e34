"""Protocol version negotiation: broker release pins and the choice of a version per API.

The version used for an API is ``min(client max, broker max, user cap)``, and never below the
larger of the two minimums.  A user cap is either a Kafka release (``"0.10"``, ``"0.8.2"``): "speak
to this broker as that release would", or a mapping of API key to maximum version.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiokafkawire.errors import ConfigError, UnsupportedVersionForBrokerError
from aiokafkawire.protocol.messages import ApiVersionsRequest

VersionRange = tuple[int, int]
ApiVersionCap = str | Mapping[int, int] | None

# The API versions each old Kafka release answers.  Releases before 0.10.0 have no ApiVersions API,
# so a client pinned to them must not send it: these ranges stand in for the broker's answer.
# Facts from the Kafka release history.  Every minimum is 0, so each release is written as what
# it changed since the one before: API key -> new maximum version (APIs are never dropped).
_RELEASE_CHANGES: list[tuple[tuple[int, int, int], dict[int, int]]] = [
    ((0, 8, 0), {0: 0, 1: 0, 2: 0, 3: 0}),
    ((0, 8, 1), {8: 0, 9: 0}),
    ((0, 8, 2), {8: 1, 9: 1, 10: 0}),
    ((0, 9, 0), {0: 1, 1: 1, 8: 2, 11: 0, 12: 0, 13: 0, 14: 0, 15: 0, 16: 0}),
    ((0, 10, 0), {0: 2, 1: 2, 3: 1, 17: 0, 18: 0}),
    ((0, 10, 1), {1: 3, 2: 1, 3: 2, 11: 1, 19: 0, 20: 0}),
    ((0, 10, 2), {9: 2, 19: 1}),
    ((0, 11, 0), {
        0: 3, 1: 5, 2: 2, 3: 4, 8: 3, 9: 3, 10: 1, 11: 2, 12: 1, 13: 1, 14: 1, 15: 1, 16: 1,
        18: 1, 19: 2, 20: 1, 21: 0, 22: 0, 23: 0, 24: 0, 25: 0, 26: 0, 28: 0, 32: 0, 33: 0,
    }),
    ((1, 0, 0), {0: 5, 1: 6, 3: 5, 17: 1, 36: 0, 37: 0}),
]  # fmt: skip


def _accumulate_releases() -> dict[tuple[int, ...], dict[int, VersionRange]]:
    releases: dict[tuple[int, ...], dict[int, VersionRange]] = {}
    current: dict[int, VersionRange] = {}
    for release, changes in _RELEASE_CHANGES:
        current = {**current, **{key: (0, high) for key, high in changes.items()}}
        releases[release] = current
    return releases


#: Release -> {API key: (min, max)} that a broker of that release answers.
RELEASE_API_VERSIONS: dict[tuple[int, ...], dict[int, VersionRange]] = _accumulate_releases()

API_VERSIONS_KEY = ApiVersionsRequest.API_KEY

# KIP-219: from these versions on, a broker answers a request that broke a quota at once, with
# throttle_time_ms, and mutes the connection for that long: the client must send nothing more
# to it until then.  Before them the broker delayed the answer itself.  APIs added after
# KIP-219 (Kafka 2.0) work the new way from their first version (absent here: 0).
CLIENT_THROTTLES_SINCE: dict[int, int] = {
    0: 6, 1: 8, 2: 3, 3: 6, 8: 4, 9: 4, 10: 2, 11: 3, 12: 2, 13: 2, 14: 2, 15: 2, 16: 2,
    18: 2, 19: 3, 20: 2, 21: 1, 22: 1, 23: 2, 24: 1, 25: 1, 26: 1, 28: 1, 29: 1, 30: 1,
    31: 1, 32: 2, 33: 1, 34: 1, 35: 1, 36: 1, 37: 1, 38: 1, 39: 1, 40: 1, 41: 1, 42: 1,
}  # fmt: skip

#: Versions the generated codecs can encode but whose semantics this client does not use (yet):
#: api key -> (highest version the client sends, why).  Lift an entry once the new version's
#: meaning is implemented and tested against a real broker.  Per-call limits (Produce inside a
#: transaction, EndTxn, AddPartitionsToTxn) live with their callers in ``producer/``.
CLIENT_VERSION_CAPS: dict[int, tuple[int, str]] = {}


def client_api_versions(
    supported: Mapping[int, VersionRange], caps: Mapping[int, tuple[int, str]] = CLIENT_VERSION_CAPS
) -> dict[int, VersionRange]:
    """The versions this client sends: what the codecs support, capped by ``caps``."""
    versions = {}
    for key, (low, high) in supported.items():
        cap = caps.get(key)
        versions[key] = (low, high if cap is None else max(low, min(high, cap[0])))
    return versions


def parse_release(text: str) -> tuple[int, ...]:
    """``"0.10"`` -> ``(0, 10, 0)``; raises :class:`ConfigError` on anything else."""
    try:
        parts = tuple(int(part) for part in text.strip().split("."))
    except ValueError:
        raise ConfigError(f"api_version must look like '0.10.2', got {text!r}") from None
    if not 1 <= len(parts) <= 4:
        raise ConfigError(f"api_version must look like '0.10.2', got {text!r}")
    return (*parts, 0, 0)[:3]


class VersionPolicy:
    """Decides which version of each API to use with one broker.

    ``client_versions`` is what this client can encode (``protocol.SUPPORTED_VERSIONS``);
    ``cap`` is the user's pin.  ``broker_versions`` is set from the ApiVersions answer, or from the
    release table when the pin predates ApiVersions.
    """

    __slots__ = (
        "_cap_map",
        "_chosen",
        "broker_versions",
        "client_versions",
        "finalized_features",
        "release",
    )

    def __init__(self, client_versions: Mapping[int, VersionRange], cap: ApiVersionCap = None):
        self.client_versions = dict(client_versions)
        self.release: tuple[int, ...] | None = None
        self._cap_map: dict[int, int] = {}
        if isinstance(cap, str) and cap != "auto":
            release = parse_release(cap)
            known = [r for r in sorted(RELEASE_API_VERSIONS) if r <= release]
            if not known:
                raise ConfigError(f"api_version {cap!r} is older than any known Kafka release")
            self.release = known[-1]
            if release < (1, 0, 0):
                table = RELEASE_API_VERSIONS[self.release]
                self._cap_map = {key: rng[1] for key, rng in table.items()}
        elif isinstance(cap, Mapping):
            self._cap_map = {int(key): int(value) for key, value in cap.items()}
        self.broker_versions: dict[int, VersionRange] = {}
        #: Feature name -> finalized (cluster-wide) level, from ApiVersions v3+ (empty before).
        self.finalized_features: dict[str, int] = {}
        self._chosen: dict[int, int] = {}

    @property
    def sends_api_versions(self) -> bool:
        """False when pinned to a release that predates the ApiVersions API (before 0.10)."""
        return self.release is None or self.release >= (0, 10, 0)

    def pinned_broker_versions(self) -> dict[int, VersionRange]:
        """The synthesized broker answer for a pre-0.10 pin."""
        assert self.release is not None
        return dict(RELEASE_API_VERSIONS[self.release])

    def set_broker_versions(self, versions: Mapping[int, VersionRange]) -> None:
        """Record the broker's ranges and compute the chosen version of every common API."""
        self.broker_versions = dict(versions)
        self._chosen = {}
        for key, (client_min, client_max) in self.client_versions.items():
            broker = self.broker_versions.get(key)
            if broker is None:
                continue
            high = min(client_max, broker[1], self._cap_map.get(key, client_max))
            low = max(client_min, broker[0])
            if high >= low:
                self._chosen[key] = high

    def version_for(
        self, api_key: int, *, max_version: int | None = None, min_version: int = 0
    ) -> int:
        """The version to use for ``api_key``, optionally bounded by the caller's own limits."""
        version = self._chosen.get(api_key)
        if version is None:
            raise UnsupportedVersionForBrokerError(
                f"API {api_key} is not supported by both this client and the broker "
                f"(broker: {self.broker_versions.get(api_key)}, "
                f"client: {self.client_versions.get(api_key)})"
            )
        if max_version is not None and version > max_version:
            broker_min = self.broker_versions[api_key][0]
            version = max(max_version, broker_min, self.client_versions[api_key][0])
            if version > max_version:
                raise UnsupportedVersionForBrokerError(
                    f"API {api_key}: broker needs at least v{broker_min}, caller allows "
                    f"up to v{max_version}"
                )
        if version < min_version:
            raise UnsupportedVersionForBrokerError(
                f"API {api_key}: v{min_version}+ needed, broker and client agree on v{version}"
            )
        return version

    def supports(self, api_key: int, min_version: int = 0) -> bool:
        """Whether ``api_key`` at ``min_version`` or newer can be used with this broker."""
        version = self._chosen.get(api_key)
        return version is not None and version >= min_version
