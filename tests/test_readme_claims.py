"""The README's feature table says only what is checked here.

Each row of the table is data below; for every client the claim is checked against the installed
package (by introspection, or by having the client accept a setting), and the README must show
the row exactly as rendered.  aiokafkawire's cells are also backed by behavioural tests (named in
the README under the table).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import pytest

aiokafka = pytest.importorskip("aiokafka")
kafka = pytest.importorskip("kafka")
ck = pytest.importorskip("confluent_kafka")

from aiokafka.admin import AIOKafkaAdminClient  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from aiokafkawire import Admin, Consumer, Producer  # noqa: E402

README = Path(__file__).resolve().parent.parent / "README.md"
CLIENTS = ("aiokafkawire", "aiokafka", "kafka-python", "confluent-kafka")
UNREACHABLE = "127.0.0.1:9"  # librdkafka objects are made, never used
KIP848 = "consumer"  # the group.protocol value of KIP-848 groups


def _librdkafka_accepts(kind: str, config: dict[str, object]) -> bool:
    try:
        client = (ck.Consumer if kind == "consumer" else ck.Producer)(
            {"bootstrap.servers": UNREACHABLE, "log_level": 0, **config}
        )
    except ck.KafkaException:
        return False
    if kind == "consumer":
        client.close()
    return True


def _aiokafkawire_accepts(factory: Callable[[], object]) -> bool:
    factory()
    return True


# row -> (cell per client, check per client: True when the cell's claim holds)
ROWS: dict[str, tuple[tuple[str, ...], tuple[Callable[[], bool], ...]]] = {
    "asyncio API (`await producer.send(...)`)": (
        ("yes", "yes", "no", "no"),
        (
            lambda: inspect.iscoroutinefunction(Producer.send),
            lambda: inspect.iscoroutinefunction(aiokafka.AIOKafkaProducer.send),
            lambda: not inspect.iscoroutinefunction(kafka.KafkaProducer.send),
            lambda: not inspect.iscoroutinefunction(ck.Producer.produce),
        ),
    ),
    "idempotent producer": (
        ("yes (default)", "yes", "yes", "yes"),
        (
            lambda: Producer().idempotent,
            lambda: "enable_idempotence" in inspect.signature(aiokafka.AIOKafkaProducer).parameters,
            lambda: "enable_idempotence" in kafka.KafkaProducer.DEFAULT_CONFIG,
            lambda: _librdkafka_accepts("producer", {"enable.idempotence": True}),
        ),
    ),
    "transactions": (
        ("yes", "yes", "yes", "yes"),
        (
            lambda: hasattr(Producer, "begin_transaction"),
            lambda: hasattr(aiokafka.AIOKafkaProducer, "begin_transaction"),
            lambda: hasattr(kafka.KafkaProducer, "begin_transaction"),
            lambda: hasattr(ck.Producer, "begin_transaction"),
        ),
    ),
    "KIP-848 consumer groups (`group.protocol=consumer`)": (
        ("yes", "no", "no", "yes"),
        (
            lambda: _aiokafkawire_accepts(lambda: Consumer(group_id="g", group_protocol=KIP848)),
            lambda: "group_protocol" not in inspect.signature(aiokafka.AIOKafkaConsumer).parameters,
            lambda: "group_protocol" not in kafka.KafkaConsumer.DEFAULT_CONFIG,
            lambda: _librdkafka_accepts("consumer", {"group.id": "g", "group.protocol": KIP848}),
        ),
    ),
    "admin client": (
        ("yes", "yes", "yes", "yes"),
        (
            lambda: hasattr(Admin, "create_topics"),
            lambda: hasattr(AIOKafkaAdminClient, "create_topics"),
            lambda: hasattr(kafka.KafkaAdminClient, "create_topics"),
            lambda: hasattr(AdminClient, "create_topics"),
        ),
    ),
    "`send_batch` / `create_batch`": (
        ("yes", "yes", "no", "no"),
        (
            lambda: hasattr(Producer, "send_batch") and hasattr(Producer, "create_batch"),
            lambda: hasattr(aiokafka.AIOKafkaProducer, "send_batch"),
            lambda: not hasattr(kafka.KafkaProducer, "send_batch"),
            lambda: not hasattr(ck.Producer, "send_batch"),
        ),
    ),
    "client metrics": (
        ("`metrics()` and hooks", "no", "`metrics()`", "`stats_cb` (JSON)"),
        (
            lambda: hasattr(Producer, "metrics") and hasattr(Consumer, "metrics"),
            lambda: not hasattr(aiokafka.AIOKafkaProducer, "metrics"),
            lambda: hasattr(kafka.KafkaProducer, "metrics"),
            lambda: _librdkafka_accepts(
                "producer", {"stats_cb": lambda stats: None, "statistics.interval.ms": 1000}
            ),
        ),
    ),
}


def _render(row: str, cells: tuple[str, ...]) -> str:
    return f"| {row} | " + " | ".join(cells) + " |"


@pytest.mark.parametrize("row", list(ROWS))
def test_feature_table_row_holds_and_is_in_the_readme(row: str) -> None:
    cells, checks = ROWS[row]
    for client, cell, check in zip(CLIENTS, cells, checks, strict=True):
        assert check(), f"{row!r}: the claim {cell!r} for {client} does not hold"
    assert _render(row, cells) in README.read_text(encoding="utf-8"), _render(row, cells)


def test_the_table_has_no_other_rows() -> None:
    text = README.read_text(encoding="utf-8")
    header = "| feature | " + " | ".join(CLIENTS) + " |"
    assert header in text
    table = text[text.index(header) :].split("\n\n", 1)[0].splitlines()[2:]
    assert table == [_render(row, cells) for row, (cells, _) in ROWS.items()]
