"""Exit codes of the ``aiokafkawire`` command, and the error a command raises to end with one.

============  ==============================================================================
code          meaning
============  ==============================================================================
0             success
1             the cluster refused or failed the operation (a Kafka error)
2             usage: a bad option or argument (also argparse's own code)
3             not found: a topic or group that does not exist
4             the cluster could not be reached, or an operation timed out
5             authentication or authorization failed
130           interrupted (Ctrl-C); consumers commit what they printed before exiting
============  ==============================================================================
"""

from __future__ import annotations

import enum

from aiokafkawire import errors


class ExitCode(enum.IntEnum):
    """The process exit status of every command (see the module docstring)."""

    OK = 0
    KAFKA_ERROR = 1
    USAGE = 2
    NOT_FOUND = 3
    UNREACHABLE = 4
    AUTH = 5
    INTERRUPTED = 130


class CliError(Exception):
    """A problem a command reports as one line on stderr, ending the process with ``code``."""

    def __init__(self, message: str, code: ExitCode = ExitCode.KAFKA_ERROR) -> None:
        super().__init__(message)
        self.code = code


def exit_code_for(exc: BaseException) -> ExitCode:
    """The exit code that describes an exception raised by a command."""
    if isinstance(exc, CliError):
        return exc.code
    if isinstance(exc, errors.AdminOperationError) and exc.errors:
        # Failed items: the code of the first one (all of one kind, in practice).
        return exit_code_for(next(iter(exc.errors.values())))
    if isinstance(exc, errors.NOT_FOUND_ERRORS):
        return ExitCode.NOT_FOUND
    if isinstance(exc, (errors.AuthenticationError, errors.AuthorizationError)):
        return ExitCode.AUTH
    if isinstance(exc, errors.UNREACHABLE_ERRORS):
        return ExitCode.UNREACHABLE
    if isinstance(exc, errors.ConfigError):
        return ExitCode.USAGE
    return ExitCode.KAFKA_ERROR


def check_item(what: str, error: errors.KafkaError | None) -> None:
    """Raise a :class:`CliError` for an admin result's per-item error (``None``: it succeeded)."""
    if error is not None:
        raise CliError(f"{what}: {error}", exit_code_for(error))
