"""CPU instructions per record of our client, counted by callgrind (deterministic, unlike time).

Runs one workload of ``benchmarks/workloads`` (the same code as ``run.py``) in a child process
under ``valgrind --tool=callgrind``, once with ``--small`` and once with ``--large`` records, and
reports ``(Ir(large) - Ir(small)) / (large - small)``: the instructions each further record
costs, with interpreter start-up, imports, connecting and topic creation cancelled out.  The
broker (Tansu, memory storage) runs in its own process and is not counted.  Workload 4m's topic
is filled by a producer process that is not counted either.

    python benchmarks/callgrind_per_record.py --workload 1          # produce 100 B, acks=1, lz4
    python benchmarks/callgrind_per_record.py --workload 4m         # consume, manual assignment
    python benchmarks/callgrind_per_record.py --workload 6          # 1,000 senders, each awaited
    python benchmarks/callgrind_per_record.py --workload 1 --pythonpath ../other-checkout

``--pythonpath DIR`` puts another checkout of aiokafkawire first on the child's path, for an
A/B in one sitting (build its extensions in place first: ``python setup.py build_ext
--inplace``).  Needs ``valgrind`` (Debian package ``valgrind``) and the ``testing`` extra.
Figures: issue 15's guard rail (``docs/DESIGN.md``, development notes up to 0.1.0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workloads import BY_ID  # noqa: E402

TOTALS = re.compile(r"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


def child_env(pythonpath: str | None) -> dict[str, str]:
    env = dict(os.environ)
    parts = [p for p in (pythonpath, str(HERE), os.environ.get("PYTHONPATH")) if p]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def run_worker(spec: dict[str, Any], env: dict[str, str], *, callgrind: bool) -> int:
    """Run one workload in a child; the callgrind instruction total, or 0 when not counted."""
    with tempfile.TemporaryDirectory() as scratch:
        out_file = Path(scratch) / "callgrind.out"
        command = [sys.executable, "-m", "workloads.worker", json.dumps(spec)]
        if callgrind:
            command = [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out_file}",
                "--trace-children=no",
                *command,
            ]
        done = subprocess.run(
            command, env=env, cwd=HERE, capture_output=True, text=True, timeout=1800
        )
        if "BENCH_RESULT " not in done.stdout:
            raise SystemExit(f"workload failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        result = json.loads(done.stdout.rsplit("BENCH_RESULT ", 1)[1].splitlines()[0])
        expected = spec["senders"] * spec["per_sender"] if "senders" in spec else spec["records"]
        if result.get("records", expected) < expected:
            raise SystemExit(f"workload handled fewer records than asked: {result}")
        if not callgrind:
            return 0
        match = TOTALS.search(out_file.read_text())
        if match is None:
            raise SystemExit("no instruction total in the callgrind output")
        return int(match.group(1))


async def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from aiokafkawire import Admin, NewTopic

    async with Admin(bootstrap_servers=bootstrap) as admin:
        await admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=1)]
        )


def measure(workload_id: str, count: int, bootstrap: str, env: dict[str, str]) -> int:
    """Callgrind's instruction total for one run of ``workload_id`` over ``count`` records."""
    workload = BY_ID[workload_id]
    spec: dict[str, Any] = {
        "client": "aiokafkawire",
        "kind": workload.kind,
        "workload": workload.id,
        "bootstrap": bootstrap,
        "partitions": workload.partitions,
        "time_limit_s": 1500,
        "uvloop": False,
        **{k: v for k, v in workload.settings.items() if k != "group"},
        "records": count,
    }
    if workload.kind == "senders":
        spec.update(senders=1_000, per_sender=max(1, count // 1_000))
    topic = f"callgrind-{workload_id}-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(bootstrap, topic, workload.partitions))
    spec["topic"] = topic
    if workload.kind == "consume":
        fill = {**spec, **BY_ID["1"].settings, "kind": "produce", "workload": "1"}
        run_worker(fill, env, callgrind=False)
    return run_worker(spec, env, callgrind=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="1", choices=["1", "2", "3", "4m", "6"])
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--large", type=int, default=120_000)
    parser.add_argument("--pythonpath", help="a checkout of aiokafkawire to measure instead")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    env = child_env(args.pythonpath)
    from aiokafkawire.testing import TansuBroker

    with TansuBroker() as broker:
        small = measure(args.workload, args.small, broker.bootstrap_servers, env)
        large = measure(args.workload, args.large, broker.bootstrap_servers, env)
    per_record = (large - small) / (args.large - args.small)
    print(
        json.dumps(
            {
                "workload": args.workload,
                "checkout": args.pythonpath or str(HERE.parent),
                "records": [args.small, args.large],
                "instructions": [small, large],
                "instructions_per_record": round(per_record),
            }
        )
    )


if __name__ == "__main__":
    main()
