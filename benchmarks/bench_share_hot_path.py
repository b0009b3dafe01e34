#!/usr/bin/env python3
"""The share consumer's client-side hot path, without a broker: CPU time per record.

One "fetch" is what ``SessionRequests`` does with a ShareFetch answer of one partition (decode
the acquired range's records into ``ShareRecord``s, note the acquisition), then what the
application's poll does (implicit mode: accept the delivered records at the next poll; explicit
mode: ``ShareConsumer.acknowledge`` each record, then the next poll's check), then the next
request's acknowledgement batches.  Every step is the client's own code; only the broker is
missing.  For an A/B, ``--pythonpath`` another checkout (and alternate the runs: the figures
are CPU time, which a loaded machine still moves).

    python benchmarks/bench_share_hot_path.py                   # both modes, 500 records a fetch
    python benchmarks/bench_share_hot_path.py --mode explicit --fetches 2000
    python benchmarks/bench_share_hot_path.py --pythonpath ../other-checkout
    python benchmarks/bench_share_hot_path.py --callgrind             # instructions per record

Prints one JSON line per mode: ``us_per_record`` is user + system CPU time (``os.times``) of
the timed fetches (after ``--warmup`` untimed ones) divided by the records.  With
``--callgrind`` (needs ``valgrind``) each mode runs twice under ``valgrind --tool=callgrind``,
with ``--fetches`` and with twice as many, and ``instructions_per_record`` is the difference of
the two instruction totals over the difference of records: start-up and warm-up cancel out, and
a loaded machine does not move it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TOTALS = re.compile(r"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


def _raw(records: int, per_batch: int) -> bytes:
    """Record batches (100-byte values, no key) of offsets ``0 .. records - 1``."""
    from aiokafkawire.protocol.records import RecordBatchBuilder

    out = b""
    for start in range(0, records, per_batch):
        builder = RecordBatchBuilder(magic=2, batch_size=1 << 20, base_offset=start)
        for _ in range(min(per_batch, records - start)):
            builder.append(timestamp_ms=1_700_000_000_000, key=None, value=b"x" * 100)
        out += builder.build()
    return out


def run(mode: str, fetches: int, warmup: int, records: int, per_batch: int) -> dict[str, Any]:
    """The timed loop (this process)."""
    from aiokafkawire.consumer.share import ShareConsumer
    from aiokafkawire.consumer.share.acknowledgements import Acknowledgements
    from aiokafkawire.consumer.share.codec import _wire_batches, delivered_records
    from aiokafkawire.consumer.share.config import ShareFetchConfig
    from aiokafkawire.protocol.messages import share_fetch as m_fetch
    from aiokafkawire.structs import TopicPartition

    class Acquired:
        def __init__(self, first: int, last: int) -> None:
            self.first_offset, self.last_offset, self.delivery_count = first, last, 1

    config = ShareFetchConfig(group_id="g")
    # The application's calls go through the public ShareConsumer.acknowledge (a consumer never
    # started: acknowledge() only reads its bookkeeping) and the next poll's check.
    consumer = ShareConsumer("bench", group_id="g", acknowledgement_mode=mode)
    acks: Acknowledgements = consumer._acks
    tp = TopicPartition("bench", 0)
    # Every fetch acquires the same offsets again: each one is settled before the next.
    raw = _raw(records, per_batch)
    acquired = [Acquired(0, records - 1)]
    acknowledge = consumer.acknowledge
    delivered: list[Any] = []

    def _send(acks: Acknowledgements) -> None:
        for offsets in acks.take_pending().values():
            _wire_batches(m_fetch.AcknowledgementBatch, offsets)

    total = 0
    start = os.times()
    for fetch in range(warmup + fetches):
        if fetch == warmup:
            start, total = os.times(), 0
        if mode == "implicit":  # the poll accepts the previous poll's records ...
            acks.accept_delivered(tp, delivered)
            _send(acks)  # ... and they ride on the next ShareFetch
        got = delivered_records(acks, config, tp, raw, acquired, 30_000)
        if mode == "explicit":
            for record in got:
                acknowledge(record, "accept")
            assert not acks.unacknowledged(tp, got)  # the next poll's check
            _send(acks)
        delivered = got
        total += len(got)
    end = os.times()
    cpu = (end.user - start.user) + (end.system - start.system)
    return {"mode": mode, "records": total, "us_per_record": cpu / max(total, 1) * 1e6}


def _callgrind(mode: str, fetches: int, argv: list[str], env: dict[str, str]) -> tuple[int, int]:
    """(instructions, records) of one child run under callgrind."""
    with tempfile.TemporaryDirectory() as scratch:
        out_file = Path(scratch) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out_file}",
            sys.executable,
            __file__,
            "--child",
            *argv,
            "--mode",
            mode,
            "--fetches",
            str(fetches),
        ]
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, check=True, timeout=1200
        )
        match = TOTALS.search(out_file.read_text())
        if match is None:
            raise SystemExit("no instruction total in the callgrind output")
        return int(match.group(1)), json.loads(done.stdout.splitlines()[-1])["records"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("implicit", "explicit", "both"), default="both")
    parser.add_argument("--fetches", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--records", type=int, default=500, help="records per fetch")
    parser.add_argument("--per-batch", type=int, default=100, help="records per record batch")
    parser.add_argument("--pythonpath", type=Path, help="another checkout to measure")
    parser.add_argument("--callgrind", action="store_true", help="count instructions instead")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    modes = ("implicit", "explicit") if args.mode == "both" else (args.mode,)
    if args.child:
        for mode in modes:
            result = run(mode, args.fetches, args.warmup, args.records, args.per_batch)
            print(json.dumps(result), flush=True)
        return
    env = {**os.environ, "PYTHONPATH": str(args.pythonpath or REPO)}
    if args.callgrind:
        keep = ["--warmup", str(args.warmup), "--records", str(args.records)]
        keep += ["--per-batch", str(args.per_batch)]
        for mode in modes:
            small, small_records = _callgrind(mode, args.fetches, keep, env)
            large, large_records = _callgrind(mode, 2 * args.fetches, keep, env)
            per_record = (large - small) / (large_records - small_records)
            result = {"mode": mode, "instructions_per_record": round(per_record)}
            print(json.dumps({**result, "checkout": env["PYTHONPATH"]}), flush=True)
        return
    command = [sys.executable, __file__, "--child", *sys.argv[1:]]
    subprocess.run(command, env=env, check=True, timeout=600)


if __name__ == "__main__":
    main()
