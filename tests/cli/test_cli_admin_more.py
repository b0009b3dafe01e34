"""The admin commands a kcat/rpk user expects (issue 21): ``topics add-partitions``, ``topics
delete-records``, ``groups delete-offsets``, ``acls``, ``users``.

On Apache Kafka: Tansu has no CreatePartitions, OffsetDelete or ACL APIs (BROKERS.md); the ACL
test uses the session's broker with an authorizer (``secured_cluster``, shared with the admin
tests).
"""

from __future__ import annotations

import json
import time

from cli_helpers import make_topic, run_aiokafkawire, run_in_process


def test_add_partitions_and_delete_records(kafka_cluster, name) -> None:
    servers = ("-b", kafka_cluster.bootstrap_servers)
    topic = name("grow")
    make_topic(kafka_cluster.bootstrap_servers, topic, 1, 10)
    grown = run_aiokafkawire("topics", "add-partitions", topic, "-n", "2", *servers)
    assert grown.returncode == 0, grown.stderr
    assert f"topic {topic}: 1 -> 3 partitions" in grown.stderr
    listed = json.loads(run_in_process("topics", "list", "-J", *servers).stdout)
    assert [t["partitions"] for t in listed if t["name"] == topic] == [3]
    shrink = run_in_process("topics", "add-partitions", topic, "--total", "2", *servers)
    assert shrink.returncode == 2 and "cannot remove partitions" in shrink.stderr

    trimmed = run_in_process("topics", "delete-records", topic, "-p", "0", "--offset", "4",
                             "-J", *servers)  # fmt: skip
    assert trimmed.returncode == 0, trimmed.stderr
    assert json.loads(trimmed.stdout)["partitions"] == [{"partition": 0, "low_watermark": 4}]
    rest = run_in_process("consume", topic, "-p", "0", "-e", *servers)
    assert rest.stdout.splitlines() == [f"value-{i}" for i in range(4, 10)]
    emptied = run_in_process("topics", "delete-records", topic, "--all", *servers)
    assert emptied.returncode == 0, emptied.stderr
    nothing = run_in_process("consume", topic, "-e", *servers)
    assert nothing.stdout == "" and "consumed 0 record(s)" in nothing.stderr


def test_groups_delete_offsets(kafka_cluster, name) -> None:
    servers = ("-b", kafka_cluster.bootstrap_servers)
    topic, group = name("forget"), name("forgetful")
    make_topic(kafka_cluster.bootstrap_servers, topic, 2, 6)
    consumed = run_in_process("consume", topic, "-g", group, "-n", "6", *servers)
    assert consumed.returncode == 0, consumed.stderr
    before = json.loads(run_in_process("groups", "describe", group, "-J", *servers).stdout)
    assert sum(o["committed"] for o in before["offsets"]) == 6
    deleted = run_in_process("groups", "delete-offsets", group, "--topic", topic, *servers)
    assert deleted.returncode == 0, deleted.stderr
    assert "committed offsets of 2 partition(s)" in deleted.stderr
    after = run_in_process("groups", "describe", group, *servers)
    assert after.returncode == 3  # no members, no committed offsets left


def test_scram_users(kafka_cluster, name) -> None:
    servers = ("-b", kafka_cluster.bootstrap_servers)
    user = name("user")
    created = run_in_process(
        "users", "create", user, "--password-env", "NEW_PW", *servers, env={"NEW_PW": "s3cret"}
    )
    assert created.returncode == 0, created.stderr
    assert "s3cret" not in created.stdout + created.stderr
    for _ in range(50):  # the controller applies it; brokers see it shortly after
        listed = json.loads(run_in_process("users", "list", "-J", *servers).stdout)
        if any(u["user"] == user for u in listed):
            break
        time.sleep(0.1)
    assert {"user": user, "mechanism": "SCRAM-SHA-512", "iterations": 8192} in listed
    no_password = run_in_process("users", "create", user, *servers)
    assert no_password.returncode == 2 and "--password-env" in no_password.stderr
    deleted = run_in_process("users", "delete", user, *servers)
    assert deleted.returncode == 0, deleted.stderr


def test_acls_create_list_delete(secured_cluster, name) -> None:
    servers = ("-b", secured_cluster.bootstrap_servers)
    topic, alice = name("acl"), f"User:{name('alice')}"
    created = run_aiokafkawire("acls", "create", "--principal", alice, "--operation", "read",
                               "--operation", "describe", "--topic", topic, *servers)  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert created.stderr.count("created: ALLOW") == 2
    listed: list[dict[str, str]] = []
    for _ in range(50):
        found = run_in_process("acls", "list", "--principal", alice, "-J", *servers)
        assert found.returncode == 0, found.stderr
        listed = json.loads(found.stdout)
        if len(listed) == 2:
            break
        time.sleep(0.1)
    assert sorted(b["operation"] for b in listed) == ["describe", "read"]
    assert {(b["resource_type"], b["resource_name"], b["pattern_type"]) for b in listed} == {
        ("topic", topic, "literal")
    }
    everything = run_in_process("acls", "delete", *servers)
    assert everything.returncode == 2 and "every ACL" in everything.stderr
    deleted = run_in_process("acls", "delete", "--principal", alice, *servers)
    assert deleted.returncode == 0, deleted.stderr
    assert "2 ACL binding(s) deleted" in deleted.stderr


def test_share_groups_list_describe_reset(kafka_cluster, name) -> None:
    servers = ("-b", kafka_cluster.bootstrap_servers)
    topic, group = name("shared"), name("sharers")
    make_topic(kafka_cluster.bootstrap_servers, topic, 1, 6)
    first = run_in_process("consume", topic, "-s", group, "--from", "beginning", "-n", "6",
                           *servers)  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [f"value-{i}" for i in range(6)]
    listed = json.loads(run_in_process("share-groups", "list", "-J", *servers).stdout)
    assert group in {g["group"] for g in listed}
    reset = run_aiokafkawire("share-groups", "reset", group, "--topic", topic, "--to-offset", "3",
                             *servers)  # fmt: skip
    assert reset.returncode == 0, reset.stderr
    described = json.loads(run_in_process("share-groups", "describe", group, "-J", *servers).stdout)
    assert [(o["partition"], o["start_offset"]) for o in described["offsets"]] == [(0, 3)]
    again = run_in_process("consume", topic, "-s", group, "-n", "3", *servers)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == ["value-3", "value-4", "value-5"]
    missing = run_in_process("share-groups", "describe", name("nobody"), *servers)
    assert missing.returncode == 3, missing.stderr
