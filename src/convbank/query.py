"""Reading the bank: :func:`load` returns a :class:`Corpus`; :func:`sql` runs read-only SQL.

Every build writes the four unified tables of a split in the same batches, one Parquet row
group per batch, so row group *i* of ``turns`` holds the turns of the conversations in row
group *i* of ``conversations``. Iteration reads one row group at a time (memory stays flat)
and a lookup by id reads one row group of each table.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from convbank import catalog
from convbank.errors import ConversationNotFoundError, NotBuiltError
from convbank.model import UNIFIED_TABLES, Conversation, Part, tables_to_conversations
from convbank.store import Bank, FileRef, Snapshot, connect

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Corpus", "describe", "load", "sql", "sql_batches"]


class Corpus:
    """The conversations of one dataset (optionally one config and split), backed by Parquet.

    A corpus reads one generation of the bank, pinned when it is opened: builds that run
    meanwhile change nothing it reads (open a new corpus to see them), and its files stay on
    disk until it is closed. It is safe to share between threads. Close it with
    :meth:`close` or use it as a context manager; an unreferenced corpus is closed for you.
    """

    def __init__(
        self,
        name: str,
        config: str | None = None,
        split: str | None = None,
        *,
        bank: Bank | None = None,
        snapshot: Snapshot | None = None,
    ) -> None:
        self.dataset = catalog.get(name)
        self.bank = bank or (snapshot.bank if snapshot else Bank())
        self.config = config
        self.split = split
        self._own_snapshot = snapshot is None
        self.snapshot = snapshot or self.bank.snapshot()
        self._batch_cache: dict[Part, list[tuple[FileRef, int, pq.RowGroupMetaData]]] = {}
        self._batch_lock = threading.Lock()
        try:
            self._parts = self._find_parts(name, config, split)
            self.snapshot.check(name)
        except BaseException:
            self.close()
            raise

    def _find_parts(self, name: str, config: str | None, split: str | None) -> list[Part]:
        """The built parts that ``config`` and ``split`` select (see
        :meth:`convbank.datasets.Dataset.parts`); every one of them must be built when either
        is named."""
        parts = []
        for part in self.dataset.parts(config, split):
            if self.snapshot.manifest.split(name, part) is not None:
                parts.append(part)
            elif config or split:
                self.snapshot.split_info(name, *part)  # raises NotBuiltError
        if not parts:
            raise NotBuiltError(
                f"{name} is not in the bank at {self.bank.root}; run `convbank build {name}` first"
            )
        return parts

    def close(self) -> None:
        """Release the pinned generation (a snapshot passed in stays its owner's)."""
        if self._own_snapshot:
            self.snapshot.close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "/".join(x for x in (self.dataset.name, self.config, self.split) if x)
        return f"<Corpus {where}: {len(self)} conversations>"

    # ------------------------------------------------------------------ size and ids
    def __len__(self) -> int:
        return sum(
            self.snapshot.split_info(self.dataset.name, p.config, p.split).conversations for p in self._parts
        )

    def _files(self, table: str, part: Part) -> list[FileRef]:
        return self.snapshot.pieces(table, self.dataset.name, part.config, part.split)

    def _batches(self, part: Part) -> list[tuple[FileRef, int, pq.RowGroupMetaData]]:
        """The stored batches of a part in order: (conversations file, row group, its
        metadata); batch *i* of every table holds the rows of the same conversations."""
        with self._batch_lock:
            cached = self._batch_cache.get(part)
        if cached is None:
            cached = []
            for ref in self._files("conversations", part):
                meta = self.snapshot.metadata(ref)
                cached += [(ref, rg, meta.row_group(rg)) for rg in range(meta.num_row_groups)]
            with self._batch_lock:
                self._batch_cache[part] = cached
        return cached

    def _groups(self, part: Part) -> int:
        return len(self._batches(part))

    def _ids(self, part: Part, rg: int) -> pa.ChunkedArray:
        return self._row_group("conversations", part, rg, ["conversation_id"]).column(0)

    def _locate(self, conversation_id: str) -> tuple[Part, int] | None:
        """The part and row group holding an id: row groups whose min/max statistics
        exclude it are skipped, so a lookup reads one row group's ids, not the column."""
        for part in self._parts:
            for rg, (ref, _, group) in enumerate(self._batches(part)):
                column = (
                    self.snapshot.metadata(ref).schema.to_arrow_schema().get_field_index("conversation_id")
                )
                stats = group.column(column).statistics
                if stats is not None and stats.has_min_max and not stats.min <= conversation_id <= stats.max:
                    continue
                if pc.index(self._ids(part, rg), conversation_id).as_py() >= 0:
                    return part, rg
        return None

    def neighbours(self, conversation_id: str) -> tuple[str | None, str | None]:
        """The ids before and after a conversation in source order (across this corpus's
        splits), None at either end."""
        found = self._locate(conversation_id)
        if found is None:
            raise ConversationNotFoundError(
                f"{self.dataset.name} has no conversation {conversation_id!r} in the bank"
            )
        part, rg = found
        ids = self._ids(part, rg)
        pos = pc.index(ids, conversation_id).as_py()
        order = [(p, g) for p in self._parts for g in range(self._groups(p))]
        at = order.index((part, rg))

        def edge(step: int) -> str | None:
            i = at + step
            while 0 <= i < len(order):
                col = self._ids(*order[i])
                if len(col):
                    return str(col[-1 if step < 0 else 0].as_py())
                i += step
            return None

        before = str(ids[pos - 1].as_py()) if pos > 0 else edge(-1)
        after = str(ids[pos + 1].as_py()) if pos + 1 < len(ids) else edge(1)
        return before, after

    def __contains__(self, conversation_id: object) -> bool:
        return isinstance(conversation_id, str) and self._locate(conversation_id) is not None

    def __getitem__(self, key: str | int) -> Conversation:
        """A conversation by id (``corpus["938"]``) or by position in source order
        (``corpus[0]``, ``corpus[-1]``)."""
        if isinstance(key, int) and not isinstance(key, bool):
            part, rg, conversation_id = self._at(key)
        elif isinstance(key, str):
            conversation_id = key
            found = self._locate(conversation_id)
            if found is None:
                raise ConversationNotFoundError(
                    f"{self.dataset.name} has no conversation {conversation_id!r} in the bank"
                )
            part, rg = found
        else:
            raise TypeError(
                f"a corpus is indexed by conversation id (a str, such as {self._first_id()!r}) or by "
                f"position (an int), not by {type(key).__name__}"
            )
        tables = {t: _where_id(self._row_group(t, part, rg), conversation_id) for t in UNIFIED_TABLES}
        (conv,) = tables_to_conversations(
            tables, dataset=self.dataset.name, config=part.config, split=part.split
        )
        return conv

    def _at(self, position: int) -> tuple[Part, int, str]:
        """The part, row group and id of the conversation at a position."""
        total = len(self)
        index = position + total if position < 0 else position
        if not 0 <= index < total:
            raise IndexError(f"position {position} is outside this corpus of {total:,} conversations")
        for part in self._parts:
            for rg, (_, _, group) in enumerate(self._batches(part)):
                rows = group.num_rows
                if index < rows:
                    return part, rg, str(self._ids(part, rg)[index].as_py())
                index -= rows
        raise IndexError(f"position {position} is outside this corpus")  # the manifest disagrees

    def _first_id(self) -> str:
        return self._at(0)[2]

    # ------------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[Conversation]:
        """The conversations in source order, one stored batch at a time; the next batch is
        read (in a thread: Parquet decoding releases the GIL) while this one is yielded."""
        batches = [(part, rg) for part in self._parts for rg in range(self._groups(part))]
        if not batches:
            return
        with ThreadPoolExecutor(1, thread_name_prefix="convbank-read") as reader:
            pending = reader.submit(self._batch_tables, *batches[0])
            for i, (part, _) in enumerate(batches):
                tables = pending.result()
                if i + 1 < len(batches):
                    pending = reader.submit(self._batch_tables, *batches[i + 1])
                yield from tables_to_conversations(
                    tables, dataset=self.dataset.name, config=part.config, split=part.split
                )

    def _batch_tables(self, part: Part, rg: int) -> dict[str, pa.Table]:
        return {t: self._row_group(t, part, rg) for t in UNIFIED_TABLES}

    def take(self, conversation_ids: Iterable[str]) -> list[Conversation]:
        """The conversations of these ids, in the order given (an id may repeat): each
        stored batch that holds one of them is read once, two at a time. Raises
        :class:`ConversationNotFoundError` naming the first id the corpus does not have."""
        wanted = list(conversation_ids)
        index = self._find(set(wanted))
        where: dict[tuple[int, int], dict[str, int]] = {}
        for cid in wanted:
            found = index.get(cid)
            if found is None:
                raise ConversationNotFoundError(
                    f"{self.dataset.name} has no conversation {cid!r} in the bank"
                )
            part, rg, row = found
            where.setdefault((part, rg), {})[cid] = row

        def batch(key: tuple[int, int]) -> list[Conversation]:
            part = self._parts[key[0]]
            tables = self._batch_tables(part, key[1])
            rows = sorted(where[key].values())
            ids = pa.array(list(where[key]), pa.string())
            chosen = {"conversations": tables["conversations"].take(pa.array(rows, pa.int64()))}
            for name in UNIFIED_TABLES[1:]:
                table = tables[name]
                chosen[name] = table.filter(pc.is_in(table.column("conversation_id"), value_set=ids))
            return tables_to_conversations(
                chosen, dataset=self.dataset.name, config=part.config, split=part.split
            )

        found_convs: dict[str, Conversation] = {}
        with ThreadPoolExecutor(2, thread_name_prefix="convbank-take") as readers:
            for convs in readers.map(batch, sorted(where)):
                found_convs.update((c.conversation_id, c) for c in convs)
        return [found_convs[cid] for cid in wanted]

    def filter(self, where: str | None = None, *, label: str | None = None) -> list[Conversation]:
        """The conversations matching a SQL condition on the ``conversations`` view
        (``where="(meta->>'eval_score')::INT = 5"``) and/or carrying an annotation
        (``label="strategy:uv-part"``: ``layer:label``), in source order."""
        if where is None and label is None:
            return list(self)
        chosen: set[str] | None = None
        if label is not None:
            layer, _, name = label.partition(":")
            chosen = {
                cid
                for part in self._parts
                for ref in self._files("annotations", part)
                for cid in self.snapshot.read_table(
                    ref, columns=["conversation_id"], filters=[("layer", "=", layer), ("label", "=", name)]
                )
                .column(0)
                .to_pylist()
            }
        if where is not None:
            parts = " OR ".join(f"(c.config = '{p.config}' AND c.split = '{p.split}')" for p in self._parts)
            query = (
                f"SELECT c.conversation_id FROM conversations c WHERE c.dataset = '{self.dataset.name}' "
                f"AND ({parts}) AND ({where})"
            )
            matched = set(sql(query, snapshot=self.snapshot).column(0).to_pylist())
            chosen = matched if chosen is None else chosen & matched
        found = self._find(chosen or set())
        return self.take(sorted(found, key=found.__getitem__))

    def _find(self, ids: set[str]) -> dict[str, tuple[int, int, int]]:
        """Where these ids are: (part, batch, row). Batches whose id statistics exclude every
        wanted id are skipped (ids in source order, like PEC's, make this a few batches)."""
        wanted = sorted(ids)
        found: dict[str, tuple[int, int, int]] = {}
        for p, part in enumerate(self._parts):
            for rg, (ref, _, group) in enumerate(self._batches(part)):
                if len(found) == len(wanted):
                    return found
                column = (
                    self.snapshot.metadata(ref).schema.to_arrow_schema().get_field_index("conversation_id")
                )
                stats = group.column(column).statistics
                lo, hi = 0, len(wanted)
                if stats is not None and stats.has_min_max:
                    lo, hi = bisect.bisect_left(wanted, stats.min), bisect.bisect_right(wanted, stats.max)
                if lo == hi:
                    continue
                rows = {cid: row for row, cid in enumerate(self._ids(part, rg).to_pylist())}
                for cid in wanted[lo:hi]:
                    if cid in rows and cid not in found:
                        found[cid] = (p, rg, rows[cid])
        return found

    def parts(self) -> list[Part]:
        """The (config, split) parts this corpus covers, in order."""
        return list(self._parts)

    def file_meta(self, config: str, split: str) -> dict[str, Any]:
        """File-level source content kept for a split (for the source export)."""
        return self.snapshot.split_info(self.dataset.name, config, split).file_meta

    def iter_part(self, config: str, split: str) -> Iterator[Conversation]:
        """The conversations of one (config, split) of this corpus, in source order."""
        return iter(Corpus(self.dataset.name, config, split, snapshot=self.snapshot))

    # ------------------------------------------------------------------ tables
    def _row_group(self, table: str, part: Part, rg: int, columns: list[str] | None = None) -> pa.Table:
        """Batch ``rg`` of a part's ``table``: the same piece and row group as the
        conversations file's batch."""
        ref, local, _ = self._batches(part)[rg]
        return self.snapshot.read_row_group(self._files(table, part)[ref.piece], local, columns)

    def to_arrow(self, table: str = "conversations") -> pa.Table:
        """A unified table (or ``raw``, the dataset's raw table) of this corpus, with
        ``dataset``, ``config`` and ``split`` columns first."""
        name = f"{self.dataset.name}_raw" if table == "raw" else table
        if name not in (*UNIFIED_TABLES, f"{self.dataset.name}_raw"):
            raise KeyError(f"unknown table {table!r}; one of {', '.join(UNIFIED_TABLES)}, raw")

        def whole(part: Part) -> pa.Table:
            return pa.concat_tables([self.snapshot.read_table(ref) for ref in self._files(name, part)])

        with ThreadPoolExecutor(2, thread_name_prefix="convbank-read") as readers:
            tables = list(readers.map(whole, self._parts))
        pieces = []
        for part, read in zip(self._parts, tables, strict=True):
            keys = {"dataset": self.dataset.name, "config": part.config, "split": part.split}
            schema = pa.schema(
                [*(pa.field(k, pa.string()) for k in keys), *read.schema], metadata=read.schema.metadata
            )
            columns = [_constant(v, read.num_rows) for v in keys.values()]
            pieces.append(pa.Table.from_arrays([*columns, *read.columns], schema=schema))
        return pa.concat_tables(pieces)

    def to_pandas(self, table: str = "conversations") -> pd.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame (needs pandas)."""
        frame: pd.DataFrame = self.to_arrow(table).to_pandas()
        return frame

    def side_table(
        self, table: str, *, columns: list[str] | None = None, filters: Any = None
    ) -> pa.Table | None:
        """Rows of one of the dataset's side tables (Curiosity's ``curiosity_facts``, PEC's
        ``pec_personas``) for this corpus's configs: the ``columns`` asked for, the rows
        matching pyarrow ``filters``; None when the bank has none. What
        :meth:`convbank.datasets.Dataset.conversation_context` reads through."""
        configs = {p.config for p in self._parts}
        refs = [r for r in self.snapshot.refs(table, self.dataset.name) if r.config in configs]
        if not refs:
            return None
        return pa.concat_tables([self.snapshot.read_table(r, columns=columns, filters=filters) for r in refs])

    def context(self, conversation: Conversation) -> dict[str, Any]:
        """What the dataset's side tables say about one of its conversations (the text of
        Curiosity's facts), from :meth:`convbank.datasets.Dataset.conversation_context`."""
        return self.dataset.conversation_context(conversation, self.side_table)

    def sql(self, query: str) -> pa.Table:
        """Run read-only SQL over the bank's views (all datasets; filter on ``dataset``), in
        the generation this corpus reads."""
        return sql(query, snapshot=self.snapshot)


def _constant(value: str, n: int) -> pa.Array:
    """``n`` copies of a string, made in Arrow (a one-word dictionary, decoded)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value])).cast(
        pa.string()
    )


def _where_id(table: pa.Table, conversation_id: str) -> pa.Table:
    """The rows of one conversation (a boolean mask: no query-engine start-up on first use)."""
    return table.filter(pc.equal(table.column("conversation_id"), conversation_id))


def load(
    name: str, config: str | None = None, split: str | None = None, *, bank: Bank | None = None
) -> Corpus:
    """Open a built dataset as a :class:`Corpus` (raises :class:`NotBuiltError` if absent)."""
    return Corpus(name, config, split, bank=bank)


def describe(*, bank: Bank | None = None) -> list[dict[str, Any]]:
    """The views SQL can read: ``[{"name", "rows", "columns": [{"name", "type"}]}]``, the
    unified tables first."""
    with (bank or Bank()).snapshot() as snapshot:
        con = connect(snapshot)
        try:
            views = []
            names = sorted(snapshot.tables(), key=lambda t: (t not in UNIFIED_TABLES, t))
            for name in names:
                columns = con.execute(f'DESCRIBE "{name}"').fetchall()
                views.append(
                    {
                        "name": name,
                        "rows": sum(r.rows or 0 for r in snapshot.refs(name)),
                        "columns": [{"name": c[0], "type": c[1]} for c in columns],
                    }
                )
            return views
        finally:
            con.close()


def sql(
    query: str,
    *,
    bank: Bank | None = None,
    snapshot: Snapshot | None = None,
    timeout: float | None = None,
    memory_limit: str | None = None,
) -> pa.Table:
    """Run one or more read-only statements over the bank's views; return the last result.

    Every call gets its own connection, which can read the bank's tables and nothing else
    (no file, no setting, nothing that outlives the call). By default nothing limits a
    query (Ctrl-C interrupts it). With ``timeout`` (seconds) or ``memory_limit`` (``"1GB"``)
    the query runs in a worker process that the operating system holds to them (a capped
    address space, killed at the deadline), so that no expression can overrun them; past
    either, :class:`QueryError`. The worker stays warm for the next call: a limit costs
    milliseconds, not a process start. For results larger than memory, :func:`sql_batches`.

    Example: ``convbank.sql("SELECT dataset, count(*) FROM turns GROUP BY 1", timeout=30)``
    """
    from convbank.store.queries import stream
    from convbank.store.sql import collect

    items = stream(
        query, bank=bank, snapshot=snapshot, timeout=timeout, memory_limit=memory_limit, last_only=True
    )
    return collect(items)


def sql_batches(
    query: str,
    *,
    bank: Bank | None = None,
    snapshot: Snapshot | None = None,
    timeout: float | None = None,
    memory_limit: str | None = None,
    batch_rows: int = 8192,
) -> Iterator[pa.RecordBatch]:
    """As :func:`sql`, but the last statement's result arrives in Arrow record batches of
    ``batch_rows`` rows as DuckDB produces them, so that memory stays bounded whatever its
    size; ``timeout`` covers the whole stream. Leaving the loop early ends the query.

    Example: ``for batch in convbank.sql_batches("SELECT * FROM turns"): ...``
    """
    from convbank.store.queries import stream
    from convbank.store.sql import Begin

    for item in stream(
        query,
        bank=bank,
        snapshot=snapshot,
        timeout=timeout,
        memory_limit=memory_limit,
        batch_rows=batch_rows,
        last_only=True,
    ):
        if not isinstance(item, Begin):
            yield item
