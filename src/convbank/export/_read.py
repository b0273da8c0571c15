"""What every reader does with the files it is given: lines read as real files hold them (a
UTF-8 byte-order mark, CRLF line ends, no final newline), the first KiBs for a sniffer, JSON
decoded into a one-line reason, and a rejected record's text cut to a few KiB.

Nothing heavy here: a format's module imports it at its own import.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from convbank.export._format import Rejected

__all__ = ["RECORD_LIMIT", "decode_json", "head", "json_lines", "lines", "rejected", "suffixed"]

RECORD_LIMIT = 4096
"""The most characters of a rejected record kept with its reason."""

_decode = msgspec.json.Decoder().decode


def head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of a file (its byte-order mark left out); empty where it
    cannot be read (a sniffer says no)."""
    try:
        with path.open("rb") as f:
            start = f.read(size)
    except OSError:
        return b""
    return start.removeprefix(codecs.BOM_UTF8)


def lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """A file's lines, numbered from 1, without their line ends (``\\n`` or ``\\r\\n``),
    the byte-order mark of the first left out; blank lines skipped; read one at a time."""
    with path.open("rb") as f:
        for number, raw in enumerate(f, 1):
            line = raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw
            line = line.removesuffix(b"\n").removesuffix(b"\r")
            if line.strip():
                yield number, line


def decode_json(data: bytes | str) -> tuple[Any, str | None]:
    """The JSON value of ``data``, or None and why it is not JSON (msgspec's reason)."""
    try:
        return _decode(data), None
    except msgspec.DecodeError as exc:
        return None, f"expected JSON ({exc})"


def json_lines(path: Path) -> Iterator[tuple[int, Any] | Rejected]:
    """The JSON values of a JSON Lines file, numbered by line; a line that is not JSON (or not
    UTF-8) a :class:`Rejected` naming it."""
    for number, line in lines(path):
        value, problem = decode_json(line)
        if problem is not None:
            yield rejected(path, f"line {number}", problem, line)
        else:
            yield number, value


def rejected(path: Path, where: str, expected: str, record: bytes | str | Any = "") -> Rejected:
    """A :class:`Rejected` whose record is its text (JSON for a value), cut to
    :data:`RECORD_LIMIT` characters."""
    if isinstance(record, bytes):
        text = record.decode("utf-8", "replace")
    elif isinstance(record, str):
        text = record
    else:
        text = msgspec.json.encode(record, enc_hook=str).decode()
    return Rejected(path, where, expected, text[:RECORD_LIMIT])


def suffixed(paths: Sequence[Path], *suffixes: str) -> bool:
    """Whether every path is a file whose name ends in one of ``suffixes`` (lower case)."""
    return bool(paths) and all(p.is_file() and p.name.lower().endswith(suffixes) for p in paths)
