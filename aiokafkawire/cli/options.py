"""Options shared by the commands: where the cluster is, how to authenticate, how to report.

Secrets never come from the command line (it is visible in ``ps`` and shell history): the SASL
password is read from an environment variable named by ``--sasl-password-env`` or asked for at
the terminal, and it is never printed, logged or put in an error message.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any

from aiokafkawire.cli.exit_codes import CliError, ExitCode
from aiokafkawire.cli.settings import BOOTSTRAP_ENV_VAR, Profile, bootstrap_from_environment

DEFAULT_CLIENT_ID = "aiokafkawire-cli"
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def reporting_options() -> argparse.ArgumentParser:
    """A parent parser with ``--debug`` and ``--quiet``, for every command."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("reporting")
    group.add_argument(
        "--debug",
        action="store_true",
        help="log the client's debug messages to stderr and show tracebacks of errors",
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print no progress or status lines on stderr (errors are still printed)",
    )
    return parent


def connection_options() -> argparse.ArgumentParser:
    """A parent parser with the cluster address and the TLS/SASL options."""
    parent = argparse.ArgumentParser(add_help=False)
    cluster = parent.add_argument_group("cluster")
    cluster.add_argument(
        "-b",
        "--bootstrap-servers",
        metavar="HOST:PORT[,...]",
        default=None,
        help=f"brokers to bootstrap from (default: ${BOOTSTRAP_ENV_VAR} or localhost:9092)",
    )
    cluster.add_argument(
        "--client-id", help=f"client id sent to the brokers (default: {DEFAULT_CLIENT_ID})"
    )
    cluster.add_argument(
        "--request-timeout-ms",
        type=positive_int,
        metavar="MS",
        help=f"how long to wait for a broker's answer (default: {DEFAULT_REQUEST_TIMEOUT_MS})",
    )
    cluster.add_argument(
        "-X",
        dest="client_settings",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a client option by its aiokafkawire name, e.g. -X fetch_max_bytes=1048576 "
        "(repeatable; given to every client of the command that takes it)",
    )
    cluster.add_argument(
        "--config-file",
        metavar="FILE",
        help="an INI file of settings: [DEFAULT] and named profiles (default: "
        "$AIOKAFKAWIRE_CONFIG, else ~/.config/aiokafkawire/config.ini if it exists)",
    )
    cluster.add_argument(
        "--profile",
        metavar="NAME",
        help="use this section of the config file (default: $AIOKAFKAWIRE_PROFILE)",
    )
    security = parent.add_argument_group("security")
    security.add_argument(
        "--security-protocol",
        choices=SECURITY_PROTOCOLS,
        help="default: SASL_SSL with SASL and TLS options, SASL_PLAINTEXT with SASL options, "
        "SSL with TLS options, else PLAINTEXT",
    )
    security.add_argument(
        "--tls-ca-file", metavar="PEM", help="CA certificates to trust (default: the system's)"
    )
    security.add_argument(
        "--tls-cert-file", metavar="PEM", help="client certificate chain, for mutual TLS"
    )
    security.add_argument(
        "--tls-key-file", metavar="PEM", help="client private key (default: in --tls-cert-file)"
    )
    security.add_argument(
        "--tls-no-hostname-check",
        action="store_true",
        help="do not match the broker's certificate against its host name",
    )
    security.add_argument(
        "--sasl-mechanism", choices=SASL_MECHANISMS, help="authenticate with this SASL mechanism"
    )
    security.add_argument("--sasl-username", metavar="USER", help="SASL user name")
    security.add_argument(
        "--sasl-password-env",
        metavar="VAR",
        help="environment variable holding the SASL password "
        "(without it the password is asked for at the terminal)",
    )
    return parent


def add_internal_option(parser: argparse.ArgumentParser) -> None:
    """``--internal``: list internal topics too."""
    parser.add_argument(
        "--internal", action="store_true", help="include internal topics (__consumer_offsets)"
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """``-J/--json``: the result as one JSON document on stdout instead of tables (kcat's -J)."""
    parser.add_argument(
        "-J",
        "--json",
        action="store_true",
        help="print the result as one JSON document on stdout instead of tables",
    )


def add_partition_option(parser: argparse.ArgumentParser) -> None:
    """``-p/--partition N`` (repeatable): only these partitions of the command's topic."""
    parser.add_argument(
        "-p",
        "--partition",
        type=non_negative_int,
        action="append",
        metavar="N",
        help="only this partition (repeatable; default: all)",
    )


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _int(text: str) -> int:
    try:
        return int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def apply_profile(args: argparse.Namespace, profile: Profile) -> None:
    """Fill the connection options not given on the command line from the config profile, then
    from the defaults (the bootstrap servers: see :func:`client_options`)."""
    for name, text in profile.connection.items():
        if getattr(args, name, None) not in (None, False):
            continue
        value: Any = text
        if name == "request_timeout_ms":
            try:
                value = positive_int(text)
            except argparse.ArgumentTypeError as exc:
                raise CliError(f"config file: {name}: {exc}", ExitCode.USAGE) from None
        elif name == "tls_no_hostname_check":
            value = text.strip().lower() in ("1", "true", "yes", "on")
        elif name == "security_protocol" and text not in SECURITY_PROTOCOLS:
            raise CliError(
                f"config file: {name} must be one of {SECURITY_PROTOCOLS}", ExitCode.USAGE
            )
        elif name == "sasl_mechanism" and text not in SASL_MECHANISMS:
            raise CliError(f"config file: {name} must be one of {SASL_MECHANISMS}", ExitCode.USAGE)
        setattr(args, name, value)
    if args.client_id is None:
        args.client_id = DEFAULT_CLIENT_ID
    if args.request_timeout_ms is None:
        args.request_timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword options for Admin, Producer and Consumer from the parsed connection options
    (after :func:`apply_profile`)."""
    options: dict[str, Any] = {
        "bootstrap_servers": args.bootstrap_servers
        or bootstrap_from_environment()
        or "localhost:9092",
        "client_id": args.client_id,
        "request_timeout_ms": args.request_timeout_ms,
    }
    tls = bool(args.tls_ca_file or args.tls_cert_file or args.tls_key_file)
    sasl = args.sasl_mechanism is not None
    protocol = args.security_protocol or (
        ("SASL_SSL" if tls else "SASL_PLAINTEXT") if sasl else ("SSL" if tls else "PLAINTEXT")
    )
    options["security_protocol"] = protocol
    if protocol in ("SSL", "SASL_SSL"):
        from aiokafkawire.net.tls import create_ssl_context

        options["ssl_context"] = create_ssl_context(
            cafile=args.tls_ca_file,
            certfile=args.tls_cert_file,
            keyfile=args.tls_key_file,
            check_hostname=not args.tls_no_hostname_check,
        )
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        if not sasl or not args.sasl_username:
            raise CliError(
                f"--security-protocol {protocol} needs --sasl-mechanism and --sasl-username",
                ExitCode.USAGE,
            )
        options["sasl_mechanism"] = args.sasl_mechanism
        options["sasl_plain_username"] = args.sasl_username
        options["sasl_plain_password"] = _sasl_password(args)
    return options


def _sasl_password(args: argparse.Namespace) -> str:
    if args.sasl_password_env:
        password = os.environ.get(args.sasl_password_env)
        if password is None:
            raise CliError(
                f"--sasl-password-env: {args.sasl_password_env} is not set in the environment",
                ExitCode.USAGE,
            )
        return password
    if not sys.stdin.isatty():
        raise CliError(
            "no SASL password: name the environment variable holding it with "
            "--sasl-password-env, or run at a terminal to be asked for it",
            ExitCode.USAGE,
        )
    return getpass.getpass(f"SASL password for {args.sasl_username}: ")


def timestamp_ms(text: str) -> int:
    """argparse type: milliseconds since the epoch, or an ISO 8601 date/time (UTC if no zone)."""
    import datetime

    try:
        value = int(text)
    except ValueError:
        try:
            moment = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is neither milliseconds since the epoch nor an ISO 8601 time "
                "such as 2026-11-24T07:30:00"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.timezone.utc)
        return int(moment.timestamp() * 1000)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value
