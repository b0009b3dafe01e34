"""Metadata refreshes for new topics go out at once; retries after errors still back off.

Against a scripted broker with a long ``retry_backoff_ms`` (1 s), so that a refresh that waits
out the backoff is told apart from one that does not by a wide margin, even on a loaded machine.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from _metadata_script import scripted_cluster

from aiokafkawire import errors

BACKOFF_MS = 1000


async def test_new_topics_one_after_another_cost_one_refresh_each_without_backoff() -> None:
    async with scripted_cluster(BACKOFF_MS) as (script, cluster):
        started = time.monotonic()
        for i in range(5):
            info = await cluster.wait_for_topic(f"t{i}")
            assert info.partition_ids == [0]
        elapsed = time.monotonic() - started
    # Waiting out the backoff before each would take about 5 s.
    assert elapsed < BACKOFF_MS / 1000, f"5 new topics took {elapsed:.2f} s"
    assert len(script.asked) == 1 + 5  # the bootstrap refresh, then one per topic


async def test_a_first_lookup_asks_for_the_new_topics_only_and_keeps_the_others() -> None:
    async with scripted_cluster(BACKOFF_MS) as (script, cluster):
        for i in range(4):
            await cluster.wait_for_topic(f"t{i}")
        # Every answer so far named one topic; the cache still holds all four.
        assert sorted(cluster.metadata.topics) == ["t0", "t1", "t2", "t3"]
        await asyncio.gather(cluster.wait_for_topic("u0"), cluster.wait_for_topic("u1"))
        cluster.request_update()  # a stale-metadata error: every tracked topic again
        await cluster.refresh_metadata()
    # The bootstrap refresh, one request per new topic (growing answers made N new topics
    # cost O(N^2) on the broker and in decoding), one for both concurrent ones, then all.
    assert script.asked[:6] == [[], ["t0"], ["t1"], ["t2"], ["t3"], ["u0", "u1"]]
    assert script.asked[6:] == [["t0", "t1", "t2", "t3", "u0", "u1"]]


async def test_new_topics_asked_for_concurrently_share_one_refresh() -> None:
    async with scripted_cluster(BACKOFF_MS) as (script, cluster):
        started = time.monotonic()
        names = [f"t{i}" for i in range(50)]
        infos = await asyncio.gather(*(cluster.wait_for_topic(n) for n in names))
        elapsed = time.monotonic() - started
    assert [info.partition_ids for info in infos] == [[0]] * 50
    assert len(script.asked) == 2  # bootstrap, then one request for all 50
    assert sorted(script.asked[1]) == sorted(names)
    assert elapsed < BACKOFF_MS / 1000, f"50 concurrent new topics took {elapsed:.2f} s"


async def test_a_topic_missing_from_the_request_under_way_gets_the_next_refresh() -> None:
    async with scripted_cluster(BACKOFF_MS) as (script, cluster):
        script.delay_s = 0.1
        script.arrived.clear()
        first = asyncio.ensure_future(cluster.wait_for_topic("early"))
        await asyncio.wait_for(script.arrived.wait(), 5)  # "early" is at the broker
        started = time.monotonic()
        late = await cluster.wait_for_topic("late")
        elapsed = time.monotonic() - started
        assert (await first).partition_ids == [0]
    assert late.partition_ids == [0]
    # Not the join-then-retry path (a retry backoff, then a refresh backoff: about 2 s).
    assert elapsed < BACKOFF_MS / 1000, f"the late topic took {elapsed:.2f} s"
    assert script.asked[1] == ["early"] and script.asked[2] == ["late"]
    assert len(script.asked) == 3


async def test_a_refresh_after_a_failed_one_still_backs_off() -> None:
    async with scripted_cluster(BACKOFF_MS) as (script, cluster):
        script.fail_next = 1
        with pytest.raises(errors.ClusterAuthorizationFailedError):
            await cluster.refresh_metadata(["a"])
        failed_at = time.monotonic()
        metadata = await cluster.refresh_metadata(["b"])  # new, but after an error
        waited = time.monotonic() - failed_at
        assert "b" in metadata.topics
        # Once a refresh succeeded, new topics go out at once again.
        started = time.monotonic()
        await cluster.refresh_metadata(["c"])
        prompt = time.monotonic() - started
    assert waited >= BACKOFF_MS / 1000 * 0.95, f"the retry after an error waited {waited:.2f} s"
    assert prompt < BACKOFF_MS / 1000, f"the next new topic waited {prompt:.2f} s"


async def test_a_refresh_for_no_new_topic_waits_out_the_backoff() -> None:
    async with scripted_cluster(BACKOFF_MS) as (script, cluster):
        await cluster.refresh_metadata(["a"])
        done_at = time.monotonic()
        cluster.request_update()  # what a stale-metadata error does
        await cluster.refresh_metadata()  # joins it
        waited = time.monotonic() - done_at
    assert waited >= BACKOFF_MS / 1000 * 0.95, f"a stale-metadata refresh waited {waited:.2f} s"
    assert len(script.asked) == 3


async def test_request_topics_looks_new_topics_up_without_waiting_and_shares_requests() -> None:
    async with scripted_cluster(BACKOFF_MS) as (script, cluster):
        script.delay_s = 0.1
        script.arrived.clear()
        started = time.monotonic()
        cluster.request_topics(["a", "b"])  # returns at once: nothing awaited
        cluster.request_topics(["b", "c"])  # joins the request not sent yet
        await asyncio.wait_for(script.arrived.wait(), 5)
        cluster.request_topics(["d"])  # a request is out without it: the next one
        cluster.request_topics(["a"])  # asked for already: nothing more
        infos = await asyncio.gather(*(cluster.wait_for_topic(t) for t in "abcd"))
        elapsed = time.monotonic() - started
    assert [info.partition_ids for info in infos] == [[0]] * 4
    assert [sorted(names) for names in script.asked[1:]] == [["a", "b", "c"], ["d"]]
    assert elapsed < BACKOFF_MS / 1000, f"two lookups took {elapsed:.2f} s"
