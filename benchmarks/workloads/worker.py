"""Run one workload on one client, in this (child) process, and print its result as JSON.

Usage (the suite does this; ``benchmarks/`` must be on ``PYTHONPATH``)::

    python -m workloads.worker '{"client": "aiokafkawire", "kind": "produce", ...}'

The last line of stdout is ``BENCH_RESULT <json>``; on failure ``BENCH_ERROR <json>`` and exit
status 1.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import traceback
from typing import Any

from workloads.common import cpu_s

CLIENT_MODULES = {
    "aiokafkawire": "workloads.client_aiokafkawire",
    "aiokafkawire-base": "workloads.client_aiokafkawire",  # from run.py --baseline's checkout
    "aiokafka": "workloads.client_aiokafka",
    "aiokafkawire-compat": "workloads.client_aiokafkawire_compat",
    "confluent-kafka": "workloads.client_confluent",
    "kafka-python": "workloads.client_kafka_python",
    "confluent-kafka-aio": "workloads.client_confluent_aio",
}
KINDS = ("produce", "consume", "latency", "senders", "scale", "websvc")


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``spec["kind"]`` on ``spec["client"]`` and return its result dict.

    Besides the workload's figures: ``interpreter_cpu_s``, the process's CPU before the client
    library is imported, and ``import_cpu_s``, what importing it (extensions included) added.
    """
    before_import = cpu_s()
    module = importlib.import_module(CLIENT_MODULES[spec["client"]])
    imported = cpu_s() - before_import
    result = _run_kind(module, spec)
    result.update(interpreter_cpu_s=before_import, import_cpu_s=imported)
    return result


def _run_kind(module: Any, spec: dict[str, Any]) -> dict[str, Any]:
    kind = spec["kind"]
    if kind not in KINDS:
        raise ValueError(f"unknown workload kind {kind!r}")
    function = getattr(module, kind)
    if not module.ASYNC:
        return function(spec)  # type: ignore[no-any-return]
    if spec.get("uvloop"):
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(function(spec))  # type: ignore[no-any-return]
    return asyncio.run(function(spec))  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    try:
        result = run(spec)
    except BaseException as exc:
        detail = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        print("BENCH_ERROR " + json.dumps(detail), flush=True)
        return 1
    print("BENCH_RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
