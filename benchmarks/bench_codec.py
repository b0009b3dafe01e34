#!/usr/bin/env python3
"""Encode/decode speed of the generated message codecs, compared with kafka-python 3.x.

Run: ``python benchmarks/bench_codec.py [--repeat N]``.

Two payloads:

* a Metadata response at its newest version with 100 topics x 10 partitions (1,000 partitions),
  3 replicas each, 5 brokers;
* a Fetch response at its newest version with 10 partitions of 64 KiB records each (mostly the
  cost of copying the records out as ``bytes``), and one with 200 partitions of 1 KiB each.

kafka-python objects are obtained by decoding our bytes with kafka-python, so both libraries
encode and decode the same logical message.  Times are the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiokafkawire.protocol.messages import FetchResponse, MetadataResponse
from aiokafkawire.protocol.messages import fetch as fetch_messages
from aiokafkawire.protocol.messages import metadata as metadata_messages


def metadata_response(topics: int = 100, partitions: int = 10, brokers: int = 5) -> Any:
    """A Metadata response describing ``topics * partitions`` partitions with 3 replicas."""
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            metadata_messages.MetadataResponseBroker(
                node_id=i, host=f"broker-{i}.kafka.example.com", port=9092, rack=f"rack-{i % 3}"
            )
            for i in range(brokers)
        ],
        cluster_id="mA1xZzP6QSi8Ix0Yd2aDqw",
        controller_id=1,
        topics=[
            metadata_messages.MetadataResponseTopic(
                error_code=0,
                name=f"events.topic-{t:04d}",
                topic_id=uuid.UUID(int=t + 1),
                is_internal=False,
                partitions=[
                    metadata_messages.MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=(t + p) % brokers,
                        leader_epoch=7,
                        replica_nodes=[(t + p + r) % brokers for r in range(3)],
                        isr_nodes=[(t + p + r) % brokers for r in range(3)],
                        offline_replicas=[],
                    )
                    for p in range(partitions)
                ],
                topic_authorized_operations=-2147483648,
            )
            for t in range(topics)
        ],
    )


def fetch_response(partitions: int = 10, record_bytes: int = 64 * 1024) -> Any:
    """A Fetch response with ``partitions`` partitions of ``record_bytes`` of record data."""
    records = os.urandom(record_bytes)
    return FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=12345,
        responses=[
            fetch_messages.FetchableTopicResponse(
                topic_id=uuid.UUID(int=42),  # the newest versions name topics by id only
                partitions=[
                    fetch_messages.PartitionData(
                        partition_index=p,
                        error_code=0,
                        high_watermark=1_000_000 + p,
                        last_stable_offset=1_000_000 + p,
                        log_start_offset=0,
                        aborted_transactions=[],
                        preferred_read_replica=-1,
                        records=records,
                    )
                    for p in range(partitions)
                ],
            )
        ],
    )


def best_time(func: Callable[[], Any], repeat: int, number: int) -> float:
    """Best per-call CPU time in seconds over ``repeat`` batches of ``number`` calls.

    CPU time of this process (not wall time) keeps the numbers stable on a busy machine.
    """
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            func()
        best = min(best, (time.process_time() - start) / number)
    return best


def kafka_python_class(name: str) -> Any:
    """kafka-python 3.x's class for a message, or None when it is not installed."""
    try:
        if name.startswith("Metadata"):
            from kafka.protocol.metadata import MetadataResponse as KpMetadataResponse

            return KpMetadataResponse
        from kafka.protocol.consumer import FetchResponse as KpFetchResponse

        return KpFetchResponse
    except ImportError:
        return None


def run_case(label: str, message: Any, version: int, repeat: int, number: int) -> None:
    cls = type(message)
    data = message.encode(version)
    assert cls.decode(data, version) == message
    ours_encode = best_time(lambda: message.encode(version), repeat, number)
    ours_decode = best_time(lambda: cls.decode(data, version), repeat, number)
    print(f"{label} v{version}, {len(data):,} bytes")
    print(
        f"  aiokafkawire   encode {ours_encode * 1e3:8.3f} ms   decode {ours_decode * 1e3:8.3f} ms"
    )
    kp_cls = kafka_python_class(cls.__name__)
    if kp_cls is None:
        print("  kafka-python   not installed")
        return
    kp_obj = kp_cls.decode(data, version=version)
    kp_obj._header = None  # decoded objects lack it, and encode() looks at it
    kp_data = kp_obj.encode(version=version)
    same = "same bytes" if kp_data == data else "DIFFERENT bytes"
    kp_encode = best_time(lambda: kp_obj.encode(version=version), repeat, number)
    kp_decode = best_time(lambda: kp_cls.decode(data, version=version), repeat, number)
    print(f"  kafka-python   encode {kp_encode * 1e3:8.3f} ms   decode {kp_decode * 1e3:8.3f} ms"
          f"   ({same})")
    print(f"  speed-up       encode {kp_encode / ours_encode:8.2f} x    "
          f"decode {kp_decode / ours_decode:8.2f} x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=7, help="batches per measurement")
    parser.add_argument("--number", type=int, default=20, help="calls per batch")
    args = parser.parse_args(argv)
    run_case(
        "Metadata response, 100 topics x 10 partitions x 3 replicas",
        metadata_response(),
        MetadataResponse.MAX_VERSION,
        args.repeat,
        args.number,
    )
    run_case(
        "Fetch response, 10 partitions x 64 KiB records",
        fetch_response(),
        FetchResponse.MAX_VERSION,
        args.repeat,
        args.number,
    )
    run_case(
        "Fetch response, 200 partitions x 1 KiB records",
        fetch_response(partitions=200, record_bytes=1024),
        FetchResponse.MAX_VERSION,
        args.repeat,
        args.number,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
