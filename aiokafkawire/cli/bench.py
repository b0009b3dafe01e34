"""``demo`` and ``bench``: produce records, consume them back, and show the figures.

``demo`` runs on an embedded Tansu broker (nothing to set up) unless ``--bootstrap-servers`` is
given; ``bench`` runs the same workload against a cluster of your own.  The workload:

1. a topic is created (and deleted afterwards on a cluster of your own);
2. ``--records`` records are produced as fast as the producer takes them, with a progress bar;
   every 100th record's delivery latency (send to acknowledgement) is measured;
3. a group of ``--members`` consumers in this process reads them all back (the time to form
   the group is shown separately: it is not reading time), or with ``--members 0`` one
   consumer reads every partition directly;
4. a table shows records/s of both phases, p50/p99 delivery latency, and the partitions and
   records each member got.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiokafkawire import errors
from aiokafkawire.cli.admin_calls import answered, connect_admin, topic_name
from aiokafkawire.cli.consume import GROUP_SESSION_TIMEOUT_MS
from aiokafkawire.cli.exit_codes import CliError, ExitCode, check_item
from aiokafkawire.cli.options import non_negative_int, positive_int
from aiokafkawire.cli.output import Stopwatch, rate
from aiokafkawire.cli.produce import COMPRESSIONS
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from aiokafkawire import Consumer
    from aiokafkawire.cli.app import Context, Parents

_SAMPLE_EVERY = 100  # one delivery-latency sample per this many records
_PROGRESS_STEP = 10_000  # records between progress-bar updates
_STALL_S = 15.0  # no record for this long while consuming: give up


def _add_workload_options(parser: Any, *, members: int, records: int) -> None:
    parser.add_argument(
        "--records",
        type=positive_int,
        default=records,
        metavar="N",
        help=f"records to produce and consume (default: {records:,})",
    )
    parser.add_argument(
        "--value-size",
        type=non_negative_int,
        default=100,
        metavar="BYTES",
        help="bytes per record value (default: 100)",
    )
    parser.add_argument(
        "--partitions",
        type=positive_int,
        default=6,
        metavar="N",
        help="partitions of the topic (default: 6)",
    )
    parser.add_argument(
        "--members",
        type=non_negative_int,
        default=members,
        metavar="N",
        help="consumers in the group that reads the records back; 0: one consumer reads "
        f"every partition directly, without a group (default: {members})",
    )
    parser.add_argument(
        "-z",
        "--compression",
        choices=COMPRESSIONS,
        default="lz4",
        help="compression codec (default: lz4)",
    )
    parser.add_argument(
        "--acks",
        choices=("0", "1", "all"),
        default="1",
        help="acknowledgements the producer waits for (default: 1)",
    )


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``demo`` and ``bench``."""
    demo = parents.command(
        sub,
        "demo",
        run_demo,
        embedded=False,
        help="produce and consume 1,000,000 records on an embedded broker, and show the figures",
        description="Start an embedded broker (no setup), create a topic, produce records with "
        "a progress bar, read them back with a group of consumers, and show records/s, "
        "delivery latency and partitions per member.  With -b/--bootstrap-servers it runs "
        "against that cluster instead.",
    )
    _add_workload_options(demo, members=3, records=1_000_000)

    bench = parents.command(
        sub,
        "bench",
        run_bench,
        embedded=False,
        help="the produce/consume workload against a cluster of your own",
        description="Create a topic on the cluster, produce records to it, read them back, "
        "show the figures, and delete the topic and group again.",
    )
    _add_workload_options(bench, members=1, records=1_000_000)


@dataclass
class Figures:
    """What one run of the workload measured."""

    records: int = 0
    produce_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    join_s: float | None = None
    consume_s: float = 0.0
    consumed: int = 0
    members: dict[str, tuple[int, int]] = field(default_factory=dict)  # name: partitions, records


def _values(size: int) -> list[bytes]:
    # Half random, half repeated: compresses somewhat, as typical payloads do.
    return [os.urandom(size // 2) + b"a" * (size - size // 2) for _ in range(256)]


async def produce_phase(context: Context, topic: str, figures: Figures) -> None:
    """Produce ``--records`` records with a progress bar, sampling delivery latency."""
    from aiokafkawire import Producer

    args = context.args
    values = _values(args.value_size)
    keys = [b"key-%d" % i for i in range(1024)]
    samples: list[float] = []
    sampled = []

    def delivered(sent_at: float) -> Any:
        def done(_handle: Any) -> None:
            samples.append((time.perf_counter() - sent_at) * 1000)

        return done

    async with Producer(
        **context.client_options(
            "producer",
            acks=args.acks,
            compression=None if args.compression == "none" else args.compression,
            linger_ms=5,
        )
    ) as producer:
        await producer.partitions_for(topic)
        clock = Stopwatch()
        send = producer.send
        with context.report.progress("producing", args.records) as advance:
            for i in range(args.records):
                handle = await send(topic, values[i & 255], key=keys[i & 1023])
                if i % _SAMPLE_EVERY == 0:
                    handle.add_done_callback(delivered(time.perf_counter()))
                    sampled.append(handle)
                if i % _PROGRESS_STEP == _PROGRESS_STEP - 1:
                    advance(_PROGRESS_STEP)
            await producer.flush()
            advance(args.records % _PROGRESS_STEP)
        for handle in sampled:
            await handle  # raises the delivery error, if any
        await handle
        figures.produce_s = clock.seconds
    figures.records = args.records
    figures.latencies_ms = samples
    context.report.info(
        f"produced {args.records:,} records in {figures.produce_s:.2f} s "
        f"({rate(args.records, figures.produce_s)})"
    )


async def _form_group(
    context: Context, consumers: list[Consumer], partitions: set[TopicPartition]
) -> None:
    """Wait until the members hold every partition between them, each once."""
    group_size = len(consumers)
    why = (
        f"Tansu answers a new group's first join after half the session timeout, "
        f"{GROUP_SESSION_TIMEOUT_MS // 2000} s"
        if context.args.embedded
        else "a new group takes a few seconds on most brokers"
    )
    with context.report.waiting(
        f"forming a group of {group_size} consumer(s): waiting for the coordinator to assign "
        f"all {len(partitions)} partitions ({why})"
    ):
        deadline = time.monotonic() + 60
        while True:
            held = [c.assignment() for c in consumers]
            stable = all(c.state == "stable" for c in consumers)
            if (
                stable
                and sum(map(len, held)) == len(partitions)
                and set().union(*held) == partitions
            ):
                return
            if context.stop.is_set():
                raise CliError("interrupted while the group formed", ExitCode.INTERRUPTED)
            if time.monotonic() > deadline:
                raise CliError("the group did not form within 60 s", ExitCode.UNREACHABLE)
            for consumer in consumers:
                # Waiting for an assignment polls the group protocol without taking records
                # (records taken here would be missing from the count).
                with contextlib.suppress(errors.KafkaTimeoutError):
                    await consumer.wait_for_assignment(timeout=0.05)


async def consume_phase(context: Context, topic: str, group: str | None, figures: Figures) -> None:
    """Read every record back, by a group of ``--members`` or by assignment."""
    from aiokafkawire import Consumer

    args = context.args
    partitions = {TopicPartition(topic, p) for p in range(args.partitions)}
    options = context.client_options(
        "consumer", auto_offset_reset="earliest", enable_auto_commit=False
    )
    if group is None:
        consumers = [Consumer(**options)]
    else:
        options.update(
            group_id=group, session_timeout_ms=GROUP_SESSION_TIMEOUT_MS, heartbeat_interval_ms=1000
        )
        consumers = [Consumer(topic, **options) for _ in range(args.members)]
    counts = [0] * len(consumers)
    try:
        for consumer in consumers:
            await consumer.start()
        clock = Stopwatch()
        if group is None:
            consumers[0].assign(sorted(partitions))
            await consumers[0].seek_to_beginning(*sorted(partitions))
        else:
            # The members must hold partitions before the clock starts; reading while they
            # change hands would count rebalancing as reading.
            await _form_group(context, consumers, partitions)
            figures.join_s = clock.seconds
            context.report.info(f"the group formed in {figures.join_s:.1f} s")
        clock = Stopwatch()
        with context.report.progress("consuming", args.records) as advance:
            await _read_all(context, consumers, counts, args.records, advance)
        figures.consume_s = clock.seconds
        figures.consumed = sum(counts)
        if group is not None:
            await asyncio.gather(*(c.commit() for c in consumers))
        for i, consumer in enumerate(consumers):
            figures.members[f"consumer {i + 1}"] = (len(consumer.assignment()), counts[i])
    finally:
        await asyncio.gather(*(c.close() for c in consumers), return_exceptions=True)
    context.report.info(
        f"consumed {figures.consumed:,} records in {figures.consume_s:.2f} s "
        f"({rate(figures.consumed, figures.consume_s)})"
    )


async def _read_all(
    context: Context, consumers: list[Consumer], counts: list[int], total: int, advance: Any
) -> None:
    """Read with every consumer until ``total`` records came; a stall ends the command."""
    last_record = [time.monotonic()]

    async def read(index: int, consumer: Consumer) -> None:
        while sum(counts) < total:
            if context.stop.is_set():
                raise CliError("interrupted while consuming", ExitCode.INTERRUPTED)
            batches = await consumer.getmany(timeout_ms=200, max_records=10_000)
            got = sum(len(records) for records in batches.values())
            if got:
                counts[index] += got
                advance(got)
                last_record[0] = time.monotonic()
            elif time.monotonic() - last_record[0] > _STALL_S:
                raise CliError(
                    f"only {sum(counts):,} of {total:,} records came back, none for "
                    f"{_STALL_S:.0f} s ({await _positions(consumers)})",
                    ExitCode.UNREACHABLE,
                )

    await asyncio.gather(*(read(i, c) for i, c in enumerate(consumers)))


async def _positions(consumers: list[Consumer]) -> str:
    """Where each consumer is in each of its partitions, for the stall message."""
    parts = []
    for index, consumer in enumerate(consumers):
        where = [
            f"[{tp.partition}] {await consumer.position(tp)} of {consumer.highwater(tp)}"
            for tp in sorted(consumer.assignment())
        ]
        parts.append(f"consumer {index + 1} {consumer.state}: {', '.join(where) or '-'}")
    return "; ".join(parts)


def show_figures(context: Context, figures: Figures) -> None:
    """The results table, the latency line and the per-member table."""
    report = context.report
    args = context.args
    megabytes = args.value_size * figures.records / 1e6
    rows = [
        (
            "produce",
            f"{figures.records:,}",
            f"{figures.produce_s:.2f}",
            rate(figures.records, figures.produce_s),
            f"{megabytes / max(figures.produce_s, 1e-9):.1f}",
        ),
        (
            "consume",
            f"{figures.consumed:,}",
            f"{figures.consume_s:.2f}",
            rate(figures.consumed, figures.consume_s),
            f"{megabytes / max(figures.consume_s, 1e-9):.1f}",
        ),
    ]
    report.line(
        f"{figures.records:,} records of {args.value_size} bytes, {args.partitions} partitions, "
        f"compression {args.compression}, acks={args.acks}"
    )
    report.table(
        ["phase", "records", "seconds", "records/s", "MB/s"],
        rows,
        right=["records", "seconds", "records/s", "MB/s"],
    )
    latencies = sorted(figures.latencies_ms)
    if len(latencies) >= 2:
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        report.table(
            ["delivery latency (producing at full speed)", "p50 (ms)", "p99 (ms)", "samples"],
            [("send to acknowledgement", f"{cuts[49]:.1f}", f"{cuts[98]:.1f}", len(latencies))],
            right=["p50 (ms)", "p99 (ms)", "samples"],
        )
    join = f", formed in {figures.join_s:.1f} s" if figures.join_s is not None else ""
    report.table(
        ["member", "partitions", "records"],
        [(name, parts, f"{count:,}") for name, (parts, count) in figures.members.items()],
        title=f"consumers: {len(figures.members)}{join}",
        right=["partitions", "records"],
    )


async def run_workload(context: Context, *, own_cluster: bool) -> int:
    """Create the topic, run both phases, show the figures, clean up a cluster of your own."""
    from aiokafkawire import NewTopic

    args = context.args
    suffix = uuid.uuid4().hex[:8]
    topic = f"aiokafkawire-bench-{suffix}" if own_cluster else "demo"
    group = None if args.members == 0 else f"aiokafkawire-bench-{suffix}"
    figures = Figures()
    async with connect_admin(context) as admin:
        created = await admin.create_topics([NewTopic(topic, args.partitions, -1)])
        check_item(f"creating topic {topic!r}", answered(created, topic, topic_name(topic)).error)
        context.report.info(f"created topic {topic} with {args.partitions} partitions")
        try:
            await produce_phase(context, topic, figures)
            await consume_phase(context, topic, group, figures)
        finally:
            if own_cluster:
                await _clean_up(context, admin, topic, group)
    show_figures(context, figures)
    return ExitCode.OK


async def _clean_up(context: Context, admin: Any, topic: str, group: str | None) -> None:
    deleted = (await admin.delete_topics([topic])).get(topic)
    if deleted is not None and deleted.error is not None:
        context.report.info(f"could not delete topic {topic}: {deleted.error}")
    if group is not None:
        result = (await admin.delete_groups([group])).get(group)
        if result is not None and result.error is not None:
            context.report.info(f"could not delete group {group}: {result.error}")


async def run_demo(context: Context) -> int:
    """The workload on an embedded broker, or on the cluster given with -b."""
    from aiokafkawire.testing import TansuBroker

    if context.args.bootstrap_servers is not None:
        return await run_workload(context, own_cluster=True)
    with context.report.waiting("starting an embedded Tansu broker"):
        broker = await TansuBroker().start_async()
    try:
        context.args.bootstrap_servers = broker.bootstrap_servers
        context.args.embedded = True
        context.report.info(
            f"embedded Tansu broker on {broker.bootstrap_servers} (in-memory storage)"
        )
        return await run_workload(context, own_cluster=False)
    finally:
        await broker.stop_async()


async def run_bench(context: Context) -> int:
    """The workload against the cluster given with -b (default localhost:9092)."""
    return await run_workload(context, own_cluster=True)
