"""``topics list|describe|create|delete|alter-config``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiokafkawire.cli.admin_calls import (
    answered,
    answered_items,
    connect_admin,
    existing_topics,
    topic_name,
)
from aiokafkawire.cli.exit_codes import CliError, ExitCode, check_item
from aiokafkawire.cli.options import (
    add_internal_option,
    add_json_option,
    add_partition_option,
    non_negative_int,
    positive_int,
)

if TYPE_CHECKING:
    from aiokafkawire.cli.app import Context, Parents


# long: one declaration per option, read top to bottom
def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``topics`` and its actions."""
    topics = sub.add_parser(
        "topics", help="list, describe, create, delete topics; change their configuration"
    )
    actions = topics.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = parents.command(
        actions, "list", run_list, help="topic names, one a line (or a table with -l)"
    )
    listing.add_argument(
        "-l", "--long", action="store_true", help="a table with partitions and replication"
    )
    add_internal_option(listing)
    add_json_option(listing)

    describe = parents.command(
        actions,
        "describe",
        run_describe,
        help="partitions, leaders, replicas and the configuration set on topics",
    )
    describe.add_argument("topics", nargs="+", metavar="TOPIC", help="topics to describe")
    describe.add_argument(
        "--all-configs", action="store_true", help="also show configuration left at defaults"
    )
    add_json_option(describe)

    create = parents.command(actions, "create", run_create, help="create topics")
    create.add_argument("topics", nargs="+", metavar="TOPIC", help="topics to create")
    create.add_argument(
        "-p",
        "--partitions",
        type=positive_int,
        default=None,
        help="number of partitions (default: the broker's)",
    )
    create.add_argument(
        "-r",
        "--replication-factor",
        type=positive_int,
        default=None,
        help="copies of each partition (default: the broker's)",
    )
    create.add_argument(
        "-c",
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a topic configuration, e.g. retention.ms=60000 (repeatable)",
    )
    create.add_argument(
        "--if-not-exists", action="store_true", help="succeed when a topic already exists"
    )

    delete = parents.command(actions, "delete", run_delete, help="delete topics")
    delete.add_argument("topics", nargs="+", metavar="TOPIC", help="topics to delete")
    delete.add_argument(
        "--if-exists", action="store_true", help="succeed when a topic does not exist"
    )

    _add_partition_commands(actions, parents)

    alter = parents.command(
        actions, "alter-config", run_alter_config, help="set or remove a topic's configuration"
    )
    alter.add_argument("topic", metavar="TOPIC", help="the topic to change")
    alter.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a configuration value (repeatable)",
    )
    alter.add_argument(
        "--delete",
        action="append",
        default=[],
        metavar="NAME",
        help="return a configuration to its default (repeatable)",
    )


def _add_partition_commands(actions: Any, parents: Parents) -> None:
    """``topics add-partitions`` and ``topics delete-records``."""
    grow = parents.command(
        actions,
        "add-partitions",
        run_add_partitions,
        help="add partitions to a topic",
        description="Add partitions to a topic (never fewer: Kafka cannot remove partitions).  "
        "Keys hash to other partitions afterwards: records of one key may then be in two.",
    )
    grow.add_argument("topic", metavar="TOPIC", help="the topic to grow")
    how_many = grow.add_mutually_exclusive_group(required=True)
    how_many.add_argument("-n", "--num", type=positive_int, metavar="N", help="add N partitions")
    how_many.add_argument(
        "--total", type=positive_int, metavar="N", help="grow to N partitions in all"
    )

    trim = parents.command(
        actions,
        "delete-records",
        run_delete_records,
        help="delete a topic's records before an offset (move the log start)",
        description="Delete the records before --offset N (or every record, --all) in each "
        "partition of the topic (or those given with -p), as kafka-delete-records does.",
    )
    trim.add_argument("topic", metavar="TOPIC", help="the topic")
    add_partition_option(trim)
    before = trim.add_mutually_exclusive_group(required=True)
    before.add_argument(
        "--offset", type=non_negative_int, metavar="N", help="delete the records before offset N"
    )
    before.add_argument(
        "--all", action="store_true", help="delete every record (up to the high watermark)"
    )
    add_json_option(trim)


def parse_configs(pairs: list[str], option: str) -> dict[str, str]:
    """``NAME=VALUE`` strings as a dict; a malformed one is a usage error."""
    configs = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CliError(f"{option} {pair!r}: write it as NAME=VALUE", ExitCode.USAGE)
        configs[name] = value
    return configs


def _replication(info: Any) -> int:
    return max((len(p.replicas) for p in info.partitions.values()), default=0)


async def run_list(context: Context) -> int:
    """Print topic names, or a table of them."""
    args = context.args
    async with connect_admin(context) as admin:
        names = await admin.list_topics(include_internal=args.internal)
        infos = await admin.describe_topics(names) if args.long or args.json else {}
    if args.json:
        context.report.json(
            [
                {
                    "name": name,
                    "partitions": len(infos[name].partitions),
                    "replication": _replication(infos[name]),
                    "internal": infos[name].is_internal,
                }
                for name in names
            ]
        )
        return ExitCode.OK
    if not args.long:
        for name in names:
            context.report.line(name)
        return ExitCode.OK
    rows = []
    for name in names:
        rows.append((name, len(infos[name].partitions), _replication(infos[name])))
    context.report.table(
        ["topic", "partitions", "replication"], rows, right=["partitions", "replication"]
    )
    return ExitCode.OK


def _described(name: str, info: Any, configs: Any, all_configs: bool) -> dict[str, Any]:
    """``topics describe -J``: partitions and configuration (sensitive values are null)."""
    from aiokafkawire import ConfigResource
    from aiokafkawire.admin import ResourceType
    from aiokafkawire.cli.cluster import topic_document

    document = topic_document(info)
    result = configs.get(ConfigResource(ResourceType.TOPIC, name))
    if result is not None:
        check_item(f"configuration of topic {name!r}", result.error)
        document["configs"] = {
            entry.name: None if entry.is_sensitive else entry.value
            for entry in sorted(result.entries.values(), key=lambda e: e.name)
            if all_configs or not entry.is_default
        }
    return document


async def run_describe(context: Context) -> int:
    """Print each topic's partitions and non-default configuration."""
    from aiokafkawire import ConfigResource
    from aiokafkawire.admin import ResourceType

    args = context.args
    report = context.report
    async with connect_admin(context) as admin:
        infos = await existing_topics(admin, args.topics)
        resources = [ConfigResource(ResourceType.TOPIC, name) for name in infos]
        configs = await admin.describe_configs(resources)
    if args.json:
        report.json(
            [_described(name, info, configs, args.all_configs) for name, info in infos.items()]
        )
        return ExitCode.OK
    for name, info in infos.items():
        rows = [
            (p.partition, p.leader, ",".join(map(str, p.replicas)), ",".join(map(str, p.isr)))
            for p in (info.partitions[i] for i in info.partition_ids)
        ]
        report.table(
            ["partition", "leader", "replicas", "isr"],
            rows,
            title=f"topic {name} (id {info.topic_id}): {len(rows)} partition(s)",
            right=["partition", "leader"],
        )
        result = configs.get(ConfigResource(ResourceType.TOPIC, name))
        if result is None:
            continue
        check_item(f"configuration of topic {name!r}", result.error)
        entries = [
            (entry.name, "(sensitive)" if entry.is_sensitive else entry.value)
            for entry in sorted(result.entries.values(), key=lambda e: e.name)
            if args.all_configs or not entry.is_default
        ]
        if entries:
            report.table(["config", "value"], entries, title=f"configuration of {name}")
        else:
            report.line(f"configuration of {name}: all defaults")
    return ExitCode.OK


async def run_create(context: Context) -> int:
    """Create topics; each topic's result is checked."""
    from aiokafkawire import NewTopic
    from aiokafkawire.errors import TopicAlreadyExistsError

    args = context.args
    configs = parse_configs(args.config, "--config")
    wanted = [
        NewTopic(
            name,
            num_partitions=args.partitions or -1,
            replication_factor=args.replication_factor or -1,
            configs=configs,
        )
        for name in args.topics
    ]
    async with connect_admin(context) as admin:
        results = await admin.create_topics(wanted)
    for name, result in answered_items(results, args.topics, topic_name):
        if isinstance(result.error, TopicAlreadyExistsError) and args.if_not_exists:
            context.report.info(f"topic {name} already exists")
            continue
        check_item(f"creating topic {name!r}", result.error)
        partitions = (
            f" with {result.num_partitions} partition(s)" if result.num_partitions > 0 else ""
        )
        context.report.info(f"created topic {name}{partitions}")
    return ExitCode.OK


async def run_delete(context: Context) -> int:
    """Delete topics; each topic's result is checked."""
    from aiokafkawire.errors import UnknownTopicOrPartitionError

    args = context.args
    async with connect_admin(context) as admin:
        results = await admin.delete_topics(args.topics)
    for name, result in answered_items(results, args.topics, topic_name):
        if isinstance(result.error, UnknownTopicOrPartitionError):
            if args.if_exists:
                context.report.info(f"topic {name} does not exist")
                continue
            raise CliError(f"topic {name!r} does not exist", ExitCode.NOT_FOUND)
        check_item(f"deleting topic {name!r}", result.error)
        context.report.info(f"deleted topic {name}")
    return ExitCode.OK


async def run_alter_config(context: Context) -> int:
    """Set and delete configuration values of one topic."""
    from aiokafkawire import ConfigResource
    from aiokafkawire.admin import ResourceType

    args = context.args
    changes: dict[str, str | None] = dict(parse_configs(args.set, "--set"))
    changes.update(dict.fromkeys(args.delete))
    if not changes:
        raise CliError("alter-config needs --set NAME=VALUE or --delete NAME", ExitCode.USAGE)
    resource = ConfigResource(ResourceType.TOPIC, args.topic)
    async with connect_admin(context) as admin:
        await existing_topics(admin, [args.topic])
        results = await admin.alter_configs({resource: changes})
    result = answered(results, resource, topic_name(args.topic))
    check_item(f"changing the configuration of topic {args.topic!r}", result.error)
    for name, value in changes.items():
        what = f"{name}={value}" if value is not None else f"{name} back to its default"
        context.report.info(f"topic {args.topic}: {what}")
    return ExitCode.OK


async def run_add_partitions(context: Context) -> int:
    """Grow a topic to more partitions."""
    args = context.args
    async with connect_admin(context) as admin:
        current = len((await existing_topics(admin, [args.topic]))[args.topic].partitions)
        total = args.total if args.total is not None else current + args.num
        if total <= current:
            raise CliError(
                f"topic {args.topic!r} has {current} partition(s) already; Kafka cannot remove "
                "partitions",
                ExitCode.USAGE,
            )
        results = await admin.create_partitions({args.topic: total})
    result = answered(results, args.topic, topic_name(args.topic))
    check_item(f"adding partitions to topic {args.topic!r}", result.error)
    context.report.info(f"topic {args.topic}: {current} -> {total} partitions")
    return ExitCode.OK


async def run_delete_records(context: Context) -> int:
    """Move the log start of a topic's partitions."""
    from aiokafkawire.cli.offsets import partition_name, topic_partitions

    args = context.args
    # -1 asks the broker for the high watermark: every record.
    before = -1 if args.all else args.offset
    async with connect_admin(context) as admin:
        partitions = await topic_partitions(admin, args.topic, args.partition)
        results = await admin.delete_records(dict.fromkeys(partitions, before))
    rows = []
    for tp, (low_watermark, error) in answered_items(results, partitions, partition_name):
        check_item(f"deleting records of {partition_name(tp)}", error)
        rows.append((tp.partition, low_watermark))
    if args.json:
        context.report.json(
            {
                "topic": args.topic,
                "partitions": [{"partition": p, "low_watermark": low} for p, low in rows],
            }
        )
    else:
        context.report.table(
            ["partition", "earliest"],
            rows,
            title=f"topic {args.topic}: records deleted, new earliest offsets",
            right=["partition", "earliest"],
        )
    return ExitCode.OK
