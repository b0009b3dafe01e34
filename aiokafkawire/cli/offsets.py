"""``offsets``: a topic's earliest and latest offsets, and the offsets at a time."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from aiokafkawire.cli.admin_calls import answered_items, connect_admin, existing_topics
from aiokafkawire.cli.exit_codes import CliError, ExitCode, check_item
from aiokafkawire.cli.options import add_json_option, add_partition_option, timestamp_ms
from aiokafkawire.structs import TopicPartition

if TYPE_CHECKING:
    from aiokafkawire.admin import OffsetSpec
    from aiokafkawire.cli.admin_calls import PerItemAdmin
    from aiokafkawire.cli.app import Context, Parents


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``offsets``."""
    offsets = parents.command(
        sub,
        "offsets",
        run_offsets,
        help="earliest and latest offsets of a topic's partitions, or the offsets at a time",
        description="Show each partition's earliest offset (log start) and latest offset (the "
        "next offset to be written); with --timestamp, also the first offset at or after it.",
    )
    offsets.add_argument("topic", metavar="TOPIC", help="the topic")
    add_partition_option(offsets)
    offsets.add_argument(
        "-t",
        "--timestamp",
        type=timestamp_ms,
        metavar="TIME",
        help="also look up the offsets at this time: milliseconds since the epoch, or ISO 8601",
    )
    add_json_option(offsets)


def partition_name(tp: TopicPartition) -> str:
    """A partition as messages name it: ``orders[3]``."""
    return f"{tp.topic}[{tp.partition}]"


async def topic_partitions(
    admin: PerItemAdmin, topic: str, only: Iterable[int] | None = None
) -> list[TopicPartition]:
    """The partitions of an existing topic (``only`` these, each checked to exist)."""
    info = (await existing_topics(admin, [topic]))[topic]
    if only is None:
        return [TopicPartition(topic, p) for p in info.partition_ids]
    chosen = sorted(set(only))
    missing = [p for p in chosen if p not in info.partitions]
    if missing:
        raise CliError(
            f"topic {topic!r} has partitions 0-{len(info.partitions) - 1}; "
            f"{', '.join(map(str, missing))} is not one",
            ExitCode.NOT_FOUND,
        )
    return [TopicPartition(topic, p) for p in chosen]


async def lookup_offsets(
    admin: PerItemAdmin, partitions: Iterable[TopicPartition], spec: OffsetSpec
) -> dict[TopicPartition, int]:
    """One offset per partition for ``spec``; a partition's error ends the command."""
    wanted = list(partitions)
    found = await admin.list_offsets(dict.fromkeys(wanted, spec))
    result = {}
    for tp, listed in answered_items(found, wanted, partition_name):
        check_item(f"offsets of {partition_name(tp)}", listed.error)
        result[tp] = listed.offset
    return result


async def run_offsets(context: Context) -> int:
    """Print the offsets table."""
    from aiokafkawire.admin import OffsetSpec

    args = context.args
    async with connect_admin(context) as admin:
        partitions = await topic_partitions(admin, args.topic, args.partition)
        earliest = await lookup_offsets(admin, partitions, OffsetSpec.earliest())
        latest = await lookup_offsets(admin, partitions, OffsetSpec.latest())
        at_time = (
            await lookup_offsets(admin, partitions, OffsetSpec.for_timestamp(args.timestamp))
            if args.timestamp is not None
            else None
        )
    if args.json:
        context.report.json(
            {
                "topic": args.topic,
                "timestamp": args.timestamp,
                "partitions": [
                    {
                        "partition": tp.partition,
                        "earliest": earliest[tp],
                        "latest": latest[tp],
                        **(
                            {"at_timestamp": at_time[tp] if at_time[tp] >= 0 else None}
                            if at_time is not None
                            else {}
                        ),
                    }
                    for tp in partitions
                ],
            }
        )
        return ExitCode.OK
    columns = ["partition", "earliest", "latest"]
    if at_time is not None:
        columns.append(f"at {args.timestamp}")
    rows = []
    for tp in partitions:
        row: list[Any] = [tp.partition, earliest[tp], latest[tp]]
        if at_time is not None:
            row.append(at_time[tp] if at_time[tp] >= 0 else "(none)")
        rows.append(row)
    context.report.table(columns, rows, title=f"topic {args.topic}", right=columns)
    return ExitCode.OK
