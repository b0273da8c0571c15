"""Small files under ``CONVBANK_HOME`` that fetching keeps: checksums recorded on first use
(``checksums.json``) and where source files were found (``sources.json``); what may stand
where a source file is looked for; one-line errors for writes under the home."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank._atomic import atomic_write_text, read_json, what_is_there
from convbank._lazy import lazy
from convbank._wording import url_shown
from convbank.datasets import Dataset, SourceFile
from convbank.errors import ConvbankError, DiskFullError, FormatError, SetupError
from convbank.settings import home

if TYPE_CHECKING:
    import filelock
else:
    filelock = lazy("filelock")  # taken only when a file of the home is written

__all__ = ["home_error", "os_error"]


def home_error(
    exc: OSError, root: Path | None = None, *, writing: Path | None = None, where: str | None = None
) -> SetupError | None:
    """The one-line :class:`SetupError` for an ``OSError`` on a path under ``root`` (default
    ``CONVBANK_HOME``): a file in place of a folder, a read-only or unwritable folder, a full
    disk. ``None`` when the error concerns a path elsewhere. ``writing``: the file being
    written, for a write that names none (a full disk, a file-size limit). ``where``: what
    ``root`` is, when it is not the home (``the bank folder /srv/bank``)."""
    if writing is not None and exc.filename is None and exc.errno is not None:
        exc = OSError(exc.errno, exc.strerror, str(writing))
    base = Path(os.path.abspath(root if root is not None else home()))
    names = [n for n in (exc.filename, exc.filename2) if isinstance(n, (str, bytes, os.PathLike))]
    paths = [Path(os.path.abspath(os.fsdecode(n))) for n in names]
    path = next((p for p in paths if p == base or p.is_relative_to(base)), None)
    if path is None:
        return None
    fix = "point CONVBANK_HOME at a writable folder" if where is None else "open the bank in a folder"
    where = f"CONVBANK_HOME {base}" if where is None else where
    chain = (*reversed(path.parents), path)
    dangling = _first(chain, lambda p: p.is_symlink() and not p.exists())
    if dangling is not None:
        return SetupError(
            f"{where}: {dangling} is a link to {os.readlink(dangling)}, which does not exist; "
            f"move it away or {fix}",
            path=dangling,
        )
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        blocker = _first(chain, lambda p: p.exists() and not p.is_dir())
        if blocker is not None:
            return SetupError(
                f"{where}: {blocker} is {what_is_there(blocker)}, not a folder; move it away or {fix}",
                path=blocker,
            )
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return SetupError(
            f"{where} is not writable ({exc.strerror}: {path}); make it writable or {fix}", path=path
        )
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFullError(f"{where}: no space left writing {path}; free some space or {fix}", path=path)
    return SetupError(f"{where}: {exc.strerror or type(exc).__name__}: {path}; check it or {fix}", path=path)


def _first(paths: tuple[Path, ...], test: Callable[[Path], bool]) -> Path | None:
    """The first of ``paths`` that passes ``test``; one the system cannot even look at (a
    path over 4,096 bytes) passes none."""
    for path in paths:
        with suppress(OSError):
            if test(path):
                return path
    return None


def os_error(exc: OSError) -> ConvbankError:
    """The one-line error of an ``OSError`` that reached the command line: under
    ``CONVBANK_HOME`` as :func:`home_error` says; elsewhere (an export's or a report's
    folder) the path and what the system said; a full disk anywhere is a
    :class:`DiskFullError` (exit 1)."""
    error = home_error(exc)
    if error is not None:
        return error
    given = (exc.filename, exc.filename2)
    names = [os.fsdecode(n) for n in given if isinstance(n, (str, bytes, os.PathLike))]
    where = f"{names[0]}: " if names else ""
    what = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFullError(
            f"{where}no space left on the device; free some space and try again",
            path=names[0] if names else None,
        )
    return ConvbankError(f"{where}{what}; check that the path exists and can be written")


_STORE_LIMIT = 16 << 20
"""The most bytes of ``sources.json`` or ``checksums.json`` (a regular file)."""


class _Store:
    """A small JSON object under ``CONVBANK_HOME``, updated under a lock, replaced atomically."""

    def __init__(self, root: Path, name: str, what: str) -> None:
        self.root = root
        self.path = root / name
        self.what = what

    def load(self) -> dict[str, Any]:
        try:  # a FIFO or a device in its place refused, never waited on or read without end
            data = read_json(self.path, _STORE_LIMIT)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise FormatError(
                f"{self.path}: not a JSON object of {self.what} ({why}); delete it to record anew",
                path=self.path,
            ) from exc
        if not isinstance(data, dict):
            raise FormatError(
                f"{self.path}: not a JSON object of {self.what}; delete it to record anew", path=self.path
            )
        return data

    def update(self, key: str, value: Any) -> None:
        with _home_writes(self.root):
            lock = self.root / "locks" / f"{self.path.name}.lock"
            lock.parent.mkdir(parents=True, exist_ok=True)
            with filelock.FileLock(str(lock)):
                data = self.load()
                if data.get(key) != value:
                    data[key] = value
                    atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True))


class _Recorded(_Store):
    """Checksums recorded on first use for files whose publisher gives none (trust on first use)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, "checksums.json", "url to sha256")

    def get(self, url: str) -> str | None:
        """The sha256 recorded for ``url``; one that is not 64 hexadecimal digits is a
        :class:`FormatError` naming the file (never compared with a download as the publisher's)."""
        value = self.load().get(url)
        if value is None:
            return None
        if not isinstance(value, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", value):
            raise FormatError(
                f"{self.path}: the sha256 recorded for {url_shown(url)} is {value!r}, not 64 hexadecimal "
                "digits; "
                "delete it to record anew",
                path=self.path,
            )
        return value.lower()

    def record(self, url: str, sha: str) -> None:
        self.update(url, sha)


class _Known(_Store):
    """Where each source file was last found in a local source folder (``sources.json``), so
    that later commands find it without ``--source``: ``{"dataset/file": {"path", "size",
    "mtime_ns", "sha256"}}``. Only the path is used: a remembered file is verified by content
    every time it is used (its size, times and recorded sha256 prove nothing: a file edited in
    place with its mtime restored keeps them)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, "sources.json", "source files to their paths")

    def get(self, dataset: Dataset, file: SourceFile) -> Path | None:
        """The remembered path, while a file (or an archive's extracted folder) is there."""
        return self._there(self.load().get(f"{dataset.name}/{file.name}"), file)

    @staticmethod
    def _there(entry: object, file: SourceFile) -> Path | None:
        """An entry's path, while a file (or an archive's extracted folder) is there; a path
        that cannot even be looked at (too long, a folder that cannot be entered) is not."""
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            return None
        path = Path(entry["path"])
        try:
            mode = path.stat().st_mode
        except (OSError, ValueError):  # ValueError: a NUL in the path
            return None
        if stat.S_ISREG(mode) or (file.extract_to is not None and stat.S_ISDIR(mode)):
            return path
        return None

    def remember(self, dataset: Dataset, file: SourceFile, path: Path, sha: str | None) -> None:
        """Note where a file was found (a convenience: a home that cannot be written, or a
        full disk, keeps nothing, and the command goes on); a file used unverified (``sha``
        None, ``--no-verify``) never takes the place of a verified one still there."""
        key = f"{dataset.name}/{file.name}"
        if sha is None:  # read only then: sources.json once, on --no-verify's path alone
            known = self.load().get(key)
            if isinstance(known, dict) and known.get("sha256") and self._there(known, file):
                return
        st = path.stat()
        entry = {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}
        with suppress(SetupError):
            self.update(key, entry)


_KINDS = {
    stat.S_IFREG: None,
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


def _stand_in(path: Path) -> str | None:
    """What stands at ``path`` in place of a regular file (a folder, a link that leads
    nowhere, a FIFO, a device...), None when nothing is there or a regular file is."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "a symbolic link to nothing" if path.is_symlink() else None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # a path no file can have: nothing is there
            return None
        return "a symbolic link loop" if exc.errno == errno.ELOOP else f"unreadable ({exc.strerror})"
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


@contextmanager
def _home_writes(root: Path) -> Iterator[None]:
    """Turn an ``OSError`` on a path under ``root`` into its one-line :class:`SetupError`."""
    try:
        yield
    except OSError as exc:
        error = home_error(exc, root)
        if error is None and exc.filename is None:  # write() names no file: it was one of ours
            error = home_error(OSError(exc.errno, exc.strerror, str(root)), root)
        if error is None:
            raise
        raise error from exc
