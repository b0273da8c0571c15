"""The bank's manifest, typed: what is built, and the exact file of every table partition.

``manifest.json`` (and each generation's record under ``.generations/``) is read into a
:class:`Manifest` and checked before anything uses it (:func:`parse_manifest`); readers and
writers then use its structs, never ``.get()`` chains::

    Manifest
      datasets: {name: DatasetEntry}
        configs: {config: ConfigEntry}
          splits:  {split: SplitEntry}           counts, published count, file-level source content
          sources: {file name: path}             where the build read its source files
          files:   {table: {split: FileEntry or [FileEntry, ...]}}
                                                 path (relative to the bank), bytes, sha256, rows,
                                                 footer (sha256 of the Parquet footer),
                                                 structure (a unified table's meta structure);
                                                 a split written in pieces has one file a piece
          records: {split: FileEntry or [FileEntry, ...]}
                                                 the record files (:mod:`convbank.store.records`),
                                                 one a piece of ``conversations``; footer: the
                                                 sha256 of the index (absent in banks written
                                                 before them: readers then read the tables)

A (config, split) pair is a :class:`convbank.model.Part` everywhere.
"""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec

from convbank._atomic import read_regular
from convbank._names import name_problem
from convbank.datasets._imported import ImportEntry
from convbank.errors import DamagedBankError
from convbank.model import Part

__all__ = [
    "GENERATION",
    "MANIFEST_LIMIT",
    "RECORDS",
    "ConfigEntry",
    "DatasetEntry",
    "FileEntry",
    "FileRef",
    "Manifest",
    "SplitEntry",
    "parse_manifest",
    "pieces",
    "read_manifest",
]

MANIFEST_LIMIT = 256 << 20
"""The most bytes of a manifest or a generation record (a regular file: a FIFO, a device or a
larger file in its place is a damaged bank, never waited on or read without end)."""

GENERATION = re.compile(r"\d{20}-[0-9a-f]{8}")
"""The name of a generation: nanoseconds since the epoch, then 8 random hex digits."""

_FILE_NAME = re.compile(r"part-(?:[0-9a-f]{16}|0)\.parquet")
_RECORD_NAME = re.compile(r"part-[0-9a-f]{16}\.records")
RECORDS = "records"
"""The folder of the record files, and the ``table`` of their :class:`FileRef`."""


Digest = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]
"""A sha256 as the bank writes it (``hexdigest()``): a reader turns it into bytes (before: a
footer of ``"x"`` in the manifest was ``bytes.fromhex``'s ``ValueError`` traceback in
``show``, exit 1, where any other misstated field is a damaged manifest)."""


class FileEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One table partition's file: its path relative to the bank, size, sha256, rows and the
    sha256 of its Parquet footer (checked each time a reader opens the file; None in banks
    written before it was recorded); a record file's: the sha256 of its index, the rows of
    each row group of its conversations file (``groups``: a corpus is then opened without
    reading a footer) and its least and greatest conversation id (``id_range``: where an id
    is looked for first); a unified table file's: the structure of its ``meta`` column
    (``structure``, :meth:`convbank.model.structure.Structure.dumps`, as its footer holds it:
    readers type ``meta`` without reading the column); None in banks written before they
    were recorded."""

    path: str
    bytes: int | None = None
    sha256: Digest | None = None
    rows: int | None = None
    footer: Digest | None = None
    groups: list[int] | None = None
    id_range: list[str] | None = None
    structure: str | None = None


class SplitEntry(msgspec.Struct, kw_only=True):
    """What a build wrote for one split: row counts, the published number of conversations
    (None where the publisher gives none) and file-level source content (kept for the source
    export; the dataset's own business)."""

    conversations: int
    participants: int = 0
    turns: int = 0
    annotations: int = 0
    expected: int | None = None
    file_meta: dict[str, Any] = {}


class ConfigEntry(msgspec.Struct, kw_only=True):
    """One built config: its splits, its source files, its table files and its record files
    (by split)."""

    splits: dict[str, SplitEntry] = {}
    sources: dict[str, str] = {}
    files: dict[str, dict[str, FileEntry | list[FileEntry]]] = {}
    records: dict[str, FileEntry | list[FileEntry]] = {}


class DatasetEntry(msgspec.Struct, kw_only=True):
    """One built dataset: its configs, when it was last built, and by which convbank with
    which unified schema (None in banks written before they were recorded: the manifest's
    ``schema_version`` then stands for every dataset); an imported one, what it was imported
    from."""

    configs: dict[str, ConfigEntry] = {}
    built_at: str | None = None
    built_by: str | None = None
    schema_version: str | None = None
    imported: ImportEntry | None = None
    """For a corpus imported with ``convbank import``: its card, files and options (None for
    a catalogued dataset)."""

    def parts(self) -> list[Part]:
        """The built (config, split) parts, in build order."""
        return [Part(c, s) for c, cfg in self.configs.items() for s in cfg.splits]

    def split(self, part: Part) -> SplitEntry | None:
        """The entry of one part, None when it is not built."""
        cfg = self.configs.get(part.config)
        return None if cfg is None else cfg.splits.get(part.split)


class Manifest(msgspec.Struct, kw_only=True):
    """One generation of the bank (``layout`` None: a bank written before generations)."""

    datasets: dict[str, DatasetEntry]
    layout: int | None = None
    schema_version: str | None = None
    generation: str | None = None

    def schema_of(self, name: str) -> str | None:
        """The unified schema version a built dataset was written with (its own record, else
        the manifest's)."""
        entry = self.datasets.get(name)
        own = entry.schema_version if entry is not None else None
        return own if own is not None else self.schema_version

    def dataset(self, name: str) -> DatasetEntry | None:
        """A built dataset's entry, None when it is not built."""
        return self.datasets.get(name)

    def configs(self, name: str) -> list[str]:
        """The built configs of a dataset (none when it is not built)."""
        entry = self.datasets.get(name)
        return list(entry.configs) if entry else []

    def split(self, dataset: str, part: Part) -> SplitEntry | None:
        """The entry of one built part of a dataset, None when it is not built."""
        entry = self.datasets.get(dataset)
        return None if entry is None else entry.split(part)

    def refs(self, root: Path) -> list[FileRef]:
        """Every table file this manifest names, under the bank folder ``root``."""
        return self._refs(root, lambda cfg: cfg.files)

    def record_refs(self, root: Path) -> list[FileRef]:
        """Every record file this manifest names (table :data:`RECORDS`), under ``root``."""
        return self._refs(root, lambda cfg: {RECORDS: cfg.records})

    def _refs(self, root: Path, tables: Callable[[ConfigEntry], Mapping[str, Pieces]]) -> list[FileRef]:
        """The files of the tables ``tables`` gives of each config, under ``root``."""
        return [
            FileRef(
                table,
                dataset,
                config,
                split,
                root / f.path,
                f.bytes,
                f.sha256,
                f.rows,
                piece,
                f.footer,
                None if f.groups is None else tuple(f.groups),
                None if f.id_range is None else tuple(f.id_range),
                f.structure,
            )
            for dataset, entry in self.datasets.items()
            for config, cfg in entry.configs.items()
            for table, splits in tables(cfg).items()
            for split, files in splits.items()
            for piece, f in enumerate(pieces(files))
        ]

    def all_refs(self, root: Path) -> list[FileRef]:
        """Every file this manifest names: table files, then record files."""
        return self.refs(root) + self.record_refs(root)

    def to_json(self) -> str:
        """The manifest as written to disk: indented JSON, keys sorted, and read back as
        :meth:`Bank.manifest` reads it: one it would refuse (a plugin's ``file_meta`` that is a
        list, a published count of ``True``, JSON nested past what a reader takes) is a
        ``ValueError`` saying why, never written to damage the whole bank."""
        text = json.dumps(msgspec.to_builtins(self), indent=2, sort_keys=True)
        try:
            parse_manifest(json.loads(text))
        except (ValueError, RecursionError) as exc:
            why = (str(exc) or type(exc).__name__).splitlines()[0]
            raise ValueError(f"the manifest to write would not be read back: {why}") from None
        return text


@dataclass(frozen=True)
class FileRef:
    """One table partition's file in a generation."""

    table: str
    dataset: str
    config: str
    split: str
    path: Path
    bytes: int | None
    sha256: str | None
    rows: int | None
    piece: int = 0
    """The file's place among the pieces of its split (0 when the split is one file)."""
    footer: str | None = None
    """The sha256 of the file's Parquet footer (None: not recorded)."""
    groups: tuple[int, ...] | None = None
    """A record file's row groups (see :class:`FileEntry`)."""
    id_range: tuple[str, ...] | None = None
    """A record file's least and greatest conversation id (see :class:`FileEntry`)."""
    structure: str | None = None
    """A unified table file's ``meta`` structure (see :class:`FileEntry`)."""


Pieces = Mapping[str, "FileEntry | list[FileEntry]"]
"""The files of one table by split."""


def pieces(files: FileEntry | list[FileEntry]) -> list[FileEntry]:
    """The files of one split, in order (a split written in one piece has one)."""
    return files if isinstance(files, list) else [files]


def read_manifest(path: Path) -> Manifest | None:
    """A manifest or a generation record read and checked (:func:`parse_manifest`), its
    damage a :class:`DamagedBankError` naming it; ``None`` where there is none. A file in
    place of a folder above it is the caller's to say (``NotADirectoryError``)."""
    try:  # a FIFO or a device in its place refused, never waited on or read without end
        text = read_regular(path, MANIFEST_LIMIT).decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise DamagedBankError(_bad_manifest(path, f"not UTF-8 text at byte {exc.start}"), path=path) from exc
    except NotADirectoryError:
        raise
    except OSError as exc:  # a folder, a FIFO or a device in its place, no permission to read it
        what = "a folder, not a file" if path.is_dir() else f"unreadable ({exc.strerror})"
        if exc.errno in (errno.EINVAL, errno.EFBIG):
            what = str(exc.strerror)  # a FIFO (named pipe), not a regular file; larger than ...
        raise DamagedBankError(_bad_manifest(path, what), path=path) from exc
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DamagedBankError(_bad_manifest(path, f"not valid JSON ({exc})"), path=path) from exc
    try:
        return parse_manifest(data)
    except ValueError as exc:
        raise DamagedBankError(_bad_manifest(path, str(exc)), path=path) from None


def _bad_manifest(path: Path, what: str) -> str:
    """The line of a manifest that cannot be read: no `convbank doctor` in its advice, which
    checks files by the manifest and so says this very line."""
    return f"the bank is damaged: {path} is {what}; delete the bank folder and build again"


def parse_manifest(data: Any) -> Manifest:
    """``data`` (parsed JSON) as a :class:`Manifest`, checked: its types, its generation's
    name, and every file path (inside its table's partition folder, named like a table
    file). Anything else is a ``ValueError`` saying what."""
    if not isinstance(data, dict) or not isinstance(data.get("datasets"), dict):
        raise ValueError("not a convbank manifest")
    try:
        manifest = msgspec.convert(data, Manifest)
    except msgspec.ValidationError as exc:
        raise ValueError(f"not a convbank manifest ({exc})") from None
    problem = _path_problem(manifest)
    if problem:
        raise ValueError(f"not a convbank manifest ({problem})")
    return manifest


def _path_problem(manifest: Manifest) -> str | None:
    if manifest.generation is not None and not GENERATION.fullmatch(manifest.generation):
        return f"generation {manifest.generation!r} is not a generation name"
    for dataset, entry in manifest.datasets.items():
        for config, cfg in entry.configs.items():
            for table, splits in cfg.files.items():
                if problem := name_problem(table):  # "..", "" or "." would name files outside the bank
                    return f"table {table!r} is not a name ({problem})"
                for split, files in splits.items():
                    expected = (table, f"dataset={dataset}", f"config={config}", f"split={split}")
                    for f in pieces(files):
                        parts = tuple(f.path.split("/"))
                        if parts[:-1] != expected or not _FILE_NAME.fullmatch(parts[-1]):
                            return f"{f.path!r} is not a file of {table} {dataset}/{config}/{split}"
            for split, files in cfg.records.items():
                expected = (RECORDS, f"dataset={dataset}", f"config={config}", f"split={split}")
                for f in pieces(files):
                    parts = tuple(f.path.split("/"))
                    if parts[:-1] != expected or not _RECORD_NAME.fullmatch(parts[-1]):
                        return f"{f.path!r} is not a record file of {dataset}/{config}/{split}"
    return None
