"""What every corpus opened by one :func:`convbank.load` shares: the pinned generation, the
index from position to stored batch and row, and a bounded cache of decoded batches.

Every build writes the four unified tables of a split in the same batches, one Parquet row
group per batch (at most 2,000 conversations), so batch *i* of ``turns`` holds the turns of
the conversations in batch *i* of ``conversations``. The index is made from the row counts
of the batches, as the manifest's record entries give them (or, in banks written before,
the footers), so opening a corpus reads no data; a position is found by a binary search
over the batches' first positions, an id in the ids of the record files' indexes.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
import numpy as np
import pyarrow as pa

from convbank._forksafe import renew_after_fork
from convbank._wording import counted
from convbank.corpus._group import Group
from convbank.errors import DamagedBankError, NotBuiltError
from convbank.model import UNIFIED_TABLES, Conversation, Part
from convbank.model.schema import paused_gc
from convbank.model.structure import Structure, nameable
from convbank.store.integrity import row_groups

if TYPE_CHECKING:
    from convbank.datasets import Dataset
    from convbank.store import FileRef, Snapshot
    from convbank.store.records import RecordFile

__all__ = ["DEFAULT_CACHE_BYTES", "Source", "find_parts"]

DEFAULT_CACHE_BYTES = 2**30
"""Decoded batches a corpus keeps for random access and shuffled passes, in bytes (Arrow sizes;
a batch whose Python columns are decoded counts four times its Arrow size). 1 GiB holds every
batch of a PEC-sized corpus as Arrow (60,000 synthetic PEC conversations take 114 MiB, measured
here), so a shuffled pass reads each batch once; a corpus larger than the cache re-reads batches."""


class Batch(NamedTuple):
    """One stored batch: the part it belongs to (index into the parts), the conversations
    file and row group holding it, its number of conversations and the row of its first in
    that file (its row in the file's record file)."""

    part: int
    ref: FileRef
    local: int
    rows: int
    first: int = 0


class Source:
    """The shared state of the corpora derived from one opened corpus (see the module doc).
    Safe to share between threads."""

    def __init__(
        self,
        dataset: Dataset,
        snapshot: Snapshot,
        parts: list[Part],
        *,
        own_snapshot: bool,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.dataset = dataset
        self.snapshot = snapshot
        self.parts = parts
        self.own_snapshot = own_snapshot
        self.cache_bytes = cache_bytes
        self.batches: list[Batch] = []
        self._record_refs: dict[tuple[int, int], FileRef] = {}
        """The record file of each (part, piece) of ``conversations`` that has one."""
        self._unchecked: set[tuple[int, int]] = set()
        """The (part, piece)s whose batches were taken from the manifest's record entries,
        their conversations file's footer not yet read (:meth:`read` checks it first)."""
        for p, part in enumerate(parts):
            files = self.files("conversations", part)
            records = snapshot.record_pieces(dataset.name, part.config, part.split)
            if len(records) == len(files):
                self._record_refs.update({(p, r.piece): r for r in records})
            for ref in files:
                first = 0
                for rg, rows in enumerate(self._row_groups(p, ref)):
                    self.batches.append(Batch(p, ref, rg, rows, first))
                    first += rows
        self.starts: list[int] = np.concatenate(
            [[0], np.cumsum([b.rows for b in self.batches], dtype=np.int64)]
        ).tolist()
        self.part_batches: list[list[int]] = [
            [i for i, b in enumerate(self.batches) if b.part == p] for p in range(len(parts))
        ]
        self._groups: OrderedDict[int, Group] = OrderedDict()
        self._cached = 0
        self._ids: dict[int, tuple[list[str], dict[str, int]]] = {}
        self._structures: dict[str, str | None] = {}
        self._record_files: dict[tuple[int, int], RecordFile] = {}
        from convbank.store.records import Kept

        self._kept = Kept()  # the entries its record files checked, one budget for them all
        self.scan_schemas: dict[tuple[str, str], Any] = {}
        """The polars schema of :meth:`convbank.Corpus.scan` per (table, meta form), made once."""
        self._lock = threading.Lock()
        renew_after_fork(self, _lock=threading.Lock)  # a DataLoader worker forked mid-read

    def _row_groups(self, part: int, ref: FileRef) -> list[int]:
        """The rows of each row group of a conversations file: as its record file's entry in
        the manifest records them (no file opened), or from its footer."""
        records = self._record_refs.get((part, ref.piece))
        groups = None if records is None else records.groups
        if groups is not None and sum(groups) == ref.rows and min(groups, default=0) >= 0:
            self._unchecked.add((part, ref.piece))
            return list(groups)
        return row_groups(self.snapshot.metadata(ref))

    def close(self) -> None:
        """Drop the cache and release the pinned generation (if this source pinned it)."""
        with self._lock:
            self._groups.clear()
            self._cached = 0
            opened, self._record_files = self._record_files, {}
        for records in opened.values():
            records.close()
        if self.own_snapshot:
            self.snapshot.close()

    def __len__(self) -> int:
        return self.starts[-1]

    def meta_structure(self, table: str) -> str | None:
        """The JSON structure of every ``meta`` value of a unified table of this dataset in
        the pinned generation (all its configs and splits: one type per dataset), made once:
        merged from the structures the manifest records of its files, each confirmed against
        the one its file's footer holds (:meth:`~convbank.store.Snapshot.metadata`: a split
        this corpus does not read types its ``meta`` too, so a structure misstated there is
        damage, never a column typed otherwise), or, in a bank written before they were
        recorded, found by DuckDB over the column."""
        with self._lock:
            if table in self._structures:
                return self._structures[table]
        refs = self.snapshot.refs(table, self.dataset.name)
        stored = stored_structure(refs)
        if stored is not None:
            for ref in refs:
                self.snapshot.metadata(ref)  # its footer and structure checked (once a process)
            found = stored.text()
        else:
            found = meta_structure([self.snapshot.read_table(r, columns=["meta"]) for r in refs])
        with self._lock:
            self._structures[table] = found
        return found

    def files(self, table: str, part: Part) -> list[FileRef]:
        """The files of a part's table, in order."""
        return self.snapshot.pieces(table, self.dataset.name, part.config, part.split)

    # ------------------------------------------------------------------ reading batches
    def read(self, batch: int, table: str, columns: list[str] | None = None) -> pa.Table:
        """Batch ``batch`` of ``table``, read now (not cached)."""
        b = self.batches[batch]
        if (b.part, b.ref.piece) in self._unchecked:
            self._check_layout(b)
        part = self.parts[b.part]
        ref = self.files(table, part)[b.ref.piece]
        return self.snapshot.read_row_group(ref, b.local, columns)

    def _check_layout(self, b: Batch) -> None:
        """Check a conversations file's row groups against the batches taken from the
        manifest, before the first read of its tables (a batch is a row group of each)."""
        groups = row_groups(self.snapshot.metadata(b.ref))
        if groups != [x.rows for x in self.batches if (x.part, x.ref.piece) == (b.part, b.ref.piece)]:
            raise DamagedBankError(
                f"the bank is damaged: the manifest's row groups of {b.ref.path} differ from the "
                f"file's; run `convbank doctor`, then `convbank build {b.ref.dataset}` to rebuild it",
                path=b.ref.path,
            )
        with self._lock:
            self._unchecked.discard((b.part, b.ref.piece))

    def tables(self, batch: int) -> dict[str, pa.Table]:
        """The four unified tables of a batch, read now."""
        return {t: self.read(batch, t) for t in UNIFIED_TABLES}

    def group(self, batch: int) -> Group:
        """A decoded batch from the cache, read on a miss; the least recently used batches
        leave the cache beyond its budget."""
        with self._lock:
            found = self._groups.get(batch)
            if found is not None:
                self._groups.move_to_end(batch)
                return found
        made = Group(self.tables(batch), self.parts[self.batches[batch].part], self.dataset.name)
        with self._lock:
            found = self._groups.get(batch)
            if found is not None:
                return found
            self._groups[batch] = made
            self._cached += made.cost
        self.grew(0)
        return made

    def grew(self, added: int) -> None:
        """Account for bytes a cached batch added, and evict beyond the budget (never the
        most recent batch)."""
        with self._lock:
            self._cached += added
            while self._cached > self.cache_bytes and len(self._groups) > 1:
                _, old = self._groups.popitem(last=False)
                self._cached -= old.cost

    # ------------------------------------------------------------------ positions and ids
    def locate(self, position: int) -> tuple[int, int]:
        """The batch and row of a position in source order (0 <= position < len)."""
        batch = bisect.bisect_right(self.starts, position) - 1
        return batch, position - self.starts[batch]

    def id_list(self, batch: int) -> list[str]:
        """The conversation ids of one batch, in order (kept: ids are small)."""
        return self._id_index(batch)[0]

    def ids(self, batch: int) -> dict[str, int]:
        """``{conversation_id: row}`` of one batch."""
        return self._id_index(batch)[1]

    def _id_index(self, batch: int) -> tuple[list[str], dict[str, int]]:
        with self._lock:
            found = self._ids.get(batch)
        if found is None:
            b = self.batches[batch]
            records = self.records(batch)
            column = None if records is None else records.ids()
            if column is not None:
                column = column[b.first : b.first + b.rows]
            else:
                column = self.read(batch, "conversations", ["conversation_id"]).column(0).to_pylist()
            found = (column, {cid: row for row, cid in enumerate(column)})
            with self._lock:
                self._ids[batch] = found
        return found

    def positions(self, conversation_ids: Iterable[str]) -> dict[str, int]:
        """Where these ids are in source order (ids not in the corpus are absent). Looked up
        in the ids of the record files (:meth:`_positions_in_records`), and for batches of a
        bank written before them in the tables' id column, skipping batches whose id
        statistics exclude every wanted id, so ids in source order (like PEC's) cost a few
        batches."""
        wanted = sorted(set(conversation_ids))
        found: dict[str, int] = {}
        for batch in self._positions_in_records(wanted, found):
            if len(found) == len(wanted):
                break
            lo, hi = 0, len(wanted)
            bounds = self._bounds(self.batches[batch])
            if bounds is not None:
                lo, hi = bisect.bisect_left(wanted, bounds[0]), bisect.bisect_right(wanted, bounds[1])
            if lo == hi:
                continue
            rows = self.ids(batch)
            start = self.starts[batch]
            for cid in wanted[lo:hi]:
                row = rows.get(cid)
                if row is not None and cid not in found:
                    found[cid] = start + row
        return found

    def _positions_in_records(self, wanted: list[str], found: dict[str, int]) -> list[int]:
        """Find ``wanted`` (sorted) in the ids of the record files into ``found``: first in
        the files whose id range (in the manifest) holds one of them, then, for an id still
        missing, in the others (a range is where to look first, never a reason not to look).
        Returns the batches of the pieces that have no ids (their tables are searched)."""
        rest: list[int] = []
        firsts: list[tuple[int, bool]] = []
        for batch, b in enumerate(self.batches):
            ref = self._record_refs.get((b.part, b.ref.piece))
            if ref is None or ref.groups is None:
                rest.append(batch)
            elif b.local == 0:
                span = ref.id_range
                if span is None or len(span) != 2:  # not recorded (or no ids): looked in first
                    firsts.append((batch, True))
                else:
                    lo = bisect.bisect_left(wanted, span[0])
                    firsts.append((batch, lo < len(wanted) and wanted[lo] <= span[1]))
        for batch, _ in sorted(firsts, key=lambda f: not f[1]):  # those holding one first, in order
            if len(found) == len(wanted):
                break
            records = self.records(batch)
            rows = None if records is None else records.id_rows()
            if rows is None:  # a record file without ids: the piece's tables are searched
                piece = (self.batches[batch].part, self.batches[batch].ref.piece)
                rest += [i for i, b in enumerate(self.batches) if (b.part, b.ref.piece) == piece]
                continue
            start = self.starts[batch]
            found |= {cid: start + rows[cid] for cid in wanted if cid in rows and cid not in found}
        return sorted(rest)

    def _bounds(self, b: Batch) -> tuple[str, str] | None:
        """The min and max conversation id of a batch, from the Parquet statistics."""
        meta = self.snapshot.metadata(b.ref)
        column = meta.schema.to_arrow_schema().get_field_index("conversation_id")
        stats = meta.row_group(b.local).column(column).statistics
        if stats is None or not stats.has_min_max:
            return None
        return str(stats.min), str(stats.max)

    # ------------------------------------------------------------------ conversations
    def records(self, batch: int) -> RecordFile | None:
        """The record file holding a batch's conversations, opened (its index checked) on
        first use; None where the bank has none (written before them): the batch is then
        decoded from its tables. Unless its index says it was made from the very table files
        the manifest names (their footers' digests), those files' footers are checked
        (:meth:`_check_tables`)."""
        b = self.batches[batch]
        key = (b.part, b.ref.piece)
        found = self._record_files.get(key)
        if found is not None:
            return found
        ref = self._record_refs.get(key)
        if ref is None:
            return None
        opened = self.snapshot.open_records(ref, self._kept)
        if b.ref.rows is not None and opened.rows != b.ref.rows:
            opened.close()
            raise DamagedBankError(
                f"the bank is damaged: {ref.path} holds {counted(opened.rows, 'conversation')} where "
                f"{b.ref.path} holds {b.ref.rows:,}; run `convbank doctor`, then `convbank build "
                f"{ref.dataset}` to rebuild it",
                path=ref.path,
            )
        if opened.index.made_from != self._footers(b):  # not made from the tables named now
            try:
                self._check_tables(b)
            except BaseException:
                opened.close()
                raise
        with self._lock:
            found = self._record_files.setdefault(key, opened)
        if found is not opened:
            opened.close()
        return found

    def _tables_of(self, b: Batch) -> list[FileRef]:
        """The unified table files of a batch's piece (those its record file was made from)."""
        part, piece = self.parts[b.part], b.ref.piece
        return [
            ref
            for table in UNIFIED_TABLES
            for ref in self.snapshot.refs(table, self.dataset.name)
            if (ref.config, ref.split, ref.piece) == (part.config, part.split, piece)
        ]

    def _footers(self, b: Batch) -> dict[str, bytes]:
        """The manifest's footer digests of the table files of a batch's piece, as a record
        file's index holds those it was made from (32 zero bytes: none; not recorded: 0xff)."""
        found = dict.fromkeys(UNIFIED_TABLES, bytes(32))
        for ref in self._tables_of(b):
            found[ref.table] = bytes.fromhex(ref.footer) if ref.footer else b"\xff" * 32
        return found

    def _check_tables(self, b: Batch) -> None:
        """Check the footers of the table files a batch's record file was made from (their
        piece of each unified table; once a process, as every footer is): a table file of
        another schema is refused (:class:`~convbank.errors.SchemaVersionError`) as the
        readers of the tables refuse it, never served from its records."""
        for ref in self._tables_of(b):
            self.snapshot.metadata(ref)

    def conversation(self, position: int) -> Conversation:
        """The conversation at a position: decoded from its record (a few hundred bytes),
        or through the cache of decoded batches where the bank has no record files."""
        batch, row = self.locate(position)
        records = self.records(batch)
        if records is not None:
            return records.conversation(self.batches[batch].first + row)  # type: ignore[no-any-return]
        return self.group(batch).conversation(row, self)

    def fetch(self, positions: Sequence[int]) -> list[Conversation]:
        """The conversations at these positions, in that order (a position may repeat: each
        slot gets its own object): each from its record, or (a bank without record files)
        the wanted rows of each batch decoded together."""
        by_batch: dict[int, dict[int, list[int]]] = {}
        for slot, position in enumerate(positions):
            batch, row = self.locate(position)
            by_batch.setdefault(batch, {}).setdefault(row, []).append(slot)
        out: list[Conversation | None] = [None] * len(positions)
        with paused_gc():
            for batch, wanted in by_batch.items():
                records = self.records(batch)
                if records is not None:
                    first = self.batches[batch].first
                    for row, slots in wanted.items():
                        for slot in slots:
                            out[slot] = records.conversation(first + row)
                    continue
                group = self.group(batch)
                rows = list(wanted)
                for row, conv in zip(rows, group.subset(rows), strict=True):
                    first, *others = wanted[row]
                    out[first] = conv
                    for slot in others:
                        out[slot] = group.subset([row])[0]
        return [c for c in out if c is not None]


def stored_structure(refs: Sequence[FileRef]) -> Structure | None:
    """The ``meta`` structure of these files together, merged from the manifest's (in their
    order, as DuckDB reads them), or None when one of them has none recorded (or one that
    does not parse: the column is then read instead)."""
    if not refs or any(r.structure is None for r in refs):
        return None
    try:
        found = Structure()
        for ref in refs:
            found = found.merged(Structure.loads(ref.structure or ""))
    except ValueError:
        return None
    return found


def meta_structure(tables: list[pa.Table]) -> str | None:
    """The JSON structure (DuckDB's ``json_group_structure``) of every value of these
    ``meta`` columns, or None when all are empty objects: what types ``meta`` in a bank
    written before the build kept each file's :class:`~convbank.model.structure.Structure`
    (the same rules, checked equal in the tests). Its objects' keys are in the order
    they first appear, row by row: on one thread, since threads that each merge what they
    saw first made the order vary from one call to the next (CaSiNo's deals, whose keys the
    publisher orders either way, came back as ``Food, Firewood, Water`` in 6 of 20 loads and
    ``Firewood, Food, Water`` in the others: ``to_arrow`` and ``to_polars`` of one bank in
    two types).

    >>> meta_structure([pa.table({"meta": ['{"b": 1, "a": "x"}', '{"a": "y", "c": [1]}']})])
    '{"b":"BIGINT","a":"VARCHAR","c":["BIGINT"]}'
    """
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    try:
        con.execute("SET enable_external_access = false")
        empty = pa.table({"meta": pa.array([], pa.string())})
        con.register("m", pa.concat_tables(tables) if tables else empty)
        row = con.execute("SELECT json_group_structure(meta::JSON) FROM m WHERE meta <> '{}'").fetchone()
    finally:
        con.close()
    structure = row[0] if row else None
    if structure in (None, "{}", "null", "NULL"):
        return None
    # objects DuckDB cannot make a struct of stay JSON text (an empty key, keys alike but for
    # case); numbers that happen to be non-negative everywhere are still signed numbers
    typed = nameable(msgspec.json.decode(str(structure)))
    return msgspec.json.encode(typed).decode().replace('"UBIGINT"', '"BIGINT"')


def find_parts(name: str, candidates: Sequence[Part], snapshot: Snapshot, named: str | None) -> list[Part]:
    """The built parts among those ``config`` and ``split`` select (see
    :meth:`convbank.datasets.Dataset.parts`); every one of them must be built when either is
    named."""
    parts = []
    for part in candidates:
        if snapshot.manifest.split(name, part) is not None:
            parts.append(part)
        elif named:
            snapshot.split_info(name, *part)  # raises NotBuiltError
    if not parts:
        raise NotBuiltError(
            f"{name} is not in the bank at {snapshot.bank.root}; run `convbank build {name}` first",
            dataset=name,
        )
    return parts
