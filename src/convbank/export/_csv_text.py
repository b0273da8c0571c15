"""How the ``table`` reader reads a CSV's text where Arrow's reader alone would lose or refuse
it: the cells of a column of numbers, booleans or nulls, each typed from its own text
(:func:`typed_cell`), and the block Arrow reads at once, sized to the file's longest row
(:func:`block_size`)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank._lazy import lazy
from convbank.export._read import LINE_LIMIT, RECORD_LIMIT

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")

__all__ = [
    "SCALAR_KINDS",
    "RaggedRows",
    "block_size",
    "delimiter",
    "first_line_of",
    "long_row",
    "typed_cell",
    "unclosed_quote",
    "utf8_cells",
]

_NULLS = frozenset(("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                    "1.#QNAN", "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null"))  # fmt: skip
"""The texts Arrow's CSV reader takes as null in a column of numbers (its default)."""
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
"""The texts Arrow's CSV reader takes as booleans (but ``1`` and ``0``, which are numbers)."""
SCALAR_KINDS = ("is_integer", "is_floating", "is_boolean", "is_null")
"""The kinds of column (``pyarrow.types``' tests) a CSV's cells are read as text for, each
typed by itself (:func:`typed_cell`)."""


_INTEGER = re.compile(r"[+-]?[0-9]+|0[xX][0-9a-fA-F]+")
_REAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity)", re.IGNORECASE)
_DIGITS = 4000
"""The most digits of an integer read as one (Python's int reads at most 4,300); a longer one
is a float, as Arrow reads it: an infinity, a bad row."""


def typed_cell(text: str | None) -> Any:
    """A cell of a CSV column of numbers, booleans or nulls, from its text: an integer exactly,
    whatever its size (up to :data:`_DIGITS` digits; ``0x1F`` too, as Arrow reads it), a real
    a float (each with the spaces around it left out, as Arrow leaves them), one of Arrow's
    null texts (``""``, ``NA``, ``null``...) None, ``true`` or ``False`` a bool, anything else
    its text (a later block's word, which Arrow refused). Example:
    ``typed_cell(" 1180591620717411303424") == 2**70``."""
    if text is None or text in _NULLS:
        return None
    bare = text.strip(" \t")
    if _INTEGER.fullmatch(bare) and len(bare) <= _DIGITS:
        return int(bare, 16 if bare[:2] in ("0x", "0X") else 10)
    if _REAL.fullmatch(bare):
        return float(bare)
    return _BOOLS.get(text, text)


def first_line_of(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def long_row(exc: BaseException) -> str | None:
    """What Arrow's refusal of a row longer than its blocks means (:func:`block_size`)."""
    if "straddl" not in str(exc):
        return None
    return f"expected rows of at most {LINE_LIMIT:,} bytes (a row of the file is longer)"


def block_size(path: Path) -> int:
    """The bytes Arrow's CSV reader takes at once: 1 MiB, or more where a row is longer (Arrow
    refuses a row spanning more than two blocks: "straddling object straddles two block
    boundaries"), up to :data:`LINE_LIMIT`, as a JSON line's. A row ends at a line end
    outside quotes; a bare quote (``5'11"``) only makes the bound larger."""
    import numpy as np

    longest, end, quotes, at = 0, -1, 0, 0
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            data = np.frombuffer(chunk, dtype=np.uint8)
            marks, breaks = np.flatnonzero(data == 0x22), np.flatnonzero(data == 0x0A)
            ends = breaks[(np.searchsorted(marks, breaks) + quotes) % 2 == 0] + at
            if ends.size:
                longest = max(longest, int(ends[0]) - end, int(np.diff(ends).max(initial=0)))
                end = int(ends[-1])
            quotes, at = quotes + marks.size, at + len(chunk)
    longest = max(longest, at - end)
    return min(max(1 << 20, longest), LINE_LIMIT)


def utf8_cells(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, dict[int, str]]:
    """``batch`` of a CSV (its cells read as bytes) with each column as text, and the rows (by
    their place in the batch) holding a cell that is not UTF-8, each with why: such a cell is
    its text with the bad bytes escaped. A column of UTF-8 is checked and made text at C speed;
    only one holding a bad cell is read cell by cell.

    >>> batch, bad = utf8_cells(pa.record_batch({"t": [b"hi", b"caf\\xe9"]}))
    >>> batch.column(0).to_pylist(), bad
    (['hi', 'caf\\\\xe9'], {1: "expected column 't' to hold UTF-8 text (unexpected end of data at byte 3)"})
    """
    bad: dict[int, str] = {}
    names = batch.schema.names
    arrays = [_text(column, name, bad) for name, column in zip(names, batch.columns, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, names=names), bad


def _text(column: pa.Array, name: str, bad: dict[int, str]) -> pa.Array:
    """A column of bytes as text (another kind as it is), its cells that are not UTF-8 put in
    ``bad``."""
    if not pa.types.is_binary(column.type):
        return column
    try:
        return column.cast(pa.string())
    except pa.ArrowInvalid:  # Arrow's check of UTF-8 failed: which cells
        cells = column.to_pylist()
        return pa.array([_decoded(cell, row, name, bad) for row, cell in enumerate(cells)], pa.string())


def _decoded(cell: bytes | None, row: int, column: str, bad: dict[int, str]) -> str | None:
    """``cell`` as text; one that is not UTF-8 its text with the bad bytes escaped, and why
    put in ``bad`` for ``row``."""
    if cell is None:
        return None
    try:
        return cell.decode("utf-8")
    except UnicodeDecodeError as exc:
        said = f"{exc.reason} at byte {exc.start}"  # as a Parquet column's bytes are said
        bad.setdefault(row, f"expected column {column!r} to hold UTF-8 text ({said})")
        return cell.decode("utf-8", "backslashreplace")


def delimiter(path: Path) -> str:
    """A tab for a ``.tsv`` or ``.tab`` file; a semicolon for a CSV whose header holds one
    and no comma (what a spreadsheet writes where a comma is the decimal mark); else a comma.

    Example: a file ``c;s;t\n1;a;hi\n`` gives ``";"``, ``c,s;t\n`` a comma."""
    if path.name.lower().endswith((".tsv", ".tab")):
        return "\t"
    with path.open("rb") as f:
        header = f.read(1 << 16).partition(b"\n")[0]
    return ";" if b";" in header and b"," not in header else ","


def unclosed_quote(path: Path) -> int | None:
    """The line of a CSV or TSV where a quoted field opens that no quote closes, else None:
    Arrow's reader takes the rest of the file as that field's text (a row of ``"hi`` and every
    row after it one turn). Looked for only where the file's quotes do not pair up (an odd
    count, counted at C speed), with :mod:`csv`'s strict reader, which says where the data
    ended inside quotes.

    Example: a file ``c,s,t\\n1,a,"hi\\n1,b,yo\\n`` gives 2."""
    with path.open("rb") as f:
        quotes = sum(chunk.count(b'"') for chunk in iter(lambda: f.read(1 << 20), b""))
    if quotes % 2 == 0:
        return None
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as f:
        rows = csv.reader(f, delimiter=delimiter(path), strict=True)
        start = 1
        try:
            for _ in rows:
                start = rows.line_num + 1
        except csv.Error as exc:  # another departure (``"a"b``) is Arrow's to read as it reads it
            return start if "end of data" in str(exc) else None
    return None


class RaggedRows:
    """The rows of a CSV holding another number of cells than its header names: Arrow's
    reader skips each as it reads (its ``invalid_row_handler``: this), and each is kept by its
    row number (the header row 1, as Arrow numbers rows where it reads in one thread), its
    text cut to a record's length, to be refused as its own conversation's fault, never the
    rest of the file's. Arrow reads at most a block ahead of the rows taken, so at most two
    blocks' rows are held."""

    def __init__(self, delimiter: str) -> None:
        self.delimiter = delimiter
        self.rows: dict[int, tuple[str, str]] = {}

    def __call__(self, row: Any) -> str:
        if row.number is None:  # Arrow read in threads: it says the row itself
            return "error"
        why = f"expected {row.expected_columns} cells, one for each column of the header"
        why += f"; got {row.actual_columns}"
        self.rows[row.number] = (row.text[:RECORD_LIMIT], why)
        return "skip"

    def take(self, number: int, names: list[str]) -> tuple[dict[str, str | None], str, str] | None:
        """Row ``number``'s cells by the header's names (a missing one None, an extra one
        left out), why it was skipped and its text, if it was; else None."""
        if (found := self.rows.pop(number, None)) is None:
            return None
        text, why = found
        try:
            cells = next(csv.reader(io.StringIO(text, newline=""), delimiter=self.delimiter), [])
        except csv.Error:  # its text cut inside a quote or a field: no cells to name it by
            cells = []
        return {name: cells[i] if i < len(cells) else None for i, name in enumerate(names)}, why, text

    def rest(self, names: list[str]) -> Iterator[tuple[int, dict[str, str | None], str, str]]:
        """The rows kept and not taken (those after the file's last good row), in order."""
        for number in sorted(self.rows):
            yield number, *self.take(number, names)  # type: ignore[misc]
