"""Help, exit codes, one-line errors, the console script and secrets of the command line."""

from __future__ import annotations

import argparse
import importlib

import pytest
from cli_helpers import REPO_ROOT, run_aiokafkawire, run_in_process

from aiokafkawire.cli.app import build_parser
from aiokafkawire.cli.exit_codes import ExitCode


def _parsers(parser: argparse.ArgumentParser, path: str = "aiokafkawire"):  # type: ignore[no-untyped-def]
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, f"{path} {name}")


def test_every_option_and_command_has_help_without_markup() -> None:
    missing, markup = [], []
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    if not choice.help:
                        missing.append(f"{path} {choice.dest}")
                continue
            if not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
        text = parser.format_help()
        if "``" in text or ":class:" in text or ":mod:" in text:
            markup.append(path)
    assert missing == []
    assert markup == []


def test_console_script_is_declared() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    module, _, function = project["scripts"]["aiokafkawire"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))
    extras = project["optional-dependencies"]
    # The README's first command installs [testing] and runs the demo, which needs rich.
    assert any(dep.startswith("rich") for dep in extras["testing"])


def test_help_runs_and_lists_exit_codes() -> None:
    result = run_aiokafkawire("--help")
    assert result.returncode == 0
    assert "exit codes:" in result.stdout and "130" in result.stdout
    for command in ("demo", "broker", "metadata", "topics", "groups", "offsets", "produce"):
        assert command in result.stdout
    usage = run_aiokafkawire("consume")
    assert usage.returncode == ExitCode.USAGE
    assert "the following arguments are required: TOPIC" in usage.stderr


def test_an_unreachable_cluster_is_one_line_and_exit_code_4() -> None:
    result = run_aiokafkawire("topics", "list", "-b", "127.0.0.1:1", "--request-timeout-ms", "2000")
    assert result.returncode == ExitCode.UNREACHABLE
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    debug = run_aiokafkawire(
        "topics", "list", "-b", "127.0.0.1:1", "--request-timeout-ms", "2000", "--debug"
    )
    assert debug.returncode == ExitCode.UNREACHABLE
    assert "Traceback" in debug.stderr


def test_the_sasl_password_never_appears_in_output_or_debug_logs(cli, cli_fast) -> None:
    secret = "pw-" + "x7Qz9-never-shown"
    sasl = ("--sasl-mechanism", "PLAIN", "--sasl-username", "alice")
    # Tansu (no authentication configured) refuses the SASL exchange: an error either way.
    result = cli(
        "topics", "list", *sasl, "--sasl-password-env", "CLI_TEST_PASSWORD", "--debug",
        "--request-timeout-ms", "3000",
        env={"CLI_TEST_PASSWORD": secret},
    )  # fmt: skip
    assert result.returncode != 0
    assert "SASL" in result.stderr or "sasl" in result.stderr.lower()
    assert secret not in result.stdout + result.stderr
    unset = cli_fast("topics", "list", *sasl, "--sasl-password-env", "CLI_TEST_UNSET_VARIABLE")
    assert unset.returncode == ExitCode.USAGE
    assert "CLI_TEST_UNSET_VARIABLE is not set" in unset.stderr
    no_terminal = cli_fast("topics", "list", *sasl, input="")
    assert no_terminal.returncode == ExitCode.USAGE
    assert "--sasl-password-env" in no_terminal.stderr


@pytest.mark.slow
def test_sasl_over_tls_on_apache_kafka_with_the_password_from_the_environment(
    kafka_tls_cluster,
) -> None:
    cluster = kafka_tls_cluster  # alice's password: "alice-pw-3x9" (TLS_CLUSTER_USERS)
    options = (
        "-b", cluster.bootstrap_for("SASL_SSL"), "--tls-ca-file", str(cluster.ca_path),
        "--sasl-mechanism", "PLAIN", "--sasl-username", "alice",
        "--sasl-password-env", "CLI_TEST_PASSWORD", "--debug",
    )  # fmt: skip
    created = run_aiokafkawire(
        "topics", "create", "cli-secure", *options, env={"CLI_TEST_PASSWORD": "alice-pw-3x9"}
    )
    assert created.returncode == 0, created.stderr
    assert "alice-pw-3x9" not in created.stdout + created.stderr
    listed = run_in_process("topics", "list", *options, env={"CLI_TEST_PASSWORD": "alice-pw-3x9"})
    assert "cli-secure" in listed.stdout.splitlines()
    wrong = run_in_process("topics", "list", *options, env={"CLI_TEST_PASSWORD": "wrong-pw-7k2"})
    assert wrong.returncode == ExitCode.AUTH, wrong.stderr
    assert "wrong-pw-7k2" not in wrong.stdout + wrong.stderr


def test_the_command_line_page_names_every_command_and_exit_code() -> None:
    page = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for path, _ in _parsers(build_parser()):
        words = path.split()[1:]
        if (words and words[0] not in ("topics", "groups")) or len(words) == 2:
            assert f"`{' '.join(words)}" in page, path
    for code in ExitCode:
        assert f"| {code.value} |" in page
