"""Record batch v2 build and parse: pure Python vs the C accelerator vs aiokafka's C extension.

Run: ``python benchmarks/bench_records_accel.py [--records N] [--repeat R]``.  100,000 records of
100 bytes go into 16 KiB batches (the producer default); parsing reads every batch from one
buffer, as a fetch response holds them, and touches every record's fields.  Workloads: values
only (codecs none and lz4) and records with a 16-byte key and two headers (codec none).  Prints
records/s (best of ``--repeat`` runs, process CPU time) and the ratios accel/pure and
accel/aiokafka.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from aiokafkawire.protocol.records import CompressionType, _pure

BATCH_SIZE = 16384
VALUE_SIZE = 100
TIMESTAMP = 1_700_000_000_000

Row = tuple[bytes | None, bytes, list[tuple[str, bytes | None]]]


def make_rows(count: int, with_keys: bool) -> list[Row]:
    seed = os.urandom(VALUE_SIZE // 2)
    half = VALUE_SIZE // 2
    rows: list[Row] = []
    for i in range(count):
        value = seed[: half - 6] + b"%06d" % i + b"a" * half
        if with_keys:
            rows.append((b"key-%012d" % (i % 1000), value, [("trace", b"%08d" % i), ("n", None)]))
        else:
            rows.append((None, value, []))
    return rows


def build_ours(impl: ModuleType) -> Callable[[list[Row], int], list[bytes]]:
    def build(rows: list[Row], codec: int) -> list[bytes]:
        batches = []
        new = impl.RecordBatchBuilder
        builder = new(magic=2, compression_type=codec, batch_size=BATCH_SIZE)
        timestamp = TIMESTAMP
        for key, value, headers in rows:
            if not builder.append(timestamp, key, value, headers):
                batches.append(builder.build())
                builder = new(magic=2, compression_type=codec, batch_size=BATCH_SIZE)
                builder.append(timestamp, key, value, headers)
            timestamp += 1
        batches.append(builder.build())
        return batches

    return build


def parse_ours(impl: ModuleType) -> Callable[[bytes], int]:
    def parse(data: bytes) -> int:
        count = 0
        for batch in impl.iter_batches(data):
            for record in batch:
                _ = (record.offset, record.timestamp, record.key, record.value, record.headers)
                count += 1
        return count

    return parse


def build_aiokafka(builder_cls: Any) -> Callable[[list[Row], int], list[bytes]]:
    def build(rows: list[Row], codec: int) -> list[bytes]:
        batches = []
        builder = builder_cls(2, codec, 0, -1, -1, -1, BATCH_SIZE)
        offset = 0
        timestamp = TIMESTAMP
        for key, value, headers in rows:
            if builder.append(offset, timestamp, key, value, headers) is None:
                batches.append(bytes(builder.build()))
                builder = builder_cls(2, codec, 0, -1, -1, -1, BATCH_SIZE)
                offset = 0
                builder.append(offset, timestamp, key, value, headers)
            offset += 1
            timestamp += 1
        batches.append(bytes(builder.build()))
        return batches

    return build


def parse_aiokafka(data: bytes) -> int:
    from aiokafka.record._crecords import MemoryRecords

    count = 0
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        assert batch is not None
        for record in batch:
            _ = (record.offset, record.timestamp, record.key, record.value, record.headers)
            count += 1
    return count


def best_of(repeat: int, func: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        result = func(*args)
        best = min(best, time.process_time() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    builders: dict[str, Callable[[list[Row], int], list[bytes]]] = {"pure": build_ours(_pure)}
    parsers: dict[str, Callable[[bytes], int]] = {"pure": parse_ours(_pure)}
    try:
        from aiokafkawire.protocol.records import _accel
    except ImportError:
        print("the C accelerator is not built: pure Python only")
    else:
        builders["accel"] = build_ours(_accel)
        parsers["accel"] = parse_ours(_accel)
    try:
        from aiokafka.record import _crecords as aiokafka_c
    except ImportError:
        print("aiokafka's C extension is not installed: it is not measured")
    else:
        builders["aiokafka C"] = build_aiokafka(aiokafka_c.DefaultRecordBatchBuilder)
        parsers["aiokafka C"] = parse_aiokafka

    print(f"{args.records:,} records of {VALUE_SIZE} bytes, batches of {BATCH_SIZE} bytes")
    workloads = [
        ("values only, none", False, CompressionType.NONE),
        ("values only, lz4", False, CompressionType.LZ4),
        ("key + 2 headers, none", True, CompressionType.NONE),
    ]
    for title, with_keys, codec in workloads:
        print(f"\n== {title} ==")
        rows = make_rows(args.records, with_keys)
        reference = b"".join(build_ours(_pure)(rows, codec))
        for operation, candidates in (("build", builders), ("parse", parsers)):
            rates: dict[str, float] = {}
            for name, func in candidates.items():
                if operation == "build":
                    seconds, batches = best_of(args.repeat, func, rows, codec)
                    assert sum(parse_ours(_pure)(b) for b in batches) == args.records, name
                else:
                    seconds, count = best_of(args.repeat, func, reference)
                    assert count == args.records, name
                rates[name] = args.records / seconds
            ratios = ""
            if "accel" in rates:
                ratios = f"   accel/pure = {rates['accel'] / rates['pure']:5.2f}x"
                if "aiokafka C" in rates:
                    ratios += f"   accel/aiokafka C = {rates['accel'] / rates['aiokafka C']:5.2f}x"
            line = "  ".join(f"{name} {rate:12,.0f}/s" for name, rate in rates.items())
            print(f"{operation:5}  {line}{ratios}")


if __name__ == "__main__":
    main()
