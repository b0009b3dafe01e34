"""How records are written by ``consume`` and read by ``produce``.

Output (``consume --output``):

- ``raw``: each record's value, then the delimiter (``-D``, default a newline), byte for byte;
- ``json``: one JSON object per line (topic, partition, offset, timestamp, key, value,
  headers), keys/values/header values as UTF-8 text (``--encoding utf-8``, undecodable bytes
  replaced) or base64 (``--encoding base64``, byte for byte); null stays null;
- ``--format TEMPLATE``: a Python format string over the fields ``topic``, ``partition``,
  ``offset``, ``timestamp``, ``key``, ``value``, ``headers`` (``k=v`` pairs joined by ``,``),
  with ``\\t``, ``\\n`` and ``\\\\`` understood, e.g. ``'{partition}:{offset}\\t{key}={value}'``.

Input (``produce``): one record per delimiter-ended chunk (``-D``, default a newline);
``--key-separator SEP`` splits each into key and value at the first SEP; ``--null-value TEXT``
sends a value equal to TEXT as null (a tombstone); ``--json`` reads one JSON object per line
with optional ``key``, ``value``, ``headers`` (an object or a list of pairs), ``partition`` and
``timestamp`` (``topic`` and ``offset``, which ``consume -o json`` writes, are ignored), as
text or, with ``--encoding base64``, as base64 the way ``consume -o json --encoding base64``
writes them: so ``consume | produce`` copies a topic byte for byte.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafkawire.cli.exit_codes import CliError, ExitCode

OUTPUTS = ("raw", "json")
ENCODINGS = ("utf-8", "base64")
TEMPLATE_FIELDS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")


_ESCAPES = {"t": b"\t", "n": b"\n", "r": b"\r", "0": b"\0", "\\": b"\\"}
_HEX = frozenset("0123456789abcdefABCDEF")


def unescape_bytes(text: str) -> bytes:
    """``text`` as bytes (UTF-8), with ``\\t``, ``\\n``, ``\\r``, ``\\0``, ``\\\\`` and
    ``\\xHH`` (one byte) turned into what they name; other backslashes stay as they are."""
    out = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        following = text[i + 1 : i + 2]
        if char != "\\" or not following:
            out += char.encode()
            i += 1
        elif following in _ESCAPES:
            out += _ESCAPES[following]
            i += 2
        elif following == "x" and len(text) >= i + 4 and set(text[i + 2 : i + 4]) <= _HEX:
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        else:
            out += b"\\"
            i += 1
    return bytes(out)


def unescape(text: str) -> str:
    """Turn the two-character sequences ``\\t``, ``\\n``, ``\\r``, ``\\0`` and ``\\\\`` into what
    they name (text; :func:`unescape_bytes` also understands ``\\xHH``)."""
    out = []
    chars = iter(text)
    for char in chars:
        if char != "\\":
            out.append(char)
            continue
        following = next(chars, "")
        named = _ESCAPES.get(following)
        out.append(named.decode() if named is not None else "\\" + following)
    return "".join(out)


class RecordFormatter:
    """Turns consumer records into the bytes ``consume`` writes for them."""

    def __init__(
        self,
        output: str = "raw",
        *,
        template: str | None = None,
        encoding: str = "utf-8",
        delimiter: bytes = b"\n",
    ) -> None:
        self._encoding = encoding
        self._delimiter = delimiter
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
        """The bytes for one record, its delimiter (a newline for json) included."""
        if self._output == "raw":
            return (bytes(record.value) if record.value is not None else b"") + self._delimiter
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
        return self._template.format_map(fields).encode() + self._delimiter


@dataclass
class InputRecord:
    """One record read from ``produce``'s input."""

    value: bytes | None
    key: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    partition: int | None = None
    timestamp: int | None = None


# Fields of consume's json output that produce reads but does not send (a copy's source).
_IGNORED_FIELDS = frozenset({"topic", "offset"})
_JSON_FIELDS = frozenset({"key", "value", "headers", "partition", "timestamp"})


def _as_bytes(value: Any, encoding: str = "utf-8") -> bytes | None:
    if value is None:
        return None
    if encoding == "base64":
        if not isinstance(value, str):
            raise ValueError("with --encoding base64, keys, values and headers must be strings")
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            raise ValueError(f"not base64: {value[:40]!r}") from None
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
        null_value: bytes | None = None,
        encoding: str = "utf-8",
    ) -> None:
        self._separator = unescape_bytes(key_separator) if key_separator else None
        self._json = json_input
        self._headers = list(headers)
        self._null_value = null_value
        self._encoding = encoding

    def parse(self, line: bytes, number: int) -> InputRecord:
        """The record of input line ``number`` (1-based, for error messages)."""
        if self._json:
            return self._parse_json(line, number)
        key = None
        if self._separator is not None:
            head, sep, tail = line.partition(self._separator)
            if sep:
                key, line = head, tail
        value = None if self._null_value is not None and line == self._null_value else line
        return InputRecord(value=value, key=key, headers=list(self._headers))

    def _parse_json(self, line: bytes, number: int) -> InputRecord:
        try:
            document = json.loads(line)
        except ValueError as exc:
            raise CliError(f"input line {number} is not JSON: {exc}", ExitCode.USAGE) from None
        if not isinstance(document, dict):
            raise CliError(f"input line {number}: expected a JSON object", ExitCode.USAGE)
        unknown = set(document) - _JSON_FIELDS - _IGNORED_FIELDS
        if unknown:
            raise CliError(
                f"input line {number}: unknown fields {sorted(unknown)}; use key, value, "
                "headers, partition, timestamp (topic and offset are ignored)",
                ExitCode.USAGE,
            )
        raw_headers = document.get("headers") or []
        pairs = raw_headers.items() if isinstance(raw_headers, dict) else raw_headers
        try:
            headers = list(self._headers) + [
                (str(k), _as_bytes(v, self._encoding)) for k, v in pairs
            ]
        except (TypeError, ValueError) as exc:
            raise CliError(
                f"input line {number}: headers must be an object or a list of pairs ({exc})",
                ExitCode.USAGE,
            ) from None
        partition = document.get("partition")
        timestamp = document.get("timestamp")
        for name, value in (("partition", partition), ("timestamp", timestamp)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise CliError(f"input line {number}: {name} must be an integer", ExitCode.USAGE)
        try:
            value = _as_bytes(document.get("value"), self._encoding)
            key = _as_bytes(document.get("key"), self._encoding)
        except ValueError as exc:
            raise CliError(f"input line {number}: {exc}", ExitCode.USAGE) from None
        return InputRecord(
            value=value,
            key=key,
            headers=headers,
            partition=partition,
            timestamp=timestamp,
        )
