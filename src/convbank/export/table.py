"""``table``: CSV, TSV or Parquet with one row per turn, and pandas or polars DataFrames
(:func:`read_frame`): read only (``export`` writes ``csv``, whose files this reads back).

The columns are named by ``--map`` (:attr:`ReadOptions.mapping`): ``conversation_id``,
``speaker`` and ``text``, optional ``turn`` (the turns' order within their conversation,
else the rows') and ``timestamp`` (the turn's meta ``timestamp``); by default the columns
of convbank's own CSV export (:func:`~convbank.export.tables.csv_columns`). Every other
column is kept in the turn's meta, typed as the file types it (Parquet's types, or those
pyarrow infers from a CSV; a CSV column of numbers is read from its text, each cell as its
own number, so that an integer is one whatever its size:
:func:`~convbank.export._csv_text.typed_cell`). A file convbank exported (its header is
exactly :data:`~convbank.export.tables.CSV_COLUMNS`) is read back as written: its rows'
config and split, the speakers' ``role``, the turns' ``kind`` and ``meta``.

A conversation's rows are next to each other (a table sorted by conversation); files are
read in batches of rows, one conversation held at a time.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank._lazy import lazy
from convbank.export._csv_text import (
    SCALAR_KINDS,
    RaggedRows,
    block_size,
    delimiter,
    first_line_of,
    long_row,
    typed_cell,
    unclosed_quote,
    utf8_cells,
)
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._read import decode_json, encoding_problem, json_cells, rejected, suffixed
from convbank.export._table_columns import (
    DEFAULTS as _DEFAULTS,
)
from convbank.export._table_columns import (
    MAPPED,
)
from convbank.export._table_columns import (
    BadTableError as _BadTableError,
)
from convbank.export._table_columns import (
    Columns as _Columns,
)
from convbank.export._table_columns import (
    repeated as _repeated,
)
from convbank.export._table_columns import (
    repeated_field as _repeated_field,
)
from convbank.export.tables import CSV_COLUMNS, PARQUET
from convbank.model import Conversation, Participant, Turn

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
else:
    pa = lazy("pyarrow")
    pcsv = lazy("pyarrow.csv")
    pq = lazy("pyarrow.parquet")

__all__ = ["FORMAT", "MAPPED", "read_frame", "read_table"]


def _meta(row: dict[str, Any], rest: Sequence[str], m: Mapping[str, str], index: int) -> dict[str, Any] | str:
    """A row's turn meta: its other columns, its timestamp and (where it is not the turn's
    position) its turn, each as JSON meta (:func:`~convbank.export._read.json_value`); or
    what was expected of the first cell that JSON cannot hold as it is."""
    cells = [(k, k) for k in rest]
    cells += [("timestamp", m["timestamp"])] if "timestamp" in m else []
    if "turn" in m and row[m["turn"]] != index:  # not the position: kept as it was
        cells.append((m["turn"], m["turn"]))
    return json_cells((key, column, row[column]) for key, column in cells)


class _Builder:
    """Rows gathered into the conversation they belong to, one conversation at a time."""

    def __init__(self, path: Path, columns: _Columns, options: ReadOptions, number: int) -> None:
        self.path, self.c, self.options, self.number = path, columns, options, number
        self.rows: list[tuple[int, dict[str, Any]]] = []
        self.cid: str | None = None
        self.done: set[str] = set()
        self.spoiled: dict[int, str] = {}  # rows holding a cell that is not UTF-8: why
        self.texts: dict[int, str] = {}  # a spoiled row Arrow skipped: its text, the record

    def add(self, row_number: int, row: dict[str, Any]) -> Iterator[Conversation | Rejected]:
        cid = row[self.c.map["conversation_id"]]
        if cid is None:
            yield rejected(self.path, f"row {row_number}", "expected a conversation id", row)
            return
        cid = str(cid)
        if cid != self.cid:
            yield from self.flush()
            if cid in self.done:
                yield rejected(
                    self.path,
                    f"row {row_number}",
                    f"expected the rows of conversation {cid!r} together (sort the table by conversation)",
                    row,
                )
                return
            self.cid = cid
        self.rows.append((row_number, row))

    def skipped(
        self, number: int, row: dict[str, Any], why: str, text: str
    ) -> Iterator[Conversation | Rejected]:
        """A row Arrow skipped (:class:`~convbank.export._csv_text.RaggedRows`): its conversation
        refused, said of it (its record its text); alone where it has no conversation id."""
        if row[self.c.map["conversation_id"]] is None:
            yield rejected(self.path, f"row {number}", why, text)
            return
        self.spoiled[number], self.texts[number] = why, text
        yield from self.add(number, row)

    def flush(self) -> Iterator[Conversation | Rejected]:
        if self.cid is None:
            return
        cid, rows, self.rows, self.cid = self.cid, self.rows, [], None
        self.done.add(cid)
        bad = [
            (f"row {n}", self.spoiled.pop(n), self.texts.pop(n, row)) for n, row in rows if n in self.spoiled
        ]
        yield rejected(self.path, *bad[0]) if bad else self.conversation(cid, rows)
        self.number += 1

    def conversation(self, cid: str, rows: list[tuple[int, dict[str, Any]]]) -> Conversation | Rejected:
        m, first = self.c.map, rows[0][1]
        if "turn" in m:
            seen: set[Any] = set()
            for number, row in rows:
                value = row[m["turn"]]
                if not _an_order(value):  # text sorts "10" before "2"; a bool is no place
                    return rejected(
                        self.path,
                        f"row {number}",
                        f"expected a number in {m['turn']!r} (the turn's place), not {value!r}",
                        row,
                    )
                if value is None or value in seen:
                    return rejected(
                        self.path,
                        f"row {number}",
                        f"expected a distinct {m['turn']!r} in each row of conversation {cid!r}",
                        row,
                    )
                seen.add(value)
            rows = sorted(rows, key=lambda nr: nr[1][m["turn"]])
        people: dict[str, Participant] = {}
        turns = []
        for index, (number, row) in enumerate(rows):
            speaker, text = row[m["speaker"]], row[m["text"]]
            if speaker is None or not isinstance(text, str):
                what = m["speaker"] if speaker is None else m["text"]
                return rejected(self.path, f"row {number}", f"expected a string {what!r}", row)
            meta = _meta(row, self.c.rest, m, index)
            if isinstance(meta, str):
                return rejected(self.path, f"row {number}", meta, row)
            turn = Turn(turn_index=index, participant_id=str(speaker), text=text, meta=meta)
            own = _own_meta(row["meta"]) if self.c.ours else {}
            if isinstance(own, str):
                return rejected(self.path, f"row {number}", own, row)
            if self.c.ours:
                turn.kind, turn.meta = row["kind"], own
            people.setdefault(
                turn.participant_id,
                Participant(
                    participant_id=turn.participant_id, role=row["role"] if self.c.ours else "speaker"
                ),
            )
            turns.append(turn)
        where = (
            (first["config"], first["split"]) if self.c.ours else (self.options.config, self.options.split)
        )
        return Conversation(
            dataset=self.options.dataset,
            config=where[0],
            split=where[1],
            conversation_id=cid,
            source_index=self.number,
            participants=list(people.values()),
            turns=turns,
        )


def _an_order(value: Any) -> bool:
    """Whether a turn column's value places a turn: a number (an int or a real; None is
    a missing one, said as such), never a text nor a bool."""
    return value is None or (isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool))


def _own_meta(cell: Any) -> dict[str, Any] | str:
    """A turn's meta from the ``meta`` cell of convbank's CSV: the JSON object it holds (none
    where the cell is empty), or what is wrong with it (not JSON, a key given twice, not an
    object), said of its row as any other bad cell is."""
    value, problem = decode_json(cell or "{}") if isinstance(cell, str) else (cell, None)
    if isinstance(value, dict) and problem is None:
        return value
    return f"expected column 'meta' to hold a JSON object ({problem or f'not {type(value).__name__}'})"


def _batches(
    path: Path, mapping: Mapping[str, str]
) -> tuple[list[str], Iterator[Any], frozenset[str], RaggedRows]:
    """A file's column names, its record batches (CSV/TSV streamed; Parquet by batches) and
    the columns of numbers read as text (each cell typed by
    :func:`~convbank.export._csv_text.typed_cell`). A CSV's
    conversation id, speaker and text columns (``mapping``'s, else convbank's own) are read as
    the text they hold, never as numbers (``007`` stays ``007``, apart from ``7``); a column
    Arrow infers as numbers, booleans or nulls is read as text too, and each cell typed from
    it: Arrow makes a column holding an integer beyond 64 bits floats (``2**70`` rounded,
    ``1`` made ``1.0``), and refuses a later block whose cells its first block's type cannot
    hold (ints, then ``1.5``; empty cells, then ``5``; ``true``, then ``maybe``). A column
    Arrow infers as dates, times or timestamps is kept as the text each cell holds, in every
    block: a later block's ``noon`` is text as the first's ``2024-01-02 03:04:05`` is, and a
    timestamp's offset is the one written (Arrow's made ``+02:00`` UTC). Every CSV column is
    read as bytes and made text batch by batch (:func:`~convbank.export._csv_text.utf8_cells`),
    so that a cell that is not UTF-8 is its row's fault, never the rest of the file's."""
    if path.name.lower().endswith((".parquet", ".pq")):
        f = pq.ParquetFile(path)
        return f.schema_arrow.names, f.iter_batches(batch_size=4096), frozenset(), RaggedRows(",")
    ragged = RaggedRows(delimiter(path))  # in one thread, so that Arrow numbers the rows it skips
    parse = pcsv.ParseOptions(delimiter=ragged.delimiter, newlines_in_values=True, invalid_row_handler=ragged)
    blocks = pcsv.ReadOptions(block_size=block_size(path), use_threads=False)
    inferred = pcsv.open_csv(path, parse_options=parse, read_options=blocks).schema
    ragged.rows.clear()
    names = inferred.names
    texts = {mapping.get(key, _DEFAULTS[key]) for key in MAPPED[:3]}
    strings = {
        f.name
        for f in inferred
        if f.name in texts
        or (f.name in (*_DEFAULTS.values(), *CSV_COLUMNS) and f.name != "turn_index")
        or pa.types.is_temporal(f.type)
    }
    turn = mapping.get("turn", "turn_index")  # read as numbers whatever another row holds
    numbers = frozenset(
        f.name
        for f in inferred
        if f.name not in strings
        and (f.name == turn or any(getattr(pa.types, kind)(f.type) for kind in SCALAR_KINDS))
    )
    convert = pcsv.ConvertOptions(column_types=dict.fromkeys(names, pa.binary()))  # text: utf8_cells
    reader = pcsv.open_csv(path, parse_options=parse, convert_options=convert, read_options=blocks)
    return names, reader, numbers, ragged


def _read_batches(
    path: Path,
    names: list[str],
    batches: Iterator[Any],
    options: ReadOptions,
    *,
    number: int,
    header: bool,
    numbers: frozenset[str] = frozenset(),
    ragged: RaggedRows | None = None,
) -> Iterator[Conversation | Rejected]:
    """The conversations of one table's batches; ``number`` the first's source index; rows
    numbered from 1, the header (of a CSV) row 1; ``numbers``: columns of numbers read as
    text, each cell made its number (:func:`~convbank.export._csv_text.typed_cell`); ``ragged``:
    the rows Arrow skipped, each in its place."""
    columns = _Columns(names, options.mapping, path)
    if columns.ours:  # convbank's CSV: the turns' and speakers' own columns are its
        columns.map = dict(_DEFAULTS)
    builder = _Builder(path, columns, options, number)
    seen = int(header)
    from convbank.store._values import python_rows

    try:
        for piece in batches:
            if (twice := _repeated_field(piece.schema)) is not None:
                yield Rejected(path, "file", twice)
                return
            batch, spoiled = utf8_cells(piece) if header else (piece, {})  # a CSV's: its bytes
            for offset, row in enumerate(python_rows(batch)):  # a value Python cannot hold: its text
                seen += 1
                while ragged is not None and (skipped := ragged.take(seen, names)) is not None:
                    yield from builder.skipped(seen, *skipped)
                    seen += 1
                for name in numbers:
                    row[name] = typed_cell(row[name])
                if offset in spoiled:  # its conversation is refused whole, said of this row
                    builder.spoiled[seen] = spoiled[offset]
                yield from builder.add(seen, row)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        why = long_row(exc) or f"expected rows of the same columns and types ({exc})"
        yield Rejected(path, f"rows after row {seen}", why)
        return
    except (TypeError, ValueError, OverflowError) as exc:  # a value of a kind not even text holds
        yield Rejected(path, f"rows after row {seen}", f"expected values Python can read ({exc})")
        return
    for tail in ragged.rest(names) if ragged is not None else ():  # after the last good row
        yield from builder.skipped(*tail)
    yield from builder.flush()


def read_table(paths: Sequence[Path], options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """The conversations of CSV, TSV or Parquet files of one row per turn (rows numbered as
    a spreadsheet shows them: the header is row 1 of a CSV)::

        read_table([Path("turns.csv")], ReadOptions(dataset="mine", mapping={"text": "utterance"}))
    """
    number = 0
    for path in paths:
        parquet = path.name.lower().endswith((".parquet", ".pq"))
        if not parquet and (problem := encoding_problem(path)) is not None:
            yield Rejected(path, "file", problem)
            continue
        try:
            names, batches, numbers, ragged = _batches(path, options.mapping)
        except (OSError, pa.ArrowInvalid) as exc:
            yield Rejected(
                path, "file", long_row(exc) or f"expected a CSV, TSV or Parquet table ({first_line_of(exc)})"
            )
            continue
        except UnicodeDecodeError as exc:  # Arrow decodes the column names as it gives them
            where = "file" if parquet else "line 1"
            yield Rejected(path, where, f"expected column names of UTF-8 text ({exc})")
            continue
        if not parquet and (line := unclosed_quote(path)) is not None:
            yield Rejected(
                path,
                f"line {line}",
                "expected a closing quote: the quoted field opened here runs to the end of the file",
            )
            continue
        try:
            read = _read_batches(
                path,
                names,
                batches,
                options,
                number=number,
                header=not parquet,
                numbers=numbers,
                ragged=ragged,
            )
            for item in read:
                number += isinstance(item, Conversation)
                yield item
        except _BadTableError as bad:
            yield bad.rejected


def read_frame(frame: Any, options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """The conversations of a pandas or polars DataFrame of one row per turn, its columns
    named by ``options.mapping`` as a table's are (rows numbered from 1)::

        convs = list(read_frame(df, ReadOptions(dataset="mine", mapping={"conversation_id": "dialog"})))
    """
    where = Path("DataFrame")
    named = [n for n in getattr(getattr(frame, "index", None), "names", None) or () if n is not None]
    repeated = _repeated([*named, *frame.columns])
    if repeated is not None:
        yield Rejected(where, "file", repeated)
        return
    if named:  # a named index is data (pandas' to_parquet keeps it): its levels are columns
        frame = frame.reset_index(level=named)
    table = frame.to_arrow() if hasattr(frame, "to_arrow") else _pandas_table(frame)  # polars: typed
    if isinstance(table, str):
        yield Rejected(where, "file", table)
        return
    try:
        yield from _read_batches(
            where, table.schema.names, iter(table.to_batches(4096)), options, number=0, header=False
        )
    except _BadTableError as bad:
        yield bad.rejected


def _pandas_table(frame: Any) -> pa.Table | str:
    """A pandas DataFrame as Arrow, or what is wrong with the first column Arrow cannot type
    (values of several types in one ``object`` column, complex numbers, objects of no
    known type, a text holding a lone surrogate), so that it is one line naming the column,
    never Arrow's traceback."""
    unfit = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, UnicodeError)
    try:
        return _nested_as_held(frame, pa.Table.from_pandas(frame, preserve_index=False))
    except unfit as whole:  # OverflowError: an int of an object column beyond 64 bits
        for name in frame.columns:
            try:
                pa.array(frame[name], from_pandas=True)
            except UnicodeError as exc:  # a lone surrogate ("\ud800") in an object column
                return f"expected column {str(name)!r} to hold text of whole characters ({exc})"
            except unfit as exc:
                return f"expected column {str(name)!r} to hold values of one type Arrow can store ({exc})"
        return f"expected columns Arrow can store ({whole})"


def _nested_as_held(frame: Any, table: pa.Table) -> pa.Table:
    """``table`` with its list and struct columns made again from ``frame``'s values as they
    are: pandas takes a NaN as missing, and Arrow's ``from_pandas`` makes null every NaN
    inside a list or a dict too (``[1.0, nan]`` read as ``[1.0, None]``); only a cell that is
    itself missing is null here, so that a NaN held inside is one, a bad row as a Parquet
    list's is, never made null."""
    for i, field in enumerate(table.schema):
        if pa.types.is_nested(field.type):
            cells = [None if _missing(v) else v for v in frame.iloc[:, i]]
            column = pa.array(cells, from_pandas=False)  # typed anew: a NaN made null typed a place null
            table = table.set_column(i, field.with_type(column.type), column)
    return table


def _missing(value: Any) -> bool:
    """Whether a pandas cell is missing: None, NaN, ``pd.NA`` or ``pd.NaT``."""
    kind = type(value).__name__
    return value is None or (isinstance(value, float) and math.isnan(value)) or kind in ("NAType", "NaTType")


def _sniff_table(paths: Sequence[Path]) -> bool:
    """CSV, TSV or Parquet files, by their names, but not the unified tables (``parquet``)."""
    unified = PARQUET.sniff is not None and PARQUET.sniff(paths)
    return suffixed(paths, ".csv", ".tsv", ".tab", ".parquet", ".pq") and not unified


FORMAT = Format(
    name="table",
    summary="CSV, TSV or Parquet, one row per turn (read only)",
    writes="nothing: read only (`--map conversation_id=COL,speaker=COL,text=COL[,turn=COL][,timestamp=COL]`)",
    read_with="pandas, polars, spreadsheets",
    reader=read_table,
    loses="of convbank's `csv` export: participants' persona and meta (and those who never "
    "speak), conversation meta, `source_index`, annotations; of any table: speakers' roles "
    "(each is `speaker`)",
    sniff=_sniff_table,
)
"""The ``table`` format: read only."""
