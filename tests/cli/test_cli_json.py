"""``-J/--json`` (issue 21): one JSON document on stdout for ``metadata``, ``topics list``,
``topics describe``, ``groups list``, ``groups describe`` and ``offsets``, as kcat's ``-L -J``."""

from __future__ import annotations

import json
from typing import Any


def _document(result: Any) -> Any:
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout  # one document, nothing else on stdout
    return json.loads(lines[0])


def test_metadata_and_topics_as_json(cli, cli_fast, records_topic) -> None:
    metadata = _document(cli("metadata", records_topic, "-J"))
    assert metadata["brokers"] and {"id", "host", "port", "rack"} <= set(metadata["brokers"][0])
    (topic,) = metadata["topics"]
    assert topic["name"] == records_topic
    assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2]
    leaders = {broker["id"] for broker in metadata["brokers"]}
    assert all(p["leader"] in leaders and p["error"] is None for p in topic["partitions"])

    listed = _document(cli_fast("topics", "list", "--json"))
    (row,) = [t for t in listed if t["name"] == records_topic]
    assert row == {"name": records_topic, "partitions": 3, "replication": 1, "internal": False}

    (described,) = _document(cli_fast("topics", "describe", records_topic, "-J"))
    assert described["name"] == records_topic
    assert len(described["partitions"]) == 3
    assert isinstance(described["configs"], dict)


def test_groups_and_offsets_as_json(cli_fast, name, records_topic) -> None:
    group = name("json-group")
    consumed = cli_fast("consume", records_topic, "-g", group, "-n", "30")
    assert consumed.returncode == 0, consumed.stderr
    groups = _document(cli_fast("groups", "list", "-J"))
    assert group in {g["group"] for g in groups}
    described = _document(cli_fast("groups", "describe", group, "-J"))
    assert described["group"] == group
    assert [(o["partition"], o["committed"]) for o in described["offsets"]] == [
        (0, 10),
        (1, 10),
        (2, 10),
    ]
    assert described["members"] == [] or described["members"] is None  # the consumer left
    assert described["total_lag"] == sum(o["lag"] for o in described["offsets"])

    offsets = _document(cli_fast("offsets", records_topic, "-J", "-t", "0"))
    assert offsets["topic"] == records_topic and offsets["timestamp"] == 0
    assert [p["partition"] for p in offsets["partitions"]] == [0, 1, 2]
    assert all(p["earliest"] == 0 and "at_timestamp" in p for p in offsets["partitions"])
