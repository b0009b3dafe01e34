"""In-process: the record formats of ``consume`` and ``produce``, option types, status lines."""

from __future__ import annotations

import argparse
import json

import pytest

from aiokafkawire.cli.exit_codes import CliError, ExitCode
from aiokafkawire.cli.formats import LineParser, RecordFormatter, unescape
from aiokafkawire.cli.options import positive_int, timestamp_ms
from aiokafkawire.consumer import ConsumerRecord


def _record(key: bytes | None, value: bytes | None) -> ConsumerRecord:
    return ConsumerRecord("t", 2, 7, 1700000000000, 0, key, value, (("h", b"\xff"),), 0)


def test_unescape() -> None:
    assert unescape(r"a\tb\nc\\d\x") == "a\tb\nc\\d\\x"


def test_raw_json_and_template_output() -> None:
    record = _record(None, b"caf\xc3\xa9")
    assert RecordFormatter("raw").format(record) == "café\n".encode()
    document = json.loads(RecordFormatter("json").format(record))
    assert document == {
        "topic": "t",
        "partition": 2,
        "offset": 7,
        "timestamp": 1700000000000,
        "key": None,
        "value": "café",
        "headers": [["h", "\ufffd"]],  # undecodable bytes replaced in utf-8 mode
    }
    assert json.loads(RecordFormatter("json", encoding="base64").format(record))["headers"] == [
        ["h", "/w=="]
    ]
    template = RecordFormatter(template=r"{partition}/{offset}\t{key}|{value}|{headers}")
    assert template.format(_record(b"k", None)) == b"2/7\tk||h=\xef\xbf\xbd\n"


def test_bad_template_fields_are_usage_errors() -> None:
    with pytest.raises(CliError) as caught:
        RecordFormatter(template="{value} {nope}")
    assert caught.value.code == ExitCode.USAGE


def test_line_parser_key_separator_and_json() -> None:
    plain = LineParser(key_separator=r"\t", headers=[("a", b"1")])
    parsed = plain.parse(b"k\tv\tw", 1)
    assert (parsed.key, parsed.value, parsed.headers) == (b"k", b"v\tw", [("a", b"1")])
    assert plain.parse(b"no tab", 2).key is None
    parsed = LineParser(json_input=True).parse(
        b'{"key": 5, "value": null, "headers": [["x", "y"]], "partition": 1, "timestamp": 9}', 1
    )
    assert (parsed.key, parsed.value, parsed.headers) == (b"5", None, [("x", b"y")])
    assert (parsed.partition, parsed.timestamp) == (1, 9)
    for bad in (b"[1]", b'{"valu": 1}', b'{"partition": "1"}', b"{"):
        with pytest.raises(CliError):
            LineParser(json_input=True).parse(bad, 3)


def test_option_types() -> None:
    assert positive_int("1_000") == 1000
    assert timestamp_ms("2026-11-24T00:00:00") == 1795478400000
    assert timestamp_ms("2026-11-24T01:00:00+01:00") == 1795478400000
    for bad, kind in (("0", positive_int), ("x", positive_int), ("yesterday", timestamp_ms)):
        with pytest.raises(argparse.ArgumentTypeError):
            kind(bad)


def test_slow_waits_are_announced_and_quick_ones_are_not(capsys) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from aiokafkawire.cli.output import Reporter

    async def wait(seconds: float) -> None:
        report = Reporter()
        async with report.waiting_if_slow("the thing", delay=0.05):
            await asyncio.sleep(seconds)

    asyncio.run(wait(0))
    assert capsys.readouterr().err == ""
    asyncio.run(wait(0.3))
    assert capsys.readouterr().err == "waiting: the thing ...\n"


def test_exit_codes_of_errors() -> None:
    from aiokafkawire import errors
    from aiokafkawire.cli.exit_codes import exit_code_for

    missing = errors.UnknownTopicOrPartitionError("t")
    assert exit_code_for(missing) == ExitCode.NOT_FOUND
    assert exit_code_for(errors.GroupIdNotFoundError("g")) == ExitCode.NOT_FOUND
    assert exit_code_for(errors.SaslAuthenticationFailedError("x")) == ExitCode.AUTH
    assert exit_code_for(errors.TopicAuthorizationFailedError("x")) == ExitCode.AUTH
    assert exit_code_for(errors.NoBrokersAvailableError("x")) == ExitCode.UNREACHABLE
    assert exit_code_for(errors.KafkaTimeoutError("x")) == ExitCode.UNREACHABLE
    assert exit_code_for(errors.TopicAlreadyExistsError("x")) == ExitCode.KAFKA_ERROR
    failed = errors.AdminOperationError("delete_topics", {"t": None}, {"t": missing})
    assert exit_code_for(failed) == ExitCode.NOT_FOUND
