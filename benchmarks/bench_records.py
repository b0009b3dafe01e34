"""Build and parse 100,000 records of 100 bytes (codecs none and lz4), against aiokafka.

Run: ``python benchmarks/bench_records.py [--records N] [--repeat R]``.  Prints records/s for
aiokafkawire's records interface (pure Python unless an accelerator is installed), aiokafka's
compiled extension and aiokafka's pure-Python classes, and the ratio ours / theirs.
Records go into batches of ``batch_size`` bytes (16 KiB, the producer default); parsing reads
all batches from one buffer, as a fetch response holds them, and touches every record's fields.
Times are the best of ``--repeat`` runs in process CPU time (the machine may be shared).
"""

from __future__ import annotations

import argparse
import os
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

from aiokafkawire.protocol import records as ours
from aiokafkawire.protocol.records import CompressionType

BATCH_SIZE = 16384
VALUE_SIZE = 100
TIMESTAMP = 1_700_000_000_000


def make_values(count: int) -> list[bytes]:
    seed = os.urandom(VALUE_SIZE // 2)
    # Half random, half repeated text: compressible like typical payloads, never identical.
    half = VALUE_SIZE // 2
    return [seed[: half - 6] + b"%06d" % i + b"a" * half for i in range(count)]


def build_ours(values: list[bytes], codec: int) -> list[bytes]:
    batches = []
    builder = ours.RecordBatchBuilder(magic=2, compression_type=codec, batch_size=BATCH_SIZE)
    for i, value in enumerate(values):
        if not builder.append(TIMESTAMP + i, None, value, None):
            batches.append(builder.build())
            builder = ours.RecordBatchBuilder(
                magic=2, compression_type=codec, batch_size=BATCH_SIZE
            )
            builder.append(TIMESTAMP + i, None, value, None)
    batches.append(builder.build())
    return batches


def parse_ours(data: bytes) -> int:
    count = 0
    for batch in ours.iter_batches(data):
        for record in batch:
            _ = (record.offset, record.timestamp, record.key, record.value, record.headers)
            count += 1
    return count


def build_aiokafka(builder_cls: Any) -> Callable[[list[bytes], int], list[bytes]]:
    def build(values: list[bytes], codec: int) -> list[bytes]:
        batches = []
        builder = builder_cls(2, codec, 0, -1, -1, -1, BATCH_SIZE)
        offset = 0
        for i, value in enumerate(values):
            if builder.append(offset, TIMESTAMP + i, None, value, []) is None:
                batches.append(bytes(builder.build()))
                builder = builder_cls(2, codec, 0, -1, -1, -1, BATCH_SIZE)
                offset = 0
                builder.append(offset, TIMESTAMP + i, None, value, [])
            offset += 1
        batches.append(bytes(builder.build()))
        return batches

    return build


def _split(data: bytes) -> Iterator[memoryview]:
    view = memoryview(data)
    pos = 0
    while pos + 12 <= len(data):
        end = pos + 12 + struct.unpack_from(">i", data, pos + 8)[0]
        yield view[pos:end]
        pos = end


def parse_aiokafka_c(data: bytes) -> int:
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


def parse_aiokafka_py(data: bytes) -> int:
    from aiokafka.record.default_records import _DefaultRecordBatchPy

    count = 0
    for view in _split(data):
        for record in _DefaultRecordBatchPy(view):
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
    values = make_values(args.records)
    impl = ours._impl.__name__.rsplit(".", 1)[-1]

    builders: dict[str, Callable[[list[bytes], int], list[bytes]]] = {
        f"aiokafkawire ({impl})": build_ours
    }
    parsers: dict[str, Callable[[bytes], int]] = {f"aiokafkawire ({impl})": parse_ours}
    try:
        from aiokafka.record import _crecords
        from aiokafka.record.default_records import _DefaultRecordBatchBuilderPy
    except ImportError:
        print("aiokafka is not installed: only aiokafkawire is measured")
    else:
        builders["aiokafka (C extension)"] = build_aiokafka(_crecords.DefaultRecordBatchBuilder)
        builders["aiokafka (pure Python)"] = build_aiokafka(_DefaultRecordBatchBuilderPy)
        parsers["aiokafka (C extension)"] = parse_aiokafka_c
        parsers["aiokafka (pure Python)"] = parse_aiokafka_py

    print(f"{args.records:,} records of {VALUE_SIZE} bytes, batches of {BATCH_SIZE} bytes")
    for codec in (CompressionType.NONE, CompressionType.LZ4):
        print(f"\n== {codec.name.lower()} ==")
        reference = b"".join(build_ours(values, codec))
        for operation, candidates in (("build", builders), ("parse", parsers)):
            rates = {}
            for name, func in candidates.items():
                if operation == "build":
                    seconds, batches = best_of(args.repeat, func, values, codec)
                    assert sum(parse_ours(b) for b in batches) == args.records, name
                else:
                    seconds, count = best_of(args.repeat, func, reference)
                    assert count == args.records, name
                rates[name] = args.records / seconds
            mine = next(iter(rates.values()))
            for name, rate in rates.items():
                ratio = "" if rate is mine else f"   ours/theirs = {mine / rate:5.2f}x"
                print(f"{operation:5}  {name:28} {rate:14,.0f} records/s{ratio}")


if __name__ == "__main__":
    main()
