"""``share-groups list|describe|reset``: share groups (KIP-932, Apache Kafka 4.1+).

The same shape as ``groups`` (:mod:`aiokafkawire.cli.group_common`): a document, printed as JSON
or as tables; a reset refuses a group with members and shows each partition's old and new offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiokafkawire.cli.admin_calls import answered, connect_admin
from aiokafkawire.cli.exit_codes import CliError, ExitCode, check_item
from aiokafkawire.cli.group_common import (
    add_reset_options,
    member_document,
    refuse_active_members,
    report_description,
    report_listing,
    report_reset,
    reset_targets,
)
from aiokafkawire.cli.offsets import partition_name, topic_partitions
from aiokafkawire.cli.options import add_json_option

if TYPE_CHECKING:
    from aiokafkawire.admin import ShareGroupOffset
    from aiokafkawire.cli.admin_calls import PerItemAdmin
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
    add_reset_options(reset, offsets="start offsets", shift=False)


async def run_list(context: Context) -> int:
    """Print every share group."""
    async with connect_admin(context) as admin:
        listings = await admin.list_share_groups()
    rows = [{"group": g.group_id, "state": g.state, "coordinator": g.coordinator} for g in listings]
    return report_listing(context, rows, ["group", "state", "coordinator"])


async def _start_offsets(admin: PerItemAdmin, group: str) -> dict[TopicPartition, ShareGroupOffset]:
    offsets = await admin.list_share_group_offsets(group)
    for tp, offset in offsets.items():
        check_item(f"start offset of {partition_name(tp)}", offset.error)
    return offsets


async def run_describe(context: Context) -> int:
    """Print a share group's members and its start offsets with lag."""
    group = context.args.group
    async with connect_admin(context) as admin:
        found = await admin.describe_share_groups([group])
        description = answered(found, group, f"share group {group!r}")
        check_item(f"share group {group!r}", description.error)
        offsets = await _start_offsets(admin, group)
    if description.state in ("", "Dead") and not offsets:
        raise CliError(f"share group {group!r} does not exist", ExitCode.NOT_FOUND)
    document = {
        "group": group,
        "state": description.state,
        "coordinator": description.coordinator,
        "members": [
            member_document(m.member_id, m.client_id, m.client_host, m.assignment)
            for m in description.members
        ],
        "offsets": [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "start_offset": offsets[tp].start_offset,
                "lag": offsets[tp].lag if offsets[tp].lag >= 0 else None,
            }
            for tp in sorted(offsets)
        ],
    }
    return report_description(
        context,
        document,
        kind="share group",
        offsets_title=f"start offsets of {group}",
        offset_columns=["topic", "partition", "start_offset", "lag"],
    )


async def run_reset(context: Context) -> int:
    """Compute and set (unless --dry-run) a share group's start offsets."""
    args = context.args
    async with connect_admin(context) as admin:
        partitions = await topic_partitions(admin, args.topic, args.partition)
        found = await admin.describe_share_groups([args.group])
        description = found.get(args.group)
        if description is not None and description.error is None:
            refuse_active_members(f"share group {args.group!r}", description.members)
        # The "old" column: a partition the group has not started on yet shows none.
        started = await admin.list_share_group_offsets(args.group, [args.topic])
        current = {
            tp: o.start_offset
            for tp, o in started.items()
            if o.error is None and o.start_offset >= 0
        }
        targets = await reset_targets(admin, args, partitions, current)
        if not args.dry_run:
            results = await admin.alter_share_group_offsets(args.group, targets)
            for tp in partitions:  # each result is the partition's error, None for success
                if tp not in results:
                    raise CliError(f"the broker did not answer for {partition_name(tp)}")
                check_item(f"setting the start offset of {partition_name(tp)}", results[tp])
    return report_reset(
        context, f"share group {args.group}", partitions, current, targets, args.dry_run
    )
