"""``convbank query``'s output, streamed: machine formats written batch by batch (memory stays
bounded whatever the result's size), tables as the DuckDB CLI shows them (the first and
last rows, whole columns left out when the terminal is too narrow)."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import msgspec
import pyarrow as pa
from rich.table import Table
from rich.text import Text

from convbank.cli._console import MAX_CELL, c1_escaped, cell, err, out, plural, rows_of, visible
from convbank.store.sql import Begin

__all__ = ["MAX_ROWS", "write_results"]

MAX_ROWS = 40
"""Rows a table shows by default: the first and last half (as the DuckDB CLI does)."""
_ELLIPSIS = "…"
_json = msgspec.json.Encoder(decimal_format="number")


@dataclass
class _Preview:
    """What a table shows of one result: its first and last rows, and how many there were."""

    schema: pa.Schema
    head_rows: int
    tail_rows: int
    rows: int = 0
    head: list[pa.RecordBatch] = field(default_factory=list)
    tail: list[pa.RecordBatch] = field(default_factory=list)

    def add(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        taken = sum(b.num_rows for b in self.head)
        if taken < self.head_rows:
            part = batch.slice(0, self.head_rows - taken)
            self.head.append(part)
            batch = batch.slice(part.num_rows)
        if batch.num_rows and self.tail_rows:
            self.tail.append(batch)
            while len(self.tail) > 1 and sum(b.num_rows for b in self.tail[1:]) >= self.tail_rows:
                self.tail.pop(0)  # older rows no longer among the last ones

    def parts(self) -> tuple[list[dict[str, object]], list[dict[str, object]], int]:
        """The first rows, the last rows and how many lie between them."""
        first = pa.Table.from_batches(self.head, schema=self.schema).to_pylist()
        rest = pa.Table.from_batches(self.tail, schema=self.schema)
        last = rest.slice(max(rest.num_rows - self.tail_rows, 0)).to_pylist() if self.tail_rows else []
        return first, last, self.rows - len(first) - len(last)


def write_results(
    stream: Iterable[Begin | pa.RecordBatch], fmt: str, *, max_rows: int = MAX_ROWS, max_width: int = 0
) -> None:
    """Write a query's results on stdout as ``table`` (each statement's result), ``csv``,
    ``json`` or ``ndjson`` (the last statement's, as it streams). ``max_rows`` (0: all) and
    ``max_width`` (0: no limit) bound a table."""
    items = iter(stream)
    if fmt == "table":
        _tables(items, max_rows, max_width)
        return
    writer = {"csv": _csv, "json": _json_array, "ndjson": _ndjson}[fmt]
    for item in items:
        if isinstance(item, Begin):
            if item.index:
                err.print(
                    f"{plural(item.index, 'earlier statement')} not shown: {fmt} holds the last "
                    "statement's result (--format table shows each)",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
            writer(item.schema, _batches(items))
    sys.stdout.flush()


def _batches(items: Iterator[Begin | pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for item in items:
        if isinstance(item, Begin):  # machine formats ask for the last result only
            raise AssertionError("one result expected")
        yield item


def _csv(schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(schema.names)
    nested = [pa.types.is_nested(f.type) for f in schema]
    for batch in batches:  # column by column: None is "" and values their str() in csv already
        columns = [c.to_pylist() for c in batch.columns]
        columns = [[cell(v) for v in c] if n else c for c, n in zip(columns, nested, strict=True)]
        writer.writerows(zip(*columns, strict=True))


def _ndjson(schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
    write = sys.stdout.buffer.write
    sys.stdout.flush()
    for batch in batches:
        write(c1_escaped(b"".join(_json.encode(row) + b"\n" for row in rows_of(batch))))


def _json_array(schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
    write = sys.stdout.buffer.write
    sys.stdout.flush()
    write(b"[")
    first = True
    for batch in batches:
        if batch.num_rows:
            write((b"" if first else b",") + c1_escaped(_json.encode(rows_of(batch))[1:-1]))
            first = False
    write(b"]\n")


def _tables(items: Iterator[Begin | pa.RecordBatch], max_rows: int, max_width: int) -> None:
    preview: _Preview | None = None
    for item in items:
        if isinstance(item, Begin):
            if preview is not None:
                _print_table(preview, max_width)
            if max_rows and max_rows > 0:
                head, tail = (max_rows + 1) // 2, max_rows // 2
            else:
                head, tail = sys.maxsize, 0
            preview = _Preview(item.schema, head, tail)
        elif preview is not None:
            preview.add(item)
    if preview is not None:
        _print_table(preview, max_width)


def _text(value: object) -> str:
    text = visible(cell(value), keep_newlines=False)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + _ELLIPSIS


def _print_table(preview: _Preview, max_width: int) -> None:
    first, last, between = preview.parts()
    if between <= 0 and last:  # nothing left out: one run of rows
        first, last, between = first + last, [], 0
    names = preview.schema.names
    header = [visible(n, keep_newlines=False) for n in names]
    body = [[_text(v) for v in row.values()] for row in first]
    tail = [[_text(v) for v in row.values()] for row in last]
    widths = [max([len(h), *(len(r[i]) for r in body + tail)], default=1) for i, h in enumerate(header)]
    widths = [max(1, min(w, MAX_CELL)) for w in widths]
    keep = _columns_that_fit(widths, max_width)
    table = Table(highlight=False)
    for i in keep:
        table.add_column(
            Text(header[i] if i >= 0 else _ELLIPSIS),
            no_wrap=True,
            min_width=widths[i] if i >= 0 else 1,
            max_width=MAX_CELL,
        )
    for row in body:
        table.add_row(*(Text(row[i]) if i >= 0 else Text(_ELLIPSIS) for i in keep))
    if between and last:
        table.add_row(*(Text("·") for _ in keep), style="dim")
        for row in tail:
            table.add_row(*(Text(row[i]) if i >= 0 else Text(_ELLIPSIS) for i in keep))
    out.print(table, width=1 + sum((widths[i] if i >= 0 else 1) + 3 for i in keep), crop=False)
    notes = []
    if between and last:
        notes.append(
            f"{len(first) + len(last):,} shown (--max-rows N or --all shows more; csv and json write all)"
        )
    hidden = [names[i] for i in range(len(names)) if i not in keep]
    if hidden:
        notes.append(
            f"{plural(len(hidden), 'column')} not shown ({', '.join(visible(n) for n in hidden)}): "
            "--max-width 0 or --all shows them"
        )
    cut = any(len(c) == MAX_CELL and c.endswith(_ELLIPSIS) for r in body + tail for c in r)
    if cut:
        notes.append("long cells cut: --format csv or json shows them whole")
    err.print("; ".join([plural(preview.rows, "row"), *notes]), highlight=False, markup=False, soft_wrap=True)


def _columns_that_fit(widths: list[int], max_width: int) -> list[int]:
    """The columns a table of ``max_width`` characters shows, in order, ``-1`` standing for
    the left-out ones: taken from both ends in turn (as the DuckDB CLI does), each whole."""
    n = len(widths)
    if not max_width or 1 + sum(w + 3 for w in widths) <= max_width:
        return list(range(n))
    room = max_width - 1 - 4  # the border, and the column that says some are left out
    left: list[int] = []
    right: list[int] = []
    lo, hi = 0, n - 1
    take_left = True
    while lo <= hi:
        i = lo if take_left else hi
        if widths[i] + 3 > room:
            break
        room -= widths[i] + 3
        if take_left:
            left.append(lo)
            lo += 1
        else:
            right.insert(0, hi)
            hi -= 1
        take_left = not take_left
    if not left and not right:  # not even one column fits: the first one, wider than asked
        left = [0]
    return [*left, -1, *right] if len(left) + len(right) < n else [*left, *right]
