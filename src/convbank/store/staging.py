"""A build's writing: Parquet writers for one dataset/config in a staging folder of the bank
(:meth:`convbank.store.bank.Bank.stage`), nothing visible to readers until the bank commits
it; a full disk while writing is one line that says the old bank is kept.
"""

from __future__ import annotations

import errno
import os
import shutil
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from convbank._lazy import lazy
from convbank._version import __version__
from convbank._wording import counted
from convbank.errors import DiskFullError, FormatError
from convbank.model import SCHEMA_VERSION, UNIFIED_TABLES
from convbank.model.schema import NotGroupedError, table_schemas
from convbank.model.structure import Structure
from convbank.store.integrity import STRUCTURE_KEY, read_footer, row_groups
from convbank.store.records import RECORDS, RecordWriter, read_index
from convbank.store.snapshot import partition

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
else:
    pa = lazy("pyarrow")
    pc = lazy("pyarrow.compute")
    pq = lazy("pyarrow.parquet")

__all__ = ["Facts", "Layout", "MetaLayout", "Staging", "disk_full", "file_facts", "fsync_file"]


class Layout(NamedTuple):
    """What the manifest records of a record file's layout: the rows of each row group of
    its conversations file, and its least and greatest conversation id ([] for none)."""

    groups: list[int]
    id_range: list[str]


class MetaLayout(NamedTuple):
    """What the manifest records of a unified table file's ``meta`` column: its
    :class:`~convbank.model.structure.Structure` (:meth:`~convbank.model.structure.Structure.dumps`),
    kept in the file's footer (:data:`~convbank.store.integrity.STRUCTURE_KEY`)."""

    structure: str


Facts = tuple[str, int, str, "Layout | MetaLayout | None"]
"""What the manifest records of a written file: its sha256, its size in bytes, the sha256
of its footer (a Parquet file's) or index (a record file's), and a record file's
:class:`Layout` or a unified table file's :class:`MetaLayout` (None for another)."""


def disk_full(root: Path, exc: OSError) -> DiskFullError | None:
    """The one-line error of a full disk while writing the bank (it says the old bank is
    kept); None for other OS errors (read-only, a file in the way), which stay themselves for
    the caller to name (the CLI turns them into a SetupError)."""
    if exc.errno not in (errno.ENOSPC, errno.EDQUOT) and "No space left" not in str(exc):
        return None
    where = exc.filename or root
    free = shutil.disk_usage(root).free if root.exists() else 0
    return DiskFullError(
        f"{where}: no space left on the device holding the bank ({counted(free, 'byte')} free); "
        "the previous bank is unchanged and the partial build was removed — free some space "
        "and build again",
        path=where,
        free=free,
    )


def _statistics(schema: pa.Schema) -> list[str]:
    """The columns whose row-group statistics are written: keys, labels and numbers that
    lookups and filters prune by, not free text (``text``, ``meta``) or nested values, whose
    minimum and maximum prune nothing and cost a pass over every value at write."""
    return [f.name for f in schema if not pa.types.is_nested(f.type) and f.name not in ("text", "meta")]


class Staging:
    """Parquet writers for one dataset/config being built; nothing is visible until commit."""

    def __init__(self, root: Path, dataset: str, config: str) -> None:
        self.root = root
        self.dataset = dataset
        self.config = config
        self._writers: dict[tuple[str, str, int], pq.ParquetWriter] = {}
        self._records: dict[tuple[str, int], RecordWriter] = {}
        self.rows: dict[tuple[str, str, int], int] = {}
        """Rows written, by (table, split, piece); the record files' as table ``records``."""
        self.facts: dict[tuple[str, str, int], Facts] = {}
        """The :data:`Facts` of pieces whose writer computed them (:meth:`describe`): the
        commit then trusts them instead of reading the files again."""
        self._structures: dict[tuple[str, str, int], Structure] = {}
        """The ``meta`` structure of each unified table piece written so far."""
        self.id_ranges: dict[tuple[str, int], list[str]] = {}
        """The id range of each finished record file, by (split, piece): its writer's."""

    def path(self, table: str, split: str, piece: int = 0) -> Path:
        """Where one piece of a table partition (or its record file) is staged."""
        suffix = "records" if table == RECORDS else "parquet"
        folder = self.root / table / partition(self.dataset, self.config, split)
        return folder / f"piece-{piece:06d}.{suffix}"

    def write_batch(self, split: str, tables: dict[str, pa.Table], piece: int = 0) -> None:
        """Write one mapped batch: each table's rows (one row group each, :meth:`write`) and
        the batch's conversations to the piece's record file
        (:class:`~convbank.store.records.RecordWriter`), in the same order."""
        for name, table in tables.items():
            self.write(name, split, table, piece)
        if "conversations" not in tables:
            return
        # a child table a mapper left out holds no rows: the record file still gets each
        # conversation (it must hold as many as the conversations file, row for row)
        schemas = table_schemas()
        unified = {t: tables[t] if t in tables else schemas[t].empty_table() for t in UNIFIED_TABLES}
        key = (split, piece)
        try:
            writer = self._records.get(key)
            if writer is None:
                path = self.path(RECORDS, split, piece)
                path.parent.mkdir(parents=True, exist_ok=True)
                writer = self._records[key] = RecordWriter(path)
                self.rows[(RECORDS, split, piece)] = 0
            writer.add(unified, dataset=self.dataset, config=self.config, split=split)
        except NotGroupedError:
            # two conversations of the batch share an id: the build refuses it once every
            # batch is written (naming both records), so the batch has no records to keep
            return
        except OSError as exc:
            full = disk_full(self.root, exc)
            if full is None:
                raise
            raise full from exc
        self.rows[(RECORDS, split, piece)] = writer.rows

    def write(self, table: str, split: str, data: pa.Table, piece: int = 0) -> None:
        """Append rows to one piece of ``table`` for ``split`` (one row group per call).
        Pieces (each written by one writer, possibly in another process on the same
        staging folder) are the split's files in order."""
        key = (table, split, piece)
        for field, column in zip(data.schema, data.columns, strict=True):
            if not field.nullable and column.null_count:  # the writer's traceback, said before it
                first = data.column(0)[pc.index(column.is_null(), True).as_py()].as_py()
                raise FormatError(
                    f"{self.dataset}/{self.config}/{split}: {column.null_count:,} {table} row(s) of no "
                    f"{field.name} (null), the first of conversation {first}, which the bank never "
                    "holds: a fault of the dataset's code",
                    record=first,
                )
        try:
            writer = self._writers.get(key)
            if writer is None:
                path = self.path(table, split, piece)
                path.parent.mkdir(parents=True, exist_ok=True)
                schema = data.schema.with_metadata(
                    {
                        **(data.schema.metadata or {}),
                        b"convbank.schema_version": SCHEMA_VERSION.encode(),
                        b"convbank.version": __version__.encode(),
                        b"convbank.table": table.encode(),
                    }
                )
                writer = pq.ParquetWriter(
                    path,
                    schema,
                    compression="zstd",
                    write_statistics=_statistics(schema),
                    write_page_checksum=True,  # readers check every page (VERIFY_PAGES)
                )
                self._writers[key] = writer
                self.rows[key] = 0
            writer.write_table(data.replace_schema_metadata(writer.schema.metadata))
        except OSError as exc:
            full = disk_full(self.root, exc)
            if full is None:
                raise
            raise full from exc
        self.rows[key] += data.num_rows
        if table in UNIFIED_TABLES and "meta" in data.column_names:
            # its distinct values, in the order first seen (as DuckDB's would see every value)
            seen = Structure.of(pc.unique(data.column("meta")).to_pylist())
            found = self._structures.get(key)
            self._structures[key] = seen if found is None else found.merged(seen)

    def conversation_id(self, split: str, record: int) -> str:
        """The id of a split's record ``record`` in what is staged (read back from the
        closed files)."""
        for key in sorted(k for k in self.rows if k[0] == "conversations" and k[1] == split):
            ids = pq.read_table(self.path(*key), columns=["conversation_id"]).column(0)
            if record < len(ids):
                return str(ids[record].as_py())
            record -= len(ids)
        raise IndexError(f"{split} has no staged record {record}")

    def adopt(
        self, rows: dict[tuple[str, str, int], int], facts: dict[tuple[str, str, int], Facts] | None = None
    ) -> None:
        """Count pieces written into this staging folder by another writer (a worker), with
        their :data:`Facts` when that writer gave them."""
        self.rows.update(rows)
        self.facts.update(facts or {})

    def describe(self) -> dict[tuple[str, str, int], Facts]:
        """The :data:`Facts` of every piece written here (call after :meth:`close`)::

        staging.close()
        facts = staging.describe()   # {("turns", "train", 3): (sha256, bytes, footer, None)}
        """
        return {key: file_facts(self.path(*key), key[0], self.id_ranges.get(key[1:])) for key in self.rows}

    def move_in(self, other: Staging, keys: list[tuple[str, str, int]]) -> None:
        """Move pieces written in another staging folder of the same dataset/config (one
        Spark task attempt's) to their places here, by renames (the same file system)."""
        for key in keys:
            target = self.path(*key)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(other.path(*key), target)
            self.id_ranges.pop(key[1:], None)  # another writer's file: its ids are read back

    def close(self) -> None:
        """Close every writer: files become complete Parquet files, flushed to disk."""
        writers, self._writers = self._writers, {}
        records, self._records = self._records, {}
        try:
            for key, writer in list(writers.items()):
                del writers[key]
                structure = self._structures.get(key)
                if structure is not None:
                    writer.add_key_value_metadata({STRUCTURE_KEY: structure.dumps()})
                _close(writer)
                fsync_file(self.path(*key))
            for (split, piece), record_writer in list(records.items()):
                del records[(split, piece)]
                record_writer.finish(*self._made_from(split, piece))
                self.id_ranges[(split, piece)] = record_writer.id_range
                fsync_file(self.path(RECORDS, split, piece))
        except OSError as exc:
            for writer in writers.values():  # those not closed yet
                with suppress(Exception):
                    _close(writer)
            for record_writer in records.values():
                record_writer.abandon()
            full = disk_full(self.root, exc)
            if full is None:
                raise
            raise full from exc

    def _made_from(self, split: str, piece: int) -> tuple[dict[str, str | None], list[int]]:
        """The footer digests of a piece's unified table files (written and closed), and the
        rows of each row group of its conversations file: what its record file records of
        them (:meth:`convbank.store.records.RecordWriter.finish`)."""
        digests: dict[str, str | None] = {}
        groups: list[int] = []
        for table in UNIFIED_TABLES:
            if (table, split, piece) not in self.rows:
                digests[table] = None
                continue
            meta, digests[table] = read_footer(self.path(table, split, piece))
            if table == "conversations":
                groups = row_groups(meta)
        return digests, groups

    def abandon(self) -> None:
        """Close every writer after a failure, ignoring their errors (a full disk makes
        ``close`` fail again)."""
        writers, self._writers = self._writers, {}
        for writer in writers.values():
            with suppress(Exception):
                _close(writer)
        records, self._records = self._records, {}
        for record_writer in records.values():
            record_writer.abandon()


def _close(writer: pq.ParquetWriter) -> None:
    """Close a writer; when that fails (a full disk), mark it closed all the same, or its
    finaliser would try again and print the error's traceback when it is collected."""
    try:
        writer.close()
    finally:
        writer.is_open = False


def file_facts(path: Path, table: str, id_range: list[str] | None = None) -> Facts:
    """A closed piece's :data:`Facts`, read from it (``table``: its table, or ``records``;
    ``id_range``: a record file's, as its writer knew it, else its ids are read back)::

    sha256, size, footer, layout = file_facts(staging.path("turns", "train"), "turns")
    """
    from convbank._atomic import sha256_file

    layout: Layout | MetaLayout | None = None
    if table == RECORDS:
        with path.open("rb") as f:
            index, footer = read_index(f)
        if index.groups is not None:
            layout = Layout(index.groups, index.id_range() if id_range is None else id_range)
    else:
        meta, footer = read_footer(path)
        structure = (meta.metadata or {}).get(STRUCTURE_KEY)
        if structure is not None:
            layout = MetaLayout(structure.decode())
    return sha256_file(path), path.stat().st_size, footer, layout


def fsync_file(path: Path) -> None:
    """Flush a written file to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
