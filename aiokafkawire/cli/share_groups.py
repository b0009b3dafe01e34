"""``share-groups list|describe|reset``: share groups (KIP-932, Apache Kafka 4.1+)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiokafkawire.cli.admin_calls import answered, connect_admin
from aiokafkawire.cli.exit_codes import CliError, ExitCode, check_item
from aiokafkawire.cli.offsets import lookup_offsets, partition_name, topic_partitions
from aiokafkawire.cli.options import (
    add_json_option,
    add_partition_option,
    non_negative_int,
    timestamp_ms,
)

if TYPE_CHECKING:
    from aiokafkawire.cli.app import Context, Parents
    from aiokafkawire.structs import TopicPartition


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``share-groups`` and its actions."""
    groups = sub.add_parser(
        "share-groups", help="list and describe share groups (KIP-932); reset their offsets"
    )
    actions = groups.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = parents.command(actions, "list", run_list, help="every share group, with state")
    add_json_option(listing)
    describe = parents.command(
        actions,
        "describe",
        run_describe,
        help="a share group's members and assignments, and its start offset and lag per partition",
    )
    describe.add_argument("group", metavar="GROUP", help="the share group id")
    add_json_option(describe)
    reset = parents.command(
        actions,
        "reset",
        run_reset,
        help="set a share group's start offsets for a topic (the group must have no members)",
    )
    reset.add_argument("group", metavar="GROUP", help="the share group id")
    reset.add_argument("--topic", required=True, help="the topic whose start offsets change")
    add_partition_option(reset)
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="each partition's earliest")
    target.add_argument("--to-latest", action="store_true", help="each partition's end")
    target.add_argument(
        "--to-offset", type=non_negative_int, metavar="N", help="offset N in each partition"
    )
    target.add_argument(
        "--to-timestamp",
        type=timestamp_ms,
        metavar="TIME",
        help="the first offset at or after TIME (milliseconds since the epoch, or ISO 8601)",
    )
    reset.add_argument(
        "--dry-run", action="store_true", help="show the new offsets without setting them"
    )


async def run_list(context: Context) -> int:
    """Print every share group."""
    async with connect_admin(context) as admin:
        listings = await admin.list_share_groups()
    rows = [(g.group_id, g.state, g.coordinator) for g in listings]
    if context.args.json:
        context.report.json([{"group": g, "state": s, "coordinator": c} for g, s, c in rows])
    else:
        context.report.table(["group", "state", "coordinator"], rows, right=["coordinator"])
    return ExitCode.OK


async def run_describe(context: Context) -> int:
    """Print a share group's members and its start offsets with lag."""
    group = context.args.group
    async with connect_admin(context) as admin:
        found = await admin.describe_share_groups([group])
        description = answered(found, group, f"share group {group!r}")
        check_item(f"share group {group!r}", description.error)
        offsets = await admin.list_share_group_offsets(group)
    if description.state in ("", "Dead") and not offsets:
        raise CliError(f"share group {group!r} does not exist", ExitCode.NOT_FOUND)
    members = [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.client_host,
            "assigned": [{"topic": tp.topic, "partition": tp.partition} for tp in m.assignment],
        }
        for m in description.members
    ]
    partitions = []
    for tp in sorted(offsets):
        check_item(f"start offset of {partition_name(tp)}", offsets[tp].error)
        lag = offsets[tp].lag
        partitions.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "start_offset": offsets[tp].start_offset,
                "lag": lag if lag >= 0 else None,
            }
        )
    if context.args.json:
        context.report.json(
            {
                "group": group,
                "state": description.state,
                "coordinator": description.coordinator,
                "members": members,
                "offsets": partitions,
            }
        )
        return ExitCode.OK
    _print_description(context, group, description, members, partitions)
    return ExitCode.OK


def _print_description(
    context: Context,
    group: str,
    description: Any,
    members: list[dict[str, Any]],
    partitions: list[dict[str, Any]],
) -> None:
    report = context.report
    report.table(
        ["member", "client id", "host", "assigned partitions"],
        [
            (
                m["member_id"],
                m["client_id"],
                m["host"],
                ", ".join(f"{a['topic']}[{a['partition']}]" for a in m["assigned"]),
            )
            for m in members
        ],
        title=f"share group {group}: {description.state or 'unknown state'}, "
        f"{len(members)} member(s), coordinator {description.coordinator}",
    )
    report.table(
        ["topic", "partition", "start offset", "lag"],
        [tuple(p.values()) for p in partitions],
        title=f"start offsets of {group}",
        right=["partition", "start offset", "lag"],
    )


async def _targets(admin: Any, args: Any, partitions: list[TopicPartition]) -> dict[Any, int]:
    from aiokafkawire.admin import OffsetSpec

    if args.to_offset is not None:
        return dict.fromkeys(partitions, args.to_offset)
    if args.to_earliest:
        return await lookup_offsets(admin, partitions, OffsetSpec.earliest())
    latest = await lookup_offsets(admin, partitions, OffsetSpec.latest())
    if args.to_latest:
        return latest
    found = await lookup_offsets(admin, partitions, OffsetSpec.for_timestamp(args.to_timestamp))
    return {tp: found[tp] if found[tp] >= 0 else latest[tp] for tp in partitions}


async def run_reset(context: Context) -> int:
    """Compute and set (unless --dry-run) a share group's start offsets."""
    args = context.args
    async with connect_admin(context) as admin:
        partitions = await topic_partitions(admin, args.topic, args.partition)
        found = await admin.describe_share_groups([args.group])
        description = found.get(args.group)
        if description is not None and description.error is None and description.members:
            raise CliError(
                f"share group {args.group!r} has {len(description.members)} active member(s); "
                "stop its consumers before resetting its offsets"
            )
        targets = await _targets(admin, args, partitions)
        if not args.dry_run:
            results = await admin.alter_share_group_offsets(args.group, targets)
            for tp in partitions:  # each result is the partition's error, None for success
                if tp not in results:
                    raise CliError(f"the broker did not answer for {partition_name(tp)}")
                check_item(f"setting the start offset of {partition_name(tp)}", results[tp])
    rows = [(tp.topic, tp.partition, targets[tp]) for tp in partitions]
    context.report.table(
        ["topic", "partition", "start offset"],
        rows,
        title=f"share group {args.group}: "
        + ("new start offsets (dry run, nothing set)" if args.dry_run else "start offsets set"),
        right=["partition", "start offset"],
    )
    return ExitCode.OK
