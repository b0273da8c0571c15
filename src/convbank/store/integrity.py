"""Checking the bank's files against its manifest, without a :class:`~convbank.store.Snapshot`:
a file's ``stat`` (:func:`stat_problem`), its Parquet footer (:func:`checked_footer`: the
manifest's sha256 of it, its rows, the unified schema it was written with), the manifest's
counts against its files' rows (:func:`count_problems`), and the one-line message of a
damaged file (:func:`damaged`). What :mod:`convbank.store.snapshot` runs before it reads,
and :mod:`convbank.store.checkup` when it checks a whole bank.

Example::

    problem = stat_problem(ref)          # None, "missing", or "12 bytes where ..."
    if problem:
        raise DamagedBankError(damaged(ref, problem), path=ref.path)
"""

from __future__ import annotations

import errno
import os
import resource  # here: importing it once no file can be opened would fail
import stat
import struct
import sys
import threading
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from convbank._forksafe import renew_after_fork
from convbank._lazy import lazy
from convbank._wording import article, counted
from convbank.errors import DamagedBankError, SchemaVersionError, SetupError
from convbank.model import schema as unified
from convbank.model.schema import SCHEMA_VERSION
from convbank.store.manifest import RECORDS, ConfigEntry, FileRef, Manifest, SplitEntry, pieces

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    pa = lazy("pyarrow")
    pq = lazy("pyarrow.parquet")

__all__ = [
    "COUNTED",
    "STRUCTURE_KEY",
    "check_file_schema",
    "checked_footer",
    "count_problems",
    "damaged",
    "first_line",
    "footer_bytes",
    "read_footer",
    "row_groups",
    "stat_problem",
    "structure_problem",
]


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


_CHECKED: dict[tuple[object, ...], pq.FileMetaData] = {}
"""Footers checked in this process, by file and its state (device, inode, size, mtime and
ctime: a write to the file changes its ctime, so a file written since is checked again)."""
_CHECKED_LOCK = threading.Lock()
renew_after_fork(sys.modules[__name__], _CHECKED_LOCK=threading.Lock)


def checked_footer(ref: FileRef, f: BinaryIO) -> pq.FileMetaData:
    """A file's footer, checked against the manifest (its sha256 and rows) the first time
    this process opens the file as it is now: a new connection over the bank costs one
    ``stat`` a file, not a read (the Arrow datasets of 25 files: 1.7 ms against 11.8 ms,
    fastest of 30, measured here)."""
    try:
        st = os.fstat(f.fileno())
    except OSError as exc:
        raise DamagedBankError(damaged(ref, f"unreadable ({first_line(exc)})"), path=ref.path) from exc
    if not stat.S_ISREG(st.st_mode):
        raise DamagedBankError(damaged(ref, "not a regular file"), path=ref.path)
    key = (
        str(ref.path),
        ref.footer,
        ref.rows,
        ref.structure,
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
    )
    with _CHECKED_LOCK:
        known = _CHECKED.get(key)
    if known is not None:
        return known
    try:
        meta, sha = read_footer(f)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise DamagedBankError(damaged(ref, f"unreadable ({first_line(exc)})"), path=ref.path) from exc
    if ref.footer is not None and sha != ref.footer:
        raise DamagedBankError(
            damaged(ref, "corrupt (its Parquet footer differs from the manifest's)"), path=ref.path
        )
    if ref.rows is not None and meta.num_rows != ref.rows:
        raise DamagedBankError(
            damaged(ref, f"of {counted(meta.num_rows, 'row')} where the manifest says {ref.rows:,}"),
            path=ref.path,
        )
    check_file_schema(ref, meta.schema.to_arrow_schema())
    problem = structure_problem(ref, (meta.metadata or {}).get(STRUCTURE_KEY))
    if problem is not None:
        raise DamagedBankError(damaged(ref, problem), path=ref.path)
    with _CHECKED_LOCK:
        if len(_CHECKED) >= 10_000:
            _CHECKED.clear()
        _CHECKED[key] = meta
    return meta


STRUCTURE_KEY = b"convbank.meta_structure"
"""The key of a unified table file's footer metadata that holds the structure of its ``meta``
column (:class:`convbank.model.structure.Structure`), which the manifest repeats."""


def structure_problem(ref: FileRef, held: bytes | None) -> str | None:
    """What is wrong with the ``meta`` structure the manifest records of a file, against the
    one its footer holds (``held``), or None: readers type ``meta`` with the manifest's, so a
    misstated one is damage, never a column typed otherwise."""
    if ref.structure is None or (held is not None and held.decode(errors="replace") == ref.structure):
        return None
    return "corrupt (its meta structure differs from the manifest's)"


def check_file_schema(ref: FileRef, schema: pa.Schema) -> None:
    """Raise :class:`SchemaVersionError` if a unified table's file was written with another
    schema version than this convbank's (as its metadata says) or lacks one of its columns."""
    if ref.table not in unified.SCHEMA.tables:
        return
    meta = schema.metadata or {}
    version = meta.get(b"convbank.schema_version", b"").decode() or None
    built_by = meta.get(b"convbank.version", b"").decode() or None
    problem = unified.SCHEMA.problem(ref.table, schema)
    if problem is not None or version not in (None, SCHEMA_VERSION):
        raise SchemaVersionError.of(
            str(ref.path), ref.dataset, built_by, version, SCHEMA_VERSION, problem=problem
        )


def row_groups(meta: pq.FileMetaData) -> list[int]:
    """The rows of each row group of a Parquet file, from its footer (what a record file
    and the manifest's record entry hold of its conversations file)."""
    return [meta.row_group(rg).num_rows for rg in range(meta.num_row_groups)]


def read_footer(path: Path | BinaryIO) -> tuple[pq.FileMetaData, str]:
    """A Parquet file's footer, parsed, and the sha256 of its bytes (the footer and the
    8 bytes after it), from its path or an open file. A ``ValueError`` when the file does
    not end like a Parquet file."""
    with path.open("rb") if isinstance(path, Path) else nullcontext(path) as f:
        held = footer_bytes(f)
    import hashlib  # here, not at the top: the commands that only print never hash

    return pq.read_metadata(pa.BufferReader(b"PAR1" + held)), hashlib.sha256(held).hexdigest()


def footer_bytes(f: BinaryIO) -> bytes:
    """A Parquet file's footer and the 8 bytes after it (what the manifest's ``footer`` is the
    sha256 of), from an open file; ``b"PAR1"`` before them reads as a Parquet file's metadata.
    A ``ValueError`` when the file does not end like a Parquet file."""
    size = f.seek(0, os.SEEK_END)
    if size < 12:
        raise ValueError(f"{counted(size, 'byte')}, too short for a Parquet file")
    f.seek(size - 8)
    tail = f.read(8)
    (length,) = struct.unpack("<I", tail[:4])
    if tail[4:] != b"PAR1" or length > size - 12:
        raise ValueError("not a Parquet file (no footer at its end)")
    f.seek(size - 8 - length)
    footer = f.read(length)
    if len(footer) != length or len(tail) != 8:
        raise ValueError("cut short while its footer was read")
    return footer + tail


COUNTED = ("conversations", "participants", "turns", "annotations")
"""The tables whose rows a split's manifest entry counts (in the field of the same name)."""


def count_problems(
    manifest: Manifest, dataset: str | None = None, footers: dict[str, int] | None = None
) -> list[tuple[str, str]]:
    """Where a split's counts in the manifest differ from the rows of its files, as (dataset,
    what): the rows the manifest records for each file, or those of ``footers`` (rows by the
    file's path in the manifest, as read from its Parquet footer); a split listed without a
    file of a counted table, or a counted table's or record file of a split not listed, is
    such a difference too. No I/O."""
    found = []
    for name, entry in manifest.datasets.items():
        if dataset is not None and name != dataset:
            continue
        for config, cfg in entry.configs.items():
            where = f"{name}/{config}"
            # a dataset's own tables may hold splits of their own (curiosity_facts' "all")
            counted = [(t, cfg.files[t]) for t in COUNTED if t in cfg.files]
            for table, by_split in (*counted, (RECORDS, cfg.records)):
                found += [
                    (name, f"names {article(table)} file of {where}/{s}, a split it does not list")
                    for s in by_split
                    if s not in cfg.splits
                ]
            for split, info in cfg.splits.items():
                found += [
                    (name, p) for p in _split_count_problems(f"{where}/{split}", split, info, cfg, footers)
                ]
    return found


def _split_count_problems(
    where: str, split: str, info: SplitEntry, cfg: ConfigEntry, footers: dict[str, int] | None
) -> list[str]:
    """Where the counts of one split (``where``: dataset/config/split) differ from its files'."""
    found = []
    for table in (*COUNTED, RECORDS):
        files = (cfg.records if table == RECORDS else cfg.files.get(table, {})).get(split)
        said: int = getattr(info, "conversations" if table == RECORDS else table)
        if files is None:
            if table != RECORDS:  # banks written before record files have none
                found.append(f"says {where} has {said:,} {table} where it names no {table} file")
            continue
        held = [f.rows if footers is None else footers.get(f.path) for f in pieces(files)]
        counts = [n for n in held if n is not None]
        if len(counts) == len(held) and sum(counts) != said:
            kind = "conversations" if table == RECORDS else table
            record = "record " if table == RECORDS else ""
            found.append(f"says {where} has {said:,} {kind} where its {record}files hold {sum(counts):,}")
    return found


FOLDER_IN_PLACE = "a folder where the bank keeps a file (convbank removes only files it wrote: move it away)"
"""What a folder in the place of a bank file is said to be, by ``doctor`` and by the build
that would put the file back."""


def stat_problem(ref: FileRef) -> str | None:
    """What is wrong with a file by a ``stat``: missing, unreadable, or of another size."""
    try:
        st = ref.path.stat()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if stat.S_ISDIR(st.st_mode):
        return FOLDER_IN_PLACE
    size = st.st_size
    if ref.bytes is not None and size != ref.bytes:
        return f"{counted(size, 'byte')} where the manifest says {ref.bytes:,}"
    return None


def damaged(ref: FileRef, problem: str) -> str:
    """The one-line message of a damaged file."""
    return (
        f"the bank is damaged: {ref.path} is {problem}; run `convbank doctor` to check every "
        f"file, then `convbank build {ref.dataset}` to rebuild it"
    )


def out_of_room(ref: FileRef, exc: BaseException) -> SetupError | None:
    """The one-line error of a bank file that could not be opened for want of what the
    process or the system may hold (too many files open, no memory left): no damage of the
    bank, which ``doctor`` and a rebuild would not mend; ``None`` for any other failure."""
    code = exc.errno if isinstance(exc, OSError) else None
    if code == errno.EMFILE:
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        why = f"this process may open no more files (its limit is {limit:,}: ulimit -n)"
    elif code == errno.ENFILE:
        why = "the system may open no more files"
    elif code == errno.ENOMEM:
        why = "no memory is left to open it"
    else:
        return None
    return SetupError(
        f"{ref.path} could not be opened: {why}; the bank is not damaged: raise the limit, or read fewer "
        "datasets at once, and run the command again",
        path=ref.path,
    )
