"""``produce TOPIC``: send lines of stdin (or a file) as records."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
import threading
from collections.abc import AsyncIterator
from typing import IO, TYPE_CHECKING, Any

from aiokafkawire.cli.admin_calls import answered, connect_admin, existing_topics, topic_name
from aiokafkawire.cli.exit_codes import CliError, ExitCode, check_item
from aiokafkawire.cli.formats import ENCODINGS, LineParser, parse_header, unescape_bytes
from aiokafkawire.cli.options import non_negative_int, positive_int
from aiokafkawire.cli.output import Stopwatch

if TYPE_CHECKING:
    from aiokafkawire.admin import Admin
    from aiokafkawire.cli.app import Context, Parents
    from aiokafkawire.producer import DeliveryHandle

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
_CHUNK = 65536


# long: one declaration per option, read top to bottom
def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``produce``."""
    produce = parents.command(
        sub,
        "produce",
        run_produce,
        help="send lines of stdin or a file as records",
        description="Send each line of stdin (or --file) as one record (or each chunk ended by "
        "the -D delimiter).  The topic must exist, or be created with --create.  "
        "'consume -e -o json --encoding base64 SRC | produce --json --encoding base64 DST' "
        "copies a topic byte for byte: keys, headers, tombstones, partitions and timestamps.",
    )
    produce.add_argument("topic", metavar="TOPIC", help="the topic to write to")
    produce.add_argument(
        "-f", "--file", metavar="PATH", help="read lines from this file instead of stdin"
    )
    produce.add_argument(
        "-K",
        "--key-separator",
        metavar="SEP",
        help="split each line at the first SEP into key and value (\\t for a tab); "
        "a line without SEP has no key",
    )
    produce.add_argument("-k", "--key", help="the key of every record (instead of -K)")
    produce.add_argument(
        "-D",
        "--delimiter",
        metavar="DELIM",
        help="records end with DELIM instead of a newline (escapes: \\n \\t \\r \\0 \\xHH); "
        "everything between two delimiters is sent byte for byte (not with --json)",
    )
    produce.add_argument(
        "--null-value",
        metavar="TEXT",
        help="a value equal to TEXT is sent as null: a tombstone (e.g. --null-value '' for "
        "empty lines; not with --json, whose null is null)",
    )
    produce.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a header added to every record (repeatable)",
    )
    produce.add_argument(
        "-p",
        "--partition",
        type=non_negative_int,
        metavar="N",
        help="write every record to partition N (default: by key, or spread)",
    )
    produce.add_argument(
        "-z", "--compression", choices=COMPRESSIONS, help="compression codec (default: none)"
    )
    produce.add_argument(
        "--acks",
        choices=("0", "1", "all"),
        help="acknowledgements to wait for: 0 none, 1 the leader, all the in-sync replicas "
        "(default: all)",
    )
    produce.add_argument(
        "--linger-ms",
        type=non_negative_int,
        metavar="MS",
        help="how long a batch may wait for more records (default: 5)",
    )
    produce.add_argument(
        "--json",
        action="store_true",
        help='read one JSON object a line: {"key": ..., "value": ..., "headers": {...}, '
        '"partition": N, "timestamp": MS} (all optional; "topic" and "offset", as consume -o '
        "json writes them, are ignored)",
    )
    produce.add_argument(
        "--encoding",
        choices=ENCODINGS,
        default="utf-8",
        help="with --json: keys, values and header values are text (utf-8) or base64, as "
        "consume -o json --encoding writes them (default: utf-8)",
    )
    produce.add_argument(
        "--create", action="store_true", help="create the topic if it does not exist"
    )
    produce.add_argument(
        "--partitions",
        type=positive_int,
        metavar="N",
        help="partitions of a topic made by --create (default: the broker's)",
    )
    produce.add_argument(
        "--replication-factor",
        type=positive_int,
        metavar="N",
        help="replication factor of a topic made by --create (default: the broker's)",
    )


async def ensure_topic(
    admin: Admin,
    topic: str,
    *,
    create: bool,
    partitions: int | None = None,
    replication_factor: int | None = None,
) -> int:
    """The topic's partition count; a missing topic is created (``create``) or ends the command."""
    from aiokafkawire import NewTopic

    try:
        return len((await existing_topics(admin, [topic]))[topic].partitions)
    except CliError as exc:
        if exc.code != ExitCode.NOT_FOUND:
            raise
        if not create:
            raise CliError(
                f"topic {topic!r} does not exist; add --create to create it", ExitCode.NOT_FOUND
            ) from None
    wanted = NewTopic(topic, partitions or -1, replication_factor or -1)
    result = answered(await admin.create_topics([wanted]), topic, topic_name(topic))
    check_item(f"creating topic {topic!r}", result.error)
    return len((await existing_topics(admin, [topic]))[topic].partitions)


# long: the reader thread's nested helpers (hand-off to a loop that may be gone) belong to it
async def read_lines(stream: IO[bytes], delimiter: bytes = b"\n") -> AsyncIterator[bytes]:
    """Lines of a binary stream (without their line ends), read by a daemon thread; with
    another ``delimiter``, the chunks it ends, byte for byte (no ``\\r`` is taken off).

    A daemon thread, not the loop's executor: a read blocked on a terminal must not keep the
    process alive after Ctrl-C.
    """
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue(maxsize=16)

    class _LoopGone(Exception):
        """The consuming loop has ended (the command finished or was interrupted)."""

    def put(item: bytes | BaseException | None) -> None:
        if loop.is_closed():
            raise _LoopGone
        put_item = chunks.put(item)
        try:
            future = asyncio.run_coroutine_threadsafe(put_item, loop)
        except RuntimeError as exc:  # closed between the check and the call
            put_item.close()
            raise _LoopGone from exc
        future.result()

    try:
        # The file descriptor itself: a thread blocked in a buffered reader holds its lock, and
        # the interpreter aborts at exit after Ctrl-C ("could not acquire lock ... <stdin>").
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream
        descriptor = None

    def read(size: int) -> bytes:
        if descriptor is not None:
            return os.read(descriptor, size)
        return getattr(stream, "read1", stream.read)(size)

    def reader() -> None:
        try:
            try:
                while chunk := read(_CHUNK):
                    put(chunk)
                put(None)
            except _LoopGone:
                raise
            except BaseException as exc:  # handed to the loop, which raises it
                put(exc)
        except _LoopGone:
            return  # nobody reads any more: the rest of the input is not wanted

    threading.Thread(target=reader, name="aiokafkawire-cli-input", daemon=True).start()
    pending = b""
    newline = delimiter == b"\n"
    while True:
        item = await chunks.get()
        if isinstance(item, BaseException):
            raise CliError(f"cannot read the input: {item}", ExitCode.USAGE)
        if item is None:
            break
        lines = (pending + item).split(delimiter)
        pending = lines.pop()
        for line in lines:
            yield line[:-1] if newline and line.endswith(b"\r") else line
    if pending:
        yield pending


def _open_input(path: str | None) -> IO[bytes]:
    if path is None:
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as exc:
        raise CliError(f"--file: {exc.strerror}: {path}", ExitCode.USAGE) from None


class _Deliveries:
    """Delivery handles not yet known to have succeeded; the first failure ends the command."""

    def __init__(self) -> None:
        self.pending: list[DeliveryHandle] = []

    def add(self, handle: DeliveryHandle) -> None:
        self.pending.append(handle)
        if len(self.pending) >= 10_000:
            self.check_done()

    def check_done(self) -> None:
        still = []
        for handle in self.pending:
            if not handle.done():
                still.append(handle)
                continue
            error = handle.exception()
            if error is not None:
                raise error
        self.pending = still

    async def wait_all(self) -> None:
        for handle in self.pending:
            await handle
        self.pending = []


def _input_size(stream: IO[bytes]) -> int | None:
    """The size of a regular input file (for a progress bar), else None."""
    try:
        status = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


async def _send_all(
    context: Context,
    producer: Any,
    stream: IO[bytes],
    how: tuple[LineParser, bytes, bytes | None],
    deliveries: _Deliveries,
) -> int:
    """Send every record of the input; returns the count.  A long run shows its progress and
    rate at a terminal (not while a person types the input)."""
    args = context.args
    parser, delimiter, fixed_key = how
    meter = (
        contextlib.nullcontext(_no_meter)
        if stream.isatty()
        else context.report.meter("producing", total=_input_size(stream))
    )
    count = unmetered = size = 0
    with meter as advance:
        async for line in read_lines(stream, delimiter):
            record = parser.parse(line, count + 1)
            handle = await producer.send(
                args.topic,
                record.value,
                key=fixed_key if fixed_key is not None else record.key,
                partition=record.partition if record.partition is not None else args.partition,
                timestamp=record.timestamp,
                headers=record.headers or None,
            )
            deliveries.add(handle)
            count += 1
            unmetered += 1
            size += len(line) + len(delimiter)
            if unmetered >= 1024:  # the meter's lock and refresh cost more than a send
                advance(unmetered, size)
                unmetered = size = 0
        advance(unmetered, size)
    return count


def _no_meter(_records: int, _steps: int = 0) -> None:
    return None


def _input_format(args: Any) -> tuple[LineParser, bytes]:
    """How the input is split into records and parsed, from the options (checked together)."""
    if args.key is not None and (args.key_separator or args.json):
        raise CliError("--key cannot be combined with --key-separator or --json", ExitCode.USAGE)
    if args.json and (args.delimiter is not None or args.null_value is not None):
        raise CliError(
            "--json reads one object a line, with null for null: not with --delimiter or "
            "--null-value",
            ExitCode.USAGE,
        )
    if args.encoding != "utf-8" and not args.json:
        raise CliError("--encoding needs --json (other input is sent as it is)", ExitCode.USAGE)
    delimiter = unescape_bytes(args.delimiter) if args.delimiter is not None else b"\n"
    if not delimiter:
        raise CliError("--delimiter must not be empty", ExitCode.USAGE)
    parser = LineParser(
        key_separator=args.key_separator,
        json_input=args.json,
        headers=[parse_header(h) for h in args.header],
        null_value=unescape_bytes(args.null_value) if args.null_value is not None else None,
        encoding=args.encoding,
    )
    return parser, delimiter


def _producer_options(context: Context) -> dict[str, Any]:
    """The producer's options: the command's flags over -X and the profile, over defaults."""
    args = context.args
    flags = {"acks": args.acks, "linger_ms": args.linger_ms}
    if args.compression is not None:
        flags["compression"] = None if args.compression == "none" else args.compression
    return context.client_options(
        "producer",
        defaults={"acks": "all", "linger_ms": 5},
        **{name: value for name, value in flags.items() if value is not None},
    )


async def run_produce(context: Context) -> int:
    """Send the input's lines to the topic."""
    from aiokafkawire import Producer

    args = context.args
    report = context.report
    parser, delimiter = _input_format(args)
    fixed_key = args.key.encode() if args.key is not None else None
    async with connect_admin(context) as admin:
        partitions = await ensure_topic(
            admin,
            args.topic,
            create=args.create,
            partitions=args.partitions,
            replication_factor=args.replication_factor,
        )
    if args.partition is not None and args.partition >= partitions:
        raise CliError(
            f"topic {args.topic!r} has {partitions} partition(s); {args.partition} is not one",
            ExitCode.NOT_FOUND,
        )
    stream = _open_input(args.file)
    clock = Stopwatch()
    count = 0
    deliveries = _Deliveries()
    try:
        async with Producer(**_producer_options(context)) as producer:
            if stream.isatty():
                report.info(f"type records for {args.topic}, one a line; Ctrl-D ends")
            count = await _send_all(
                context, producer, stream, (parser, delimiter, fixed_key), deliveries
            )
            await producer.flush()
            await deliveries.wait_all()
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    report.info(f"produced {count:,} record(s) to {args.topic} in {clock.seconds:.2f} s")
    return ExitCode.OK
