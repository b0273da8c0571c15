"""Finding and fetching source files: local sources, the cache, downloads with sha256 checks.

Where a file is looked for, in order:

1. each local source folder (``--source DIR``, repeatable, then ``CONVBANK_SOURCE``, a
   path list), under the published name, directly or in a subfolder named after the dataset;
   for an archive, its extracted folder is accepted too;
2. the cache, ``$CONVBANK_HOME/downloads/<dataset>/`` (``CONVBANK_HOME`` defaults to the
   user's cache folder);
3. the publisher's URL, unless offline (``CONVBANK_OFFLINE=1``).

Downloads land in a temporary file that is renamed into the cache only once complete and
verified, so a partial or corrupt download never looks complete.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import urlsplit

import platformdirs
from filelock import FileLock

from convbank._atomic import atomic_write_text
from convbank.datasets import Dataset, SourceFile
from convbank.errors import ChecksumError, DownloadError, FormatError, OfflineError

__all__ = [
    "Fetcher",
    "checksum_status",
    "env_flag",
    "home",
    "is_offline",
    "sha256_of",
]

TIMEOUT = (15.0, 120.0)
"""Connect and read timeouts of downloads, in seconds."""


def env_flag(name: str) -> bool:
    """Whether an environment variable is set to a true value (1, true, yes, on)."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def home() -> Path:
    """convbank's folder: ``$CONVBANK_HOME``, else the user's cache folder for convbank."""
    env = os.environ.get("CONVBANK_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("convbank"))


def is_offline() -> bool:
    """Whether ``CONVBANK_OFFLINE`` forbids network access."""
    return env_flag("CONVBANK_OFFLINE")


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _Recorded:
    """Checksums recorded on first use for files whose publisher gives none (trust on first use)."""

    def __init__(self, root: Path) -> None:
        self.path = root / "checksums.json"

    def load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise FormatError(
                f"{self.path}: not a JSON object of url to sha256 ({exc}); delete it to record anew"
            ) from exc
        return {str(k): str(v) for k, v in data.items()}

    def get(self, url: str) -> str | None:
        return self.load().get(url)

    def record(self, url: str, sha: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            data = self.load()
            data[url] = sha
            atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True))


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
        env = os.environ.get("CONVBANK_SOURCE", "")
        extra = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
        self.sources = [Path(s).expanduser() for s in self.sources] + extra
        self._recorded = _Recorded(self.root)

    # ------------------------------------------------------------------ where
    def cache_path(self, dataset: Dataset, file: SourceFile) -> Path:
        """Where the cache keeps a file."""
        return self.root / "downloads" / dataset.name / file.name

    def find_local(self, dataset: Dataset, file: SourceFile) -> Path | None:
        """The first local source copy of a file (or of an archive's extracted folder)."""
        for folder in self.sources:
            for base in (folder, folder / dataset.name):
                candidate = base / file.name
                if candidate.is_file():
                    return candidate
                if file.extract_to and (base / file.extract_to).is_dir():
                    return base / file.extract_to
        return None

    def find(self, dataset: Dataset, file: SourceFile) -> Path | None:
        """A local source copy or a cached copy, without downloading."""
        local = self.find_local(dataset, file)
        if local is not None:
            return local
        cached = self.cache_path(dataset, file)
        return cached if cached.is_file() else None

    # ------------------------------------------------------------------ get
    def fetch(self, dataset: Dataset, files: Iterable[SourceFile]) -> dict[str, Path]:
        """Paths of the given files, by published name (archives as their extracted folder),
        downloading what is missing. Optional files that cannot be had are left out."""
        paths: dict[str, Path] = {}
        for f in files:
            try:
                path = self.get(dataset, f)
            except (OfflineError, DownloadError):
                if f.name in dataset.optional_files:
                    continue
                raise
            paths[f.name] = self.extract(dataset, f, path) if f.extract_to else path
        return paths

    def get(self, dataset: Dataset, file: SourceFile) -> Path:
        """One file: local, cached, or downloaded now; verified."""
        local = self.find_local(dataset, file)
        if local is not None:
            if self.verify and local.is_file():
                self._check(local, file, source="local source")
            return local
        cached = self.cache_path(dataset, file)
        if cached.is_file():
            return cached
        if self.offline:
            raise OfflineError(
                f"{dataset.name}: {file.name} is not available offline (CONVBANK_OFFLINE is set); "
                f"download it from {file.url} and put it in {cached.parent} or in a folder "
                "given with --source"
            )
        return self._download(dataset, file, cached)

    def _check(self, path: Path, file: SourceFile, source: str) -> None:
        expected = file.sha256 or self._recorded.get(file.url)
        actual = sha256_of(path)
        if expected is None:
            self._recorded.record(file.url, actual)
        elif actual != expected:
            raise ChecksumError(
                f"{path}: sha256 {actual} does not match the expected {expected} ({source}); "
                f"replace it with the publisher's file from {file.url}, or pass --no-verify"
            )

    def _download(self, dataset: Dataset, file: SourceFile, target: Path) -> Path:
        import pooch
        import requests

        logging.getLogger("pooch").setLevel(logging.WARNING)
        target.parent.mkdir(parents=True, exist_ok=True)
        expected = file.sha256 or self._recorded.get(file.url)
        downloader = pooch.HTTPDownloader(
            progressbar=_progress(file) if self.progress else False, timeout=TIMEOUT
        )
        with FileLock(str(target) + ".lock"):
            if target.is_file():  # another process fetched it meanwhile
                return target
            try:
                pooch.retrieve(
                    file.url,
                    known_hash=f"sha256:{expected}" if expected else None,
                    fname=target.name,
                    path=target.parent,
                    downloader=downloader,
                )
            except ValueError as exc:
                if "hash" not in str(exc).lower():
                    raise
                raise ChecksumError(
                    f"{file.url}: the downloaded file's sha256 does not match the expected "
                    f"{expected}; nothing was kept — the publisher's file may have changed, "
                    "report it or pass --no-verify with a local copy"
                ) from exc
            except requests.HTTPError as exc:
                status = exc.response.status_code if exc.response is not None else "?"
                raise DownloadError(
                    f"{file.url}: HTTP {status}; could not download {file.name} for "
                    f"{dataset.name} — put the file in {target.parent} or in a --source folder"
                ) from exc
            except requests.ConnectionError as exc:
                raise DownloadError(
                    f"{file.url}: cannot connect to {urlsplit(file.url).hostname}; put {file.name} "
                    f"in {target.parent} or in a --source folder, or retry when online"
                ) from exc
            except (requests.RequestException, OSError) as exc:
                raise DownloadError(
                    f"{file.url}: download failed ({type(exc).__name__}: {_first_line(exc)}); "
                    f"nothing was kept — retry, or put {file.name} in {target.parent} or in a "
                    "--source folder"
                ) from exc
        if expected is None:
            self._recorded.record(file.url, sha256_of(target))
        return target

    # ------------------------------------------------------------------ archives
    def extract(self, dataset: Dataset, file: SourceFile, path: Path) -> Path:
        """The folder ``file.extract_to`` of an archive, extracted once into the cache
        (a folder is returned as it is). Members that would land outside are refused."""
        assert file.extract_to is not None
        if path.is_dir():
            return path
        stat = path.stat()
        key = f"{stat.st_size}-{int(stat.st_mtime)}"
        target = self.root / "extracted" / dataset.name / key
        folder = target / file.extract_to
        if folder.is_dir():
            return folder
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(target) + ".lock"):
            if folder.is_dir():
                return folder
            tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".extract-"))
            try:
                _safe_extract(path, tmp, file.extract_to)
                os.replace(tmp, target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return folder


def _safe_extract(archive: Path, dest: Path, root: str) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            names = zf.namelist()
            for name in names:
                pure = PurePosixPath(name)
                if pure.is_absolute() or ".." in pure.parts or "\\" in name:
                    raise FormatError(
                        f"{archive}: member {name!r} would be extracted outside the target "
                        "folder; refusing to extract this archive"
                    )
            if not any(PurePosixPath(n).parts[:1] == (root,) for n in names):
                raise FormatError(
                    f"{archive}: no folder {root}/ inside; expected the publisher's layout "
                    f"{root}/... — re-fetch the file"
                )
            zf.extractall(dest)
    except zipfile.BadZipFile as exc:
        raise FormatError(f"{archive}: not a valid zip archive ({exc}); re-fetch the file") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def _progress(file: SourceFile) -> Any:
    """A pooch progress bar drawn with rich on stderr."""
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
