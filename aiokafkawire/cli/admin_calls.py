"""How the commands use the admin client: one connection per command, and every item checked.

One decision for every command: the admin client returns each item's result instead of raising
:class:`~aiokafkawire.errors.AdminOperationError` (``raise_on_error=False`` on every per-item
call, made once by :func:`connect_admin`), and the command walks the items it asked for with
:func:`answered_items` and :func:`~aiokafkawire.cli.exit_codes.check_item`.  So each failure is
reported with what the command was doing to which item, with that error's exit code, and a
command can accept some errors (``--if-not-exists``) item by item.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aiokafkawire import errors
from aiokafkawire.cli.exit_codes import CliError, ExitCode

if TYPE_CHECKING:
    from aiokafkawire.admin import Admin, TopicDescription
    from aiokafkawire.cli.app import Context

    #: The admin client :func:`connect_admin` yields: an ``Admin`` whose per-item calls return
    #: every item's result (``raise_on_error=False``) unless told otherwise.
    PerItemAdmin = Admin

K = TypeVar("K")
R = TypeVar("R")


class _PerItemResults:
    """An ``Admin`` whose calls that take ``raise_on_error`` get ``raise_on_error=False``."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._admin, name)
        if inspect.iscoroutinefunction(value) and (
            "raise_on_error" in inspect.signature(value).parameters
        ):
            return functools.partial(value, raise_on_error=False)
        return value


@contextlib.asynccontextmanager
async def connect_admin(context: Context) -> AsyncIterator[PerItemAdmin]:
    """An admin client connected to the cluster, saying so when connecting takes a while; its
    per-item calls return every item's result (see the module docstring)."""
    from aiokafkawire import Admin

    options = context.client_options()
    admin = Admin(**options)
    try:
        async with context.report.waiting_if_slow(f"connecting to {options['bootstrap_servers']}"):
            await admin.start()
        yield cast("PerItemAdmin", _PerItemResults(admin))
    finally:
        await admin.close()


def answered(results: Mapping[K, R], item: K, name: str) -> R:
    """The item's result; none ends the command (``name`` says which, e.g. "topic 'orders'")."""
    result = results.get(item)
    if result is None:
        raise CliError(f"the broker did not answer for {name}")
    return result


def answered_items(
    results: Mapping[K, R], wanted: Iterable[K], name: Callable[[K], str]
) -> Iterator[tuple[K, R]]:
    """Each wanted item with its result, in the order asked (see :func:`answered`)."""
    for item in wanted:
        yield item, answered(results, item, name(item))


def topic_name(topic: str) -> str:
    """A topic as messages name it."""
    return f"topic {topic!r}"


async def existing_topics(admin: PerItemAdmin, names: Iterable[str]) -> dict[str, TopicDescription]:
    """The named topics' metadata; a missing one ends the command (exit code 3) at once."""
    wanted = list(dict.fromkeys(names))
    found = await admin.describe_topics(wanted)
    for name, info in answered_items(found, wanted, topic_name):
        if info.error_code == errors.UnknownTopicOrPartitionError.code:
            raise CliError(f"topic {name!r} does not exist", ExitCode.NOT_FOUND)
        if info.error_code:
            error = errors.error_for_code(info.error_code)(f"topic {name!r}")
            raise CliError(str(error), ExitCode.KAFKA_ERROR)
    return found
