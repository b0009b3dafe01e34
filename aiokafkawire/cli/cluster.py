"""``broker``, ``metadata`` and ``versions``: the embedded broker and what a cluster reports."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from aiokafkawire import errors
from aiokafkawire.cli.admin_calls import connect_admin, existing_topics
from aiokafkawire.cli.exit_codes import ExitCode
from aiokafkawire.cli.options import add_internal_option, add_json_option, positive_int

if TYPE_CHECKING:
    from aiokafkawire.cli.app import Context, Parents


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``broker``, ``metadata`` and ``versions``."""
    broker = sub.add_parser(
        "broker",
        parents=[parents.reporting],
        help="run an embedded broker in the foreground, for trying things",
        description="Start an embedded Tansu broker (in-memory storage, no setup) and print its "
        "address on stdout; it runs until Ctrl-C.  Point the other commands at it with "
        "-b ADDRESS.",
    )
    broker.add_argument(
        "--port", type=positive_int, help="port to listen on (default: a free port)"
    )
    broker.set_defaults(handler=run_broker, graceful=True)

    metadata = parents.command(
        sub,
        "metadata",
        run_metadata,
        help="brokers, topics, partitions, leaders, replicas and ISR",
        description="Show the cluster's brokers and controller, and each topic's partitions "
        "with leader, replicas and in-sync replicas.",
    )
    metadata.add_argument(
        "topics", nargs="*", metavar="TOPIC", help="only these topics (default: all)"
    )
    add_internal_option(metadata)
    add_json_option(metadata)

    parents.command(
        sub,
        "versions",
        run_versions,
        help="API versions the broker supports and the ones used",
        description="Show each API's version range on the broker and in this client, and the "
        "version this client uses with that broker.",
    )


async def run_broker(context: Context) -> int:
    """Run an embedded Tansu broker until Ctrl-C."""
    from aiokafkawire.testing import TansuBroker

    report = context.report
    async with TansuBroker(port=context.args.port) as broker:
        report.line(broker.bootstrap_servers)
        report.info(
            f"embedded Tansu broker listening on {broker.bootstrap_servers} (in-memory storage); "
            "Ctrl-C stops it"
        )
        await context.stop.wait()
        report.info("stopping the broker")
    return ExitCode.OK


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


def _metadata_document(cluster: Any, topics: dict[str, Any]) -> dict[str, Any]:
    """``metadata -J``: the cluster, its brokers, and each topic's partitions."""
    return {
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id,
        "brokers": [
            {"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in sorted(cluster.brokers, key=lambda b: b.node_id)
        ],
        "topics": [topic_document(topics[name]) for name in sorted(topics)],
    }


def topic_document(info: Any) -> dict[str, Any]:
    """A topic's metadata as JSON: name, id, and each partition's leader, replicas and ISR."""
    partitions = []
    for partition in info.partition_ids:
        p = info.partitions[partition]
        partitions.append(
            {
                "partition": partition,
                "leader": p.leader,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "error": errors.error_for_code(p.error_code).name if p.error_code else None,
            }
        )
    return {
        "name": info.name,
        "topic_id": str(info.topic_id) if info.topic_id is not None else None,
        "partitions": partitions,
    }


async def run_metadata(context: Context) -> int:
    """Print brokers and topic partitions."""
    args: argparse.Namespace = context.args
    report = context.report
    async with connect_admin(context) as admin:
        cluster = await admin.describe_cluster()
        if args.topics:
            topics = await existing_topics(admin, args.topics)
        else:
            names = await admin.list_topics(include_internal=args.internal)
            topics = await admin.describe_topics(names)
    if args.json:
        report.json(_metadata_document(cluster, topics))
        return ExitCode.OK
    report.table(
        ["broker", "host", "port", "rack", "role"],
        [
            (
                b.node_id,
                b.host,
                b.port,
                b.rack,
                "controller" if b.node_id == cluster.controller_id else "",
            )
            for b in sorted(cluster.brokers, key=lambda b: b.node_id)
        ],
        title=f"cluster {cluster.cluster_id or '(no id)'}: {len(cluster.brokers)} broker(s)",
        right=["broker", "port"],
    )
    rows = []
    for name in sorted(topics):
        info = topics[name]
        for partition in info.partition_ids:
            p = info.partitions[partition]
            error = errors.error_for_code(p.error_code).name if p.error_code else ""
            rows.append((name, partition, p.leader, _ids(p.replicas), _ids(p.isr), error))
    report.table(
        ["topic", "partition", "leader", "replicas", "isr", "error"],
        rows,
        title=f"{len(topics)} topic(s), {len(rows)} partition(s)",
        right=["partition", "leader"],
    )
    return ExitCode.OK


async def run_versions(context: Context) -> int:
    """Print the API versions of the first broker reached."""
    from aiokafkawire.protocol import ApiKey

    async with connect_admin(context) as admin:
        connection = await admin.cluster.any_connection()
        policy = connection.versions
        rows = []
        for key, (low, high) in sorted(policy.broker_versions.items()):
            try:
                name = ApiKey(key).name
            except ValueError:
                name = str(key)
            client = policy.client_versions.get(key)
            used = policy.version_for(key) if policy.supports(key) else None
            rows.append(
                (key, name, f"{low}-{high}", f"{client[0]}-{client[1]}" if client else None, used)
            )
    context.report.table(["key", "API", "broker", "client", "used"], rows, right=["key", "used"])
    return ExitCode.OK
