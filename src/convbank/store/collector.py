"""What the bank's collector may delete, and how (:meth:`convbank.store.bank.Bank.collect`):
the bank's own folders, its table and record files (``part-*.parquet``, ``part-*.records``
in ``dataset=/config=/split=`` folders, never through a link), and a generation's record
once no reader holds its lock.
Nothing here reads a manifest: the bank says what to keep.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

from convbank._atomic import kind_of
from convbank.errors import DamagedBankError, SetupError

try:  # POSIX: readers pin generations with flock; elsewhere the collector keeps one old generation
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "GENERATIONS",
    "PART",
    "STAGING",
    "open_lock",
    "partition_dirs",
    "pin",
    "real_folder",
    "reclaim",
    "refuse_foreign",
    "sweep",
    "table_dirs",
    "table_folder",
]

GENERATIONS = ".generations"
STAGING = ".staging"


def real_folder(path: Path) -> bool:
    """Whether ``path`` is a folder itself, not a link to one: what a killed build leaves
    (``.staging``, ``.trash``) and collecting removes. Anything else there (a file, a FIFO
    that ``shutil.rmtree`` would open and wait on for ever) is no leftover of a build."""
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def table_dirs(root: Path) -> list[Path]:
    """Real (not linked) folders of the bank that may hold a table."""
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")
    )


def refuse_foreign(root: Path) -> None:
    """Refuse to clean a folder that is not (only) a bank, or whose own folders are
    links: the collector deletes files, and must never reach anything else."""
    for folder in (GENERATIONS, STAGING, ".trash"):
        if (root / folder).is_symlink():
            raise DamagedBankError(
                f"{root / folder} is a symbolic link; the bank's own folders must be real "
                "folders — remove the link",
                path=root / folder,
            )
    if (root / "manifest.json").exists() or (root / GENERATIONS).is_dir():
        return
    own = {".lock", STAGING, GENERATIONS, ".trash", ".journal.json"}
    foreign = [
        p for p in root.iterdir() if p.name not in own and not p.name.endswith(".tmp") and not table_folder(p)
    ]
    if foreign:
        raise SetupError(
            f"{root} holds {foreign[0].name!r}, which is not part of a convbank bank; "
            "empty the folder or point CONVBANK_HOME elsewhere",
            path=root / foreign[0].name,
        )


def open_lock(lock: Path) -> int:
    """A generation's lock file opened (made if missing) for ``flock``: without blocking and
    without following a link, so that a FIFO, a device or a link put in its place is an
    ``OSError`` (``EINVAL``, "a FIFO (named pipe), not a regular file"), never waited on
    (before: every reader and build waited for ever on a FIFO there).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> os.close(open_lock(folder / "g.lock"))
    >>> os.mkfifo(folder / "f.lock")
    >>> open_lock(folder / "f.lock")
    Traceback (most recent call last):
    OSError: [Errno 22] a FIFO (named pipe), not a regular file: '...f.lock'
    """
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW: the last part of the path is a link
            raise OSError(errno.EINVAL, "a symbolic link, not a regular file", str(lock)) from exc
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{kind_of(mode)}, not a regular file", str(lock))
    return fd


def pin(lock: Path) -> int | None:
    """A shared lock on a generation's lock file, held by the descriptor returned (None
    where locks cannot be taken: a read-only bank, or no flock on this system). A lock file
    that is not a regular file (:func:`open_lock`) is a damaged bank, one line naming it."""
    if fcntl is None:
        return None
    try:
        fd = open_lock(lock)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            return None
        raise DamagedBankError(
            f"the bank is damaged: {lock} is {exc.strerror}; readers lock it to keep their "
            "generation of the bank: remove it and run the command again",
            path=lock,
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return fd


def reclaim(lock: Path, record: Path | None) -> bool:
    """Delete a generation's record and lock file unless a reader holds the lock (a lock
    file that is not a regular file is kept, with its generation: who holds it cannot be
    told)."""
    if fcntl is None:  # no reader locks: keep the record (one old generation at most)
        return False
    try:
        fd = open_lock(lock)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        if record is not None:
            record.unlink(missing_ok=True)
        lock.unlink(missing_ok=True)
        return True
    finally:
        os.close(fd)


def sweep(root: Path, keep: set[Path], tables: set[str]) -> list[Path]:
    """Delete the table files that ``keep`` does not name, and the partition folders
    that become empty. Only ``part-*.parquet`` (and ``part-*.records``) files in
    ``<table>/dataset=/config=/split=`` folders of a known table (or of a folder holding
    nothing else) are considered, and no link is followed."""
    removed = []
    for table_dir in table_dirs(root):
        if table_dir.name not in tables and not table_folder(table_dir):
            continue
        for split_dir in partition_dirs(table_dir):
            for path in split_dir.iterdir():
                if (
                    path.is_file()
                    and not path.is_symlink()
                    and PART.fullmatch(path.name)
                    and path not in keep
                ):
                    path.unlink(missing_ok=True)
                    removed.append(path)
            for folder in (split_dir, split_dir.parent, split_dir.parent.parent):
                with suppress(OSError):
                    folder.rmdir()  # only when empty
        with suppress(OSError):
            table_dir.rmdir()
    return removed


PART = re.compile(r"part-(?:[0-9a-f]{16}|0)\.parquet|part-[0-9a-f]{16}\.records")
"""The names of table files (content-named, or the single file of layout 1) and record files."""


def partition_dirs(table_dir: Path) -> Iterator[Path]:
    """The ``dataset=/config=/split=`` folders of a table folder (real folders only)."""
    for level1 in sorted(table_dir.iterdir()):
        if not _real_dir(level1, "dataset="):
            continue
        for level2 in sorted(level1.iterdir()):
            if not _real_dir(level2, "config="):
                continue
            yield from (d for d in sorted(level2.iterdir()) if _real_dir(d, "split="))


def _real_dir(path: Path, prefix: str) -> bool:
    """Whether ``path`` is a real folder (no link) named ``prefix...``."""
    return path.name.startswith(prefix) and path.is_dir() and not path.is_symlink()


def table_folder(path: Path) -> bool:
    """Whether a folder looks like a table folder: real, holding only ``dataset=`` folders."""
    if not path.is_dir() or path.is_symlink() or path.name.startswith("."):
        return False
    entries = list(path.iterdir())
    return bool(entries) and all(_real_dir(e, "dataset=") for e in entries)
