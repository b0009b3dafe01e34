"""Arrow record batches of the Spark reader: the C helper and the pyarrow path agree exactly."""

from __future__ import annotations

import random
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

from aiokafkawire.consumer.value_types import ConsumerRecord  # noqa: E402
from aiokafkawire.spark import _kafka_io  # noqa: E402


def _records(count: int, seed: int) -> list[ConsumerRecord]:
    rng = random.Random(seed)
    records = []
    for i in range(count):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 40))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 300))
        headers = tuple((f"h{j}", None if j == 1 else b"x" * j) for j in range(rng.randrange(3)))
        timestamp = rng.choice([-1, 0, 1_700_000_000_000 + i])
        records.append(ConsumerRecord("t", 2, 100 + i, timestamp, i % 2, key, value, headers, 5))
    return records


@pytest.mark.parametrize("headers", [False, True])
@pytest.mark.parametrize("count", [0, 1, 7, 8, 9, 1000])
def test_compiled_and_pyarrow_batches_are_equal(
    monkeypatch: pytest.MonkeyPatch, count: int, headers: bool
) -> None:
    if _kafka_io._record_columns is None:
        pytest.skip("the _carrow extension is not built")
    records = _records(count, count)
    compiled = _kafka_io.records_to_batch(records, "t", 2, headers)
    compiled.validate(full=True)
    monkeypatch.setattr(_kafka_io, "_record_columns", None)
    reference = _kafka_io.records_to_batch(records, "t", 2, headers)
    assert compiled.schema == reference.schema == _kafka_io.arrow_schema(headers)
    assert compiled.equals(reference)
    rows = compiled.to_pylist()
    for row, record in zip(rows, records, strict=True):
        assert (row["key"], row["value"], row["offset"]) == (
            record.key,
            record.value,
            record.offset,
        )
        micros = row["timestamp"].timestamp() * 1_000_000
        assert round(micros) == record.timestamp * 1000


def test_records_outside_the_compiled_path_use_pyarrow() -> None:
    # A deserialized (str) value is not bytes: the C helper declines and pyarrow converts it.
    records = [ConsumerRecord("t", 0, 1, 5, 0, b"k", b"v", (), None)]
    assert _kafka_io._columns_compiled(records) is not None or _kafka_io._record_columns is None
    odd = [ConsumerRecord("t", 0, 1, 5, 0, b"k", bytearray(b"v"), (), None)]
    assert _kafka_io._columns_compiled(odd) is None
    batch = _kafka_io.records_to_batch(odd, "t", 0, False)
    assert batch.column("value").to_pylist() == [b"v"]


class _Batch:
    """A producer batch as a write task sees it: one outcome shared by its records."""

    def __init__(self) -> None:
        self.failure: BaseException | None = None
        self.done = False


class _Handle:
    def __init__(self, batch: _Batch) -> None:
        self._batch = batch

    def done(self) -> bool:
        return self._batch.done

    def exception(self) -> BaseException | None:
        return self._batch.failure


class _Producer:
    """Rows go round the partitions, as keyed rows do: consecutive records change batch."""

    def __init__(self, partitions: int) -> None:
        self.batches = [_Batch() for _ in range(partitions)]
        self.sent: list[tuple[str, bytes | None, bytes | None]] = []

    async def send(self, topic: str, value: Any, key: Any, **kwargs: Any) -> _Handle:
        self.sent.append((topic, value, key))
        return _Handle(self.batches[len(self.sent) % len(self.batches)])


def test_a_write_task_watches_one_handle_per_producer_batch() -> None:
    import asyncio

    producer = _Producer(partitions=6)
    keys = pa.array([f"k{i}".encode() for i in range(1000)], pa.binary())
    values = pa.array([b"v" * 10] * 1000, pa.binary())
    batch = pa.RecordBatch.from_arrays([keys, values], names=["key", "value"])
    watched: dict[Any, Any] = {}
    asyncio.run(_kafka_io._send_batch(producer, "t", batch, watched))
    assert producer.sent[:2] == [("t", b"v" * 10, b"k0"), ("t", b"v" * 10, b"k1")]
    assert len(producer.sent) == 1000
    # Rows alternate between partitions; still only one handle per producer batch is kept.
    assert len(watched) == 6
    for delivered in producer.batches:
        delivered.done = True
    producer.batches[3].failure = RuntimeError("delivery failed")
    with pytest.raises(RuntimeError, match="delivery failed"):
        asyncio.run(_kafka_io._send_batch(producer, "t", batch, watched))
