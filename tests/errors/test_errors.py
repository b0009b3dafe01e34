"""The error hierarchy matches the official error table exactly."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from aiokafkawire import errors

REPO_ROOT = Path(__file__).resolve().parents[2]
TABLE = REPO_ROOT / "specs" / "kafka-4.4.0" / "errors.tsv"


def _rows() -> list[dict[str, str]]:
    with TABLE.open(newline="") as handle:
        return [row for row in csv.DictReader(handle, delimiter="\t") if row["code"] != "0"]


def test_every_code_in_the_table_has_a_class_with_its_flags() -> None:
    rows = _rows()
    assert len(rows) > 130
    assert {row["name"] for row in rows} >= {"SHARE_SESSION_LIMIT_REACHED", "REBOOTSTRAP_REQUIRED"}
    for row in rows:
        cls = errors.error_for_code(int(row["code"]))
        assert cls.code == int(row["code"])
        assert cls.name == row["name"]
        assert cls.retriable is (row["retriable"] == "true")
        assert cls.invalid_metadata is (row["invalid_metadata"] == "true")
        assert issubclass(cls, errors.BrokerResponseError)
        assert issubclass(cls, errors.KafkaError)


def test_generated_codes_are_up_to_date(tmp_path: Path) -> None:
    import importlib.util
    import sys

    path = REPO_ROOT / "tools" / "gen_errors.py"
    spec = importlib.util.spec_from_file_location("gen_errors_under_test", path)
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = generator
    try:
        spec.loader.exec_module(generator)
    finally:
        del sys.modules[spec.name]
    out = tmp_path / "codes.py"
    assert generator.main(["--out", str(out)]) == 0  # the vendored table by default
    current = REPO_ROOT / "aiokafkawire" / "errors" / "codes.py"
    assert out.read_text(encoding="utf-8") == current.read_text(encoding="utf-8"), (
        "aiokafkawire/errors/codes.py is stale: run python tools/gen_errors.py"
    )


def test_lookup_and_raise() -> None:
    assert errors.error_for_code(6) is errors.NotLeaderOrFollowerError
    errors.raise_for_code(0)
    with pytest.raises(errors.NotLeaderOrFollowerError) as info:
        errors.raise_for_code(6, "partition moved")
    assert "NOT_LEADER_OR_FOLLOWER" in str(info.value)
    assert "partition moved" in str(info.value)


def test_unknown_code_gets_a_stable_class() -> None:
    first = errors.error_for_code(31337)
    assert first is errors.error_for_code(31337)
    assert issubclass(first, errors.UnknownBrokerError)
    assert first.code == 31337


def test_families() -> None:
    assert issubclass(errors.SaslAuthenticationFailedError, errors.AuthenticationError)
    assert issubclass(errors.TopicAuthorizationFailedError, errors.AuthorizationError)
    assert errors.KafkaConnectionError.retriable
    assert issubclass(errors.FrameTooLargeError, errors.ProtocolError)
    assert issubclass(errors.BufferFullError, errors.KafkaError)
    assert str(errors.KafkaConnectionError()) != ""


def test_broker_errors_carry_kafkas_own_description() -> None:
    rows = _rows()
    assert all(row["description"].strip() for row in rows)
    for row in rows:
        cls = errors.error_for_code(int(row["code"]))
        assert cls.description == row["description"]
        assert row["description"] in " ".join((cls.__doc__ or "").split())
    too_large = errors.MessageTooLargeError()
    assert str(too_large) == (
        "[Error 10] MESSAGE_TOO_LARGE: The request included a message larger than the max "
        "message size the server will accept."
    )
    # A message given by the caller (or the broker) is kept; the description stays available.
    assert str(errors.MessageTooLargeError("topic t")) == "[Error 10] MESSAGE_TOO_LARGE: topic t"
    assert str(errors.error_for_code(9999)()) == "[Error 9999] UNKNOWN"
