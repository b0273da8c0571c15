"""Parquet storage in generations: readers see the old bank or the new one, never a mix.

Layout::

    <root>/manifest.json                       the current generation: what is built, and the
                                               exact file of every table partition
    <root>/<table>/dataset=<d>/config=<c>/split=<s>/part-<sha256[:16]>.parquet
    <root>/.generations/<id>.json              every generation a reader may still hold
    <root>/.generations/<id>.lock              readers hold a shared lock on it
    <root>/.staging/<uuid>/                    a build in progress
    <root>/.lock                               builds are serialised on it

Table files are immutable and named by their content. A build writes one dataset/config into
a staging folder; when it is complete its files are moved beside the current ones (no reader
looks at a file the manifest does not name), a record of the new generation is written, and
one atomic rename of ``manifest.json`` makes it the bank. A build killed or failed at any
point before that rename leaves the previous generation as it was; what it left behind is
removed by the next process that takes the build lock (:meth:`Bank.collect`).

A reader pins a generation with :meth:`Bank.snapshot`: it holds a shared ``flock`` on the
generation's lock file, and the collector deletes an old generation (and the files only it
names) only when it can lock that file exclusively, so files never vanish under a reader.
Locks die with their process, so a reader killed with ``kill -9`` pins nothing.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from convbank._atomic import atomic_write_text, read_regular
from convbank._controls import one_line
from convbank._lazy import lazy
from convbank._version import __version__
from convbank._wording import counted
from convbank.datasets._imported import ImportEntry
from convbank.errors import BuildError, DamagedBankError, NotBuiltError, PluginError, SetupError
from convbank.model import SCHEMA_VERSION
from convbank.settings import absolute, bank_root, unusable_folder
from convbank.store.checkup import Checkup, checkup
from convbank.store.collector import (
    GENERATIONS,
    PART,
    STAGING,
    open_lock,
    partition_dirs,
    pin,
    real_folder,
    reclaim,
    refuse_foreign,
    sweep,
    table_dirs,
)
from convbank.store.integrity import FOLDER_IN_PLACE
from convbank.store.manifest import (
    GENERATION,
    MANIFEST_LIMIT,
    RECORDS,
    ConfigEntry,
    DatasetEntry,
    FileEntry,
    FileRef,
    Manifest,
    SplitEntry,
    read_manifest,
)
from convbank.store.snapshot import Snapshot, partition, release
from convbank.store.staging import Staging, disk_full, file_facts

if TYPE_CHECKING:
    import filelock
else:
    filelock = lazy("filelock")  # only builds and their checks take the lock


__all__ = ["LAYOUT", "OPENED", "Bank", "Checkup", "FileRef", "Snapshot", "Staging", "banks"]

LAYOUT = 2
"""Version of the bank's folder layout and manifest (1: one ``part-0.parquet`` per partition,
replaced in place)."""

_LEGACY_PART = "part-0.parquet"

OPENED: dict[str, None] = {}
"""The banks other than the default one that this process opened, by absolute path, in
order: where the catalog looks for a dataset imported into one of them
(:func:`convbank.store._imported.imported`)."""


def banks() -> list[Bank]:
    """The default bank, then the others this process opened (latest first)."""
    default = Bank()
    others = [Bank(Path(p)) for p in reversed(OPENED) if p != os.path.abspath(default.root)]
    return [default, *others]


def imported_clash(dataset: str, origin: str = "a dataset of the catalog") -> str:
    """Said when a dataset of the catalog (a plugin's) takes the name of one imported into
    the bank, which building it would replace."""
    return (
        f"{origin} names a dataset {dataset}, which the bank holds as imported (convbank import); "
        f"building it would replace those conversations: remove the import first (convbank remove "
        f"{dataset}), or uninstall the plugin; nothing was built"
    )


class Bank:
    """The bank folder: its generations, lock, staging and atomic commits. ``Bank()`` is the
    bank under ``$CONVBANK_HOME`` (:func:`convbank.settings.bank_root`)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = absolute(Path(root)) if root is not None else bank_root()
        if root is not None:  # one the system cannot look at: said here, never a bare OSError later
            problem = unusable_folder(self.root)
            if problem is not None:
                raise SetupError(
                    f"the bank folder {one_line(str(root))}: {problem}; open the bank in another folder",
                    path=self.root,
                )
            OPENED[os.path.abspath(self.root)] = None

    # ------------------------------------------------------------------ manifest
    @property
    def manifest_path(self) -> Path:
        """Where the manifest is."""
        return self.root / "manifest.json"

    def manifest(self) -> Manifest:
        """The current generation (an empty manifest before the first build)."""
        return self._read_manifest(self.manifest_path)

    def _read_manifest(self, path: Path) -> Manifest:
        """A manifest or a generation record, checked: its types, its generation's name, and
        every file path it names (inside the bank, in its table's partition)."""
        try:
            manifest = read_manifest(path)
        except NotADirectoryError as exc:  # a file in place of the bank's folder, or above it
            raise _blocked(exc, self.root) from exc
        if manifest is None:
            return Manifest(datasets={}, layout=LAYOUT, schema_version=SCHEMA_VERSION)
        if manifest.layout is None:
            return self._legacy(manifest)
        if manifest.layout != LAYOUT:
            raise DamagedBankError(
                f"{path}: the bank has layout {manifest.layout}, this convbank reads layout {LAYOUT}; "
                "upgrade convbank or delete the bank folder and build again",
                path=path,
            )
        return manifest

    def _legacy(self, manifest: Manifest) -> Manifest:
        """A layout-1 manifest (files named ``part-0.parquet``, replaced in place) seen as a
        generation of layout 2; the next build rewrites it."""
        for dataset, entry in manifest.datasets.items():
            for config, cfg in entry.configs.items():
                files: dict[str, dict[str, FileEntry | list[FileEntry]]] = {}
                for table_dir in table_dirs(self.root):
                    legacy = (table_dir / partition(dataset, config)).glob(f"split=*/{_LEGACY_PART}")
                    for path in sorted(legacy):
                        split = path.parent.name.removeprefix("split=")
                        files.setdefault(table_dir.name, {})[split] = FileEntry(
                            path=str(path.relative_to(self.root)), bytes=path.stat().st_size
                        )
                cfg.files = files
        manifest.layout = LAYOUT
        manifest.generation = "legacy"
        return manifest

    def built(self) -> dict[str, DatasetEntry]:
        """Built datasets with their manifest entries (of the current generation)."""
        return self.manifest().datasets

    def split_info(self, dataset: str, config: str, split: str) -> SplitEntry:
        """The manifest entry of one split, or :class:`NotBuiltError`."""
        return Snapshot(self, self.manifest(), None).split_info(dataset, config, split)

    def tables(self) -> list[str]:
        """Names of the tables of the current generation."""
        return sorted({r.table for r in self.manifest().refs(self.root)})

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> Snapshot:
        """Pin the current generation (see :class:`Snapshot`)."""
        for _ in range(100):
            manifest = self.manifest()
            generation = manifest.generation
            if generation in (None, "legacy"):
                return Snapshot(self, manifest, None)
            lease = self._lease(generation)
            if lease is None or (self.root / GENERATIONS / f"{generation}.json").exists():
                return Snapshot(self, manifest, lease)
            release(lease)  # collected between our read and our lock: read the manifest again
        raise DamagedBankError(
            f"{self.manifest_path}: names a generation that keeps disappearing; run `convbank doctor`",
            path=self.manifest_path,
        )

    def snapshot_of(self, generation: str | None) -> Snapshot:
        """Pin a named generation: the current one, or an older one that a reader still
        holds (its record is kept while it is pinned); :class:`NotBuiltError` if it is gone."""
        current = self.snapshot()
        if current.generation == generation:
            return current
        current.close()
        record = self.root / GENERATIONS / f"{generation}.json"
        if generation is None or not GENERATION.fullmatch(generation):
            raise NotBuiltError(f"the bank at {self.root} has no generation {generation!r}", path=self.root)
        lease = self._lease(generation)
        if not record.exists():
            release(lease)
            raise NotBuiltError(
                f"generation {generation} of the bank at {self.root} is gone; read again", path=record
            )
        return Snapshot(self, self._read_manifest(record), lease)

    def _lease(self, generation: str) -> int | None:
        """A shared lock on a generation's lock file (:func:`~convbank.store.collector.pin`)."""
        return pin(self.root / GENERATIONS / f"{generation}.lock")

    # ------------------------------------------------------------------ building
    @contextmanager
    def lock(self, timeout: float = -1) -> Iterator[None]:
        """Hold the bank's build lock (builds are serialised) and clear what killed or
        failed builds left behind."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(str(self.root / ".lock"), timeout=timeout)
            lock.acquire()
        except filelock.Timeout:
            raise BuildError(
                f"{self.root}: another build holds the bank's lock; wait for it to finish",
                path=self.root,
            ) from None
        try:
            self.collect()
            yield
        finally:
            lock.release()

    @contextmanager
    def stage(self, dataset: str, config: str) -> Iterator[Staging]:
        """Stage a dataset/config; call :meth:`commit` inside to make it visible. On error
        the staging folder is removed and the bank is untouched. Hold :meth:`lock`."""
        folder = self.root / STAGING / uuid.uuid4().hex
        folder.mkdir(parents=True)
        staging = Staging(folder, dataset, config)
        try:
            yield staging
        finally:
            staging.abandon()
            shutil.rmtree(folder, ignore_errors=True)
            with suppress(OSError):
                folder.parent.rmdir()  # .staging itself, once empty

    def commit(self, staging: Staging, entry: ConfigEntry) -> None:
        """Make a staged dataset/config the bank's, with ``entry`` as its manifest entry: its
        files move in beside the current ones, then one rename of the manifest switches
        readers to the new generation. Hold :meth:`lock`."""
        self.commit_dataset(staging.dataset, [(staging, entry)])

    def commit_dataset(
        self,
        dataset: str,
        staged: list[tuple[Staging, ConfigEntry]],
        *,
        imported: ImportEntry | None = None,
    ) -> None:
        """Make staged configs of one dataset the bank's in one generation. Without
        ``imported``, each staged config replaces that config (the dataset's others stay);
        with it (an import), the dataset's entry is replaced whole by the staged configs and
        that record. Hold :meth:`lock`."""

        def update(manifest: Manifest, published: list[Path]) -> None:
            configs = {}
            for staging, entry in staged:
                files = self._publish_all(staging, published)
                records = files.pop(RECORDS, {})
                configs[staging.config] = ConfigEntry(
                    splits=entry.splits, sources=entry.sources, files=files, records=records
                )
            ds = manifest.datasets.setdefault(dataset, DatasetEntry())
            if imported is None and ds.imported is not None:  # a build never replaces an import
                raise PluginError(imported_clash(dataset), name=dataset)
            if imported is not None:
                ds.configs, ds.imported = {}, imported
            ds.configs.update(configs)
            ds.built_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            ds.built_by, ds.schema_version = __version__, SCHEMA_VERSION

        self._switch(update)

    def remove(self, dataset: str) -> None:
        """Take a dataset out of the bank in a new generation (its files go once no reader
        pins an older one). Hold :meth:`lock`."""

        def update(manifest: Manifest, published: list[Path]) -> None:
            manifest.datasets.pop(dataset, None)

        self._switch(update)

    def _publish_all(
        self, staging: Staging, published: list[Path]
    ) -> dict[str, dict[str, FileEntry | list[FileEntry]]]:
        """Move a staging folder's files to their places; their manifest entries by table and split."""
        staging.close()
        written: dict[str, dict[str, list[FileEntry]]] = {}
        for key, rows in sorted(staging.rows.items()):
            table, split, _ = key
            written.setdefault(table, {}).setdefault(split, []).append(
                self._publish(staging, key, rows, published)
            )
        return {
            table: {split: one[0] if len(one) == 1 else one for split, one in splits.items()}
            for table, splits in written.items()
        }

    def _switch(self, update: Callable[[Manifest, list[Path]], None]) -> None:
        """Write a new generation: the current manifest changed by ``update`` (which may
        publish files, noting each in the list it is given), recorded, then made the bank's
        by one rename; if anything fails before that rename, what it published is removed."""
        published: list[Path] = []
        record = None
        try:
            manifest = self.manifest()
            generation = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
            for other in manifest.datasets.values():  # the others keep the schema they were built with
                other.schema_version = other.schema_version or manifest.schema_version
            manifest.layout, manifest.schema_version, manifest.generation = LAYOUT, SCHEMA_VERSION, generation
            update(manifest, published)
            text = manifest.to_json()
            (self.root / GENERATIONS).mkdir(exist_ok=True)
            record = self.root / GENERATIONS / f"{generation}.json"
            atomic_write_text(record, text)
            # the lock file exists before any reader can see the generation, so that readers
            # without write access (a read-only mount) can pin it too
            os.close(open_lock(self.root / GENERATIONS / f"{generation}.lock"))
            atomic_write_text(self.manifest_path, text)
        except OSError as exc:
            for path in published:
                path.unlink(missing_ok=True)
            if record is not None:
                record.unlink(missing_ok=True)
            full = disk_full(self.root, exc)
            if full is None:
                raise
            raise full from exc
        except BaseException:  # Ctrl-C before the manifest's rename: nothing of this build stays
            if record is None or not self._switched_to(record):
                for path in published:
                    path.unlink(missing_ok=True)
                if record is not None:
                    record.unlink(missing_ok=True)
            raise
        self.collect()

    def _switched_to(self, record: Path) -> bool:
        """Whether the manifest already is the generation ``record`` holds."""
        try:
            return read_regular(self.manifest_path, MANIFEST_LIMIT) == read_regular(record, MANIFEST_LIMIT)
        except OSError:
            return False

    def _publish(
        self, staging: Staging, key: tuple[str, str, int], rows: int, published: list[Path]
    ) -> FileEntry:
        """Move one staged file (``key``: table, split, piece) to its place under its
        content's name."""
        table, split, piece = key
        staged = staging.path(table, split, piece)
        sha, size, footer, layout = staging.facts.get(key) or file_facts(
            staged, table, staging.id_ranges.get((split, piece))
        )  # a writer's, or read
        if size != staged.stat().st_size:
            raise BuildError(
                f"{staged}: {counted(staged.stat().st_size, 'byte')}, its writer said {size:,}; "
                "the previous bank is unchanged",
                path=staged,
            )
        folder = self.root / table / partition(staging.dataset, staging.config, split)
        target = folder / f"part-{sha[:16]}.{'records' if table == RECORDS else 'parquet'}"
        target.parent.mkdir(parents=True, exist_ok=True)
        # A file of this name may be there already: the same content in a generation still
        # read, or a damaged copy of it (same name, same size, other bytes). Never trust it by
        # name and size: the staged copy replaces it atomically (a reader holding the old one
        # keeps its open handle; one opening it later reads the same content, sound).
        if target.is_dir() and not target.is_symlink():
            raise DamagedBankError(
                f"{target}: {FOLDER_IN_PLACE}, then `convbank build {staging.dataset}` again", path=target
            )
        existed = target.exists()
        os.replace(staged, target)
        if not existed:
            published.append(target)  # created by this build: removed again if it fails
        layout_of = {} if layout is None else layout._asdict()  # a record file's groups and id range
        path = str(target.relative_to(self.root))
        return FileEntry(path=path, bytes=size, sha256=sha, rows=rows, footer=footer, **layout_of)

    # ------------------------------------------------------------------ cleaning
    def collect(self) -> list[Path]:
        """Remove what no reader can see: staging folders of killed builds, temporary
        manifests, generations no reader pins and the files only they named, files no
        generation names. Hold :meth:`lock`. Returns what was removed."""
        removed: list[Path] = []
        if not self.root.is_dir():
            return removed
        refuse_foreign(self.root)
        current = self.manifest()
        if current.generation == "legacy":  # rewrite a layout-1 manifest as layout 2
            current.generation = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
            (self.root / GENERATIONS).mkdir(exist_ok=True)
            text = current.to_json()
            atomic_write_text(self.root / GENERATIONS / f"{current.generation}.json", text)
            atomic_write_text(self.manifest_path, text)
        keep = {r.path for r in current.all_refs(self.root)}
        tables = {r.table for r in current.all_refs(self.root)}
        keep_all = False
        generations = self.root / GENERATIONS
        for record in sorted(generations.glob("*.json")) if generations.is_dir() else []:
            name = record.stem
            if name == current.generation:
                continue
            try:
                refs = self._read_manifest(record).all_refs(self.root)
            except (OSError, DamagedBankError):
                refs, keep_all = [], True  # an unreadable record: delete no file this time
            tables |= {r.table for r in refs}
            if reclaim(generations / f"{name}.lock", record):
                removed.append(record)
            else:  # pinned by a reader: its files stay
                keep |= {r.path for r in refs}
        for lock in sorted(generations.glob("*.lock")) if generations.is_dir() else []:
            if not (generations / f"{lock.stem}.json").exists() and reclaim(lock, None):
                removed.append(lock)
        for leftover in (self.root / STAGING, self.root / ".trash"):
            if real_folder(leftover):  # never a FIFO, which rmtree would wait on
                shutil.rmtree(leftover, ignore_errors=True)
                removed.append(leftover)
        for tmp in [*self.root.glob(".*.tmp"), *generations.glob(".*.tmp"), self.root / ".journal.json"]:
            if tmp.exists():
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
        if not keep_all:
            removed += sweep(self.root, keep, tables)
        return removed

    # ------------------------------------------------------------------ checking
    def doctor(self, *, deep: bool = True) -> Checkup:
        """Check every file of the current generation against the manifest (see
        :func:`convbank.store.checkup.checkup`) and list leftovers of killed builds
        (:meth:`collect` removes them). A manifest that cannot be read raises
        :class:`DamagedBankError`."""
        with self.snapshot() as snap:
            found = checkup(snap, deep=deep)
        found.leftovers = self._leftovers()
        return found

    def _leftovers(self) -> list[Path]:
        """Staging folders and files that no generation names (what :meth:`collect` removes)."""
        keep = {r.path for r in self.manifest().all_refs(self.root)}
        generations = self.root / GENERATIONS
        for record in generations.glob("*.json") if generations.is_dir() else []:
            with suppress(OSError, DamagedBankError):
                keep |= {r.path for r in self._read_manifest(record).all_refs(self.root)}
        found = [p for p in (self.root / STAGING, self.root / ".trash") if real_folder(p)]
        if found and self._building():
            found = [p for p in found if p.name != STAGING]  # a build is writing there now
        for table_dir in table_dirs(self.root):
            for split_dir in partition_dirs(table_dir):
                found += [p for p in split_dir.iterdir() if PART.fullmatch(p.name) and p not in keep]
        return sorted(found)

    def _building(self) -> bool:
        """Whether a build holds the lock now."""
        try:
            with filelock.FileLock(str(self.root / ".lock"), timeout=0):
                return False
        except (filelock.Timeout, OSError):  # held (or not even takeable)
            return True


def _blocked(exc: OSError, root: Path) -> Exception:
    """The one line of a file in place of the bank's folder or of one above it: the CLI's
    (:func:`convbank._homefiles.home_error`, exit 5), said of the bank's folder when it is
    not under ``CONVBANK_HOME``."""
    from convbank._homefiles import home_error

    error = home_error(exc) or home_error(exc, root, where=f"the bank folder {root}")
    return error if error is not None else exc
