"""Where the command line writes: rich consoles for stdout and stderr, JSON lines, cells."""

from __future__ import annotations

import csv
import io
import sys
from typing import Any

import msgspec
import pyarrow as pa
from rich.console import Console
from rich.table import Table

from convbank.model.schema import JSON_FIELD

__all__ = ["cell", "echo_json", "err", "out", "plural", "rows_of", "write_table"]

MAX_CELL = 60
"""Characters of a cell the table view shows (csv and json show all)."""

out = Console(width=None if sys.stdout.isatty() else 1 << 16)
"""stdout: a terminal's width there (tables cut long cells); a pipe or a file gets each
table at its own width, one line a row."""
err = Console(stderr=True)


_json = msgspec.json.Encoder(decimal_format="number")
"""DuckDB's HUGEINT sums and DECIMALs are numbers, as they are in SQL."""


def echo_json(data: Any) -> None:
    """Write ``data`` as one line of JSON on stdout."""
    sys.stdout.buffer.write(_json.encode(data) + b"\n")
    sys.stdout.flush()


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 split``, ``2 splits``, ``1,030 conversations``."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of a query result, with its JSON columns decoded into objects."""
    rows: list[dict[str, Any]] = table.to_pylist()
    json_columns = [
        f.name
        for f in table.schema
        if (f.metadata or {}).get(b"convbank.type") == JSON_FIELD[b"convbank.type"]
    ]
    for row in rows:
        for name in json_columns:
            value = row[name]
            if isinstance(value, str):
                row[name] = msgspec.json.decode(value)
            elif isinstance(value, list):
                row[name] = [msgspec.json.decode(v) if isinstance(v, str) else v for v in value]
    return rows


def write_table(result: pa.Table, fmt: str) -> None:
    """Write a query result on stdout as ``table``, ``json``, ``ndjson`` or ``csv``."""
    if fmt == "json":
        echo_json(rows_of(result))
    elif fmt == "ndjson":
        write = sys.stdout.buffer.write
        for row in rows_of(result):
            write(_json.encode(row) + b"\n")
        sys.stdout.flush()
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(result.column_names)
        writer.writerows([cell(v) for v in row.values()] for row in result.to_pylist())
        sys.stdout.write(buf.getvalue())
    else:
        table = Table(*result.column_names)
        for column in table.columns:
            column.no_wrap = True
            column.overflow = "ellipsis"
            column.max_width = MAX_CELL
        cut = False
        for row in result.to_pylist():
            cells = [cell(v) for v in row.values()]
            cut = cut or any(len(c) > MAX_CELL for c in cells)
            table.add_row(*(c if len(c) <= MAX_CELL else c[: MAX_CELL - 1] + "…" for c in cells))
        out.print(table)
        note = "; long cells cut: --format csv or json shows them whole" if cut else ""
        err.print(plural(result.num_rows, "row") + note, highlight=False)


def cell(value: Any) -> str:
    """A value as table or CSV text: empty for null, JSON for lists and objects."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return _json.encode(value).decode()
    return str(value)
