"""Client options from outside the command's own flags: ``-X NAME=VALUE``, config profiles and
the bootstrap environment variable.

``-X NAME=VALUE`` passes one client option (the keyword arguments of ``Producer``,
``Consumer``, ``ShareConsumer`` and ``Admin``, by our names) to every client the command makes
that accepts it.  A name goes through :data:`FOREIGN_NAMES` first, so Java/librdkafka names
(``linger.ms``) can be mapped to ours by one table, without touching the parsing.

A config file (``--config-file FILE``, ``$AIOKAFKAWIRE_CONFIG``, or
``~/.config/aiokafkawire/config.ini`` when it exists) is an INI file: ``[DEFAULT]`` holds
settings for every run, each other section is a named profile chosen with ``--profile NAME``
(or ``$AIOKAFKAWIRE_PROFILE``).  A setting is either a connection option of the command line by
its long name with ``_`` (``bootstrap_servers``, ``sasl_username``, ``sasl_password_env``,
``tls_ca_file`` ...) or a client option as ``-X`` takes.

Precedence, strongest first: the command's own flags, ``-X``, the profile (``[DEFAULT]`` without
``--profile``), then ``$AIOKAFKAWIRE_BOOTSTRAP_SERVERS`` (bootstrap only; the older
``$AIOKAFKAWIRE_BOOTSTRAP`` is still read, with a warning) and the built-in defaults.  (The
option is ``--config-file``: ``topics create --config`` sets a topic's configs.)
"""

from __future__ import annotations

import configparser
import functools
import inspect
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from aiokafkawire.cli.exit_codes import CliError, ExitCode
from aiokafkawire.client_properties import foreign_option

BOOTSTRAP_ENV_VAR = "AIOKAFKAWIRE_BOOTSTRAP_SERVERS"
#: The name the test suite used; still read, with a warning.
DEPRECATED_BOOTSTRAP_ENV_VAR = "AIOKAFKAWIRE_BOOTSTRAP"
CONFIG_ENV_VAR = "AIOKAFKAWIRE_CONFIG"
PROFILE_ENV_VAR = "AIOKAFKAWIRE_PROFILE"
DEFAULT_CONFIG_PATH = Path("~/.config/aiokafkawire/config.ini")

CLIENTS = ("admin", "producer", "consumer", "share")

#: Other clients' option names -> ours, beyond the Java/librdkafka properties that
#: :func:`aiokafkawire.client_properties.foreign_option` maps (and respells the values of).
FOREIGN_NAMES: dict[str, str] = {}

# Options that hold secrets: never from the command line (``ps``, shell history).
_SECRET_OPTIONS = frozenset({"sasl_plain_password"})
# Options whose values are Python objects, which text cannot express.
_OBJECT_OPTIONS = frozenset(
    {
        "ssl_context",
        "hooks",
        "sasl_oauth_token_provider",
        "partitioner",
        "partition_assignment_strategy",
        "key_serializer",
        "value_serializer",
        "key_deserializer",
        "value_deserializer",
        "on_acknowledgement",
    }
)
# Client options the command line sets with its own flags (which config files name by the
# flag's long name): -X does not take them, so a flag always wins.
_FLAG_OPTIONS = {
    "bootstrap_servers": "-b/--bootstrap-servers",
    "client_id": "--client-id",
    "request_timeout_ms": "--request-timeout-ms",
    "security_protocol": "--security-protocol",
    "sasl_mechanism": "--sasl-mechanism",
    "sasl_plain_username": "--sasl-username (sasl_username in a config file)",
}
# Connection options of the command line a config file may set (argparse dest names).
CONNECTION_SETTINGS = frozenset(
    {
        "bootstrap_servers",
        "client_id",
        "request_timeout_ms",
        "security_protocol",
        "tls_ca_file",
        "tls_cert_file",
        "tls_key_file",
        "tls_no_hostname_check",
        "sasl_mechanism",
        "sasl_username",
        "sasl_password_env",
    }
)


@functools.cache
def option_annotations() -> dict[str, dict[str, str]]:
    """Each client option's annotation (as text), per client kind."""
    from aiokafkawire import Admin, Consumer, Producer, ShareConsumer
    from aiokafkawire.client_config import CommonConfig

    common = {
        name: str(spec.type)
        for name, spec in CommonConfig.__dataclass_fields__.items()
        if spec.init
    }
    tables: dict[str, dict[str, str]] = {}
    classes: tuple[type, ...] = (Admin, Producer, Consumer, ShareConsumer)
    for kind, cls in zip(CLIENTS, classes, strict=True):
        own = {
            p.name: str(p.annotation)
            for p in inspect.signature(cls).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        }
        tables[kind] = {**common, **own}
    return tables


def our_name(name: str) -> str:
    """The option's name here: ``name`` itself, or what :data:`FOREIGN_NAMES` maps it to."""
    return FOREIGN_NAMES.get(name, name)


def _respelt(name: str, text: str) -> tuple[str, str]:
    """A Java/librdkafka property (``linger.ms``) as our option and value text."""
    if name in FOREIGN_NAMES:
        return FOREIGN_NAMES[name], text
    found = foreign_option(name, text)
    return found if found is not None else (name, text)


def _literal(text: str, annotation: str) -> Any:
    """``text`` as the option's value: a number, true/false or none when the text is one and
    the option takes one, else the text."""
    lowered = text.strip().lower()
    if lowered in ("none", "null") and "None" in annotation:
        return None
    if lowered in ("true", "false") and "bool" in annotation:
        return lowered == "true"
    if "int" in annotation or "float" in annotation:
        try:
            return int(text.replace("_", ""))
        except ValueError:
            pass
        if "float" in annotation:
            try:
                return float(text)
            except ValueError:
                pass
    return text


def client_option(name: str, text: str, where: str) -> tuple[str, str]:
    """Check ``name=text`` from ``where`` (``-X``, a config file); returns our name and text."""
    ours, text = _respelt(name.strip(), text)
    known = set().union(*option_annotations().values())
    if ours in _SECRET_OPTIONS:
        raise CliError(
            f"{where}: {name} is a secret and is not taken from the command line or a "
            "settings file; name the environment variable holding it with --sasl-password-env",
            ExitCode.USAGE,
        )
    if ours in _OBJECT_OPTIONS:
        raise CliError(f"{where}: {name} takes a Python object, not text", ExitCode.USAGE)
    if ours in _FLAG_OPTIONS:
        raise CliError(f"{where}: {name} has its own option: {_FLAG_OPTIONS[ours]}", ExitCode.USAGE)
    if ours not in known:
        from aiokafkawire.client_config import unknown_options_error

        raise CliError(f"{where}: {unknown_options_error('client', [name])}", ExitCode.USAGE)
    return ours, text


def parse_x_options(pairs: Iterable[str]) -> dict[str, str]:
    """``-X NAME=VALUE`` arguments as a mapping of our option names to their text."""
    options: dict[str, str] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name.strip():
            raise CliError(f"-X {pair!r}: write it as NAME=VALUE", ExitCode.USAGE)
        ours, value = client_option(name, text, f"-X {name}")
        options[ours] = value
    return options


def for_client(kind: str, texts: Mapping[str, str]) -> dict[str, Any]:
    """The options of ``texts`` that a ``kind`` client takes, as values of their types."""
    annotations = option_annotations()[kind]
    return {
        name: _literal(text, annotations[name])
        for name, text in texts.items()
        if name in annotations
    }


def bootstrap_from_environment() -> str | None:
    """``$AIOKAFKAWIRE_BOOTSTRAP_SERVERS``, or the deprecated ``$AIOKAFKAWIRE_BOOTSTRAP`` with a
    warning on stderr."""
    servers = os.environ.get(BOOTSTRAP_ENV_VAR)
    if servers:
        return servers
    old = os.environ.get(DEPRECATED_BOOTSTRAP_ENV_VAR)
    if old:
        print(
            f"warning: ${DEPRECATED_BOOTSTRAP_ENV_VAR} is deprecated; "
            f"set ${BOOTSTRAP_ENV_VAR} instead",
            file=sys.stderr,
        )
        return old
    return None


class Profile:
    """The settings of a config file's chosen profile: connection settings and client options."""

    def __init__(
        self, connection: dict[str, str] | None = None, options: dict[str, str] | None = None
    ) -> None:
        self.connection = connection or {}
        self.options = options or {}


def _config_path(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit).expanduser()
    named = os.environ.get(CONFIG_ENV_VAR)
    if named:
        return Path(named).expanduser()
    default = DEFAULT_CONFIG_PATH.expanduser()
    return default if default.is_file() else None


def load_profile(config: str | None, profile: str | None) -> Profile:
    """The chosen profile of the config file (see the module docstring); empty without one."""
    path = _config_path(config)
    profile = profile or os.environ.get(PROFILE_ENV_VAR) or None
    if path is None:
        if profile is not None:
            raise CliError(
                f"--profile {profile}: no config file (give --config-file FILE, set "
                f"${CONFIG_ENV_VAR}, or write {DEFAULT_CONFIG_PATH})",
                ExitCode.USAGE,
            )
        return Profile()
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with path.open(encoding="utf-8") as stream:
            parser.read_file(stream)
    except OSError as exc:
        raise CliError(f"config file {path}: {exc.strerror}", ExitCode.USAGE) from None
    except configparser.Error as exc:
        message = " ".join(str(exc).split())
        raise CliError(f"config file {path}: {message}", ExitCode.USAGE) from None
    if profile is not None and not parser.has_section(profile):
        names = ", ".join(parser.sections()) or "none"
        raise CliError(
            f"config file {path} has no profile {profile!r} (profiles: {names})", ExitCode.USAGE
        )
    items = dict(parser.items(profile)) if profile is not None else dict(parser.defaults())
    where = f"config file {path}" + (f" [{profile}]" if profile else "")
    connection: dict[str, str] = {}
    options: dict[str, str] = {}
    for name, text in items.items():
        if name in CONNECTION_SETTINGS:
            connection[name] = text
        else:
            ours, value = client_option(name, text, f"{where}: {name}")
            options[ours] = value
    return Profile(connection, options)
