"""The error hierarchy matches the official error table exactly."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from aiokafkawire import errors

TABLE = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-protocol" / "errors.tsv"


def _rows() -> list[dict[str, str]]:
    with TABLE.open(newline="") as handle:
        return [row for row in csv.DictReader(handle, delimiter="\t") if row["code"] != "0"]


@pytest.mark.skipif(not TABLE.exists(), reason="shared/kafka-protocol is not beside the repo")
def test_every_code_in_the_table_has_a_class_with_its_flags() -> None:
    rows = _rows()
    assert len(rows) > 100
    for row in rows:
        cls = errors.error_for_code(int(row["code"]))
        assert cls.code == int(row["code"])
        assert cls.name == row["name"]
        assert cls.retriable is (row["retriable"] == "true")
        assert cls.invalid_metadata is (row["invalid_metadata"] == "true")
        assert issubclass(cls, errors.BrokerResponseError)
        assert issubclass(cls, errors.KafkaError)


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
