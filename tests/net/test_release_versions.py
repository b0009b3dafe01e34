"""The release table (versions an old broker answers), written as per-release changes."""

from __future__ import annotations

import itertools

from aiokafkawire.net.versions import RELEASE_API_VERSIONS


def test_known_facts_of_old_releases() -> None:
    assert RELEASE_API_VERSIONS[(0, 8, 0)] == {0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0)}
    assert 18 not in RELEASE_API_VERSIONS[(0, 9, 0)]  # no ApiVersions before 0.10
    assert RELEASE_API_VERSIONS[(0, 10, 0)][18] == (0, 0)
    assert RELEASE_API_VERSIONS[(0, 10, 2)][9] == (0, 2)  # changed in 0.10.2 ...
    assert RELEASE_API_VERSIONS[(0, 10, 2)][0] == (0, 2)  # ... carried over from 0.10.0
    assert RELEASE_API_VERSIONS[(1, 0, 0)][1] == (0, 6)
    assert len(RELEASE_API_VERSIONS[(1, 0, 0)]) == 28


def test_each_release_keeps_every_api_of_the_one_before_at_no_lower_version() -> None:
    releases = sorted(RELEASE_API_VERSIONS)
    for older, newer in itertools.pairwise(releases):
        for key, (low, high) in RELEASE_API_VERSIONS[older].items():
            assert RELEASE_API_VERSIONS[newer][key][0] == low == 0
            assert RELEASE_API_VERSIONS[newer][key][1] >= high, (older, newer, key)
