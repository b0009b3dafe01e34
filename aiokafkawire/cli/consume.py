"""``consume TOPIC...``: print records, in a group or from assigned partitions."""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from aiokafkawire import errors
from aiokafkawire.cli.admin_calls import answered, connect_admin, existing_topics
from aiokafkawire.cli.exit_codes import CliError, ExitCode, check_item
from aiokafkawire.cli.formats import ENCODINGS, OUTPUTS, RecordFormatter, unescape_bytes
from aiokafkawire.cli.options import non_negative_int, positive_int, timestamp_ms
from aiokafkawire.cli.output import Stopwatch
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from aiokafkawire import Consumer
    from aiokafkawire.cli.app import Context, Parents

# How long one poll waits before the loop looks at Ctrl-C and the end of the partitions again.
_POLL_MS = 500
# A group's session timeout: the smallest a Kafka broker accepts by default
# (group.min.session.timeout.ms), which also keeps Tansu's first join (half of it) short.
GROUP_SESSION_TIMEOUT_MS = 6_000


# long: one declaration per option, read top to bottom
def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``consume``."""
    consume = parents.command(
        sub,
        "consume",
        run_consume,
        graceful=True,
        help="print records of topics, in a group or from assigned partitions",
        description="Print the records of topics.  Without --group, every partition (or those "
        "given with --partition) is read directly; with --group, the group's coordinator "
        "assigns partitions and offsets are committed as records are printed.  Runs until "
        "Ctrl-C unless --count or --exit-at-end says when to stop; counts go to stderr.  "
        "With --share-group, records are shared out among the share group's members (KIP-932, "
        "Apache Kafka 4.1+) and acknowledged as they are printed.",
    )
    consume.add_argument("topics", nargs="+", metavar="TOPIC", help="topics to read")
    consume.add_argument(
        "-g", "--group", help="read as a member of this consumer group, committing offsets"
    )
    consume.add_argument(
        "-s",
        "--share-group",
        metavar="GROUP",
        help="read as a member of this share group: each record goes to one member and is "
        "acknowledged once printed (see --ack); not with --group",
    )
    consume.add_argument(
        "--ack",
        choices=("accept", "release", "reject"),
        default="accept",
        help="with --share-group: how printed records are acknowledged; release hands them "
        "out again, reject archives them (default: accept)",
    )
    consume.add_argument(
        "-p",
        "--partition",
        type=non_negative_int,
        action="append",
        metavar="N",
        help="read only partition N of each topic (repeatable; not with --group)",
    )
    start = consume.add_mutually_exclusive_group()
    start.add_argument(
        "--from",
        dest="start",
        choices=("beginning", "end"),
        default=None,
        help="where to start (with --group: where partitions without a committed offset "
        "start; with --share-group: sets the group's share.auto.offset.reset); default: "
        "beginning (share groups: the group's setting, latest unless set)",
    )
    start.add_argument(
        "--offset",
        type=offset_argument,
        metavar="N",
        help="start at offset N of each partition; a negative N counts back from each "
        "partition's end: --offset -10 prints the last 10 records of each (not with --group)",
    )
    start.add_argument(
        "--timestamp",
        type=timestamp_ms,
        metavar="TIME",
        help="start at the first record at or after TIME, milliseconds since the epoch or "
        "ISO 8601 (not with --group)",
    )
    consume.add_argument(
        "-n", "--count", type=positive_int, metavar="N", help="stop after exactly N records"
    )
    consume.add_argument(
        "--until",
        type=timestamp_ms,
        metavar="TIME",
        help="read each partition up to (not including) its first record at or after TIME "
        "(milliseconds since the epoch or ISO 8601) and stop when every partition got there; "
        "with -e, a partition also ends at its end (not with --group)",
    )
    end = consume.add_mutually_exclusive_group()
    end.add_argument(
        "-e",
        "--exit-at-end",
        action="store_true",
        help="stop when every partition has been read to its end (or to --until)",
    )
    end.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep waiting for new records until Ctrl-C (the default)",
    )
    consume.add_argument(
        "-o",
        "--output",
        choices=OUTPUTS,
        default="raw",
        help="raw: each value on its own line; json: one JSON object a record (default: raw)",
    )
    consume.add_argument(
        "-F",
        "--format",
        metavar="TEMPLATE",
        help="print each record with this template, e.g. '{partition}:{offset}\\t{key}={value}'; "
        "fields: topic, partition, offset, timestamp, key, value, headers",
    )
    consume.add_argument(
        "-D",
        "--delimiter",
        metavar="DELIM",
        help="end each raw or --format record with DELIM instead of a newline "
        "(escapes: \\n \\t \\r \\0 \\xHH)",
    )
    consume.add_argument(
        "--encoding",
        choices=ENCODINGS,
        default="utf-8",
        help="how keys, values and headers appear in json and --format output (default: utf-8)",
    )
    consume.add_argument(
        "--session-timeout-ms",
        type=positive_int,
        default=GROUP_SESSION_TIMEOUT_MS,
        metavar="MS",
        help=f"the group session timeout (default: {GROUP_SESSION_TIMEOUT_MS})",
    )


def _check_usage(args: Any) -> None:
    if args.share_group is not None:
        if args.group is not None:
            raise CliError("give either --group or --share-group, not both", ExitCode.USAGE)
        if args.exit_at_end:
            raise CliError(
                "--exit-at-end needs partition positions, which a share group does not have; "
                "use --count",
                ExitCode.USAGE,
            )
    elif args.ack != "accept":
        raise CliError("--ack needs --share-group", ExitCode.USAGE)
    group_option = "--share-group" if args.share_group is not None else "--group"
    if args.group is None and args.share_group is None:
        return
    for name, value in (
        ("--partition", args.partition),
        ("--offset", args.offset),
        ("--timestamp", args.timestamp),
        ("--until", args.until),
    ):
        if value is not None:
            raise CliError(
                f"{name} reads partitions directly and cannot be combined with {group_option}",
                ExitCode.USAGE,
            )


async def join_group(context: Context, consumer: Consumer, group: str) -> set[TopicPartition]:
    """Wait (saying so) until the group assigns partitions; empty when Ctrl-C came first."""
    clock = Stopwatch()
    with context.report.waiting(
        f"joining group {group}: waiting for its coordinator to assign partitions"
    ):
        while not context.stop.is_set():
            try:
                assigned = await consumer.wait_for_assignment(timeout=_POLL_MS / 1000)
            except errors.KafkaTimeoutError:
                continue
            context.report.info(
                f"joined group {group} in {clock.seconds:.1f} s; assigned "
                + ", ".join(f"{tp.topic}[{tp.partition}]" for tp in sorted(assigned))
            )
            return assigned
    return set()


def offset_argument(text: str) -> int:
    """argparse type: an offset, or a negative count back from a partition's end."""
    try:
        return int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


async def _start_positions(args: Any, consumer: Consumer, partitions: list[TopicPartition]) -> None:
    if args.offset is not None and args.offset < 0:
        # kcat's -o -N: N back from each partition's end, not before its beginning.
        ends = await consumer.end_offsets(partitions)
        beginnings = await consumer.beginning_offsets(partitions)
        for tp in partitions:
            consumer.seek(tp, max(beginnings[tp], ends[tp] + args.offset))
    elif args.offset is not None:
        for tp in partitions:
            consumer.seek(tp, args.offset)
    elif args.timestamp is not None:
        found = await consumer.offsets_for_times(dict.fromkeys(partitions, args.timestamp))
        after = [tp for tp, at in found.items() if at is None]
        for tp, at in found.items():
            if at is not None:
                consumer.seek(tp, at.offset)
        if after:
            await consumer.seek_to_end(*after)
    elif args.start == "end":
        await consumer.seek_to_end(*partitions)
    else:
        await consumer.seek_to_beginning(*partitions)


async def _at_end(consumer: Consumer) -> bool:
    """Whether every assigned partition's position reached the high watermark last fetched."""
    assigned = consumer.assignment()
    if not assigned:
        return False
    for tp in assigned:
        highwater = consumer.highwater(tp)
        if highwater is None or await consumer.position(tp) < highwater:
            return False
    return True


class _Bounds:
    """Where a read ends, partition by partition: at ``--until`` (the offset of a partition's
    first record at or after that time, or, where none is known yet, at such a record) and,
    with ``-e``, at its end."""

    def __init__(self, until: int | None, at_end: bool) -> None:
        self.until = until
        self.at_end = at_end
        self.active = until is not None or at_end
        self.stops: dict[TopicPartition, int] = {}
        self.done: set[TopicPartition] = set()

    async def prepare(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Look up each partition's ``--until`` offset."""
        if self.until is None:
            return
        found = await consumer.offsets_for_times(dict.fromkeys(partitions, self.until))
        self.stops = {tp: at.offset for tp, at in found.items() if at is not None}

    def _finish(self, consumer: Consumer, tp: TopicPartition) -> None:
        if tp not in self.done:
            self.done.add(tp)
            consumer.pause(tp)

    def cut(self, consumer: Consumer, tp: TopicPartition, records: list[Any]) -> list[Any]:
        """The records before the ``--until`` bound; a partition that reached it is done."""
        if self.until is None or not records:
            return records
        stop = self.stops.get(tp)
        for index, record in enumerate(records):
            if record.offset >= stop if stop is not None else record.timestamp >= self.until:
                self._finish(consumer, tp)
                return records[:index]
        return records

    async def finished(self, consumer: Consumer) -> bool:
        """Whether every assigned partition is done, or (``-e``) at its last known end."""
        assigned = consumer.assignment()
        if not assigned:
            return False
        finished = True
        for tp in assigned - self.done:  # every one: those at their bound are paused now
            position = await consumer.position(tp)
            stop = self.stops.get(tp)
            if stop is not None and position >= stop:
                self._finish(consumer, tp)
                continue
            highwater = consumer.highwater(tp) if self.at_end else None
            if highwater is None or position < highwater:
                finished = False
        return finished


class _Output:
    """Writes formatted records to stdout; a closed pipe (``| head``) ends the run quietly."""

    def __init__(self, formatter: RecordFormatter) -> None:
        self._formatter = formatter
        self._stream = sys.stdout.buffer
        self.closed = False

    def write(self, records: list[Any]) -> None:
        data = b"".join(self._formatter.format(record) for record in records)
        try:
            self._stream.write(data)
            self._stream.flush()
        except BrokenPipeError:
            self.closed = True
            # Python would complain again when flushing stdout at exit.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())


# long: the direct and group paths share setup and the loop
async def run_consume(context: Context) -> int:
    """Read and print records until the count, the end, or Ctrl-C."""
    from aiokafkawire import Consumer

    args = context.args
    report = context.report
    _check_usage(args)
    formatter = RecordFormatter(
        args.output,
        template=args.format,
        encoding=args.encoding,
        delimiter=unescape_bytes(args.delimiter) if args.delimiter is not None else b"\n",
    )
    async with connect_admin(context) as admin:
        infos = await existing_topics(admin, args.topics)
        if args.share_group is not None and args.start is not None:
            await _set_share_group_start(admin, args.share_group, args.start)
    if args.share_group is not None:
        return await _run_share_consume(context, formatter)
    partitions = [
        TopicPartition(name, p)
        for name, info in infos.items()
        for p in info.partition_ids
        if args.partition is None or p in args.partition
    ]
    if not partitions:
        raise CliError("none of the --partition numbers exists in these topics", ExitCode.NOT_FOUND)
    options = context.client_options(
        "consumer",
        group_id=args.group,
        auto_offset_reset="latest" if args.start == "end" else "earliest",
        enable_auto_commit=False,
    )
    if args.group is not None:
        options.update(
            session_timeout_ms=args.session_timeout_ms,
            heartbeat_interval_ms=max(args.session_timeout_ms // 6, 100),
        )
    output = _Output(formatter)
    counts: Counter[str] = Counter()
    clock = Stopwatch()
    async with Consumer(**options) as consumer:
        if args.group is not None:
            consumer.subscribe(args.topics)
            await join_group(context, consumer, args.group)
        else:
            consumer.assign(partitions)
            await _start_positions(args, consumer, partitions)
        bounds = _Bounds(args.until, args.exit_at_end)
        await bounds.prepare(consumer, partitions)
        total = 0
        caught_up = False
        with report.meter("consuming", total=args.count) as meter:
            while not context.stop.is_set() and not output.closed:
                wanted = args.count - total if args.count else None
                batches = await consumer.getmany(timeout_ms=_POLL_MS, max_records=wanted)
                for tp, records in batches.items():
                    records = bounds.cut(consumer, tp, records)
                    output.write(records)
                    counts[tp.topic] += len(records)
                    total += len(records)
                    meter(len(records), len(records))
                if batches and args.group is not None and not output.closed:
                    await consumer.commit()
                if args.count and total >= args.count:
                    break
                if bounds.active and await bounds.finished(consumer):
                    break
                if not caught_up and not args.exit_at_end and await _at_end(consumer):
                    caught_up = True
                    report.info(
                        "read every partition to its end; waiting for new records (Ctrl-C stops)"
                    )
        # Commit only what a reader got: after a closed pipe, the last batch may not have been.
        if args.group is not None and consumer.assignment() and not output.closed:
            await consumer.commit()
    per_topic = ", ".join(f"{counts[t]:,} from {t}" for t in args.topics)
    report.info(f"consumed {total:,} record(s) in {clock.seconds:.1f} s ({per_topic})")
    return ExitCode.INTERRUPTED if context.stop.is_set() else ExitCode.OK


async def _set_share_group_start(admin: Any, group: str, start: str) -> None:
    """Where a share group starts reading partitions it has no state for (a group config)."""
    from aiokafkawire.admin import ConfigResource, ResourceType

    value = "earliest" if start == "beginning" else "latest"
    resource = ConfigResource(ResourceType.GROUP, group)
    results = await admin.alter_configs({resource: {"share.auto.offset.reset": value}})
    error = answered(results, resource, f"share group {group!r}").error
    check_item(f"setting share.auto.offset.reset of share group {group!r}", error)


async def _run_share_consume(context: Context, formatter: RecordFormatter) -> int:
    """Read and print records as a share-group member until the count or Ctrl-C."""
    from aiokafkawire import ShareConsumer

    args = context.args
    report = context.report
    output = _Output(formatter)
    counts: Counter[str] = Counter()
    clock = Stopwatch()
    failures: list[str] = []

    def outcome(result: Any) -> None:
        if result.error is not None:
            tp = result.partition
            failures.append(f"{tp.topic}[{tp.partition}]: {result.error}")

    options = context.client_options(
        "share",
        group_id=args.share_group,
        acknowledgement_mode="explicit",
        on_acknowledgement=outcome,
    )
    total = 0
    async with ShareConsumer(*args.topics, **options) as consumer:
        with report.waiting(f"joining share group {args.share_group}"):
            while not context.stop.is_set():
                try:
                    await consumer.wait_for_assignment(timeout=_POLL_MS / 1000)
                except errors.KafkaTimeoutError:
                    continue
                break
        while not context.stop.is_set() and not output.closed:
            wanted = args.count - total if args.count else None
            batches = await consumer.getmany(timeout_ms=_POLL_MS, max_records=wanted)
            for tp, records in batches.items():
                output.write(records)
                for record in records:
                    consumer.acknowledge(record, args.ack)
                counts[tp.topic] += len(records)
                total += len(records)
            if args.count and total >= args.count:
                break
        await consumer.commit()
    for failure in failures:
        report.error(f"acknowledgement failed: {failure}")
    per_topic = ", ".join(f"{counts[t]:,} from {t}" for t in args.topics)
    report.info(
        f"consumed {total:,} record(s) from share group {args.share_group} in "
        f"{clock.seconds:.1f} s ({per_topic}; acknowledged: {args.ack})"
    )
    return ExitCode.INTERRUPTED if context.stop.is_set() else ExitCode.OK
