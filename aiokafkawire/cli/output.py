"""What the commands show a person: tables on stdout, status lines and progress bars on stderr.

Results (tables, records) go to stdout so they can be piped; everything about the run (what is
being waited for, progress, counts) goes to stderr.  At a terminal, waits show a spinner with
the time elapsed and long jobs a progress bar (``rich``); otherwise each wait is announced once
as a plain line, so logs and tests see it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

# Tables written to a pipe or a file are not wrapped at 80 columns.
_PIPE_WIDTH = 200


def _console(stream: Any) -> Console:
    terminal = stream.isatty()
    return Console(
        file=stream,
        highlight=False,
        width=None if terminal else _PIPE_WIDTH,
        soft_wrap=not terminal,
    )


class Reporter:
    """The output of one command: ``out`` for results, ``err`` for status, progress and errors."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.out = _console(sys.stdout)
        self.err = _console(sys.stderr)
        self.quiet = quiet
        self.interactive = sys.stderr.isatty()

    def info(self, message: str) -> None:
        """A line about the run on stderr (not with ``--quiet``)."""
        if not self.quiet:
            self.err.print(message, markup=False)

    def error(self, message: str) -> None:
        """A one-line error on stderr (always)."""
        self.err.print(f"error: {message}", markup=False, style="bold red")

    @contextlib.contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        """Say what is being waited for while the block runs (a spinner, or one plain line)."""
        if self.quiet:
            yield
            return
        if not self.interactive:
            self.err.print(f"waiting: {what} ...", markup=False)
            yield
            return
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
        ) as progress:
            progress.add_task(what, total=None)
            yield

    @contextlib.asynccontextmanager
    async def waiting_if_slow(self, what: str, delay: float = 1.0) -> AsyncIterator[None]:
        """Like :meth:`waiting`, but only once the block has run for ``delay`` seconds."""
        shown = contextlib.ExitStack()

        async def announce() -> None:
            await asyncio.sleep(delay)
            shown.enter_context(self.waiting(what))

        announcer = asyncio.ensure_future(announce())
        try:
            yield
        finally:
            announcer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await announcer
            shown.close()

    @contextlib.contextmanager
    def progress(self, what: str, total: int) -> Iterator[Callable[[int], None]]:
        """A progress bar for ``total`` steps; yields ``advance(steps)``.

        Not at a terminal, the start and the end are announced as plain lines instead.
        """
        if self.quiet or not self.interactive:
            if not self.quiet:
                self.err.print(f"{what}: {total:,} ...", markup=False)
            yield _ignore
            return
        with Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=False,
        ) as progress:
            task = progress.add_task(what, total=total)

            def advance(steps: int) -> None:
                progress.update(task, advance=steps)

            yield advance

    @contextlib.contextmanager
    def meter(self, what: str, total: int | None = None) -> Iterator[Callable[[int, int], None]]:
        """A live count of records and their rate for a long run, at a terminal only; yields
        ``advance(records, steps)``: ``steps`` move the bar toward ``total`` (bytes of an
        input file, say), and without a ``total`` the records do.  Silent in a pipe or with
        ``--quiet``: the command's summary line says the same at the end."""
        if self.quiet or not self.interactive:
            yield _ignore_two
            return
        columns: list[ProgressColumn | str] = [
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
        ]
        if total is not None:
            columns += [BarColumn(), TaskProgressColumn()]
        columns += [_RecordRateColumn(), TimeElapsedColumn()]
        with Progress(*columns, console=self.err, transient=True) as progress:
            task = progress.add_task(what, total=total, records=0)
            records = [0]

            def advance(count: int, steps: int = 0) -> None:
                records[0] += count
                progress.update(
                    task, advance=steps if total is not None else count, records=records[0]
                )

            yield advance

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        title: str | None = None,
        right: Sequence[str] = (),
    ) -> None:
        """Print a table on stdout; columns named in ``right`` are right-aligned (numbers)."""
        table = Table(title=title, title_justify="left", header_style="bold")
        for column in columns:
            table.add_column(column, justify="right" if column in right else "left")
        for row in rows:
            table.add_row(*("-" if cell is None else str(cell) for cell in row))
        self.out.print(table)

    def json(self, document: Any) -> None:
        """Print ``document`` as one line of JSON on stdout (``-J``)."""
        sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def line(self, text: str) -> None:
        """A plain line of results on stdout."""
        self.out.print(text, markup=False)


def _ignore(_steps: int) -> None:
    return None


def _ignore_two(_records: int, _steps: int = 0) -> None:
    return None


class _RecordRateColumn(ProgressColumn):
    """``12,345 records  4,321/s``: the count so far and the mean rate since the start."""

    def render(self, task: Task) -> Text:
        records = int(task.fields.get("records", 0))
        elapsed = task.elapsed or 0.0
        rate = f"{records / elapsed:,.0f}/s" if elapsed > 0 else "-/s"
        return Text(f"{records:,} records  {rate}")


class Stopwatch:
    """Seconds since creation, for "done in 1.2 s" lines."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    @property
    def seconds(self) -> float:
        """Seconds elapsed."""
        return time.perf_counter() - self.started


def rate(count: int, seconds: float) -> str:
    """``count / seconds`` as a readable rate (``"812,345/s"``)."""
    return f"{count / max(seconds, 1e-9):,.0f}/s"
