"""``convbank query``'s output, streamed: machine formats written batch by batch (memory stays
bounded whatever the result's size), tables as the DuckDB CLI shows them (the first and
last rows; JSON then short columns left out, and text cut, when the terminal is too narrow:
:mod:`convbank.cli._table`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from convbank._textio import CsvRows, base64_of_bytes, json_bytes
from convbank.cli._console import MAX_CELL, cell, err, json_keys, plural, rows_of, visible
from convbank.cli._table import Column, draw, fit, single_value
from convbank.model.schema import JSON_FIELD
from convbank.store._values import python_values
from convbank.store.sql import Begin

__all__ = ["MAX_ROWS", "write_results"]

MAX_ROWS = 40
"""Rows a table shows by default: the first and last half (as the DuckDB CLI does)."""
_ELLIPSIS = "…"


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

    def parts(self) -> tuple[pa.Table, pa.Table, int]:
        """The first rows, the last rows and how many lie between them."""
        first = pa.Table.from_batches(self.head, schema=self.schema)
        rest = pa.Table.from_batches(self.tail, schema=self.schema)
        last = rest.slice(max(rest.num_rows - self.tail_rows, 0)) if self.tail_rows else rest.slice(0, 0)
        return first, last, self.rows - first.num_rows - last.num_rows


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
    writer = CsvRows(sys.stdout)  # a bare CR in a cell is quoted too: one row stays one line
    writer.writerow(schema.names)
    # column by column: None is "" and values their str() in csv already; lists and objects
    # are their JSON, bytes their base64 (as JSON writes them)
    shown = [
        cell if pa.types.is_nested(f.type) else base64_of_bytes if _binary(f.type) else None for f in schema
    ]
    for batch in batches:
        columns = [python_values(c) for c in batch.columns]
        columns = [c if s is None else [s(v) for v in c] for c, s in zip(columns, shown, strict=True)]
        writer.writerows(zip(*columns, strict=True))


def _binary(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind)
    )


def _keys(schema: pa.Schema) -> list[str]:
    """The rows' keys (:func:`json_keys`), and a note on stderr naming those that are not
    their column's name (a name repeated: ``SELECT 1 AS a, 2 AS a``)."""
    keys = json_keys(schema.names)
    renamed = [
        f"{visible(n, keep_newlines=False)!r} as {visible(k, keep_newlines=False)!r}"
        for n, k in zip(schema.names, keys, strict=True)
        if n != k
    ]
    if renamed:
        err.print(
            f"note: column names repeated; the keys of the repeats: {', '.join(renamed)}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    return keys


def _ndjson(schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
    keys = _keys(schema)
    write = sys.stdout.buffer.write
    sys.stdout.flush()
    for batch in batches:
        write(b"".join(json_bytes(row) + b"\n" for row in rows_of(batch, keys)))


def _json_array(schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
    keys = _keys(schema)
    write = sys.stdout.buffer.write
    sys.stdout.flush()
    write(b"[")
    first = True
    for batch in batches:
        if batch.num_rows:
            write((b"" if first else b",") + json_bytes(rows_of(batch, keys))[1:-1])
            first = False
    write(b"]\n")


def _tables(items: Iterator[Begin | pa.RecordBatch], max_rows: int, max_width: int) -> None:
    preview: _Preview | None = None
    for item in items:
        if isinstance(item, Begin):
            if preview is not None:
                _print_table(preview, max_width)
            if 0 < max_rows < sys.maxsize:  # more rows than any result holds is all of them
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


def _column(field: pa.Field, values: pa.ChunkedArray) -> Column:
    is_json = (field.metadata or {}).get(b"convbank.type") == JSON_FIELD[b"convbank.type"]
    kind = field.type
    numeric = pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)
    return Column(
        visible(field.name, keep_newlines=False),
        [_text(v) for v in python_values(values)],
        json=is_json or pa.types.is_nested(kind),
        numeric=numeric,
    )


def _print_table(preview: _Preview, max_width: int) -> None:
    first, last, between = preview.parts()
    rows = pa.concat_tables([first, last])
    columns = [_column(f, rows.column(i)) for i, f in enumerate(preview.schema)]
    layout = fit(columns, max_width)
    sys.stdout.writelines(draw(columns, layout, first.num_rows if between > 0 else None))
    sys.stdout.flush()
    notes = []
    if between > 0:
        notes.append(f"{rows.num_rows:,} shown (--max-rows N or --all shows more; csv and json write all)")
    hidden = layout.hidden(len(columns))
    if hidden:
        notes.append(
            f"{plural(len(hidden), 'column')} not shown ({', '.join(columns[i].name for i in hidden)}): "
            "--max-width 0 or --all shows them"
        )
        same = [columns[i] for i in hidden if single_value(columns[i])]
        if same:
            notes.append(f"{_values(same)} in every row shown")
    narrowed = [
        f"{c.name} at {layout.widths[i]}"
        for i, c in enumerate(columns)
        if i in layout.widths and layout.widths[i] < c.natural
    ]
    cut = narrowed or any(c.endswith(_ELLIPSIS) and len(c) == MAX_CELL for col in columns for c in col.cells)
    if cut:
        at = f" ({', '.join(narrowed)} characters)" if narrowed else ""
        notes.append(f"long cells cut{at}: --format csv or json shows them whole")
    err.print("; ".join([plural(preview.rows, "row"), *notes]), highlight=False, markup=False, soft_wrap=True)


def _values(columns: list[Column]) -> str:
    """``"layer is 'strategy', start_char and end_char are empty"``: the one value of each."""
    empty = [c.name for c in columns if not c.cells[0]]
    said = [f"{c.name} is {c.cells[0] if c.numeric else repr(c.cells[0])}" for c in columns if c.cells[0]]
    if empty:
        names = ", ".join(empty[:-1]) + " and " + empty[-1] if len(empty) > 1 else empty[0]
        said.append(f"{names} {'are' if len(empty) > 1 else 'is'} empty")
    return ", ".join(said)
