"""Instructions per produced record, counted by callgrind (deterministic, unlike wall time).

Run: ``python benchmarks/callgrind_produce.py [--records 100000] [--workloads 1,6]``
(needs ``valgrind`` on PATH; takes a few minutes: the client runs ~50x slower under callgrind).

A Tansu broker runs in its own process (not counted).  For each workload a client process runs
under ``valgrind --tool=callgrind`` twice: once producing ``--records`` records and once producing
none (same start-up, metadata, connection, flush and close).  The figure is the difference of the
two instruction totals divided by the records: the per-record cost of the send path, batching,
compression and the Produce round trips, without interpreter start-up and imports.

Workloads are those of ``benchmarks/workloads`` (100-byte values, 8-byte keys, 3 partitions,
acks=1, lz4, linger 5 ms): ``1`` is one sender awaiting ``send`` in a loop, ``6`` is 1,000
concurrent senders, each awaiting every handle it got.  ``--pure`` sets
``AIOKAFKAWIRE_PURE_PYTHON=1`` in the client.  The broker's timing still shapes batch sizes a
little, so repeated runs differ by ~2%; compare revisions in one sitting.  The client imported
is this checkout's (its root goes first on ``PYTHONPATH``): to measure another revision, export
it (``git archive REV | tar -x -C DIR``), build its extensions in place, run ``python -m
compileall`` there (so that no run pays for compiling), and run this script from that tree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent  # the client measured is this checkout's, whatever the venv has installed
for _path in (str(HERE), str(REPO)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from workloads import BASE_PRODUCE  # noqa: E402

from aiokafkawire import Admin, NewTopic  # noqa: E402
from aiokafkawire.testing import TansuBroker  # noqa: E402

SENDERS = 1_000  # workload 6


def _spec(workload: str, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    spec: dict[str, Any] = dict(BASE_PRODUCE, bootstrap=bootstrap, topic=topic, records=records)
    if workload == "6":
        spec.update(senders=SENDERS, per_sender=records // SENDERS)
    return spec


def _child(workload: str, bootstrap: str, topic: str, records: int) -> None:
    """The measured client: one workload run, as ``benchmarks/run.py`` would do it."""
    from workloads import client_aiokafkawire as client

    spec = _spec(workload, bootstrap, topic, records)
    run = client.senders if workload == "6" else client.produce
    asyncio.run(run(spec))


def _instructions(out_file: str) -> int:
    text = Path(out_file).read_text()
    found = re.search(r"^(?:summary|totals): (\d+)", text, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no instruction total in {out_file}")
    return int(found.group(1))


def _counted_run(args: argparse.Namespace, workload: str, topic: str, records: int) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if args.pure:
        env["AIOKAFKAWIRE_PURE_PYTHON"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "callgrind.out")
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out_file}",
            sys.executable,
            __file__,
            "--child",
            workload,
            "--bootstrap",
            args.bootstrap,
            "--topic",
            topic,
            "--records",
            str(records),
        ]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode:
            tail = done.stderr[-3000:]
            raise RuntimeError(f"workload {workload} failed under callgrind:\n{tail}")
        return _instructions(out_file)


async def _create_topic(bootstrap: str, topic: str) -> None:
    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 3, 1)])


def _measure(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for workload in args.workloads.split(","):
        topic = f"callgrind-{workload}-{time.monotonic_ns()}"
        asyncio.run(_create_topic(args.bootstrap, topic))
        empty = _counted_run(args, workload, topic, 0)
        full = _counted_run(args, workload, topic, args.records)
        per_record = (full - empty) / args.records
        results[workload] = {
            "records": args.records,
            "instructions_with_records": full,
            "instructions_without": empty,
            "per_record": round(per_record),
        }
        print(f"workload {workload}: {per_record:,.0f} instructions per record", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--workloads", default="1,6", help="comma list of 1 and 6")
    parser.add_argument("--pure", action="store_true", help="AIOKAFKAWIRE_PURE_PYTHON=1")
    parser.add_argument("--bootstrap", help="use this broker instead of starting Tansu")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.bootstrap, args.topic, args.records)
        return
    broker = None if args.bootstrap else TansuBroker()
    if broker is not None:
        broker.start()
        args.bootstrap = broker.bootstrap_servers
    try:
        results = _measure(args)
    finally:
        if broker is not None:
            broker.stop()
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
