"""The client's version policy: codec versions capped where the client lacks a version's meaning."""

from __future__ import annotations

from fake_broker import FakeBroker

from aiokafkawire.net.connection import BrokerConnection
from aiokafkawire.net.versions import CLIENT_VERSION_CAPS, client_api_versions
from aiokafkawire.protocol import SUPPORTED_VERSIONS, ApiKey


def test_caps_lower_only_the_capped_apis() -> None:
    capped = client_api_versions(SUPPORTED_VERSIONS)
    assert set(capped) == set(SUPPORTED_VERSIONS)
    for key, (low, high) in SUPPORTED_VERSIONS.items():
        if key in CLIENT_VERSION_CAPS:
            assert capped[key] == (low, min(high, CLIENT_VERSION_CAPS[key][0]))
        else:
            assert capped[key] == (low, high)
    # A cap never goes below what the codecs' lowest version is.
    assert client_api_versions({1: (4, 18)}, {1: (2, "why")}) == {1: (4, 4)}


def test_every_cap_is_below_the_codecs_and_explained() -> None:
    for key, (version, reason) in CLIENT_VERSION_CAPS.items():
        assert version < SUPPORTED_VERSIONS[key][1], f"cap of API {key} is obsolete"
        assert len(reason) > 20


async def test_a_kafka_4_broker_is_spoken_to_at_the_newest_reviewed_versions() -> None:
    async with FakeBroker() as broker:  # advertises every version the codecs support
        connection = await BrokerConnection.open("127.0.0.1", broker.port)
        try:
            versions = connection.versions
            assert broker.requests[0][0].api_version == SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]
            assert versions.version_for(ApiKey.API_VERSIONS) == 5
            assert versions.version_for(ApiKey.FETCH) == 18
            assert versions.version_for(ApiKey.METADATA) == 13
            assert versions.version_for(ApiKey.LIST_OFFSETS) == 11
            assert versions.version_for(ApiKey.PRODUCE) == 13
            assert versions.version_for(ApiKey.OFFSET_COMMIT) == 10
            assert versions.version_for(ApiKey.OFFSET_FETCH) == 10
            assert versions.version_for(ApiKey.DESCRIBE_GROUPS) == 6
            assert versions.version_for(ApiKey.TXN_OFFSET_COMMIT) == 6
            assert versions.version_for(ApiKey.CREATE_ACLS) == 3
            assert versions.version_for(ApiKey.SHARE_FETCH) == 2
        finally:
            connection.close()
