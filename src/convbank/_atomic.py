"""Files: atomic writes (a temporary file in the same folder, flushed, then renamed), their
sha256, and small files read within bounds (:func:`read_regular`)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from convbank._starting import stop_if_signalled
from convbank.errors import ChecksumError

__all__ = [
    "NAME_MAX",
    "AtomicFile",
    "atomic_file",
    "atomic_write",
    "atomic_write_text",
    "check_replaceable",
    "folder_beside",
    "kind_of",
    "name_max",
    "open_regular",
    "plain_file",
    "process_alive",
    "read_json",
    "read_regular",
    "remove_dead_temporaries",
    "sha256_file",
    "temporary_beside",
    "what_is_there",
]


T = TypeVar("T")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old or the new file, never half."""
    atomic_write(path, text.encode("utf-8"))


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half."""
    with atomic_file(path) as f:
        f.write(data)


class AtomicFile:
    """A file written a piece at a time that replaces ``path`` (flushed to disk) on
    :meth:`commit`, or is removed on :meth:`discard` (``path`` left as it was); a discard
    after the commit does nothing.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "rejects.jsonl"
    >>> out = AtomicFile(target)
    >>> _ = out.file.write(b"one\\n")
    >>> target.exists()
    False
    >>> out.commit()
    >>> target.read_bytes()
    b'one\\n'
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        check_replaceable(path)
        fd, self.tmp = temporary_beside(path)
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            self.file: BinaryIO = io.BufferedWriter(_Named(fd, path))
        except BaseException:
            os.close(fd)
            Path(self.tmp).unlink(missing_ok=True)
            raise
        self.done = False

    def commit(self) -> None:
        """Replace ``path`` with what was written."""
        try:
            self.file.flush()
            _named(os.fsync, self.path, self.file.fileno())
            self.file.close()
            check_replaceable(self.path)
            stop_if_signalled()  # a command a signal stopped commits nothing
            os.replace(self.tmp, self.path)
        except BaseException:
            self.discard()
            raise
        self.done = True

    def discard(self) -> None:
        """Remove what was written, unless it was committed: the temporary file goes even
        when closing it fails (a full disk fails the flush of what was still buffered)."""
        if not self.done:
            self.done = True
            try:
                with contextlib.suppress(OSError):
                    self.file.close()
            finally:
                Path(self.tmp).unlink(missing_ok=True)


def _named(call: Callable[..., T], path: Path, *args: Any) -> T:
    """``call(*args)``, an :class:`OSError` that names no file (a write's ``ENOSPC`` or
    ``EFBIG``) naming ``path``, the file being written."""
    try:
        return call(*args)
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


class _Named(io.FileIO):
    """A temporary file's descriptor whose failed writes name the file it will replace
    (``error: report.html: no space left on the device``), as the command line says it."""

    def __init__(self, fd: int, path: Path) -> None:
        super().__init__(fd, "wb")
        self.target = path

    def write(self, data: Any, /) -> int:
        return _named(super().write, self.target, data)


def check_replaceable(path: Path) -> None:
    """Refuse to replace what is not a file: a FIFO, a device or a socket at ``path``, or a
    link to one (``-o /dev/stdout``), would be renamed over, the node itself gone (as root,
    ``/dev/full`` replaced by a regular file); a folder (``-o ''``, the current one) is said
    as itself, not as the rename's error naming the temporary file; a link to a file is
    replaced, not followed. Raises :class:`OSError` ``EINVAL`` naming the path ("a device,
    not a regular file")."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # nothing there (or a dangling link): the rename says what else is wrong
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, f"{kind_of(mode)}, not a regular file", str(path))


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (another user's counts; a number no pid can be, too:
    what it names is then never taken for gone). Example: ``process_alive(os.getpid())``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process; a number no pid is
        return True
    return True


NAME_MAX = 255
"""The most bytes a file's name may hold where its folder does not say (Linux's, macOS's and
Windows' file systems): :func:`name_max`'s answer then."""


def name_max(folder: Path) -> int:
    """The most bytes a file's name may hold in ``folder``, as its file system says
    (``pathconf``'s ``PC_NAME_MAX``), asked of the nearest folder at or above it that is
    there (an export's folder is made by the export); :data:`NAME_MAX` where none says. The
    one rule of every name convbank writes: an export's files, a file written whole
    (``--write-predictions``) and the room its temporary file leaves (:func:`_owner`).

    >>> name_max(Path("/no/such/folder")) == name_max(Path("/"))
    True
    """
    for there in (folder, *folder.absolute().parents):
        try:
            return os.pathconf(there, "PC_NAME_MAX")
        except (OSError, ValueError):  # not there (or not a folder), or the system says nothing
            continue
    return NAME_MAX


_TEMPORARY_PART = 36
"""The bytes ``.<pid>.<random>.tmp`` takes of a temporary file's name, at most (a pid of 20
digits, 8 random characters, dots); the rest of :func:`name_max` is left for its file's name."""


def _owner(path: Path) -> str:
    """What the temporary files of ``path`` are named after: ``.<name>``, or, where the name
    would leave them too long a name (one of 220 bytes or more where a name holds 255, which
    the file itself can hold), its first bytes and ``~`` and a digest of it, one for each name.

    >>> _owner(Path("out.jsonl")), len(os.fsencode(_owner(Path("x" * 250 + ".jsonl"))))
    ('.out.jsonl', 219)
    """
    name = os.fsencode(path.name)
    room = name_max(path.parent) - _TEMPORARY_PART
    if len(name) + 1 <= room:
        return f".{path.name}"
    import hashlib

    digest = hashlib.sha256(name).hexdigest()[:16]
    return "." + os.fsdecode(name[: room - 18]) + "~" + digest


def remove_dead_temporaries(path: Path, *, folders: bool = False) -> None:
    """Remove the temporary files of ``path`` (``.<name>.<pid>.<random>.tmp``, as
    :class:`AtomicFile` names them) that a process now gone was writing: killed (``kill -9``)
    before it could commit or discard. A live process's file, another file, a link or a
    folder is left alone (with ``folders``, the folders so named, as :func:`folder_beside`
    makes them, are removed instead of files); a folder that cannot be listed is left as it
    is.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / ".out.jsonl.999999999.abc.tmp").write_bytes(b"half")
    >>> _ = (folder / ".out.jsonl.7.999999999.abc.tmp").write_bytes(b"of out.jsonl.7")
    >>> remove_dead_temporaries(folder / "out.jsonl")
    >>> sorted(p.name for p in folder.iterdir())
    ['.out.jsonl.7.999999999.abc.tmp']
    """
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        # read from the end: the random part holds no dot, the name may (``r.jsonl``, ``r.5``)
        owner, _, random = entry.name.removesuffix(".tmp").rpartition(".")
        base, _, pid = owner.rpartition(".")
        if not entry.name.endswith(".tmp") or not random or base != _owner(path) or not pid.isdigit():
            continue
        if int(pid) == os.getpid() or process_alive(int(pid)):
            continue
        try:
            if folders and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            elif not folders and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
        except OSError:
            pass


def temporary_beside(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path`` (its descriptor and path), named
    ``.<name>.<pid>.<random>.tmp`` so that a later writer of ``path`` knows whose it is:
    the ones of processes now gone are removed first (:func:`remove_dead_temporaries`)."""
    remove_dead_temporaries(path)
    try:
        return tempfile.mkstemp(dir=path.parent, prefix=f"{_owner(path)}.{os.getpid()}.", suffix=".tmp")
    except OSError as exc:  # named after the file asked for, not a temporary one never seen
        raise type(exc)(exc.errno, exc.strerror, str(path)) from exc


@contextmanager
def folder_beside(path: Path) -> Iterator[Path]:
    """A new private folder beside ``path`` (``.<name>.<pid>.<random>.tmp``, mode 0700) for
    a writer of a partial file (a download being written), removed with all
    it holds when the block ends; the ones of processes now gone (killed with ``kill -9``
    while they wrote) are removed first, as :func:`remove_dead_temporaries` removes files.

    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / ".f.json.999999999.abc.tmp").mkdir()
    >>> _ = (folder / ".f.json.999999999.abc.tmp" / "tmpab12cd34").write_bytes(b"half")
    >>> with folder_beside(folder / "f.json") as mine:
    ...     _ = (mine / "tmpef56gh78").write_bytes(b"whole")
    ...     sorted(p.name for p in folder.iterdir()) == [mine.name]
    True
    >>> list(folder.iterdir())
    []
    """
    remove_dead_temporaries(path, folders=True)
    made = Path(tempfile.mkdtemp(dir=path.parent, prefix=f"{_owner(path)}.{os.getpid()}.", suffix=".tmp"))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """:class:`AtomicFile` as a block: committed when it ends, discarded if it raises."""
    out = AtomicFile(path)
    try:
        yield out.file
    except BaseException:
        out.discard()
        raise
    out.commit()


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file (the standard library's ``hashlib.file_digest``)."""
    import hashlib  # OpenSSL's bindings: not loaded by the commands that only print

    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, by its ``st_mode``, for an error line.

    >>> kind_of(stat.S_IFIFO)
    'a FIFO (named pipe)'
    """
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def what_is_there(path: Path) -> str:
    """What ``path``, there but no folder, is, for an error line: ``a file``, or ``a device``
    (``/dev/null``), ``a FIFO (named pipe)``, ``a socket`` (:func:`kind_of`).

    >>> what_is_there(Path("/dev/null"))
    'a device'
    """
    mode = path.stat().st_mode
    return "a file" if stat.S_ISREG(mode) else kind_of(mode)


def plain_file(path: Path) -> bool:
    """Whether ``path`` is a plain file itself: not a link (to one or not), a folder, a FIFO,
    a device, nor nothing.

    >>> plain_file(Path("/dev/null")), plain_file(Path("/no/such/file"))
    (False, False)
    """
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def read_json(path: Path, limit: int) -> Any:
    """The JSON value of the UTF-8 file ``path`` (:func:`read_regular`, at most ``limit``
    bytes). Raises :class:`OSError` as :func:`read_regular` does, and :class:`ValueError` for
    any text that is not one JSON value, a document nested too deep for Python's reader
    (``[[[[...``) included.

    >>> import tempfile
    >>> deep = Path(tempfile.mkdtemp()) / "deep.json"
    >>> _ = deep.write_text("[" * 100_000 + "]" * 100_000)
    >>> read_json(deep, 1 << 20)
    Traceback (most recent call last):
    ValueError: nested deeper than Python's JSON reader goes
    """
    import json

    text = read_regular(path, limit).decode("utf-8")
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested deeper than Python's JSON reader goes") from None


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes. It is opened
    without blocking, so a FIFO or a device there (or a link to one) is refused, never waited
    on or read without end, and its size is checked before it is read and again by the read
    itself (a file growing meanwhile is refused too). Raises :class:`OSError` naming the
    path: ``FileNotFoundError`` when nothing is there, ``EINVAL`` ("a FIFO (named pipe), not
    a regular file"), ``EFBIG`` ("larger than 16,777,216 bytes").

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "run.json").write_text("{}")
    >>> read_regular(folder / "run.json", 100)
    b'{}'
    >>> read_regular(folder, 100)
    Traceback (most recent call last):
    IsADirectoryError: [Errno 21] a folder, not a regular file: '...'
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        mode = st.st_mode
        if not stat.S_ISREG(mode):
            code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
            raise OSError(code, f"{kind_of(mode)}, not a regular file", str(path))
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, min(limit + 1 - size, 1 << 20) or 1)):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file now (opened without blocking, so a
    FIFO or a device put in its place is refused, not waited on or read), else a
    :class:`ChecksumError`: it is not the file that was checked. What a reader of a source
    folder's files opens them with (a folder is read in place, not copied). Example:
    ``with open_regular(Path("happy/train.txt")) as f: head = f.read(100)``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ChecksumError(
            f"{path} is no longer a regular file (it changed after it was checked); put the "
            "publisher's file back and run the command again",
            path=path,
        )
    return os.fdopen(fd, "rb")
