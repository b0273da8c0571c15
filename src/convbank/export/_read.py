"""What every reader does with the files it is given: lines read as real files hold them (a
UTF-8 byte-order mark, CRLF line ends, no final newline), the first KiBs for a sniffer, JSON
decoded into a one-line reason, and a rejected record's text cut to a few KiB.

Nothing heavy here: a format's module imports it at its own import.
"""

from __future__ import annotations

import codecs
import datetime
import decimal
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convbank._textio import foreign_encoding
from convbank.export._format import ReadOptions, Rejected
from convbank.export._json_text import decode_json
from convbank.model import Conversation

__all__ = [
    "LINE_LIMIT",
    "RECORD_LIMIT",
    "WHOLE_LIMIT",
    "LongLine",
    "an_id",
    "decode_json",
    "encoding_problem",
    "first_line_problem",
    "first_record",
    "head",
    "holds_value",
    "imported_layout",
    "json_lines",
    "json_records",
    "lines",
    "lines_in",
    "non_finite",
    "raw_lines",
    "read_imported",
    "rejected",
    "suffixed",
    "whole_json",
]

RECORD_LIMIT = 4096
"""The most characters of a rejected record kept with its reason."""

WHOLE_LIMIT = 1 << 30
"""The most bytes of a JSON file decoded whole (a JSON array of records, a ConvoKit corpus's
``conversations.json``): a larger one is a :class:`Rejected` naming it, never read."""

LINE_LIMIT = 64 << 20
"""The most bytes of one line (a record of JSON Lines, a ParlAI line, a ConvoKit utterance)
a reader takes, its line end left out: a longer line is a :class:`Rejected` naming it, read
past in blocks, never held whole (a file of one endless line is refused in bounded memory)."""


def head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of a file (its byte-order mark left out); empty where it
    cannot be read (a sniffer says no)."""
    try:
        with path.open("rb") as f:
            start = f.read(size)
    except OSError:
        return b""
    return start.removeprefix(codecs.BOM_UTF8)


def encoding_problem(path: Path) -> str | None:
    """Why a text file is not UTF-8 text as its first bytes show it, or None
    (:func:`convbank._textio.foreign_encoding`). Every reader of text reads UTF-8 alone (a
    UTF-8 byte-order mark is left out), so such a file is refused as a whole, naming the
    encoding found, never read as lines of NULs.
    Example: a file starting ``FF FE 7B 00`` gives ``expected UTF-8 text, found a UTF-16
    byte-order mark (FF FE); save it as UTF-8 (iconv -f UTF-16 -t UTF-8)``."""
    return foreign_encoding(head(path, 4))


def _line(raw: bytes, number: int) -> bytes:
    """Line ``number`` of a file as a reader sees it: its line end (``\\n`` or ``\\r\\n``)
    left out, and the first's byte-order mark."""
    line = raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw
    return line.removesuffix(b"\n").removesuffix(b"\r")


_ROOM = LINE_LIMIT + len(codecs.BOM_UTF8) + 2
"""The most bytes read for one line at once: the limit, a byte-order mark and a CRLF."""


def raw_lines(f: BinaryIO, stop: int | None = None) -> Iterator[tuple[bytes, bool]]:
    """The lines of an open file from where it is (to byte ``stop``), each with its line
    end, and whether it is whole: a line longer than :data:`_ROOM` comes as its first
    :data:`RECORD_LIMIT` bytes, the rest read past in blocks and never held."""
    for raw, whole, _ in _watched_lines(f, stop, None):
        yield raw, whole


def _watched_lines(f: BinaryIO, stop: int | None, field: bytes | None) -> Iterator[tuple[bytes, bool, bool]]:
    """:func:`raw_lines`, each line read past with whether it held the tab-separated field
    ``field`` with a value (:func:`holds_value`), looked for in its blocks; a whole line
    comes with False (its reader has it all, and looks itself)."""
    while stop is None or f.tell() < stop:
        raw = f.readline(_ROOM)
        if not raw:
            return
        if len(raw) < _ROOM or raw.endswith(b"\n"):
            yield raw, True, False
            continue
        start, rest, found = raw[:RECORD_LIMIT], raw, False
        carry = b"\t"  # the line's start counts as a tab before its first field
        while rest:
            block = carry + rest
            end = rest.endswith(b"\n")
            if field is not None and not found:
                found = holds_value(block, field)
            if end:
                break
            carry = block[-len(field) - 1 :] if field is not None else b""
            rest = f.readline(1 << 20)
        yield start, False, found


def holds_value(block: bytes, field: bytes) -> bool:
    """Whether ``block`` holds ``\\t`` + ``field`` (``b"episode_done:"``) with a value after
    it, a byte other than a tab or a line end: ParlAI's ``str_to_msg`` takes an
    ``episode_done`` of any value but an empty one as true. Example:
    ``holds_value(b"\\ttext:a\\tepisode_done:true\\n", b"episode_done:") is True``."""
    key = b"\t" + field
    at = block.find(key)
    while at >= 0:
        if block[at + len(key) : at + len(key) + 1] not in (b"", b"\t", b"\n", b"\r"):
            return True
        at = block.find(key, at + 1)
    return False


@dataclass(frozen=True)
class LongLine(Rejected):
    """A line longer than :data:`LINE_LIMIT`, read past: :class:`Rejected`, and whether it
    held the field a reader watched for (:func:`lines`' ``field``), as ParlAI's
    ``episode_done`` ends an episode."""

    held: bool = False


def _numbered(
    path: Path, f: BinaryIO, first: int, stop: int | None = None, field: bytes | None = None
) -> Iterator[tuple[int, bytes] | Rejected]:
    """:func:`raw_lines` numbered from ``first``, without their line ends, blank ones
    skipped; a line longer than :data:`LINE_LIMIT` a :class:`LongLine` naming it."""
    for number, (raw, whole, read_past_held) in enumerate(_watched_lines(f, stop, field), first):
        line = _line(raw, number)
        if not whole or len(line) > LINE_LIMIT:
            # a line held whole, just over the limit, is looked at here (read past: in its blocks)
            held = holds_value(b"\t" + raw, field) if whole and field is not None else read_past_held
            cut = rejected(
                path,
                f"line {number}",
                f"a line of at most {LINE_LIMIT:,} bytes (one record a line; this one is longer)",
                line,
            )
            yield LongLine(cut.path, cut.where, cut.expected, cut.record, held=held)
        elif line.strip():
            yield number, line


def lines(path: Path, field: bytes | None = None) -> Iterator[tuple[int, bytes] | Rejected]:
    """A file's lines, numbered from 1, without their line ends (``\\n`` or ``\\r\\n``),
    the byte-order mark of the first left out; blank lines skipped; read one at a time, a
    line longer than :data:`LINE_LIMIT` a :class:`LongLine` (read past, never held), which
    says whether it held the tab-separated field ``field`` with a value (``b"episode_done:"``,
    :func:`holds_value`). A file that is not UTF-8 text (:func:`encoding_problem`) is one
    :class:`Rejected` naming it."""
    problem = encoding_problem(path)
    if problem is not None:
        yield rejected(path, "file", problem)
        return
    with path.open("rb") as f:
        yield from _numbered(path, f, 1, field=field)


def lines_in(path: Path, runs: Iterable[tuple[int, int, int]]) -> Iterator[tuple[int, bytes] | Rejected]:
    """The lines of byte ranges of a file, each ``(number of its first line, start, end)``
    with its ends at line ends, in that order, as :func:`lines` gives them."""
    problem = encoding_problem(path)
    if problem is not None:
        yield rejected(path, "file", problem)
        return
    with path.open("rb") as f:
        for first, start, end in runs:
            f.seek(start)
            yield from _numbered(path, f, first, end)


def whole_json(path: Path) -> tuple[Any, str | None]:
    """The JSON value of a whole file (a JSON array of records, an object over many lines),
    its byte-order mark left out, or None and why not: not JSON, larger than
    :data:`WHOLE_LIMIT`, or too large for the memory this process may take (never a
    ``MemoryError``: JSON Lines stream, a record at a time)."""
    size = path.stat().st_size
    problem = encoding_problem(path)
    if problem is not None:
        return None, problem
    lines_instead = "write it as JSON Lines (one record a line), which is read a record at a time"
    if size > WHOLE_LIMIT:
        return (
            None,
            f"a JSON file read whole of at most {WHOLE_LIMIT:,} bytes (it holds {size:,}); {lines_instead}",
        )
    try:
        return decode_json(path.read_bytes().removeprefix(codecs.BOM_UTF8))
    except MemoryError:
        return (
            None,
            f"a JSON file read whole in the memory this process may take ({size:,} bytes); {lines_instead}",
        )


def json_lines(
    path: Path, numbered: Iterable[tuple[int, bytes] | Rejected] | None = None
) -> Iterator[tuple[int, Any] | Rejected]:
    """The JSON values of a JSON Lines file, numbered by line (of ``numbered``: some of its
    lines, as :func:`lines_in` gives them; by default all); a line that is not JSON (or not
    UTF-8) a :class:`Rejected` naming it."""
    for item in lines(path) if numbered is None else numbered:
        if isinstance(item, Rejected):
            yield item
            continue
        number, line = item
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
        try:
            text = msgspec.json.encode(record, enc_hook=str).decode()
        except RecursionError:  # nested deeper than the encoder goes
            text = "(nested too deep to be written back)"
    return Rejected(path, where, expected, text[:RECORD_LIMIT])


def suffixed(paths: Sequence[Path], *suffixes: str) -> bool:
    """Whether every path is a file whose name ends in one of ``suffixes`` (lower case)."""
    return bool(paths) and all(p.is_file() and p.name.lower().endswith(suffixes) for p in paths)


def json_records(path: Path) -> Iterator[tuple[str, Any] | Rejected]:
    """The records of a JSON file as real files hold them, each with where it is: a JSON array
    of records (``record 3``; decoded whole), a single JSON object (``record 1``), or JSON
    Lines (``line 3``; streamed, one line at a time). A value that is not JSON is a
    :class:`Rejected` naming its line (or the file)."""
    start = head(path, 256).lstrip()
    if start.startswith(b"["):
        value, problem = whole_json(path)
        if problem is not None or not isinstance(value, list):
            yield rejected(path, "file", f"{problem or 'expected'}: a JSON array of records")
            return
        for number, item in enumerate(value, 1):
            yield f"record {number}", item
        return
    if start.startswith(b"{"):
        first = next(lines(path), None)
        if isinstance(first, tuple) and decode_json(first[1])[1] is not None:  # one object over many lines
            value, problem = whole_json(path)
            if problem is None:
                yield "record 1", value
                return
    for item in json_lines(path):
        yield item if isinstance(item, Rejected) else (f"line {item[0]}", item[1])


def first_record(path: Path) -> Any:
    """The first record of a JSON file (:func:`json_records`), judged from its first line or,
    for a JSON array or an object over many lines, the first object's text within its first
    64 KiB; None where that is not a JSON object (a sniffer says no)."""
    start = head(path, 1 << 16).lstrip()
    value = None
    if start.startswith(b"["):
        value = decode_json(_first_object(start[1:].lstrip()))[0]
    elif start.startswith(b"{"):
        first = next(lines(path), None)
        value = decode_json(first[1])[0] if isinstance(first, tuple) else None
        if value is None:
            value = decode_json(_first_object(start))[0]
    return value if isinstance(value, dict) else None


def first_line_problem(path: Path) -> str | None:
    """Where and why the first line of a file of JSON Lines (one that starts with ``{``) is
    not JSON (``line 1: expected JSON (...)``), or None: what makes every sniffer say no to a
    file whose records are of a format but whose first cannot be read."""
    if not path.is_file() or not head(path, 1 << 16).lstrip().startswith(b"{"):
        return None
    first = next(lines(path), None)
    if not isinstance(first, tuple):
        return None
    number, raw = first
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"line {number}: expected UTF-8 text ({exc})"
    why = decode_json(raw)[1]
    return None if why is None else f"line {number}: {why}"


def _first_object(text: bytes) -> bytes:
    """The text of the JSON object ``text`` starts with (empty if it does not end in it)."""
    depth, in_string, escaped = 0, False, False
    for i, byte in enumerate(text):
        if in_string:
            in_string = escaped or byte != 0x22
            escaped = not escaped and byte == 0x5C
        elif byte == 0x22:
            in_string = True
        elif byte in b"{[":
            depth += 1
        elif byte in b"}]":
            depth -= 1
            if depth == 0:
                return text[: i + 1]
    return b""


_IMPORTED_COLUMNS = ["conversation_id", "messages", "conversation"]
"""The columns of an imported dataset's ``hf`` export (its presentation's ``hf_features``)."""


def imported_layout(data: Any) -> bool:
    """Whether every split of a ``DatasetDict`` has an imported dataset's ``hf`` columns."""
    return all(part.column_names == _IMPORTED_COLUMNS for part in data.values())


def read_imported(path: Path, data: Any, options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """What ``export --format hf`` wrote of an imported dataset: each row's ``conversation``,
    the unified conversation as JSON, exactly."""
    for split, part in data.items():
        for number, text in enumerate(part["conversation"]):
            conv = _unified(text)
            if isinstance(conv, str):
                yield rejected(path, f"{split} row {number + 1}", f"expected a unified conversation ({conv})")
                continue
            conv.dataset = options.dataset
            yield conv


def _unified(text: Any) -> Conversation | str:
    """A row's JSON text as the conversation it holds, or why not: read as every record is
    first (a key given twice, a lone surrogate), then as a conversation; None is no text."""
    why = decode_json(text)[1] if isinstance(text, str) else f"not {type(text).__name__}"
    try:
        return why or msgspec.json.decode(text, type=Conversation)
    except (msgspec.DecodeError, RecursionError) as exc:
        return str(exc) if isinstance(exc, msgspec.DecodeError) else "nested deeper than the decoder goes"


def json_value(value: Any) -> Any:
    """A cell as JSON meta, one rule for every reader of columns (``table``'s and ``hf``'s):
    dates and times as ISO text, durations as seconds, decimals as text, bytes as the UTF-8
    text they hold (bytes that are not UTF-8 raise :class:`UnicodeDecodeError`, a number JSON
    cannot hold, NaN or an infinity, :class:`ValueError`: nothing is replaced, so no two
    values are made one, and none is made null)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"a finite number, not {value!r}")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (datetime.timedelta, decimal.Decimal, bytes)):
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return value.total_seconds() if isinstance(value, datetime.timedelta) else str(value)
    if isinstance(value, list):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return value


def json_cells(cells: Iterable[tuple[str, str, Any]]) -> dict[str, Any] | str:
    """Cells (``key``, the ``column`` read, its value) as JSON meta by :func:`json_value`, or
    what was expected of the first that JSON cannot hold as it is.

    >>> json_cells([("blob", "blob", b"abc")])
    {'blob': 'abc'}
    >>> json_cells([("b", "b", b"\\xff")])
    "expected column 'b' to hold text, or bytes of UTF-8 text (invalid start byte at byte 0)"
    """
    meta = {}
    for key, column, value in cells:
        try:
            meta[key] = json_value(value)
        except UnicodeDecodeError as exc:
            why = f"{exc.reason} at byte {exc.start}"
            return f"expected column {column!r} to hold text, or bytes of UTF-8 text ({why})"
        except ValueError as exc:
            return f"expected column {column!r} to hold {exc}"
    return meta


def an_id(given: Any) -> bool:
    """Whether a record's ``id`` names it: a non-empty string or an integer; JSON's ``true``
    is no id (Python would name it ``True``), as a float or an object is not."""
    whole = isinstance(given, int) and not isinstance(given, bool)
    return whole or (isinstance(given, str) and given != "")


def non_finite(value: Any) -> float | None:
    """The first NaN or infinity ``value`` holds, in its lists and objects however deep
    (found without recursion), or None: JSON has no such number (it would be made null), so
    a record holding one is a bad record, never stored without it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None
