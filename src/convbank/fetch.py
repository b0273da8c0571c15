"""Finding and fetching source files: local sources, the cache, downloads with sha256 checks.

Where a file is looked for, in order:

1. each local source folder (``--source DIR``, repeatable, then ``CONVBANK_SOURCE``, a
   path list), under the published name, directly or in a subfolder named after the dataset;
   for an archive, its extracted folder is accepted too;
2. the cache, ``$CONVBANK_HOME/downloads/<dataset>/`` (``CONVBANK_HOME`` defaults to the
   user's cache folder);
3. the publisher's URL, unless offline (``CONVBANK_OFFLINE=1``).

Downloads land in a temporary file renamed into the cache once complete and verified.

Archives are extracted into ``$CONVBANK_HOME/extracted/<dataset>/<file>/<sha256>/``, keyed on
the archive's content: a different archive is never read as an old one, and the folders of
superseded archives and of interrupted extractions are removed on the next use. An archive may
expand to at most ``CONVBANK_EXTRACT_MAX_BYTES`` (default: 20 times its own size, at least
64 MiB) in at most ``CONVBANK_EXTRACT_MAX_MEMBERS`` members (default 10,000); links, members that
would land outside the folder and members whose paths collide are refused. Locks live in
``$CONVBANK_HOME/locks/``, one per file and purpose.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from convbank._archive import (
    EXTRACT_FLOOR,
    EXTRACT_MEMBERS,
    EXTRACT_RATIO,
    extract_into,
    extract_limits,
    first_line,
    intact,
    remove_stale,
    stale,
)
from convbank._atomic import folder_beside, sha256_file
from convbank._download import HTTPStatusError, TransferError, UnreachableError, download
from convbank._homefiles import _home_writes, _Known, _Recorded, _stand_in, home_error
from convbank._lazy import lazy
from convbank._verified import open_verified, other_size, private_copy
from convbank._wording import counted, url_shown
from convbank.datasets import Dataset, SourceFile
from convbank.errors import ChecksumError, DownloadError, OfflineError, SetupError, SourceError
from convbank.settings import absolute, home, is_offline, pause_at, source_dirs

if TYPE_CHECKING:
    import filelock
else:
    filelock = lazy("filelock")  # taken only to fetch or extract a file

__all__ = [
    "EXTRACT_FLOOR",
    "EXTRACT_MEMBERS",
    "EXTRACT_RATIO",
    "Fetcher",
    "checksum_status",
    "extract_limits",
    "home_error",
    "sha256_of",
]

TIMEOUT = (15.0, 120.0)
"""Connect and read timeouts of downloads, in seconds."""


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file."""
    return sha256_file(path)


_HASHES: dict[str, tuple[tuple[int, ...], str]] = {}
"""sha256 of files hashed or verified in this process, by absolute path, with the signature
(device, inode, size, mtime, ctime) they had; any change to a file changes its ctime."""


def _signature(path: Path) -> tuple[int, ...]:
    st = path.stat()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _sha256_once(path: Path) -> str:
    """The sha256 of a file, computed once per process while the file stays unchanged."""
    key = os.path.abspath(path)
    before = _signature(path)
    known = _HASHES.get(key)
    if known is not None and known[0] == before:
        return known[1]
    sha = sha256_of(path)
    if _signature(path) == before:  # not modified while it was read
        _HASHES[key] = (before, sha)
    return sha


def _remember(path: Path, sha: str) -> None:
    """Record the sha256 of a file verified by other means (hashed while it was downloaded)."""
    _HASHES[os.path.abspath(path)] = (_signature(path), sha)


def checksum_status(
    file: SourceFile, root: Path | None = None
) -> Literal["published", "recorded", "unverified"]:
    """How a file is verified: against the published sha256, one recorded on first use, or
    not yet at all (no published checksum and never fetched)."""
    if file.sha256:
        return "published"
    return "recorded" if _Recorded(root or home()).get(file.url) else "unverified"


@dataclass
class Fetcher:
    """Locates, verifies, downloads and extracts the source files of datasets."""

    sources: Sequence[Path] = ()
    verify: bool = True
    offline: bool = field(default_factory=is_offline)
    root: Path = field(default_factory=home)
    progress: bool = True

    def __post_init__(self) -> None:
        self.sources = [absolute(Path(s).expanduser()) for s in self.sources] + source_dirs()
        self.root = absolute(Path(self.root))  # a plugin's os.chdir never moves what it names
        self._recorded = _Recorded(self.root)
        self._known = _Known(self.root)
        self._origins: dict[Path, Path] = {}
        self._verified: dict[Path, str] = {}  # sha256 that get() verified, by path
        self.extracted: dict[Path, Path] = {}  # a folder handed out: its extraction, to check again

    def origin(self, path: Path) -> Path:
        """The file a path returned by :meth:`fetch` was copied from (itself if not a copy)."""
        return self._origins.get(path, path)

    def name_origins(self, exc: BaseException) -> None:
        """Rewrite an error's message so that it names the files, not their private copies
        (a reader's :class:`FormatError` says where in which file). Example::

            except ConvbankError as exc:
                fetcher.name_origins(exc)
                raise
        """
        if exc.args and isinstance(exc.args[0], str):
            text = exc.args[0]
            for copy, path in self._origins.items():
                text = text.replace(str(copy), str(path))
            exc.args = (text, *exc.args[1:])

    # ------------------------------------------------------------------ where
    def cache_path(self, dataset: Dataset, file: SourceFile) -> Path:
        """Where the cache keeps a file."""
        return self.root / "downloads" / dataset.name / file.name

    def find_local(self, dataset: Dataset, file: SourceFile) -> Path | None:
        """The first local source copy of a file (or of an archive's extracted folder) in the
        source folders, else, with no source folders given, where one held it before
        (``sources.json``): a given folder is never passed over for a remembered copy."""
        found = self._in_sources(dataset, file)
        if found is not None or self.sources:
            return found
        return self._known.get(dataset, file)

    def _in_sources(self, dataset: Dataset, file: SourceFile) -> Path | None:
        for folder in self.sources:
            for base in (folder, folder / dataset.name):
                candidate = base / file.name  # os.path's tests: a name too long holds no file
                if os.path.isfile(candidate):
                    return candidate
                if file.extract_to and os.path.isdir(base / file.extract_to):
                    return base / file.extract_to
        return None

    def find(self, dataset: Dataset, file: SourceFile) -> Path | None:
        """A local source copy or a cached copy, without downloading."""
        local = self.find_local(dataset, file)
        if local is not None:
            return local
        cached = self.cache_path(dataset, file)
        return cached if cached.is_file() else None

    def _lock(self, dataset: Dataset, file: SourceFile, purpose: str) -> filelock.FileLock:
        """The lock of one file's download or extraction (kept apart from the data folders, so
        that no lock files gather beside the data)."""
        path = self.root / "locks" / dataset.name / f"{file.name}.{purpose}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        return filelock.FileLock(str(path))

    # ------------------------------------------------------------------ get
    def fetch(
        self, dataset: Dataset, files: Iterable[SourceFile], *, private: bool = True
    ) -> dict[str, Path]:
        """Paths of the given files, by published name (archives as their extracted folder),
        downloading what is missing. Optional files that cannot be had are left out; when
        required ones cannot be had, one error names them all.

        With ``private`` (the default, for readers), a file's path is that of a private copy
        made while it was hashed (checked against its sha256 unless ``--no-verify``; a FIFO or
        a device in its place is refused, never waited on) (:func:`convbank._verified.private_copy`):
        the bytes a reader gets are the bytes verified, whatever happens to the file meanwhile;
        :meth:`origin` names the file it came from. ``private=False`` gives the files' own
        paths (to show them). Example::

            paths = Fetcher(sources=["src"]).fetch(casino, [casino.file("casino_valid.json")])
        """
        if (refused := dataset.without_sources()) is not None:  # an import: no publisher's files
            raise refused
        paths: dict[str, Path] = {}
        missing: list[tuple[SourceFile, SourceError]] = []
        for f in files:
            try:
                path = self.get(dataset, f)
            except (OfflineError, DownloadError) as exc:
                if f.name not in dataset.optional_files:
                    missing.append((f, exc))
                continue
            if f.extract_to:
                paths[f.name] = self.extract(dataset, f, path)
            elif private:  # a reader never gets a path that was not hashed and read whole
                paths[f.name] = self._copy(dataset, f, path)
            else:
                paths[f.name] = path
        if len(missing) == 1:
            raise missing[0][1]
        if missing:
            said = {f.name: first_line(e.__cause__) for f, e in missing if e.__cause__ is not None}
            names = ", ".join(f"{f.name} ({said[f.name]})" if f.name in said else f.name for f, _ in missing)
            kind = OfflineError if all(isinstance(e, OfflineError) for _, e in missing) else DownloadError
            how = (
                "are not available offline (CONVBANK_OFFLINE is set)"
                if kind is OfflineError
                else "could not be fetched"
            )
            raise kind(
                f"{dataset.name}: {counted(len(missing), 'file')} {how}: {names}; download them from the "
                f"URLs `convbank info {dataset.name}` lists and put them in "
                f"{self.cache_path(dataset, missing[0][0]).parent} or in a folder given with --source"
                + self._not_in_sources(dataset, missing[0][0])
            )
        return paths

    def get(self, dataset: Dataset, file: SourceFile) -> Path:
        """One file: local, cached, or downloaded now; verified. A folder where the file is
        looked for is an error, not a miss."""
        local = self._in_sources(dataset, file)
        if local is not None:
            self._refuse_unverifiable(local, dataset, file)
            sha = self._check(local, file, source="local source") if self.verify and local.is_file() else None
            self._known.remember(dataset, file, local, sha)
            return local
        cached = self.cache_path(dataset, file)
        places = [base / file.name for folder in self.sources for base in (folder, folder / dataset.name)]
        for place in places:  # a source folder wins or fails: what stands in its file's place is named
            self._refuse_stand_in(place, dataset, file)
        known = None if self.sources else self._known.get(dataset, file)
        if known is not None:
            self._refuse_unverifiable(known, dataset, file)
            if self.verify and known.is_file():
                self._check(known, file, source="remembered source")
            return known
        with _home_writes(self.root), suppress(FileNotFoundError):
            cached.lstat()  # a file in place of downloads/<dataset> is the home's error
        self._refuse_stand_in(cached, dataset, file)
        if cached.is_file():
            _drop_legacy_lock(cached)
            if self.verify:
                self._check(cached, file, source=f"cached copy in {cached.parent}")
            return cached
        if self.offline:
            raise OfflineError(
                f"{dataset.name}: {file.name} is not available offline (CONVBANK_OFFLINE is set); "
                f"download it from {url_shown(file.url)} and put it in {cached.parent} or in a folder "
                "given with --source" + self._not_in_sources(dataset, file),
                dataset=dataset.name,
                file=file.name,
                path=cached,
            )
        with _home_writes(self.root):
            return self._download(dataset, file, cached)

    def _not_in_sources(self, dataset: Dataset, file: SourceFile) -> str:
        """With source folders given, where the file was looked for in vain, and the copy
        remembered from an earlier folder, which only a command without them uses."""
        if not self.sources:
            return ""
        places = ", ".join(str(base) for f in self.sources for base in (f, f / dataset.name))
        known = self._known.get(dataset, file)
        hint = f"; the copy remembered at {known} is used only without --source" if known else ""
        return f" (not in the source folders {places}{hint})"

    def _refuse_stand_in(self, place: Path, dataset: Dataset, file: SourceFile) -> None:
        """A :class:`SourceError` when something other than a regular file stands where the
        file is looked for (a folder, a dangling link, a link loop, a FIFO, a device)."""
        kind = _stand_in(place)
        if kind is not None:
            raise SourceError(
                f"{place}: is {kind}, not the file {file.name} that {dataset.name} needs; remove "
                f"or rename {'the folder' if kind == 'a folder' else 'it'}, or put the publisher's "
                f"file from {url_shown(file.url)} there",
                dataset=dataset.name,
                file=file.name,
                path=place,
            )

    def _refuse_unverifiable(self, path: Path, dataset: Dataset, file: SourceFile) -> None:
        """An archive's extracted folder has no sha256 to check: with verification on, it is
        refused rather than trusted."""
        if self.verify and path.is_dir():
            raise ChecksumError(
                f"{path}: an extracted folder stands for {file.name} ({dataset.name}), and a folder "
                f"cannot be checked against the archive's sha256; put the publisher's {file.name} "
                f"from {url_shown(file.url)} in its place, or pass --no-verify to use the folder unchecked",
                path=path,
                expected=file.sha256,
            )

    def _check(self, path: Path, file: SourceFile, source: str) -> str:
        """Verify a file against its published (or recorded) sha256; return the sha256. One of
        another size than the published is refused unread (a 20 GB file costs a ``stat``)."""
        expected = file.sha256 or self._recorded.get(file.url)
        unread = other_size(path, file.size, expected)
        actual = "" if unread else _sha256_once(path)
        if expected is None:
            self._recorded.record(file.url, actual)
        elif actual != expected:
            found = unread or f"sha256 {actual} does not match the expected {expected}"
            raise ChecksumError(
                f"{path}: {found} ({source}); replace it with the publisher's file from "
                f"{url_shown(file.url)}, or pass --no-verify",
                path=path,
                expected=expected,
                actual=actual or None,
            )
        self._verified[path] = actual
        pause_at(f"source-checked/{path.name}")
        return actual

    def _copy(self, dataset: Dataset, file: SourceFile, path: Path) -> Path:
        """A private copy of a verified file, checked again by the bytes copied."""
        expected = self._verified.get(path)  # what get() verified
        copy, sha = private_copy(path, dataset.name)
        if expected is not None and sha != expected:
            copy.unlink()
            raise ChecksumError(
                f"{path}: sha256 {sha} of the bytes read does not match the expected {expected} "
                f"(the file changed after it was checked); replace it with the publisher's file "
                f"from {url_shown(file.url)}, or pass --no-verify",
                path=path,
                expected=expected,
                actual=sha,
            )
        self._origins[copy] = path
        pause_at(f"source-verified/{path.name}")
        return copy

    def _download(self, dataset: Dataset, file: SourceFile, target: Path) -> Path:
        """Download a file into the cache (:func:`convbank._download.download`: only a ``200``
        answer, redirects only to http(s), never more bytes than its declared size), kept only
        once whole and verified."""
        target.parent.mkdir(parents=True, exist_ok=True)
        expected = file.sha256 or self._recorded.get(file.url)
        where = {"dataset": dataset.name, "file": file.name, "path": target, "url": file.url}
        put, shown = f"put {file.name} in {target.parent} or in a --source folder", url_shown(file.url)
        with self._lock(dataset, file, "download"):
            if target.is_file():  # another process fetched it meanwhile
                return target
            try:
                with folder_beside(target) as private:  # the partial file, in a folder of ours
                    bar = _progress(file) if self.progress else None
                    sha = download(
                        file.url, private / target.name, size=file.size, timeout=TIMEOUT, progress=bar
                    )
                    if expected is not None and sha != expected:
                        raise ChecksumError(
                            f"{shown}: the downloaded file's sha256 does not match the expected "
                            f"{expected}; nothing was kept — the publisher's file may have changed, "
                            "report it or pass --no-verify with a local copy",
                            path=file.url,
                            expected=expected,
                            actual=sha,
                        )
                    os.replace(private / target.name, target)
            except HTTPStatusError as exc:
                raise DownloadError(
                    f"{shown}: HTTP {exc.status}; could not download {file.name} for "
                    f"{dataset.name} — put the file in {target.parent} or in a --source folder"
                    + self._not_in_sources(dataset, file),
                    **where,
                ) from exc
            except UnreachableError as exc:
                raise DownloadError(
                    f"{shown}: {exc}; {put}, or retry when online" + self._not_in_sources(dataset, file),
                    **where,
                ) from exc
            except TransferError as exc:
                raise DownloadError(
                    f"{shown}: download failed ({exc}); nothing was kept — retry, or {put}"
                    + self._not_in_sources(dataset, file),
                    **where,
                ) from exc
            except OSError as exc:  # a write of the file names none: a full disk, a size limit
                if (error := home_error(exc, self.root, writing=target)) is not None:
                    raise error from exc
                raise DownloadError(
                    f"{shown}: download failed ({type(exc).__name__}: {first_line(exc)}); "
                    f"nothing was kept — retry, or {put}" + self._not_in_sources(dataset, file),
                    **where,
                ) from exc
        if expected is None:
            self._recorded.record(file.url, sha)
        _remember(target, sha)  # hashed as it was written: extraction need not hash it again
        self._verified[target] = sha
        return target

    # ------------------------------------------------------------------ archives
    def extract(self, dataset: Dataset, file: SourceFile, path: Path) -> Path:
        """The folder ``file.extract_to`` of an archive, extracted once per archive content (sha256)
        into the cache (:attr:`extracted`); a folder as it is. Refused, leaving nothing: links,
        members landing outside or colliding, archives expanding beyond :func:`extract_limits`."""
        assert file.extract_to is not None
        if path.is_dir():
            return path
        with open_verified(path, _HASHES) as (opened, sha, check):  # hashed and extracted through one file
            expected = self._verified.get(path)  # what get() verified, if it did
            if expected is not None and sha != expected:
                raise ChecksumError(
                    f"{path}: sha256 {sha} of the bytes read does not match the expected "
                    f"{expected} (the file changed after it was checked); replace it with the "
                    f"publisher's file from {url_shown(file.url)}, or pass --no-verify",
                    path=path,
                    expected=expected,
                    actual=sha,
                )
            area = self.root / "extracted" / dataset.name
            base = area / file.name
            folder = base / sha / file.extract_to
            self.extracted[folder] = base / sha
            if folder.is_dir() and not stale(area, base, sha) and intact(base / sha):
                return folder  # nothing to write: works in a read-only home
            try:
                with _home_writes(self.root), self._lock(dataset, file, "extract"):
                    remove_stale(area, base, sha)
                    if not folder.is_dir() or not intact(base / sha):  # as extracted, or made anew
                        extract_into(path, base / sha, file.extract_to, opened, check)
            except SetupError:
                if folder.is_dir() and intact(base / sha):  # a read-only home holds it: the rest can wait
                    return folder
                raise
        return folder


def _drop_legacy_lock(cached: Path) -> None:
    """Remove the empty ``<file>.lock`` that convbank 0.1 left beside a cached file."""
    legacy = cached.with_name(cached.name + ".lock")
    with suppress(OSError):  # absent, or a read-only home: harmless
        if legacy.stat().st_size == 0:
            legacy.unlink()


def _progress(file: SourceFile) -> Any:
    """A download's progress bar drawn with rich on stderr."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    class Bar:
        def __init__(self) -> None:
            self._progress = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._task = self._progress.add_task(file.name, total=None)
            self._progress.start()
            self._total: int | None = None

        @property
        def total(self) -> int | None:
            return self._total

        @total.setter
        def total(self, value: int) -> None:
            self._total = value
            self._progress.update(self._task, total=value)

        def update(self, n: int) -> None:
            self._progress.advance(self._task, n)

        def reset(self) -> None:
            self._progress.reset(self._task)

        def close(self) -> None:
            self._progress.stop()

    return Bar()
