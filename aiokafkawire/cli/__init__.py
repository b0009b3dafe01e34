"""The ``aiokafkawire`` command line (also ``python -m aiokafkawire``).

Modules, one per group of commands:

- :mod:`~aiokafkawire.cli.app`: the parser, running a command, errors and exit codes;
- :mod:`~aiokafkawire.cli.bench`: ``demo`` and ``bench``;
- :mod:`~aiokafkawire.cli.cluster`: ``broker``, ``metadata``, ``versions``;
- :mod:`~aiokafkawire.cli.topics`: ``topics list|describe|create|delete|alter-config|
  add-partitions|delete-records``;
- :mod:`~aiokafkawire.cli.groups`: ``groups list|describe|delete|delete-offsets|reset-offsets``;
- :mod:`~aiokafkawire.cli.share_groups`: ``share-groups list|describe|reset``;
- :mod:`~aiokafkawire.cli.security`: ``acls list|create|delete``, ``users list|create|delete``;
- :mod:`~aiokafkawire.cli.offsets`: ``offsets``;
- :mod:`~aiokafkawire.cli.produce` and :mod:`~aiokafkawire.cli.consume`;

and what they share: :mod:`~aiokafkawire.cli.options` (cluster and security options),
:mod:`~aiokafkawire.cli.settings` (``-X``, config profiles, the bootstrap variable),
:mod:`~aiokafkawire.cli.output` (tables, status lines, progress bars),
:mod:`~aiokafkawire.cli.formats` (record output and input formats) and
:mod:`~aiokafkawire.cli.exit_codes`.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (``argv`` without the program name); returns the exit status."""
    try:
        from aiokafkawire.cli.app import main as run
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "rich":
            raise
        import sys

        if list(sys.argv[1:] if argv is None else argv) == ["--version"]:  # needs no rich
            from aiokafkawire import __version__

            print(f"aiokafkawire {__version__}")
            return 0
        print(
            "error: the command line needs rich: pip install 'aiokafkawire[cli]'", file=sys.stderr
        )
        return 1
    return run(argv)


__all__ = ["main"]
