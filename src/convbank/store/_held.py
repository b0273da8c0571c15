"""A bank table file held open for reading (:class:`HeldFile`): every byte a reader gets
from it comes through the descriptor whose footer was checked against the manifest, and
only while the file is as it was then.

A reader that checks a file and then hands its *path* to Arrow (or DuckDB through Arrow)
reads whatever is at the path when the scan gets to it: a valid Parquet file of another
split renamed into its place after the check, a second into a long query, was served as
the checked split's rows. A :class:`HeldFile` is what the readers get instead: a rename
changes nothing it reads (the descriptor holds the checked inode), and a write to that
inode (its size, mtime or ctime moved) has its footer checked again through the descriptor
before the next read, so another file's bytes written in place are refused
(:func:`~convbank.store.integrity.checked_footer`), while a file merely unlinked or renamed
over by a rebuild (its ctime moves and its links drop, its bytes do not) reads on. A file
written at all since it was checked (its size or mtime moved, or its ctime without a link
dropped: a write whose mtime was set back) has what was read from it refused even when its
footer checks again: the bytes read may have been another file's, put back since.

Arrow reads a held file natively through :meth:`HeldFile.path` (``/dev/fd/N``, which opens
the descriptor's own file) wherever the system has one: a Python file object handed to
Arrow's threaded readers made the interpreter abort or hang as it exited (apache/arrow
#50482; 7 of 25 ``convbank query`` runs here ended ``terminate called without an active
exception``, exit 134). What a native read got is vouched for afterwards by
:meth:`HeldFile.verify`: a file written since its footer was checked is checked again
before the answer is given.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

from convbank.errors import DamagedBankError
from convbank.store.integrity import checked_footer, damaged, first_line
from convbank.store.manifest import FileRef

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["HeldFile"]

_DESCRIPTORS = Path("/dev/fd")
"""Where the system names each open descriptor of this process as a path (Linux, macOS)."""


def _state(fd: int) -> tuple[int, int, int, int]:
    st = os.fstat(fd)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink)


def _written(was: tuple[int, int, int, int], now: tuple[int, int, int, int]) -> bool:
    """Whether the file may have been written between the two states: anything moved but
    its being unlinked (a rebuild renaming another file over it, a clean-up removing it),
    which moves its ctime and drops its links, nothing else."""
    return now[:2] != was[:2] or (now[2] != was[2] and now[3] >= was[3])


class HeldFile:
    """A bank file open for reading, its footer checked through its descriptor: a read-only,
    seekable file object (what Arrow's ``PythonFile`` reads through), reading with ``pread``
    at its own position (a forked child shares no offset with its parent); it owns ``fd``,
    closed at once when the footer is refused. ``seen`` is told
    of each damage it finds (the snapshot keeps it, to name the file when a DuckDB scan
    fails). Arrow never closes it; its descriptor is closed by :meth:`release`, or once
    nothing refers to it.

    Example::

        fd = os.open(ref.path, os.O_RDONLY | os.O_NONBLOCK)
        held = HeldFile(fd, ref)            # checks the footer, or DamagedBankError
        table = pq.read_table(held)         # the checked file's rows, whatever its path holds now
        held.release()
    """

    mode = "rb"

    def __init__(self, fd: int, ref: FileRef, seen: Callable[[DamagedBankError], None] | None = None) -> None:
        self._fd = fd
        self._release = weakref.finalize(self, os.close, fd)
        self.ref = ref
        self._seen = seen
        self._at = 0
        self._size = 0
        self._state = (0, 0, 0, 0)
        try:
            self.meta: pq.FileMetaData = self._check()
        except BaseException:
            self._release()  # the descriptor is this object's from the start: closed once
            raise

    def _check(self) -> pq.FileMetaData:
        """Check the footer through the descriptor (as the file is now) and remember the
        state it was checked in."""
        state = _state(self._fd)
        meta = checked_footer(self.ref, cast("BinaryIO", _Raw(self._fd)))
        self._size, self._state = state[0], state
        return meta

    def release(self) -> None:
        """Close the descriptor (idempotent)."""
        self._release()

    def fileno(self) -> int:
        """The descriptor."""
        return self._fd

    def path(self) -> str | None:
        """A path that opens the held file itself (``/dev/fd/N``), whatever its name in the
        bank holds now, for Arrow's own readers (no Python file object, no GIL); None where
        the system names no descriptors (read through this object then)."""
        found = _DESCRIPTORS / str(self._fd)
        return str(found) if _DESCRIPTORS.is_dir() and self._release.alive else None

    def verify(self) -> None:
        """Vouch for what was read through :meth:`path` since the last call: it came from
        the file checked, or this raises :class:`~convbank.errors.DamagedBankError` naming
        it. A file unlinked since (its ctime moved, a link dropped) has its footer checked
        again; one written since (its size or mtime moved, or its ctime with no link
        dropped) is refused even when its footer checks again, since what was read may have
        been other bytes put back since (before: a file written with another split's bytes
        and put back before the check served that split's rows as its own). The footer
        checked again, the next reads are vouched for anew."""
        try:
            was = self._state
            if _state(self._fd) != was:
                self._check()
                if _written(was, self._state):
                    raise DamagedBankError(
                        damaged(self.ref, "corrupt (written in place while it was read)"), path=self.ref.path
                    )
        except DamagedBankError as exc:
            if self._seen is not None:
                self._seen(exc)
            raise
        except OSError as exc:
            error = DamagedBankError(damaged(self.ref, f"unreadable ({first_line(exc)})"), path=self.ref.path)
            if self._seen is not None:
                self._seen(error)
            raise error from exc

    def read(self, size: int = -1) -> bytes:
        """``size`` bytes from the position (the rest of the file for -1), checked first:
        a file written since its footer was checked has it checked again."""
        self.verify()
        try:
            if size is None or size < 0:
                size = max(self._size - self._at, 0)
            data = os.pread(self._fd, size, self._at)
        except OSError as exc:
            error = DamagedBankError(damaged(self.ref, f"unreadable ({first_line(exc)})"), path=self.ref.path)
            if self._seen is not None:
                self._seen(error)
            raise error from exc
        self._at += len(data)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Move the position (``os.SEEK_SET``, ``SEEK_CUR`` or ``SEEK_END``)."""
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._at, os.SEEK_END: self._size}[whence]
        self._at = max(base + offset, 0)
        return self._at

    def tell(self) -> int:
        """The position."""
        return self._at

    @property
    def closed(self) -> bool:
        """False while the descriptor is open."""
        return not self._release.alive

    def close(self) -> None:
        """Nothing: Arrow calls it when a reader is done, but a dataset scans its files again
        (:meth:`release` closes the descriptor)."""

    def readable(self) -> bool:
        """True."""
        return True

    def seekable(self) -> bool:
        """True."""
        return True

    def writable(self) -> bool:
        """False."""
        return False


class _Raw:
    """The descriptor as a file for :func:`checked_footer` (its own position, ``pread``)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._at = 0

    def fileno(self) -> int:
        return self._fd

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._at, os.SEEK_END: os.fstat(self._fd).st_size}[whence]
        self._at = base + offset
        return self._at

    def read(self, size: int) -> bytes:
        data = os.pread(self._fd, size, self._at)
        self._at += len(data)
        return data
