"""Where a predictions file may be written: never among convbank's own files, and what
cannot be written there is said before a run (``bench --write-predictions``), not after it."""

from __future__ import annotations

import os
from pathlib import Path

from convbank._atomic import check_replaceable, name_max
from convbank.errors import BenchError

__all__ = ["refuse_convbanks_own", "refuse_unwritable"]


def refuse_convbanks_own(path: Path) -> None:
    """Refuse (:class:`BenchError`) a predictions file in the bank or among convbank's own
    files under ``CONVBANK_HOME`` (:func:`convbank.settings.convbanks_own`), as a report
    there is: it would replace the bank's own files (its manifest)."""
    from convbank.settings import convbanks_own

    where = convbanks_own(path)
    if where is not None:
        raise BenchError(
            f"{path}: predictions may not be written {where}, where convbank keeps its own files; "
            "name a file elsewhere",
            path=path,
        )


def refuse_unwritable(path: Path) -> None:
    """Refuse (:class:`BenchError`, exit 2) a predictions file that cannot be written, before
    a run rather than after its minutes: one among convbank's own files
    (:func:`refuse_convbanks_own`), one whose folder is not there, is not a folder or cannot
    be written in, one that is a folder, what :func:`~convbank._atomic.atomic_write` would
    refuse to replace (a device, a FIFO, or a link to one), a name longer than its folder's
    file names may be."""
    refuse_convbanks_own(path)
    folder = path.parent
    if not folder.is_dir():
        why = "is not there" if not os.path.lexists(folder) else "is not a folder"
        problem = f"its folder {folder} {why}; make it first, or name a file elsewhere"
    elif len(os.fsencode(path.name)) > (most := name_max(folder)):
        problem = (
            f"its name is longer than the {most} bytes a file's name may be there; name a file elsewhere"
        )
    elif path.is_dir():
        problem = "a folder, not a file to write the predictions to"
    elif not os.access(folder, os.W_OK | os.X_OK):
        problem = f"its folder {folder} cannot be written in; name a file elsewhere"
    elif (kind := _not_replaceable(path)) is not None:
        problem = f"{kind}; name a file elsewhere"
    else:
        return
    raise BenchError(f"{path}: {problem}", path=path)


def _not_replaceable(path: Path) -> str | None:
    """What stands at ``path`` that a predictions file may not replace, said as
    ``a device, not a regular file``; None where a file may be written."""
    try:
        check_replaceable(path)
    except OSError as exc:
        return str(exc.strerror)
    return None
