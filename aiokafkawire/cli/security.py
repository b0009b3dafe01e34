"""``acls list|create|delete`` and ``users list|create|delete`` (SCRAM credentials).

ACL options follow ``kafka-acls.sh``: a resource (``--topic``, ``--group``, ``--cluster``,
``--transactional-id``), ``--principal User:NAME``, ``--operation`` (repeatable), ``--deny``
(default: allow), ``--host`` and ``--prefixed``.  A SCRAM password never comes from the command
line: ``--password-env VAR`` names the environment variable holding it, or it is asked for at
the terminal; only its salted form leaves the machine.
"""

from __future__ import annotations

import getpass
import os
import sys
from typing import TYPE_CHECKING, Any

from aiokafkawire.cli.admin_calls import answered, answered_items, connect_admin
from aiokafkawire.cli.exit_codes import CliError, ExitCode, check_item
from aiokafkawire.cli.options import add_json_option, positive_int

if TYPE_CHECKING:
    from aiokafkawire.admin import AclBinding, AclBindingFilter
    from aiokafkawire.cli.app import Context, Parents

OPERATIONS = (
    "all", "read", "write", "create", "delete", "alter", "describe", "cluster_action",
    "describe_configs", "alter_configs", "idempotent_write",
)  # fmt: skip
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _add_resource_options(parser: Any, *, for_filter: bool) -> None:
    resource = parser.add_mutually_exclusive_group(required=not for_filter)
    resource.add_argument("--topic", metavar="NAME", help="a topic (or prefix, --prefixed)")
    resource.add_argument("--group", metavar="NAME", help="a consumer group")
    resource.add_argument("--transactional-id", metavar="ID", help="a transactional id")
    resource.add_argument("--cluster", action="store_true", help="the cluster")
    parser.add_argument(
        "--prefixed",
        action="store_true",
        help="the name is a prefix: the binding applies to every resource it starts",
    )
    parser.add_argument(
        "--principal", metavar="TYPE:NAME", help="who, e.g. User:alice (User:* for anyone)"
    )
    parser.add_argument(
        "--operation",
        action="append",
        choices=OPERATIONS,
        metavar="OP",
        help=f"an operation (repeatable): {', '.join(OPERATIONS)}",
    )
    parser.add_argument("--host", help="the client host (default: * for any)")
    parser.add_argument("--deny", action="store_true", help="a DENY binding (default: ALLOW)")


# long: one declaration per option of two command groups, read top to bottom
def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``acls`` and ``users``."""
    acls = sub.add_parser("acls", help="list, create and delete ACL bindings")
    actions = acls.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = parents.command(
        actions, "list", run_acls_list, help="ACL bindings (those matching the options given)"
    )
    _add_resource_options(listing, for_filter=True)
    add_json_option(listing)
    create = parents.command(
        actions,
        "create",
        run_acls_create,
        help="create ACL bindings: one per --operation",
        description="Create one binding per --operation for the principal on the resource, e.g. "
        "'acls create --principal User:alice --operation read --operation describe --topic "
        "orders'.  The cluster needs an authorizer.",
    )
    _add_resource_options(create, for_filter=False)
    delete = parents.command(
        actions,
        "delete",
        run_acls_delete,
        help="delete the ACL bindings matching the options (at least a resource or principal)",
    )
    _add_resource_options(delete, for_filter=True)

    users = sub.add_parser("users", help="list, create and delete SCRAM users")
    user_actions = users.add_subparsers(dest="action", metavar="ACTION", required=True)
    user_list = parents.command(
        user_actions, "list", run_users_list, help="users with SCRAM credentials"
    )
    add_json_option(user_list)
    user_create = parents.command(
        user_actions,
        "create",
        run_users_create,
        help="create a SCRAM user, or change its password",
        description="Create (or replace) a user's SCRAM credential.  The password is read from "
        "the environment variable named by --password-env, or asked for at the terminal; it "
        "is salted here and never sent.",
    )
    user_create.add_argument("user", metavar="USER", help="the user name")
    user_create.add_argument(
        "--mechanism", choices=MECHANISMS, default="SCRAM-SHA-512", help="default: SCRAM-SHA-512"
    )
    user_create.add_argument(
        "--iterations", type=positive_int, default=8192, help="PBKDF2 iterations (default: 8192)"
    )
    user_create.add_argument(
        "--password-env", metavar="VAR", help="environment variable holding the new password"
    )
    user_delete = parents.command(
        user_actions, "delete", run_users_delete, help="delete a user's SCRAM credential"
    )
    user_delete.add_argument("user", metavar="USER", help="the user name")
    user_delete.add_argument(
        "--mechanism", choices=MECHANISMS, default="SCRAM-SHA-512", help="default: SCRAM-SHA-512"
    )


def _resource(args: Any) -> tuple[Any, str | None]:
    from aiokafkawire.admin import AclResourceType

    if args.topic is not None:
        return AclResourceType.TOPIC, args.topic
    if args.group is not None:
        return AclResourceType.GROUP, args.group
    if args.transactional_id is not None:
        return AclResourceType.TRANSACTIONAL_ID, args.transactional_id
    if args.cluster:
        return AclResourceType.CLUSTER, "kafka-cluster"
    return AclResourceType.ANY, None


def _filter(args: Any) -> AclBindingFilter:
    """The options as a binding filter (what is not given matches anything)."""
    from aiokafkawire.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        PatternType,
    )

    resource_type, name = _resource(args)
    if args.operation is not None and len(args.operation) > 1:
        raise CliError("a filter takes one --operation (or none: any)", ExitCode.USAGE)
    pattern = PatternType.PREFIXED if args.prefixed else PatternType.ANY
    if name is not None and not args.prefixed:
        pattern = PatternType.LITERAL
    return AclBindingFilter(
        resource_type=resource_type,
        resource_name=name,
        pattern_type=pattern,
        principal=args.principal,
        host=args.host,
        operation=AclOperation[args.operation[0].upper()] if args.operation else AclOperation.ANY,
        permission_type=AclPermissionType.DENY if args.deny else AclPermissionType.ANY,
    )


def _binding_document(binding: AclBinding) -> dict[str, Any]:
    return {
        "resource_type": binding.resource_type.name.lower(),
        "resource_name": binding.resource_name,
        "pattern_type": binding.pattern_type.name.lower(),
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation.name.lower(),
        "permission": binding.permission_type.name.lower(),
    }


_ACL_COLUMNS = ["resource", "name", "pattern", "principal", "host", "operation", "permission"]


async def run_acls_list(context: Context) -> int:
    """Print the bindings matching the options."""
    async with connect_admin(context) as admin:
        bindings = await admin.describe_acls(_filter(context.args))
    documents = [_binding_document(b) for b in bindings]
    if context.args.json:
        context.report.json(documents)
    else:
        context.report.table(_ACL_COLUMNS, [tuple(d.values()) for d in documents])
    return ExitCode.OK


async def run_acls_create(context: Context) -> int:
    """Create one binding per operation."""
    from aiokafkawire.admin import AclBinding, AclOperation, AclPermissionType, PatternType

    args = context.args
    if args.principal is None or not args.operation:
        raise CliError("acls create needs --principal and at least one --operation", ExitCode.USAGE)
    resource_type, name = _resource(args)
    assert name is not None  # a resource is required here
    bindings = [
        AclBinding(
            resource_type=resource_type,
            resource_name=name,
            pattern_type=PatternType.PREFIXED if args.prefixed else PatternType.LITERAL,
            principal=args.principal,
            host=args.host or "*",
            operation=AclOperation[operation.upper()],
            permission_type=AclPermissionType.DENY if args.deny else AclPermissionType.ALLOW,
        )
        for operation in dict.fromkeys(args.operation)
    ]
    async with connect_admin(context) as admin:
        results = await admin.create_acls(bindings)
    for binding in bindings:
        what = f"{binding.operation.name} on {binding.resource_type.name} {name!r}"
        check_item(f"creating ACL {what}", answered(results, binding, f"ACL {what}").error)
        context.report.info(
            f"created: {binding.permission_type.name} {binding.principal} {what}"
            f" from host {binding.host}"
        )
    return ExitCode.OK


async def run_acls_delete(context: Context) -> int:
    """Delete the bindings matching the options."""
    args = context.args
    acl_filter = _filter(args)
    if acl_filter.resource_name is None and not args.cluster and args.principal is None:
        raise CliError(
            "acls delete needs a resource (--topic, --group, --transactional-id, --cluster) or "
            "--principal: it would delete every ACL of the cluster",
            ExitCode.USAGE,
        )
    async with connect_admin(context) as admin:
        results = await admin.delete_acls([acl_filter])
    result = answered(results, acl_filter, "the ACL filter")
    check_item("deleting ACLs", result.error)
    for deleted in result.deleted:
        check_item("deleting an ACL", deleted.error)
        d = _binding_document(deleted.binding)
        context.report.info(
            f"deleted: {d['permission']} {d['principal']} {d['operation']} on "
            f"{d['resource_type']} {d['resource_name']!r} ({d['pattern_type']})"
        )
    context.report.info(f"{len(result.deleted)} ACL binding(s) deleted")
    return ExitCode.OK


async def run_users_list(context: Context) -> int:
    """Print the users with SCRAM credentials."""
    async with connect_admin(context) as admin:
        found = await admin.describe_user_scram_credentials()
    rows = []
    for user in sorted(found):
        check_item(f"user {user!r}", found[user].error)
        for credential in found[user].credentials:
            rows.append((user, credential.mechanism.mechanism_name, credential.iterations))
    if context.args.json:
        context.report.json([{"user": u, "mechanism": m, "iterations": i} for u, m, i in rows])
    else:
        context.report.table(["user", "mechanism", "iterations"], rows, right=["iterations"])
    return ExitCode.OK


def _new_password(args: Any) -> str:
    if args.password_env:
        password = os.environ.get(args.password_env)
        if password is None:
            raise CliError(f"--password-env: {args.password_env} is not set", ExitCode.USAGE)
        return password
    if not sys.stdin.isatty():
        raise CliError(
            "no password: name the environment variable holding it with --password-env, or "
            "run at a terminal to be asked for it",
            ExitCode.USAGE,
        )
    password = getpass.getpass(f"new password for {args.user}: ")
    if password != getpass.getpass("again: "):
        raise CliError("the passwords differ", ExitCode.USAGE)
    return password


def _mechanism(name: str) -> Any:
    from aiokafkawire.admin import ScramMechanism

    return ScramMechanism[name.replace("-", "_")]


async def run_users_create(context: Context) -> int:
    """Create or replace a user's SCRAM credential."""
    from aiokafkawire.admin import ScramUpsertion

    args = context.args
    password = _new_password(args)
    change = ScramUpsertion(args.user, _mechanism(args.mechanism), password, args.iterations)
    async with connect_admin(context) as admin:
        results = await admin.alter_user_scram_credentials([change])
    check_item(f"user {args.user!r}", answered(results, args.user, f"user {args.user!r}").error)
    context.report.info(f"user {args.user}: {args.mechanism} credential set")
    return ExitCode.OK


async def run_users_delete(context: Context) -> int:
    """Delete a user's SCRAM credential."""
    from aiokafkawire.admin import ScramDeletion

    args = context.args
    change = ScramDeletion(args.user, _mechanism(args.mechanism))
    async with connect_admin(context) as admin:
        results = await admin.alter_user_scram_credentials([change])
    for user, result in answered_items(results, [args.user], lambda u: f"user {u!r}"):
        check_item(f"deleting {args.mechanism} credential of user {user!r}", result.error)
    context.report.info(f"user {args.user}: {args.mechanism} credential deleted")
    return ExitCode.OK
