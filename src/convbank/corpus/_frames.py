"""A corpus as tables: Arrow, pandas and polars frames with typed ``meta``, record batches
streamed from the bank's Parquet, and the turns with their labels."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from convbank._arguments import a_flag
from convbank._workers import ctrl_c_said
from convbank.corpus._scan import MetaForm, meta_form
from convbank.errors import UnknownFieldError, did_you_mean, require, whole_number
from convbank.model import UNIFIED_TABLES, Part

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import polars as pl

    from convbank.corpus._source import Source
    from convbank.datasets import Dataset
    from convbank.store import Snapshot

__all__ = ["Frames"]


class Frames:
    """The table views of a :class:`~convbank.Corpus` (a mixin: see there)."""

    _source: Source
    _indices: np.ndarray | None
    dataset: Dataset

    if TYPE_CHECKING:

        @property
        def snapshot(self) -> Snapshot: ...

        def parts(self) -> list[Part]: ...

        def _positions(self) -> np.ndarray: ...

        def _derive(self, indices: np.ndarray) -> Frames: ...

    # ------------------------------------------------------------------ whole tables
    def _table_name(self, table: str) -> str:
        name = f"{self.dataset.name}_raw" if table == "raw" else table
        if name not in (*UNIFIED_TABLES, f"{self.dataset.name}_raw"):
            known = [*UNIFIED_TABLES, "raw"]
            raise UnknownFieldError(
                f"{self.dataset.name} has no table {table!r}; "
                + did_you_mean(table, known, n=1)
                + f"tables: {', '.join(known)}",
                name=table,
                known=known,
            )
        return name

    def to_arrow(
        self, table: str = "conversations", *, flatten_meta: bool = False, meta: MetaForm = "struct"
    ) -> pa.Table:
        """A unified table (or ``raw``, the dataset's raw table, typed as the source) of this
        corpus in its order, with ``dataset``, ``config`` and ``split`` columns first.

        ``meta`` is a typed struct column (its type read from every value the dataset has in
        the bank, so it is the same for every split; values of mixed types, such as
        ConvAI2's ``profile_match`` of ints and ``""``, stay JSON text), with the columns a
        dataset declares as typed views beside it (CaSiNo's deal counts as integers, next to
        the strings the publisher wrote); ``meta="json"`` keeps the stored JSON text, and
        ``flatten_meta=True`` makes one column per leaf (``meta.eval_score``; a key holding a
        dot or a quote is a JSON string in the name, ``meta."a.b"``).

        >>> t = convbank.load("convai2", "volunteers").to_arrow()
        >>> t.schema.field("meta").type.get_field_index("eval_score") >= 0
        True
        """
        name = self._table_name(table)
        flatten = a_flag(flatten_meta, "flatten_meta")
        whole = next(self._rows(name, meta=meta_form(meta)))
        return _flatten(whole) if flatten else whole

    def _rows(
        self,
        name: str,
        columns: list[str] | None = None,
        *,
        meta: MetaForm = "struct",
        verified: bool = False,
        per_part: bool = False,
    ) -> Iterator[pa.Table]:
        """This corpus's rows of table ``name`` in its order (a selection's repeats
        repeated), ``dataset``, ``config`` and ``split`` first, then the stored ``columns``
        (all by default), ``meta`` typed if asked: one table, or one per part for a corpus
        that is not a selection with ``per_part``. ``verified``: read from bytes checked
        against the manifest's sha256 (:meth:`convbank.store.Snapshot.read_verified`)."""
        parts = self.parts()
        selected = self._indices is not None
        need = columns
        if (
            columns is not None
            and selected
            and not name.endswith("_raw")
            and "conversation_id" not in columns
        ):
            need = [*columns, "conversation_id"]
        if not parts:  # an empty selection: no rows, the table's columns all the same
            yield self._typed(name, self._empty(name, columns), meta)
            return
        if per_part and not selected:
            typing = meta == "struct" and name in UNIFIED_TABLES and (need is None or "meta" in need)
            con = _connection() if typing and len(parts) > 1 else None
            try:
                for part in parts:
                    yield self._typed(name, self._keyed(name, part, need, verified), meta, con)
            finally:
                if con is not None:
                    con.close()
            return
        with ThreadPoolExecutor(2, thread_name_prefix="convbank-read") as readers:
            pieces = list(readers.map(lambda part: self._keyed(name, part, need, verified), parts))
        whole = pa.concat_tables(pieces)
        if selected:
            whole = self._reorder(name, whole, verified)
            if need is not columns:
                whole = whole.drop_columns(["conversation_id"])
        yield self._typed(name, whole, meta)

    def in_order(self, table: str, rows: pa.Table) -> pa.Table:
        """Rows of a unified table for this corpus's conversations, each conversation's rows
        together (as :meth:`iter_batches` gives them: source order, each conversation once),
        put in this corpus's order with its repeats (a corpus that is not a selection: as
        they are). ``rows`` needs ``config``, ``split`` and ``conversation_id``.

        >>> few = convbank.load("casino").select([2, 0, 2])
        >>> rows = pa.Table.from_batches(list(few.iter_batches("conversations")))
        >>> few.in_order("conversations", rows).column("conversation_id").to_pylist()
        ['790', '938', '790']
        """
        if self._indices is None:
            return rows
        return self._reorder(self._table_name(table), rows)

    def _keyed(self, name: str, part: Part, columns: list[str] | None, verified: bool) -> pa.Table:
        """One part's rows of a table, as stored, with its keys first."""
        snapshot = self.snapshot
        refs = self._source.files(name, part)
        if verified:
            read = [snapshot.read_verified(ref, columns) for ref in refs]
        else:
            read = [snapshot.read_table(ref, columns=columns) for ref in refs]
        # tables of no column keep their rows apart: concatenated, they would have none
        return _with_keys(self.dataset.name, part, pa.concat_tables(read), sum(t.num_rows for t in read))

    def _stored_schema(self, name: str) -> pa.Schema:
        """The schema of a table as stored (the footer of its first file)."""
        first = self._source.parts[0]
        return self.snapshot.metadata(self._source.files(name, first)[0]).schema.to_arrow_schema()

    def _empty(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """No rows of a table, with its keys and stored ``columns`` (all by default)."""
        empty = self._stored_schema(name).empty_table()
        return _with_keys(
            self.dataset.name,
            self._source.parts[0],
            empty.select(empty.column_names if columns is None else columns),
        )

    def _typed(
        self, name: str, table: pa.Table, meta: MetaForm, con: duckdb.DuckDBPyConnection | None = None
    ) -> pa.Table:
        if meta == "struct" and "meta" in table.column_names and name in UNIFIED_TABLES:
            return self._typed_meta(name, table, con)
        return table

    def _known_columns(self, table: str, columns: list[str], known: list[str]) -> None:
        """Raise a one-line :class:`UnknownFieldError` for the first of ``columns`` that is
        not ``known``, with the closest and all the known ones."""

        for column in columns:
            if column not in known:
                raise UnknownFieldError(
                    f"{self.dataset.name}'s {table} table has no column {column!r}; "
                    + did_you_mean(column, known, n=1)
                    + f"columns: {', '.join(known)}",
                    name=column,
                    known=known,
                )

    def _items(self) -> tuple[list[int], list[str]]:
        """Per conversation of this corpus, in order: its part (index into the source's
        parts) and its id."""
        source = self._source
        parts, ids = [], []
        for position in self._positions().tolist():
            batch, row = source.locate(position)
            parts.append(source.batches[batch].part)
            ids.append(source.id_list(batch)[row])
        return parts, ids

    def _reorder(self, name: str, whole: pa.Table, verified: bool = False) -> pa.Table:
        """The rows of this selection's conversations, in its order (repeats repeated)."""
        source = self._source
        item_parts, ids = self._items()
        if name.endswith("_raw"):
            # raw rows are the source records in order: a conversation's is its source_index
            index = next(self._rows("conversations", ["source_index"], meta="json", verified=verified))
            found = index.column("source_index").to_numpy()
            offsets = _part_offsets(whole)
            rows = np.asarray([offsets[source.parts[p]] for p in item_parts], np.int64) + found
            return whole.take(pa.array(rows))
        if whole.num_rows == 0:  # none to order (an imported dataset's annotations)
            return whole
        spans: dict[tuple[int, str], tuple[int, int]] = {}
        keys = pc.binary_join_element_wise(whole.column("config"), whole.column("split"), "\x1f")
        runs = pc.run_end_encode(
            pc.binary_join_element_wise(keys, whole.column("conversation_id"), "\x1e").combine_chunks()
        )
        ends = runs.run_ends.to_pylist()
        index = {part: i for i, part in enumerate(source.parts)}
        for key, start, end in zip(runs.values.to_pylist(), [0, *ends[:-1]], ends, strict=True):
            where, cid = key.split("\x1e", 1)
            config, split = where.split("\x1f", 1)
            spans[(index[Part(config, split)], cid)] = (start, end)
        ranges = [spans.get(item, (0, 0)) for item in zip(item_parts, ids, strict=True)]
        rows = np.concatenate([np.arange(s, e, dtype=np.int64) for s, e in ranges] or [np.zeros(0, np.int64)])
        return whole.take(pa.array(rows))

    def _typed_meta(
        self, name: str, table: pa.Table, con: duckdb.DuckDBPyConnection | None = None
    ) -> pa.Table:
        """``meta`` as the dataset's struct type, with its declared typed views beside it
        (through ``con``, or a connection of its own: opening one costs 15-30 ms)."""

        structure = self._source.meta_structure(name)
        own = con is None
        if con is None:
            con = _connection()
        try:
            with ctrl_c_said():  # Ctrl-C in DuckDB is KeyboardInterrupt
                con.register("t", table)
                views = self.dataset.presentation.meta_views().get(name, {})
                extra = "".join(f', {expr} AS "{column}"' for column, expr in views.items())
                if structure is None:  # every value is {}: an empty struct
                    typed = con.sql(f"SELECT *{extra} FROM t").to_arrow_table()
                    empty = pa.array([{}] * table.num_rows, pa.struct([]))
                    return typed.set_column(typed.schema.get_field_index("meta"), "meta", empty)
                return con.sql(
                    f"SELECT *{extra} FROM (SELECT * REPLACE (json_transform(meta, $s) AS meta) FROM t)",
                    params={"s": structure},
                ).to_arrow_table()
        finally:
            con.unregister("t")
            if own:
                con.close()

    def to_pandas(
        self, table: str = "conversations", *, flatten_meta: bool = False, meta: MetaForm = "struct"
    ) -> pd.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame (needs ``convbank[pandas]``); ``meta`` holds
        dicts, or one column per leaf with ``flatten_meta=True``. An integer inside a struct or
        list column is a Python ``int`` whatever its neighbours hold (pyarrow's default makes
        a field with nulls floats: 2**53 + 1 read back as 2**53).

        >>> df = convbank.load("casino").to_pandas("turns", flatten_meta=True)
        """
        require("pandas", "pandas", "to_pandas()")
        import pyarrow.types as pat

        arrow = self.to_arrow(table, flatten_meta=flatten_meta, meta=meta)
        nested = [f.name for f in arrow.schema if pat.is_nested(f.type)]
        frame: pd.DataFrame = arrow.to_pandas()
        if nested:  # Python objects: exact integers, None for null
            exact = arrow.select(nested).to_pandas(integer_object_nulls=True)
            for name in nested:
                frame[name] = exact[name]
        return frame

    def to_polars(
        self, table: str = "conversations", *, flatten_meta: bool = False, meta: MetaForm = "struct"
    ) -> pl.DataFrame:
        """:meth:`to_arrow` as a polars DataFrame (needs ``convbank[polars]``); ``meta`` is a
        struct column.

        >>> convbank.load("casino").to_polars("turns").group_by("kind").len().sort("kind").rows()
        [('action', 2378), ('message', 11919)]
        """
        require("polars", "polars", "to_polars()")
        import polars as pl

        frame = pl.from_arrow(self.to_arrow(table, flatten_meta=flatten_meta, meta=meta))
        assert isinstance(frame, pl.DataFrame)
        return frame

    def scan(self, table: str = "conversations", *, meta: MetaForm = "struct") -> pl.LazyFrame:
        """A polars ``LazyFrame`` of a table of this corpus (needs ``convbank[polars]``):
        nothing is decoded until ``collect()``, and then only the columns the query uses.
        ``scan(t).collect()`` equals ``to_polars(t)``: the same rows in the same order (a
        selection's, repeats repeated, for every table, ``raw`` too), the same typed ``meta``
        and typed views (``meta="json"``: the stored text). Its bytes are read through the
        bank's verified reader: a file that differs from the manifest (a flipped byte, a
        file of another split in its place) raises :class:`~convbank.errors.DamagedBankError`
        naming it, never an answer. The frame keeps the corpus's generation pinned while it
        is referenced; after :meth:`close` and a clean-up, collecting raises
        :class:`~convbank.errors.NotBuiltError`.

        >>> import polars as pl
        >>> lf = convbank.load("casino").scan("turns")
        >>> lf.filter(pl.col("kind") == "action").select("text").collect().height
        2378
        """
        require("polars", "polars", "scan()")
        from convbank.corpus._scan import scan

        return scan(self, self._table_name(table), meta_form(meta))

    def side_table(
        self, table: str, *, columns: list[str] | None = None, filters: Any = None
    ) -> pa.Table | None:
        """Rows of one of the dataset's side tables (Curiosity's ``curiosity_facts``, PEC's
        ``pec_personas``) for this corpus's configs: the ``columns`` asked for, the rows
        matching pyarrow ``filters``; None when the bank has none. What
        :meth:`convbank.datasets.Presentation.conversation_context` reads through."""
        configs = {p.config for p in self._source.parts}
        refs = [r for r in self.snapshot.refs(table, self.dataset.name) if r.config in configs]
        if not refs:
            return None
        if columns is not None:
            self._known_columns(
                table, columns, self.snapshot.metadata(refs[0]).schema.to_arrow_schema().names
            )
        return pa.concat_tables([self.snapshot.read_table(r, columns=columns, filters=filters) for r in refs])

    # ------------------------------------------------------------------ streams
    def iter_batches(
        self, table: str = "conversations", batch_size: int = 1024, columns: list[str] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Record batches of at most ``batch_size`` rows of a unified table, straight from the
        bank's Parquet one stored batch at a time (memory stays flat whatever the corpus
        size), in source order (a selection's conversations, each once: :meth:`in_order`
        puts them in the corpus's order), with ``dataset``, ``config`` and ``split`` first;
        ``columns`` picks columns (those three included; a column the table does not have is
        an :class:`~convbank.errors.UnknownFieldError` listing them). ``meta`` is the stored
        JSON text.

        >>> rows = 0
        >>> for batch in convbank.load("casino").iter_batches("turns", 4096, ["text"]):
        ...     rows += batch.num_rows
        >>> rows
        14297
        """
        name = self._table_name(table)
        if name not in UNIFIED_TABLES:
            tables = ", ".join(UNIFIED_TABLES)
            raise UnknownFieldError(
                f"iter_batches() streams the unified tables ({tables})", name=name, known=UNIFIED_TABLES
            )
        if columns is not None:
            columns = [columns] if isinstance(columns, str) else list(columns)  # one name, or names
            known = ["dataset", "config", "split", *self._stored_schema(name).names]
            self._known_columns(name, columns, known)
        batch_size = whole_number(batch_size, "batch_size", least=1)
        source = self._source
        chosen = None if self._indices is None else np.unique(self._indices)
        stored = [c for c in columns if c not in ("dataset", "config", "split")] if columns else None
        need = stored if stored is None or "conversation_id" in stored else [*stored, "conversation_id"]
        for batch, info in enumerate(source.batches):
            if chosen is not None:
                lo, hi = source.starts[batch], source.starts[batch + 1]
                rows = chosen[(chosen >= lo) & (chosen < hi)] - lo
                if not rows.size:
                    continue  # a stored batch with none of the selection is not read
            read = source.read(batch, name, need if chosen is not None else stored)
            if chosen is not None:
                ids = source.id_list(batch)
                wanted = pa.array([ids[r] for r in rows.tolist()], pa.string())
                read = read.filter(pc.is_in(read.column("conversation_id"), value_set=wanted))
                if stored is not None and "conversation_id" not in stored:
                    read = read.drop_columns(["conversation_id"])
            keyed = _with_keys(self.dataset.name, source.parts[info.part], read)
            if columns:
                keyed = keyed.select(columns)
            yield from keyed.to_batches(max_chunksize=batch_size)

    def turns_with_labels(self, *, meta: MetaForm = "struct") -> pa.Table:
        """The turns of this corpus, one row per turn in its order, with two list columns:
        ``labels`` (``"layer:label"`` strings) and ``annotations`` (structs of layer, label,
        start_char, end_char): the "utterance and its labels" table, with no join to write.

        >>> import pyarrow.compute as pc
        >>> t = convbank.load("casino").turns_with_labels()
        >>> t.filter(pc.greater(pc.list_value_length(t["labels"]), 0)).num_rows
        4615
        """
        import duckdb

        turns = self.to_arrow("turns", meta=meta)
        once = self if self._indices is None else self._derive(np.unique(self._indices))
        anns = once.to_arrow("annotations", meta="json")  # a repeated conversation's labels once
        con = duckdb.connect()
        try:
            with ctrl_c_said():
                con.execute("SET enable_external_access = false")
                con.register("t", turns.append_column("_row", pa.array(np.arange(turns.num_rows))))
                con.register("a", anns.append_column("_row", pa.array(np.arange(anns.num_rows))))
                return con.sql(
                    """
                    SELECT t.* EXCLUDE (_row),
                           coalesce(g.labels, []::VARCHAR[]) AS labels,
                           coalesce(g.annotations, []) AS annotations
                    FROM t LEFT JOIN (
                        SELECT config, split, conversation_id, turn_index,
                               list(layer || ':' || label ORDER BY _row) AS labels,
                               list({'layer': layer, 'label': label, 'start_char': start_char,
                                     'end_char': end_char} ORDER BY _row) AS annotations
                        FROM a GROUP BY ALL
                    ) g USING (config, split, conversation_id, turn_index)
                    ORDER BY t._row
                    """
                ).to_arrow_table()
        finally:
            con.close()


def _connection() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection that cannot touch a file (Ctrl-C in its ``SET``:
    :class:`KeyboardInterrupt`, never DuckDB's ``RuntimeError``)."""
    import duckdb

    con = duckdb.connect()
    with ctrl_c_said():
        con.execute("SET enable_external_access = false")
    return con


def _with_keys(dataset: str, part: Part, table: pa.Table, rows: int | None = None) -> pa.Table:
    """``table`` with ``dataset``, ``config`` and ``split`` columns first (``rows`` of them,
    by default the table's: a table of no column read from several files has none)."""
    keys = {"dataset": dataset, "config": part.config, "split": part.split}
    schema = pa.schema(
        [*(pa.field(k, pa.string()) for k in keys), *table.schema], metadata=table.schema.metadata
    )
    columns = [_constant(v, table.num_rows if rows is None else rows) for v in keys.values()]
    return pa.Table.from_arrays([*columns, *table.columns], schema=schema)


def _constant(value: str, n: int) -> pa.Array:
    """``n`` copies of a string, made in Arrow (a one-word dictionary, decoded)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value])).cast(
        pa.string()
    )


def _part_offsets(whole: pa.Table) -> dict[Part, int]:
    """The first row of each (config, split) in a table of consecutive parts."""
    offsets: dict[Part, int] = {}
    keys = zip(whole.column("config").to_pylist(), whole.column("split").to_pylist(), strict=True)
    for row, (config, split) in enumerate(keys):
        offsets.setdefault(Part(config, split), row)
    return offsets


def _flatten(table: pa.Table) -> pa.Table:
    """Every struct column split into one column per field, all the way down, named by its
    path (``meta.a.b``); a name holding a dot or a quote, or empty, is written as a JSON
    string (``meta."a.b"``), so that no two leaves share a name (``{"a": {"b": 1}, "a.b": 2}``
    gives ``meta.a.b`` and ``meta."a.b"``). A struct of no field is left out.

    >>> _flatten(pa.table({"meta": [{"a": {"b": 1}, "a.b": 2}]})).column_names
    ['meta.a.b', 'meta."a.b"']
    """
    names: list[str] = []
    columns: list[pa.ChunkedArray] = []

    def add(path: str, column: pa.ChunkedArray) -> None:
        kind = column.type
        if not pa.types.is_struct(kind):
            names.append(path)
            columns.append(column)
            return
        for field, child in zip(kind, column.flatten(), strict=True):
            add(f"{path}.{_segment(field.name)}", child)

    for field, column in zip(table.schema, table.columns, strict=True):
        add(_segment(field.name), column)
    return pa.Table.from_arrays(columns, names=names)


def _segment(name: str) -> str:
    """A name as one segment of a flattened column's path: itself, or as a JSON string when
    it is empty or holds a dot or a quote."""
    if name and "." not in name and '"' not in name:
        return name
    import json

    return json.dumps(name, ensure_ascii=False)
