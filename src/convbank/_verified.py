"""Reading only the bytes that were verified: a source file is hashed while it is copied into a
private folder and the readers get the copy; an archive is hashed through one open file and
extracted from that same file.

A file found by its path, hashed, then opened again by its path to be read is open to a swap in
between (a rename puts another file at the path; an in-place rewrite changes its bytes). Here
the bytes hashed are the bytes read, by construction:

- :func:`private_copy` reads the file once, through one descriptor, writing each block to a
  copy and into the hash; the copy (in a folder of this process's own, ``0700``, removed when
  the process exits) is what the readers open. A rename of the original after it was opened
  changes nothing (the descriptor holds the old inode); an in-place rewrite changes the hash.
- :func:`open_verified` yields an archive's open file once its hash (through that file) is
  known, and checks that the file's signature (device, inode, size, mtime, ctime) is the same
  after it was read, so an in-place rewrite while it was extracted is caught.

``CONVBANK_TEST_PAUSE`` points (for tests, :func:`convbank.settings.pause_at`), each followed
by ``/`` and the file's name: ``source-checked`` (:class:`convbank.fetch.Fetcher` verified the
file by its path), ``source-opened`` (opened to be copied or extracted, nothing read yet),
``source-reading`` (its first block copied), ``source-verified`` (copied and verified, before
any reader opens the copy), ``source-extracted`` (an archive extracted, not yet kept).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from convbank._atomic import open_regular, process_alive
from convbank._wording import counted
from convbank.errors import ChecksumError
from convbank.settings import pause_at

__all__ = [
    "BLOCK",
    "PREFIX",
    "open_verified",
    "other_size",
    "private_copy",
    "private_tree",
    "remove_dead_folders",
    "signature",
]

BLOCK = 1 << 16
"""Bytes read at a time while copying (64 KiB: small enough that a test can pause mid-file)."""

_FOLDER: list[Path] = []
"""The process's private folder of verified copies, made on first use."""


def other_size(path: Path, size: int | None, sha: str | None) -> str | None:
    """How a file of another size than the published ``size`` differs from the file of sha256
    ``sha`` (None when either is unknown or the sizes agree): what a check says of it without
    reading it, so that a huge file in its place (a 20 GB sparse file a remembered path names)
    costs a ``stat``, never the time to hash it. Example::

        other_size(Path("casino_train.json"), 3_763_692, sha)   # "12 bytes, not the 3,763,692 ..."
    """
    found = path.stat().st_size
    if size is None or sha is None or found == size:
        return None
    return f"{counted(found, 'byte')}, not the {size:,} of the publisher's file (sha256 {sha})"


def signature(fd: int) -> tuple[int, ...]:
    """What changes whenever a file's bytes change: (device, inode, size, mtime, ctime) of an
    open file. Example: ``signature(f.fileno())``."""
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


PREFIX = "convbank-verified-"
"""The private folders' names in the temporary folder: ``convbank-verified-<pid>-<random>``."""


def _folder() -> Path:
    if not _FOLDER:
        owner = os.getpid()
        remove_dead_folders(Path(tempfile.gettempdir()))
        folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{owner}-"))  # mode 0700

        def remove() -> None:
            if os.getpid() == owner:  # not a forked worker's exit
                shutil.rmtree(folder, ignore_errors=True)

        atexit.register(remove)
        _FOLDER.append(folder)
    return _FOLDER[0]


def remove_dead_folders(temp: Path) -> None:
    """Remove the private folders in ``temp`` of processes now gone (killed with ``kill -9``
    before their exit could remove them, a full copy of their sources inside): this user's
    folders named ``convbank-verified-<pid>-...`` whose process no longer runs. A live
    process's folder, another user's, a link, a file or a folder of an older name is left
    alone, and a folder that cannot be listed is left as it is.

    >>> temp = Path(tempfile.mkdtemp())
    >>> for name in ("convbank-verified-999999999-ab", f"convbank-verified-{os.getpid()}-cd", "other"):
    ...     (temp / name).mkdir()
    >>> remove_dead_folders(temp)
    >>> sorted(p.name for p in temp.iterdir()) == sorted([f"convbank-verified-{os.getpid()}-cd", "other"])
    True
    """
    try:
        entries = list(os.scandir(temp))
    except OSError:
        return
    for entry in entries:
        pid, dash, _ = entry.name.removeprefix(PREFIX).partition("-")
        if not entry.name.startswith(PREFIX) or not dash or not pid.isdigit():
            continue
        try:
            if (
                not entry.is_dir(follow_symlinks=False)
                or entry.stat(follow_symlinks=False).st_uid != os.getuid()
            ):
                continue
        except OSError:
            continue
        if int(pid) != os.getpid() and not process_alive(int(pid)):
            shutil.rmtree(entry.path, ignore_errors=True)


def private_copy(path: Path, place: str) -> tuple[Path, str]:
    """Copy ``path`` into this process's private folder (under ``place``, keeping its file
    name) while hashing the bytes copied; return the copy and their sha256. The caller checks
    the sha256 before handing the copy to a reader. Example::

        copy, sha = private_copy(Path("src/casino_valid.json"), "casino")
        assert copy.name == "casino_valid.json"
    """
    target = _folder() / place
    target.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target, prefix=f".{path.name}.")
    try:
        sha = _copy_hashed(path, fd)
        copy = target / sha / path.name
        copy.parent.mkdir(exist_ok=True)
        os.replace(tmp, copy)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return copy, sha


def private_tree(path: Path, place: str) -> tuple[Path, dict[Path, tuple[str, int]]]:
    """A private copy of a file or of a folder's every file (its layout kept: a ConvoKit
    corpus, a Hugging Face ``save_to_disk`` folder; inside a folder named as its own parent,
    where the Hugging Face export's ``<dataset>/<config>`` is told apart), each hashed while
    copied; return the copy and, by each original file's path, the sha256 and the size of
    the bytes copied (what was read, whatever the file holds by now). Example::

        copy, copied = private_tree(Path("my_corpus"), "import-my_corpus")
        assert (copy / "utterances.jsonl").is_file()
        sha, size = copied[Path("my_corpus/utterances.jsonl")]
    """
    target = Path(tempfile.mkdtemp(dir=_folder(), prefix=f"{place}-")) / (
        path.resolve().parent.name or "root"
    )
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    copied: dict[Path, tuple[str, int]] = {}
    for file in files:
        copy = target / path.name / file.relative_to(path) if path.is_dir() else target / path.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        copied[file] = (_copy_hashed(file, fd), copy.stat().st_size)
    return target / path.name, copied


def _copy_hashed(path: Path, fd: int) -> str:
    """Copy ``path`` into the open file ``fd`` (closed after), block by block; the sha256 of
    the bytes copied."""
    import hashlib  # OpenSSL loads when a file is hashed, not with every command

    digest = hashlib.sha256()
    with open_regular(path) as src, os.fdopen(fd, "wb") as out:
        pause_at(f"source-opened/{path.name}")
        first = True
        while block := src.read(BLOCK):
            digest.update(block)
            out.write(block)
            if first:
                pause_at(f"source-reading/{path.name}")
                first = False
    return digest.hexdigest()


@contextmanager
def open_verified(
    path: Path, known: dict[str, tuple[tuple[int, ...], str]]
) -> Iterator[tuple[BinaryIO, str, Callable[[], None]]]:
    """Open ``path`` once and yield ``(file, sha256, check)``, the sha256 being that of the
    open file: from ``known`` (by absolute path) when the file's signature is the one recorded
    there, else hashed through the file, which is then rewound. ``check()`` raises a
    :class:`ChecksumError` if the file changed since it was opened (its signature moved): call
    it before keeping what was read; leaving the block checks too. Example::

        with open_verified(Path("hf_pec.zip"), {}) as (f, sha, check):
            names = zipfile.ZipFile(f).namelist()
            check()
    """
    with path.open("rb") as f:
        before = signature(f.fileno())
        entry = known.get(os.path.abspath(path))
        if entry is not None and entry[0] == before:
            sha = entry[1]
        else:
            import hashlib

            sha = hashlib.file_digest(f, "sha256").hexdigest()
            f.seek(0)

        def check() -> None:
            if signature(f.fileno()) != before:
                raise ChecksumError(
                    f"{path}: changed while convbank read it (sha256 {sha} before); nothing "
                    "was kept from it — leave the file alone while convbank reads it, and run "
                    "the command again",
                    path=path,
                    actual=sha,
                )

        pause_at(f"source-opened/{path.name}")
        yield f, sha, check
        check()
