"""``groups list|describe|delete|reset-offsets``: consumer groups, their members and their lag."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiokafkawire import errors
from aiokafkawire.cli.admin_calls import answered, answered_items, connect_admin
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
from aiokafkawire.cli.offsets import lookup_offsets, partition_name, topic_partitions
from aiokafkawire.cli.options import add_json_option, add_partition_option

if TYPE_CHECKING:
    from aiokafkawire.admin import GroupDescription, GroupOffset
    from aiokafkawire.cli.admin_calls import PerItemAdmin
    from aiokafkawire.cli.app import Context, Parents
    from aiokafkawire.structs import TopicPartition


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``groups`` and its actions."""
    groups = sub.add_parser(
        "groups", help="list, describe (members, offsets, lag), delete groups; reset offsets"
    )
    actions = groups.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = parents.command(actions, "list", run_list, help="every group, with state")
    add_json_option(listing)

    describe = parents.command(
        actions,
        "describe",
        run_describe,
        help="a group's members and assignments, committed offsets and lag per partition",
        description="Show a group's state and members, and for each partition it committed: "
        "the committed offset, the partition's latest offset, the lag between them, and the "
        "member it is assigned to.",
    )
    describe.add_argument("group", metavar="GROUP", help="the group id")
    add_json_option(describe)

    delete = parents.command(
        actions, "delete", run_delete, help="delete groups that have no members"
    )
    delete.add_argument("groups", nargs="+", metavar="GROUP", help="group ids")

    forget = parents.command(
        actions,
        "delete-offsets",
        run_delete_offsets,
        help="delete a group's committed offsets for a topic it no longer reads",
    )
    forget.add_argument("group", metavar="GROUP", help="the group id")
    forget.add_argument("--topic", required=True, help="the topic whose offsets go")
    add_partition_option(forget)
    reset = parents.command(
        actions,
        "reset-offsets",
        run_reset_offsets,
        help="set a group's committed offsets for a topic (the group must have no members)",
    )
    add_reset_options(reset, offsets="committed offsets", shift=True)


async def run_list(context: Context) -> int:
    """Print every group."""
    async with connect_admin(context) as admin:
        listings = await admin.list_groups()
    rows = [
        {
            "group": g.group_id,
            "state": g.state,
            "type": g.group_type,
            "protocol": g.protocol_type,
            "coordinator": g.coordinator,
        }
        for g in listings
    ]
    return report_listing(context, rows, ["group", "state", "type", "protocol", "coordinator"])


def _group_name(group: str) -> str:
    return f"group {group!r}"


async def _describe(admin: PerItemAdmin, group: str) -> GroupDescription | None:
    """The group's description, or None when the broker cannot describe groups."""
    try:
        found = await admin.describe_groups([group])
    except errors.UnsupportedVersionForBrokerError:
        return None
    description = answered(found, group, _group_name(group))
    check_item(f"group {group!r}", description.error)
    return description


async def _committed(admin: PerItemAdmin, group: str) -> dict[TopicPartition, GroupOffset]:
    offsets = await admin.list_group_offsets(group)
    for tp, committed in offsets.items():
        check_item(f"committed offset of {partition_name(tp)}", committed.error)
    return {tp: o for tp, o in offsets.items() if o.offset >= 0}


def _group_document(
    group: str,
    description: GroupDescription | None,
    committed: dict[TopicPartition, GroupOffset],
    ends: dict[TopicPartition, int],
) -> dict[str, Any]:
    """``groups describe -J``: state, members (null when the broker cannot describe groups)
    and each committed partition's offset, end and lag."""
    owner: dict[TopicPartition, str] = {}
    members = None
    if description is not None:
        members = []
        for member in description.members:
            owner.update(dict.fromkeys(member.assigned_partitions, member.member_id))
            members.append(
                member_document(
                    member.member_id,
                    member.client_id,
                    member.client_host,
                    member.assigned_partitions,
                )
            )
    offsets = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "committed": committed[tp].offset,
            "end": ends[tp],
            "lag": max(ends[tp] - committed[tp].offset, 0),
            "member": owner.get(tp),
        }
        for tp in sorted(committed)
    ]
    return {
        "group": group,
        "state": description.state if description is not None else None,
        "coordinator": description.coordinator if description is not None else None,
        "members": members,
        "offsets": offsets,
        "total_lag": sum(row["lag"] for row in offsets),
    }


async def run_describe(context: Context) -> int:
    """Print a group's members and its offsets with lag."""
    from aiokafkawire.admin import OffsetSpec

    group = context.args.group
    async with connect_admin(context) as admin:
        description = await _describe(admin, group)
        committed = await _committed(admin, group)
        if not committed and (description is None or not description.members):
            # Kafka describes an unknown group as Dead, Tansu as Empty: with no members and no
            # committed offsets there is nothing to show either way.
            raise CliError(
                f"group {group!r} does not exist (no members, no committed offsets)",
                ExitCode.NOT_FOUND,
            )
        ends = await lookup_offsets(admin, list(committed), OffsetSpec.latest())
    document = _group_document(group, description, committed, ends)
    return report_description(
        context,
        document,
        kind="group",
        offsets_title=f"committed offsets of {group}: total lag {document['total_lag']}",
        offset_columns=["topic", "partition", "committed", "end", "lag", "member"],
    )


async def run_delete(context: Context) -> int:
    """Delete groups; each group's result is checked."""
    groups = context.args.groups
    async with connect_admin(context) as admin:
        results = await admin.delete_groups(groups)
    for group, result in answered_items(results, groups, _group_name):
        if isinstance(result.error, errors.GroupIdNotFoundError):
            raise CliError(f"group {group!r} does not exist", ExitCode.NOT_FOUND)
        if isinstance(result.error, errors.NonEmptyGroupError):
            raise CliError(f"group {group!r} still has members; stop its consumers first")
        check_item(f"deleting group {group!r}", result.error)
        context.report.info(f"deleted group {group}")
    return ExitCode.OK


async def run_reset_offsets(context: Context) -> int:
    """Compute and commit (unless --dry-run) new offsets for a group."""
    args = context.args
    async with connect_admin(context) as admin:
        partitions = await topic_partitions(admin, args.topic, args.partition)
        description = await _describe(admin, args.group)
        if description is not None:
            refuse_active_members(f"group {args.group!r}", description.members)
        current = {tp: o.offset for tp, o in (await _committed(admin, args.group)).items()}
        targets = await reset_targets(admin, args, partitions, current)
        if not args.dry_run:
            results = await admin.alter_group_offsets(args.group, targets)
            for tp, result in answered_items(results, partitions, partition_name):
                check_item(f"committing {partition_name(tp)}", result.error)
    return report_reset(context, f"group {args.group}", partitions, current, targets, args.dry_run)


async def run_delete_offsets(context: Context) -> int:
    """Delete a group's committed offsets of a topic's partitions."""
    args = context.args
    async with connect_admin(context) as admin:
        partitions = await topic_partitions(admin, args.topic, args.partition)
        results = await admin.delete_group_offsets(args.group, partitions)
    for tp, result in answered_items(results, partitions, partition_name):
        if isinstance(result.error, errors.GroupSubscribedToTopicError):
            raise CliError(
                f"group {args.group!r} still reads topic {args.topic!r}; stop its consumers "
                "(or unsubscribe them from the topic) first"
            )
        if isinstance(result.error, errors.GroupIdNotFoundError):
            raise CliError(f"group {args.group!r} does not exist", ExitCode.NOT_FOUND)
        check_item(f"deleting the offset of {partition_name(tp)}", result.error)
    context.report.info(
        f"group {args.group}: committed offsets of {len(partitions)} partition(s) of "
        f"{args.topic} deleted"
    )
    return ExitCode.OK
