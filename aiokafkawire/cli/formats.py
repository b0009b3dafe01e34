"""How records are written by ``consume`` and read by ``produce``.

Output (``consume --output``):

- ``raw``: each record's value, then a newline, byte for byte;
- ``json``: one JSON object per record (topic, partition, offset, timestamp, key, value,
  headers), keys/values/header values as UTF-8 text (``--encoding utf-8``, undecodable bytes
  replaced) or base64 (``--encoding base64``); null stays null;
- ``--format TEMPLATE``: a Python format string over the fields ``topic``, ``partition``,
  ``offset``, ``timestamp``, ``key``, ``value``, ``headers`` (``k=v`` pairs joined by ``,``),
  with ``\\t``, ``\\n`` and ``\\\\`` understood, e.g. ``'{partition}:{offset}\\t{key}={value}'``.

Input (``produce``): one record per line; ``--key-separator SEP`` splits each line into key and
value at the first SEP; ``--json`` reads one JSON object per line with optional ``key``,
``value``, ``headers`` (an object or a list of pairs), ``partition`` and ``timestamp``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire.cli.exit_codes import CliError, ExitCode

OUTPUTS = ("raw", "json")
ENCODINGS = ("utf-8", "base64")
TEMPLATE_FIELDS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")


def unescape(text: str) -> str:
    """Turn the two-character sequences ``\\t``, ``\\n`` and ``\\\\`` into what they name."""
    out = []
    chars = iter(text)
    for char in chars:
        if char != "\\":
            out.append(char)
            continue
        following = next(chars, "")
        out.append({"t": "\t", "n": "\n", "\\": "\\"}.get(following, "\\" + following))
    return "".join(out)


class RecordFormatter:
    """Turns consumer records into the bytes ``consume`` writes for them."""

    def __init__(
        self, output: str = "raw", *, template: str | None = None, encoding: str = "utf-8"
    ) -> None:
        self._encoding = encoding
        self._template = unescape(template) if template is not None else None
        self._output = "template" if template is not None else output
        if self._template is not None:
            sample = dict.fromkeys(TEMPLATE_FIELDS, "")
            try:
                self._template.format_map(sample)
            except (KeyError, IndexError, ValueError) as exc:
                raise CliError(
                    f"--format: {exc!s} is not a field; use {', '.join(TEMPLATE_FIELDS)}",
                    ExitCode.USAGE,
                ) from None

    def _text(self, data: bytes | None) -> str | None:
        if data is None:
            return None
        if self._encoding == "base64":
            return base64.b64encode(data).decode("ascii")
        return bytes(data).decode("utf-8", "replace")

    def format(self, record: Any) -> bytes:
        """The bytes for one record, newline included."""
        if self._output == "raw":
            return (bytes(record.value) if record.value is not None else b"") + b"\n"
        if self._output == "json":
            document = {
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "timestamp": record.timestamp,
                "key": self._text(record.key),
                "value": self._text(record.value),
                "headers": [[name, self._text(value)] for name, value in record.headers],
            }
            return json.dumps(document, ensure_ascii=False).encode() + b"\n"
        assert self._template is not None
        fields = {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key": self._text(record.key) or "",
            "value": self._text(record.value) or "",
            "headers": ",".join(
                f"{name}={self._text(value) or ''}" for name, value in record.headers
            ),
        }
        return self._template.format_map(fields).encode() + b"\n"


@dataclass
class InputRecord:
    """One record read from ``produce``'s input."""

    value: bytes | None
    key: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    partition: int | None = None
    timestamp: int | None = None


def _as_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, separators=(",", ":")).encode()


def parse_header(text: str) -> tuple[str, bytes]:
    """``name=value`` from ``--header`` as a record header."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise CliError(f"--header {text!r}: write it as NAME=VALUE", ExitCode.USAGE)
    return name, value.encode()


class LineParser:
    """Turns lines of ``produce``'s input into records."""

    def __init__(
        self,
        *,
        key_separator: str | None = None,
        json_input: bool = False,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        self._separator = unescape(key_separator).encode() if key_separator else None
        self._json = json_input
        self._headers = list(headers)

    def parse(self, line: bytes, number: int) -> InputRecord:
        """The record of input line ``number`` (1-based, for error messages)."""
        if self._json:
            return self._parse_json(line, number)
        key = None
        if self._separator is not None:
            head, sep, tail = line.partition(self._separator)
            if sep:
                key, line = head, tail
        return InputRecord(value=line, key=key, headers=list(self._headers))

    def _parse_json(self, line: bytes, number: int) -> InputRecord:
        try:
            document = json.loads(line)
        except ValueError as exc:
            raise CliError(f"input line {number} is not JSON: {exc}", ExitCode.USAGE) from None
        if not isinstance(document, dict):
            raise CliError(f"input line {number}: expected a JSON object", ExitCode.USAGE)
        unknown = set(document) - {"key", "value", "headers", "partition", "timestamp"}
        if unknown:
            raise CliError(
                f"input line {number}: unknown fields {sorted(unknown)}; use key, value, "
                "headers, partition, timestamp",
                ExitCode.USAGE,
            )
        raw_headers = document.get("headers") or []
        pairs = raw_headers.items() if isinstance(raw_headers, dict) else raw_headers
        try:
            headers = list(self._headers) + [(str(k), _as_bytes(v)) for k, v in pairs]
        except (TypeError, ValueError):
            raise CliError(
                f"input line {number}: headers must be an object or a list of pairs",
                ExitCode.USAGE,
            ) from None
        partition = document.get("partition")
        timestamp = document.get("timestamp")
        for name, value in (("partition", partition), ("timestamp", timestamp)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise CliError(f"input line {number}: {name} must be an integer", ExitCode.USAGE)
        return InputRecord(
            value=_as_bytes(document.get("value")),
            key=_as_bytes(document.get("key")),
            headers=headers,
            partition=partition,
            timestamp=timestamp,
        )
