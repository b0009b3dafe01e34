"""The ``aiokafkawire`` command: its parser, how a command runs, and how it ends.

Each command module adds its sub-commands with ``add_commands(subparsers, parents)`` and sets a
``handler``: a coroutine function taking the :class:`Context` and returning an exit code.
Errors end the process with one line on stderr (a traceback only with ``--debug``) and the exit
code of :mod:`aiokafkawire.cli.exit_codes`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire import __version__, errors
from aiokafkawire.cli import (
    bench,
    cluster,
    consume,
    groups,
    offsets,
    produce,
    security,
    share_groups,
    topics,
)
from aiokafkawire.cli.exit_codes import CliError, ExitCode, exit_code_for
from aiokafkawire.cli.options import (
    apply_profile,
    client_options,
    connection_options,
    reporting_options,
)
from aiokafkawire.cli.output import Reporter
from aiokafkawire.cli.settings import for_client, load_profile, parse_x_options

Handler = Callable[["Context"], Awaitable[int]]

_DESCRIPTION = """\
A command line for Apache Kafka, built on aiokafkawire.

Start with "aiokafkawire demo" (an embedded broker, no setup), or "aiokafkawire broker" to keep
one running and point the other commands at the address it prints with -b/--bootstrap-servers.
"""

_EPILOG = """\
exit codes:
  0    success
  1    the cluster refused or failed the operation (a Kafka error)
  2    usage: a bad option or argument
  3    not found: a topic or group that does not exist
  4    the cluster could not be reached, or an operation timed out
  5    authentication or authorization failed
  130  interrupted (Ctrl-C)

"aiokafkawire COMMAND --help" describes each command's options.
"""


@dataclass
class Parents:
    """Parent parsers whose options sub-commands share."""

    connection: argparse.ArgumentParser
    reporting: argparse.ArgumentParser

    def both(self) -> list[argparse.ArgumentParser]:
        """Connection and reporting options: what commands that talk to a cluster take."""
        return [self.connection, self.reporting]

    def command(
        self,
        sub: Any,
        name: str,
        handler: Handler,
        *,
        help: str,
        description: str | None = None,
        **defaults: Any,
    ) -> argparse.ArgumentParser:
        """A sub-command of ``sub`` that talks to a cluster (connection and reporting options),
        run by ``handler``; ``defaults`` are more attributes its parsed arguments get."""
        parser: argparse.ArgumentParser = sub.add_parser(
            name, parents=self.both(), help=help, description=description
        )
        parser.set_defaults(handler=handler, **defaults)
        return parser


@dataclass
class Context:
    """What a running command gets: its arguments, its output, and the Ctrl-C event."""

    args: argparse.Namespace
    report: Reporter
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    interrupted: bool = False
    settings: dict[str, str] = field(default_factory=dict)
    _client_options: dict[str, Any] | None = None

    def client_options(
        self, client: str = "admin", defaults: dict[str, Any] | None = None, **overrides: Any
    ) -> dict[str, Any]:
        """Options for a ``client`` ("admin", "producer", "consumer" or "share"): the
        connection options (computed once), then ``defaults``, the config profile's and ``-X``
        options that client takes, and the command's ``overrides``, each over the one before."""
        if self._client_options is None:
            self._client_options = client_options(self.args)
        return {
            **self._client_options,
            **(defaults or {}),
            **for_client(client, self.settings),
            **overrides,
        }


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    parser = argparse.ArgumentParser(
        prog="aiokafkawire",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"aiokafkawire {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parents = Parents(connection_options(), reporting_options())
    for module in (
        bench,
        cluster,
        topics,
        groups,
        share_groups,
        offsets,
        produce,
        consume,
        security,
    ):
        module.add_commands(sub, parents)
    return parser


async def _run(args: argparse.Namespace, report: Reporter) -> int:
    context = Context(args, report)
    if hasattr(args, "client_settings"):  # a command that talks to a cluster
        profile = load_profile(args.config_file, args.profile)
        apply_profile(args, profile)
        context.settings = {**profile.options, **parse_x_options(args.client_settings)}
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    graceful = getattr(args, "graceful", False)

    def interrupt() -> None:
        # Commands that stop cleanly (consumers commit, the broker shuts down) see the first
        # Ctrl-C as the stop event; a second one, or any other command, cancels at once.
        if graceful and not context.stop.is_set():
            context.stop.set()
            return
        context.interrupted = True
        task.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, interrupt)
    try:
        handler: Handler = args.handler
        return int(await handler(context))
    except asyncio.CancelledError:
        if context.interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit status."""
    args = build_parser().parse_args(argv)
    report = Reporter(quiet=args.quiet)
    if args.debug:
        logging.basicConfig(
            level=logging.DEBUG, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
        )
    try:
        return asyncio.run(_run(args, report))
    except KeyboardInterrupt:
        report.error("interrupted")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (``| head``): it has what it wanted.  Point stdout at
        # /dev/null so that flushing it at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK
    except (CliError, errors.KafkaError) as exc:
        if args.debug:
            traceback.print_exc()
        report.error(_one_line(exc))
        return exit_code_for(exc)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, errors.KafkaError) and not isinstance(exc, errors.BrokerResponseError):
        return f"{type(exc).__name__}: {text}"
    return text
