"""Workload 3's data path alone: 10 KB records copied into a batch, or referenced as parts.

No broker, no producer: ``copy`` appends each record to a ``RecordBatchBuilder`` (the value's
copy, the buffer's growth as the reservation doubles, the CRC-32C in ``build_view``) and sends
the built batch; ``parts`` builds the same batches as a list of buffers (a small header per
record, the value itself referenced, the CRC-32C computed over the parts) and sends them with
``sendmsg``.  The batches go over an AF_UNIX socket pair to a child process that reads and
drops them, so the figures are this process's CPU only (user and system, per record).

    python benchmarks/bench_copy_vs_parts.py copy
    python benchmarks/bench_copy_vs_parts.py parts

Figures: ``benchmarks/README.md`` ("Workload 3, 10 KB records: CPU").
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import sys
from pathlib import Path

from crc32c import crc32c

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads.common import payloads

from aiokafkawire.protocol.records import RecordBatchBuilder

PER_BATCH = 42  # records per batch in workload 3 on Apache Kafka (about 430 KB)
VALUES, KEYS = payloads(10_240, 8)


def send_copied(sock: socket.socket, start: int, count: int) -> None:
    for first in range(start, start + count, PER_BATCH):
        builder = RecordBatchBuilder(2, batch_size=16_384)
        size = 16_384
        for i in range(first, first + PER_BATCH):
            key, value = KEYS[i & 1023], VALUES[i & 1023]
            if not builder.append(0, key, value, None):
                size *= 2  # the producer doubles a batch's reservation as it fills
                builder.batch_size = size
                builder.append(0, key, value, None)
        sock.sendall(builder.build_view())


def send_parts(sock: socket.socket, start: int, count: int) -> None:
    for first in range(start, start + count, PER_BATCH):
        parts: list[bytes | memoryview] = [bytes(61)]  # the batch header
        crc = 0
        for i in range(first, first + PER_BATCH):
            head = b"\x00\x00\x00\x10" + KEYS[i & 1023] + b"\xa0\xa0"  # varints' sizes
            value = VALUES[i & 1023]
            crc = crc32c(value, crc32c(head, crc))
            parts += (head, value)
        while parts:
            sent = sock.sendmsg(parts[:1024])
            while sent:
                size = len(parts[0])
                if sent >= size:
                    del parts[0]
                    sent -= size
                else:
                    parts[0] = memoryview(parts[0])[sent:]
                    sent = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["copy", "parts"])
    parser.add_argument("--records", type=int, default=40_000)
    args = parser.parse_args()
    ours, theirs = socket.socketpair()
    child = os.fork()
    if child == 0:  # the reader: drops everything until the sender closes
        ours.close()
        buffer = bytearray(1 << 20)
        while theirs.recv_into(buffer):
            pass
        os._exit(0)
    theirs.close()
    send = send_copied if args.mode == "copy" else send_parts
    send(ours, 0, 4_000)  # warm-up
    before = resource.getrusage(resource.RUSAGE_SELF)
    send(ours, 4_000, args.records)
    after = resource.getrusage(resource.RUSAGE_SELF)
    ours.close()
    os.waitpid(child, 0)
    user = (after.ru_utime - before.ru_utime) / args.records * 1e6
    system = (after.ru_stime - before.ru_stime) / args.records * 1e6
    print(
        f"{args.mode}: user {user:.2f} + sys {system:.2f} us per record "
        f"(load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
