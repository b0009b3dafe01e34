"""What ``groups`` and ``share-groups`` share: one shape for listing, describing and resetting.

Each command builds a plain document first (what ``-J`` prints); the tables are drawn from that
same document, so the JSON and the tables cannot disagree.  ``reset`` computes its target offsets
with one function (earliest, latest, an offset, a timestamp, a shift), refuses a group that still
has members the same way, and prints the old and the new offset of each partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from aiokafkawire.cli.exit_codes import CliError, ExitCode
from aiokafkawire.cli.offsets import lookup_offsets, partition_name
from aiokafkawire.cli.options import add_partition_option, non_negative_int, timestamp_ms

if TYPE_CHECKING:
    from aiokafkawire.cli.admin_calls import PerItemAdmin
    from aiokafkawire.cli.app import Context
    from aiokafkawire.structs import TopicPartition


def add_reset_options(reset: Any, *, offsets: str, shift: bool) -> None:
    """``--topic``, ``-p`` and the target options of a reset command (``--shift-by`` only when
    ``shift``); ``offsets`` names what changes ("committed offsets", "start offsets")."""
    reset.add_argument("group", metavar="GROUP", help="the group id")
    reset.add_argument("--topic", required=True, help=f"the topic whose {offsets} change")
    add_partition_option(reset)
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--to-earliest", action="store_true", help="to each partition's earliest offset"
    )
    target.add_argument("--to-latest", action="store_true", help="to each partition's end")
    target.add_argument(
        "--to-offset", type=non_negative_int, metavar="N", help="to offset N in each partition"
    )
    target.add_argument(
        "--to-timestamp",
        type=timestamp_ms,
        metavar="TIME",
        help="to the first offset at or after TIME (milliseconds since the epoch, or ISO 8601)",
    )
    if shift:
        target.add_argument(
            "--shift-by",
            type=int,
            metavar="N",
            help="move each current offset by N (negative: back), within the partition's range",
        )
    reset.add_argument(
        "--dry-run", action="store_true", help=f"show the new {offsets} without setting them"
    )


async def reset_targets(
    admin: PerItemAdmin,
    args: Any,
    partitions: list[TopicPartition],
    current: dict[TopicPartition, int],
) -> dict[TopicPartition, int]:
    """The new offset of each partition for the reset options in ``args`` (``current``: the
    group's offsets now, which ``--shift-by`` moves)."""
    from aiokafkawire.admin import OffsetSpec

    if args.to_offset is not None:
        return dict.fromkeys(partitions, args.to_offset)
    earliest = await lookup_offsets(admin, partitions, OffsetSpec.earliest())
    if args.to_earliest:
        return earliest
    latest = await lookup_offsets(admin, partitions, OffsetSpec.latest())
    if args.to_latest:
        return latest
    if args.to_timestamp is not None:
        found = await lookup_offsets(admin, partitions, OffsetSpec.for_timestamp(args.to_timestamp))
        # No record at or after the time: the end, as Kafka's own tool does.
        return {tp: found[tp] if found[tp] >= 0 else latest[tp] for tp in partitions}
    targets = {}
    for tp in partitions:
        if tp not in current:
            raise CliError(
                f"--shift-by: group {args.group!r} has no offset for {partition_name(tp)}",
                ExitCode.NOT_FOUND,
            )
        targets[tp] = min(max(current[tp] + args.shift_by, earliest[tp]), latest[tp])
    return targets


def refuse_active_members(what: str, members: Sequence[object]) -> None:
    """A reset needs a group without members: CliError naming ``what`` ("group 'g'") if not."""
    if members:
        raise CliError(
            f"{what} has {len(members)} active member(s); stop its consumers before resetting "
            "its offsets"
        )


def report_reset(
    context: Context,
    title: str,
    partitions: list[TopicPartition],
    current: dict[TopicPartition, int],
    targets: dict[TopicPartition, int],
    dry_run: bool,
) -> int:
    """The old and the new offset of each partition a reset touched."""
    context.report.table(
        ["topic", "partition", "old", "new"],
        [(tp.topic, tp.partition, current.get(tp), targets[tp]) for tp in partitions],
        title=f"{title}: "
        + ("new offsets (dry run, nothing set)" if dry_run else "new offsets set"),
        right=["partition", "old", "new"],
    )
    return ExitCode.OK


def member_document(
    member_id: str, client_id: str, host: str, assigned: Iterable[TopicPartition]
) -> dict[str, Any]:
    """A member as ``describe -J`` shows it."""
    return {
        "member_id": member_id,
        "client_id": client_id,
        "host": host,
        "assigned": [{"topic": tp.topic, "partition": tp.partition} for tp in assigned],
    }


def report_listing(context: Context, rows: list[dict[str, Any]], columns: Sequence[str]) -> int:
    """``list``: the rows as one JSON document, or as a table of ``columns`` (their keys)."""
    if context.args.json:
        context.report.json(rows)
    else:
        context.report.table(
            list(columns), [tuple(row[c] for c in columns) for row in rows], right=["coordinator"]
        )
    return ExitCode.OK


def report_description(
    context: Context,
    document: dict[str, Any],
    *,
    kind: str,
    offsets_title: str,
    offset_columns: Sequence[str],
) -> int:
    """``describe``: ``document`` as JSON, or its members and its offsets as two tables.

    ``document`` has ``group``, ``state``, ``coordinator``, ``members`` (None when the broker
    cannot describe the group) and ``offsets`` (rows with ``offset_columns`` as keys); ``kind``
    names the group in the members table's title ("group", "share group")."""
    report = context.report
    if context.args.json:
        report.json(document)
        return ExitCode.OK
    members = document["members"]
    if members is None:
        report.info("the broker cannot describe groups (no DescribeGroups): members unknown")
    else:
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
            title=f"{kind} {document['group']}: {document['state'] or 'unknown state'}, "
            f"{len(members)} member(s), coordinator {document['coordinator']}",
        )
    report.table(
        [c.replace("_", " ") for c in offset_columns],
        [tuple(row[c] for c in offset_columns) for row in document["offsets"]],
        title=offsets_title,
        right=[c.replace("_", " ") for c in offset_columns if c not in ("topic", "member")],
    )
    return ExitCode.OK
