"""Arrow record batches of the Spark reader: the C helper and the pyarrow path agree exactly."""

from __future__ import annotations

import random

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
