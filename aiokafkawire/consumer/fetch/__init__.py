"""The consumer's fetch path, one job per module.

- :mod:`.config`: the fetch options (:class:`FetchConfig`).
- :mod:`.position_lookup`: committed offsets, resets (ListOffsets), KIP-320 validation.
- :mod:`.routing`: which broker serves a partition (leader or KIP-392 read replica).
- :mod:`.session`: the KIP-227 fetch session with one broker.
- :mod:`.request`: one Fetch request from a plan and a session.
- :mod:`.source`: one broker's long-poll loop and the answers' partitions.
- :mod:`.decode`: fetched bytes to :class:`~aiokafkawire.consumer.ConsumerRecord` tuples.
- :mod:`.buffer`: the fetched chunks ``getmany`` drains, and the positions they advance.
- :mod:`.dispatch`: :class:`Fetcher`, which wires them and supervises the loops.
"""

from aiokafkawire.consumer.fetch.buffer import PositionUpdate
from aiokafkawire.consumer.fetch.config import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, FetchConfig
from aiokafkawire.consumer.fetch.dispatch import Fetcher

__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "FetchConfig", "Fetcher", "PositionUpdate"]
