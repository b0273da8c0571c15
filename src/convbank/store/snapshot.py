"""Reading one generation of the bank: :class:`Snapshot` pins it, :class:`FileRef` names
its files (see :mod:`convbank.store.bank` for the layout and the protocol)."""

from __future__ import annotations

import os
import stat
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, cast

from convbank._atomic import sha256_file
from convbank._forksafe import renew_after_fork
from convbank._lazy import lazy
from convbank._names import name_problem
from convbank._wording import counted
from convbank.errors import DamagedBankError, NotBuiltError, SchemaVersionError, SetupError
from convbank.model import Part
from convbank.model.schema import PARTITION_COLUMNS, SCHEMA_VERSION, table_schemas
from convbank.store._held import HeldFile
from convbank.store.integrity import (
    STRUCTURE_KEY,
    check_file_schema,
    count_problems,
    damaged,
    first_line,
    out_of_room,
    stat_problem,
    structure_problem,
)
from convbank.store.manifest import DatasetEntry, FileRef, Manifest, SplitEntry

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
else:
    pa = lazy("pyarrow")
    pq = lazy("pyarrow.parquet")
    pafs = lazy("pyarrow.fs")


if TYPE_CHECKING:
    import pyarrow.dataset as pds

    from convbank.store.records import Kept, RecordFile


class BankLike(Protocol):
    """What a snapshot needs of the bank it pins: where it is and where its manifest is (a
    :class:`~convbank.store.Bank`)."""

    @property
    def root(self) -> Path:
        """The bank's folder."""

    @property
    def manifest_path(self) -> Path:
        """The bank's manifest file."""


__all__ = ["FileRef", "Snapshot", "partition"]

VERIFY_PAGES = {"page_checksum_verification": True}
"""Every read checks each data page against the CRC-32 the build wrote beside it
(``write_page_checksum``): a flipped byte in a page is an error naming the file, never an
answer. Pages of files written without checksums are read unchecked."""


def partition(dataset: str, config: str, split: str | None = None) -> Path:
    """The Hive partition path of a dataset/config (and split): one folder each, never a
    path that leads elsewhere (a name :func:`name_problem` refuses is a ``ValueError``)."""
    for name in (dataset, config) if split is None else (dataset, config, split):
        problem = name_problem(name)
        if problem is not None:
            raise ValueError(f"{name!r} cannot name a partition of the bank: {problem}")
    path = Path(f"dataset={dataset}") / f"config={config}"
    return path / f"split={split}" if split is not None else path


class Snapshot:
    """One generation of the bank, pinned: its manifest and files stay as they are while the
    snapshot is open, whatever builds run meanwhile. Safe to share between threads; close it
    (or use it as a context manager) to let a later build reclaim its files."""

    def __init__(self, bank: BankLike, manifest: Manifest, lease: int | None) -> None:
        self.bank = bank
        self.manifest = manifest
        self.generation: str | None = manifest.generation
        self._refs = manifest.refs(bank.root)
        self._records = manifest.record_refs(bank.root)
        self._close = weakref.finalize(self, release, lease)
        self._damage: dict[str, DamagedBankError] = {}
        self._held: list[HeldFile] = []
        """The files :meth:`arrow_datasets` holds open for a caller that keeps none itself."""
        self._lock = threading.Lock()
        renew_after_fork(self, _lock=threading.Lock)

    def close(self) -> None:
        """Release the pin (idempotent)."""
        self._close()

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ what is built
    def built(self) -> dict[str, DatasetEntry]:
        """Built datasets with their manifest entries."""
        return self.manifest.datasets

    def split_info(self, dataset: str, config: str, split: str) -> SplitEntry:
        """The manifest entry of one split, or :class:`NotBuiltError`."""
        info = self.manifest.split(dataset, Part(config, split))
        if info is None:
            raise NotBuiltError(
                f"{dataset}/{config}/{split} is not in the bank at {self.bank.root}; "
                f"run `convbank build {dataset}` first",
                dataset=dataset,
                config=config,
                split=split,
            )
        return info

    def refs(self, table: str | None = None, dataset: str | None = None) -> list[FileRef]:
        """The files of this generation (of one table, of one dataset), in manifest order."""
        return [
            r
            for r in self._refs
            if (table is None or r.table == table) and (dataset is None or r.dataset == dataset)
        ]

    def tables(self) -> list[str]:
        """Names of the tables with at least one file, sorted."""
        return sorted({r.table for r in self._refs})

    def pieces(self, table: str, dataset: str, config: str, split: str) -> list[FileRef]:
        """The files of one table partition, in order (one, unless the split was written
        in pieces), or :class:`NotBuiltError`."""
        found = sorted(
            (
                r
                for r in self._refs
                if (r.table, r.dataset, r.config, r.split) == (table, dataset, config, split)
            ),
            key=lambda r: r.piece,
        )
        if not found:
            raise NotBuiltError(
                f"{table} has no {dataset}/{config}/{split} in the bank at {self.bank.root}; "
                f"run `convbank build {dataset}` first",
                dataset=dataset,
                config=config,
                split=split,
            )
        return found

    def record_refs(self, dataset: str | None = None) -> list[FileRef]:
        """The record files of this generation (of one dataset), in manifest order."""
        return [r for r in self._records if dataset is None or r.dataset == dataset]

    def record_pieces(self, dataset: str, config: str, split: str) -> list[FileRef]:
        """The record files of one split, in piece order (none in a bank written before
        them: :mod:`convbank.store.records`)."""
        found = [r for r in self._records if (r.dataset, r.config, r.split) == (dataset, config, split)]
        return sorted(found, key=lambda r: r.piece)

    def open_records(self, ref: FileRef, kept: Kept | None = None) -> RecordFile:
        """A record file open for reading, checked through the descriptor it keeps: a
        regular file of the manifest's size whose index has the manifest's sha256 and row
        count (each entry is checked against the index as it is read), the entries it
        checked kept in ``kept`` (by default its own). Close it when done."""
        from convbank.store.records import RecordFile, read_index

        try:
            fd = os.open(ref.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise self.unreadable(ref, exc) from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise DamagedBankError(damaged(ref, "not a regular file"), path=ref.path)
            if ref.bytes is not None and st.st_size != ref.bytes:
                raise DamagedBankError(
                    damaged(ref, f"{counted(st.st_size, 'byte')} where the manifest says {ref.bytes:,}"),
                    path=ref.path,
                )
            with os.fdopen(os.dup(fd), "rb") as f:
                try:
                    index, digest = read_index(f)
                except (OSError, ValueError) as exc:
                    problem = f"unreadable ({first_line(exc)})"
                    raise DamagedBankError(damaged(ref, problem), path=ref.path) from exc
            if digest != ref.footer:
                raise DamagedBankError(
                    damaged(ref, "corrupt (its index differs from the manifest's)"), path=ref.path
                )
            if ref.rows is not None and index.rows != ref.rows:
                raise DamagedBankError(
                    damaged(ref, f"of {counted(index.rows, 'row')} where the manifest says {ref.rows:,}"),
                    path=ref.path,
                )
        except BaseException:
            os.close(fd)
            raise

        def damage(problem: str) -> DamagedBankError:
            return DamagedBankError(damaged(ref, problem), path=ref.path)

        return RecordFile(fd, index, damage, kept)

    def ref(self, table: str, dataset: str, config: str, split: str) -> FileRef:
        """The first file of one table partition (its only one, unless the split was
        written in pieces: see :meth:`pieces`)."""
        return self.pieces(table, dataset, config, split)[0]

    # ------------------------------------------------------------------ integrity
    def check(self, dataset: str | None = None) -> None:
        """Raise :class:`DamagedBankError` naming the first file (of ``dataset``, or of the
        whole bank) that is missing or whose size differs from the manifest's: cheap (one
        ``stat`` a file), run by every reader before it reads."""
        self.check_schema(dataset)
        for ref in self.refs(dataset=dataset) + self.record_refs(dataset):
            problem = stat_problem(ref)
            if problem:  # a file of a cleaned generation is gone, not damaged (as in present())
                raise self.gone(ref) or DamagedBankError(damaged(ref, problem), path=ref.path)
        for _, problem in count_problems(self.manifest, dataset):
            raise DamagedBankError(
                f"the bank is damaged: {self.bank.manifest_path} {problem}; run `convbank doctor` "
                "to check every file, then rebuild that dataset",
                path=self.bank.manifest_path,
            )

    def check_schema(self, dataset: str | None = None) -> None:
        """Raise :class:`SchemaVersionError` if ``dataset`` (or any dataset of the bank) was
        built with another unified schema than this convbank's, as its manifest says (each
        file's own record is checked when its footer is read:
        :func:`~convbank.store.integrity.checked_footer`)."""
        for name in [dataset] if dataset is not None else list(self.manifest.datasets):
            entry = self.manifest.dataset(name)
            version = self.manifest.schema_of(name)
            if entry is not None and version not in (None, SCHEMA_VERSION):
                raise SchemaVersionError.of(
                    str(self.bank.manifest_path), name, entry.built_by, version, SCHEMA_VERSION
                )

    def locate_damage(self, table: str | None = None) -> FileRef | None:
        """The first file (of ``table``) whose bytes differ from the manifest's sha256, or
        that cannot be read: called when a scan failed, to name the file (reads every file;
        None when all are sound)."""
        for ref in self.refs(table):
            if stat_problem(ref) or (ref.sha256 and sha256_file(ref.path) != ref.sha256):
                return ref
        return None

    # ------------------------------------------------------------------ reading files
    def metadata(self, ref: FileRef) -> pq.FileMetaData:
        """The Parquet footer of a file, checked against the manifest's sha256 of it and its
        row count (see :func:`~convbank.store.integrity.checked_footer`): read again whenever
        the file is not the one checked before (another inode, size, mtime or ctime), so a
        file replaced under a long-lived reader is checked, never served on the strength of
        its predecessor."""
        with self.opened(ref) as (_, meta):
            return meta

    @contextmanager
    def opened(self, ref: FileRef) -> Iterator[tuple[BinaryIO, pq.FileMetaData]]:
        """The file open for reading and its footer, checked through that open file: what
        is read from it is the file that was checked, whatever replaces its path meanwhile
        (a :class:`~convbank.store._held.HeldFile`: a write to it has its footer checked
        again before the next read). A file that is not a regular file (a FIFO, a folder)
        is damage, never waited on."""
        held = self.hold(ref)
        try:
            yield cast("BinaryIO", held), held.meta
        finally:
            held.release()

    def hold(self, ref: FileRef) -> HeldFile:
        """The file open for reading, its footer checked through the descriptor held (see
        :meth:`opened`); its descriptor is closed by ``release()`` or once unreferenced."""
        try:
            fd = os.open(ref.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise self.unreadable(ref, exc) from exc
        try:
            return HeldFile(fd, ref, self._saw)  # which closes fd if it raises
        except DamagedBankError as exc:
            gone = self.gone(ref)
            if gone is not None:
                raise gone from exc
            raise

    def _saw(self, damage: DamagedBankError) -> None:
        with self._lock:
            self._damage[str(damage)] = damage

    def damage_in(self, message: str) -> DamagedBankError | None:
        """The damage a held file of this snapshot found while a scan read it, if ``message``
        (a failed scan's) says it: a file written in place under a query is named."""
        with self._lock:
            found = [d for text, d in self._damage.items() if text in message]
        return found[0] if found else None

    def gone(self, ref: FileRef) -> NotBuiltError | None:
        """The error to raise for a missing file of a generation that the bank has cleaned
        (it was released, by :meth:`close` or the last corpus over it going away, and a
        later build's clean-up removed it): not damage, but a generation no longer there.
        None when the file is there or its generation still is (then it is damage)."""
        if ref.path.exists() or self.generation in (None, "legacy"):
            return None
        if (self.bank.root / ".generations" / f"{self.generation}.json").exists():
            return None
        return NotBuiltError(
            f"generation {self.generation} of the bank at {self.bank.root} is gone (cleaned after "
            f"it was released); load {ref.dataset} again",
            dataset=ref.dataset,
        )

    def unreadable(self, ref: FileRef, exc: BaseException) -> NotBuiltError | DamagedBankError | SetupError:
        """The one-line error of a file that cannot be opened or read: the process out of
        room to open it (:func:`~convbank.store.integrity.out_of_room`), its generation gone
        (:meth:`gone`), or the file damaged."""
        return (
            out_of_room(ref, exc)
            or self.gone(ref)
            or DamagedBankError(damaged(ref, f"unreadable ({first_line(exc)})"), path=ref.path)
        )

    def present(self, refs: list[FileRef]) -> None:
        """Raise the one-line error of the first of these files that is missing or of
        another size (:meth:`gone` for a cleaned generation): one ``stat`` a file."""
        for ref in refs:
            problem = stat_problem(ref)
            if problem:
                raise self.gone(ref) or DamagedBankError(damaged(ref, problem), path=ref.path)

    def read_verified(self, ref: FileRef, columns: list[str] | None = None) -> pa.Table:
        """A whole file as a table, decoded from bytes read once and checked first against
        the manifest (their size and sha256, so a flipped byte anywhere or a valid file of
        another split is refused before anything is decoded), then page by page: what
        :meth:`convbank.Corpus.scan` serves where it types ``meta``. Hashing CaSiNo's turns
        (470 kB) costs about 0.5 ms against 11 ms to read and decode them (measured here)."""
        if not ref.sha256:  # a manifest without file digests: the footer and pages are checked
            return self.read_table(ref, columns=columns)
        data = self.verified_bytes(ref)
        try:
            reader = pq.ParquetFile(pa.BufferReader(data), **VERIFY_PAGES)
            table = reader.read(columns=columns, use_threads=True)
        except (OSError, pa.ArrowException) as exc:
            raise DamagedBankError(damaged(ref, f"unreadable ({first_line(exc)})"), path=ref.path) from exc
        if columns is None:
            check_file_schema(ref, table.schema)
        problem = structure_problem(ref, (reader.metadata.metadata or {}).get(STRUCTURE_KEY))
        if problem is not None:
            raise DamagedBankError(damaged(ref, problem), path=ref.path)
        return table

    def verified_bytes(self, ref: FileRef) -> bytes:
        """A whole file's bytes, read once and checked against the manifest's size and
        sha256: whatever decodes them decodes what the build wrote (a ``ValueError`` for a
        file the manifest records no sha256 of: see :meth:`read_verified`).

        >>> from convbank.store import Bank
        >>> with Bank().snapshot() as snapshot:
        ...     ref = snapshot.refs("turns", "casino")[0]
        ...     len(snapshot.verified_bytes(ref)) == ref.bytes
        True
        """
        if not ref.sha256:
            raise ValueError(f"the manifest records no sha256 of {ref.path}")
        try:  # without blocking: a FIFO put in its place since is refused, never waited on
            fd = os.open(ref.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise self.unreadable(ref, exc) from exc
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise DamagedBankError(damaged(ref, "not a regular file"), path=ref.path)
            if ref.bytes is not None and st.st_size != ref.bytes:
                problem = f"{counted(st.st_size, 'byte')} where the manifest says {ref.bytes:,}"
                raise DamagedBankError(damaged(ref, problem), path=ref.path)
            try:  # one byte more than the manifest's size: a file growing is told, not cut
                data = f.read() if ref.bytes is None else f.read(ref.bytes + 1)
            except OSError as exc:
                raise self.unreadable(ref, exc) from exc
        if ref.bytes is not None and len(data) != ref.bytes:
            raise DamagedBankError(
                damaged(ref, f"{counted(len(data), 'byte')} where the manifest says {ref.bytes:,}"),
                path=ref.path,
            )
        import hashlib  # here, not at the top: the commands that only print never hash

        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise DamagedBankError(
                damaged(ref, "corrupt (its sha256 differs from the manifest's)"), path=ref.path
            )
        return data

    def read_row_group(self, ref: FileRef, index: int, columns: list[str] | None = None) -> pa.Table:
        """One row group of a file, decoded on the calling thread: a row group is one batch
        (at most 2,000 conversations), and Arrow's thread pool made a cold open + get slower
        and erratic (PEC: 21-78 ms against 19-21 ms) with no gain in iteration or take."""
        with self.opened(ref) as (f, meta):
            try:
                reader = pq.ParquetFile(f, metadata=meta, **VERIFY_PAGES)
                return reader.read_row_group(index, columns=columns, use_threads=False)
            except (OSError, pa.ArrowException) as exc:
                raise self.unreadable(ref, exc) from exc

    def arrow_datasets(self, held: list[HeldFile] | None = None) -> dict[str, pds.Dataset]:
        """One Arrow dataset per table over this generation's files, with the partition
        columns ``dataset``, ``config`` and ``split`` first: new at each call (a connection's
        own), over files opened and checked now (:meth:`hold`: a file replaced since the
        last call is refused before a query reads it) and read through the descriptors
        checked (:meth:`~convbank.store._held.HeldFile.path`), so that a file renamed into a
        path while a query runs is never read. The held files are appended to ``held``,
        which must outlive the datasets (their descriptors close with them); whoever reads
        calls :meth:`~convbank.store._held.HeldFile.verify` on each before giving an answer,
        so that one written in place is checked again (by default the snapshot keeps them
        for its life). Scans check every page they read."""
        import pyarrow.dataset as pds  # imported here: it imports pandas (about 0.5 s)

        if held is None:
            held = self._held

        keys = [pa.field(c, pa.string()) for c in PARTITION_COLUMNS]
        parquet = pds.ParquetFileFormat(
            default_fragment_scan_options=pds.ParquetFragmentScanOptions(**VERIFY_PAGES)
        )
        made = {}
        for table in self.tables():
            refs = self.refs(table)
            files = [self.hold(r) for r in refs]
            held.extend(files)
            schema = table_schemas().get(table) or files[0].meta.schema.to_arrow_schema()
            local = pafs.LocalFileSystem()
            fragments = [
                parquet.make_fragment(
                    h.path() or h,
                    filesystem=local,
                    partition_expression=(pds.field("dataset") == r.dataset)
                    & (pds.field("config") == r.config)
                    & (pds.field("split") == r.split),
                )
                for h, r in zip(files, refs, strict=True)
            ]
            made[table] = pds.FileSystemDataset(
                fragments,
                schema=pa.schema([*keys, *schema.remove_metadata()]),
                format=parquet,
                filesystem=pafs.LocalFileSystem(),
            )
        return made

    def read_table(self, ref: FileRef, **options: Any) -> pa.Table:
        """A whole file as a table (``options`` go to :func:`pyarrow.parquet.read_table`),
        its footer and pages checked, read from the file that was checked (:meth:`opened`)."""
        with self.opened(ref) as (f, _):
            held = cast("HeldFile", f)
            try:
                table = pq.read_table(held.path() or f, **VERIFY_PAGES, **options)
            except (OSError, pa.ArrowException) as exc:
                raise self.unreadable(ref, exc) from exc
            held.verify()
            return table


def release(lease: int | None) -> None:
    """Close a generation lease (None: nothing to close)."""
    if lease is not None:
        with suppress(OSError):
            os.close(lease)
