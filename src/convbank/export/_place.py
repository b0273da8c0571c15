"""Where an export's files go, and what it may replace there.

An export writes into a staging folder inside ``output`` (``.convbank-staging.<pid>.*``), so
that nothing is written outside it. Once the staging folder is complete, under a lock
(``.convbank-exports.lock``: concurrent exports into one folder take turns), the export

1. checks each path it wrote (:func:`check_targets`): no path reaches out of ``output``
   through a symbolic link, and none holds another export's files unless ``overwrite``;
2. writes the journal, ``.convbank-exports.moving.json``: the moves it is about to make
   (``moving``: its staging folder, paths, export and the paths it removes);
3. moves each path to its place (a replaced folder goes into the staging folder), then
   writes the record, ``.convbank-exports.json`` (which export wrote each path: dataset,
   format, parts, ``where`` and ``as``), removes the journal and the staging folder.

The record, up to 8 MiB, is read, checked and written once an export (the journal is
small): its cost follows the record's size once, and what the export writes.
Killed during step 3 (``kill -9``), the export's staging folder and journal stay, and the
next export into the folder finishes the moves first (:func:`recover`): the new export
whole, the old one whole if it was killed before step 2. Staging folders of exports whose
process is gone are removed by the next export; SIGINT and SIGTERM remove their own.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from convbank._atomic import (
    atomic_write_text,
    kind_of,
    process_alive,
    remove_dead_temporaries,
    what_is_there,
)
from convbank._lazy import lazy
from convbank._names import path_not_text
from convbank.errors import ExportError
from convbank.export._record import (
    JOURNAL,
    RECORD,
    STAGING,
    Export,
    _load,
    _moving,
    _overlapping,
    _read,
    _same,
    _text,
    _write,
    describe,
    replaced_whole,
)
from convbank.settings import convbanks_own, pause_at

if TYPE_CHECKING:
    import filelock
else:
    filelock = lazy("filelock")

__all__ = [
    "JOURNAL",
    "LOCK",
    "RECORD",
    "STAGING",
    "check_targets",
    "describe",
    "pause",
    "placed",
    "recover",
    "refuse_convbanks_own",
]

LOCK = ".convbank-exports.lock"
"""The lock that concurrent exports into one folder take to move their files and record them."""


def pause(point: str) -> None:
    """A test's hook (``CONVBANK_TEST_PAUSE=POINT:FILE``): at ``point`` (``staged``,
    ``journal``, ``moved``, ``recorded``) create ``FILE`` and wait until it is removed."""
    pause_at(point)


def _no_link_on_the_way(output: Path, rel: str) -> None:
    """Refuse a path whose folders in ``output`` include a symbolic link: the export would
    write, or replace, what lies outside ``output`` (the path itself may be a link: it is
    replaced, not followed)."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise ExportError(f"{rel!r} is not a path inside {output}", path=rel)
    folder = output
    for part in parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            raise ExportError(
                f"{folder} is a symbolic link (to {os.readlink(folder)}); an export writes only inside "
                f"{output}, never through a link: remove the link, or export into another folder",
                path=folder,
            )


def check_targets(
    output: Path,
    paths: Sequence[str],
    export: Export,
    *,
    overwrite: bool,
    record: dict[str, Export] | None = None,
) -> None:
    """Refuse (one line) when a path this export would write in ``output`` goes through a
    symbolic link, or holds another export's files or files convbank did not write, unless
    ``overwrite``. ``record``: the folder's record (:func:`_read`) where the caller has it."""
    if not output.is_dir():
        return
    for rel in paths:
        _no_link_on_the_way(output, rel)
    if overwrite:
        return
    record = _read(output) if record is None else record
    hits = [k for k in _overlapping(record, paths) if not _same(record[k], export)]
    first = next(iter(_overlapping(paths, hits)), None)  # the first path another export holds
    if first is not None:
        owned = _overlapping(hits, [first])[0]
        raise ExportError(
            f"{output / owned} holds {describe(record[owned])}; {describe(export)} would replace it: "
            "pass --overwrite (overwrite=True), or export into another folder",
            format=export.get("format"),
            path=output / owned,
        )
    for rel in paths:
        target = output / rel
        in_the_way = [p for p in _folders_on_the_way(output, rel) if os.path.lexists(p) and not p.is_dir()]
        if (target.exists() or target.is_symlink()) and rel not in record:
            in_the_way.append(target)
        elif rel in record:  # a file put into the folder this export wrote is not the export's
            in_the_way += _not_written(target, record[rel].get("files"))[:1]
        if in_the_way:
            raise ExportError(
                f"{in_the_way[0]} exists and convbank did not write it there; {describe(export)} would "
                "replace it: pass --overwrite (overwrite=True), or export into another folder",
                format=export.get("format"),
                path=in_the_way[0],
            )


def _move(output: Path, staging: Path, rel: str) -> None:
    """Move ``staging/rel`` to ``output/rel``; a folder (or link) it replaces goes into
    ``staging``, removed with it."""
    _no_link_on_the_way(output, rel)
    _no_link_on_the_way(staging, rel)  # nor moved in from outside through a link in staging
    target, staged = output / rel, staging / rel
    for folder in _folders_on_the_way(output, rel):  # a file, a FIFO there: replaced (--overwrite)
        if os.path.lexists(folder) and not folder.is_dir():
            _discard(folder, staging)
    target.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(target) and (staged.is_dir() or (target.is_dir() and not target.is_symlink())):
        _discard(target, staging)
    try:
        os.replace(staged, target)
    except OSError as exc:  # named as the path being written, not the staged one no one saw
        raise type(exc)(exc.errno, exc.strerror, str(target)) from exc


def _remove(output: Path, staging: Path, removing: list[str]) -> None:
    """Move the paths of the exports an ``--overwrite`` replaces whole (:func:`replaced_whole`)
    into ``staging``, removed with it; one already gone is passed over, and none is reached
    through a link (:func:`_no_link_on_the_way`)."""
    for rel in removing:
        _no_link_on_the_way(output, rel)
        if os.path.lexists(output / rel):
            _discard(output / rel, staging)


def _folders_on_the_way(output: Path, rel: str) -> list[Path]:
    """The folders in ``output`` that hold ``output/rel``, outermost first."""
    parts = PurePosixPath(rel).parts[:-1]
    return [output.joinpath(*parts[: n + 1]) for n in range(len(parts))]


def _discard(path: Path, staging: Path) -> None:
    """Move what an export replaces into ``staging``'s ``.replaced``, removed with it."""
    trash = staging / ".replaced"
    trash.mkdir(exist_ok=True)
    os.replace(path, trash / f"{len(os.listdir(trash))}.{os.urandom(4).hex()}")


def recover(output: Path) -> dict[str, Any]:
    """Finish the moves of an export killed while moving its files in (the record's
    ``moving``), so that its new files are whole and recorded. Called under the lock. A move
    the system refuses (``Invalid cross-device link``: a mount point where the export makes
    a folder) is not tried again: that path is recorded as no export's and the journal
    ends, so that the folder is never left to fail every later export. Returns the record
    as it is then (:func:`_load`)."""
    data = _load(output)
    moving = _moving(output, data)
    if moving is None:
        return data
    staging, paths, _, removing = moving
    refused = set()
    if staging.is_dir():  # a path the record no longer lists was removed before it was written
        _remove(output, staging, [k for k in removing if k in data["exports"]])
        for rel in paths:
            if os.path.lexists(staging / rel):
                try:
                    _move(output, staging, rel)
                except OSError:
                    refused.add(rel)
    _write(output, {k: v for k, v in _read(output, data).items() if k not in refused})
    (output / JOURNAL).unlink(missing_ok=True)
    shutil.rmtree(staging, ignore_errors=True)
    return _load(output)


def _remove_dead_staging(output: Path) -> None:
    """Remove the staging folders of exports whose process is gone (killed, or stopped by a
    signal that ran no cleanup), and the temporary files of a record that a killed export
    was writing (:func:`convbank._atomic.remove_dead_temporaries`: their writer's pid is in
    their names). Called under the lock, after :func:`recover`."""
    remove_dead_temporaries(output / RECORD)
    remove_dead_temporaries(output / JOURNAL)
    for entry in output.iterdir():
        if not entry.name.startswith(STAGING) or entry.is_symlink() or not entry.is_dir():
            continue
        pid = entry.name[len(STAGING) :].partition(".")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


@contextmanager
def _locked(output: Path) -> Iterator[dict[str, Any]]:
    """Hold ``output``'s lock, recovered (:func:`recover`) and cleaned; yields its record."""
    lock = output / LOCK
    try:
        mode: int | None = os.lstat(lock).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):  # never opened through a link, nor a folder
        what = f"a symbolic link (to {os.readlink(lock)})" if stat.S_ISLNK(mode) else kind_of(mode)
        raise ExportError(
            f"{lock} is {what}, not convbank's lock of exports; remove it, or export into another folder",
            path=lock,
        )
    _create(lock)
    with filelock.FileLock(str(lock)):
        data = recover(output)
        _remove_dead_staging(output)
        yield data


def _create(lock: Path) -> None:
    """Create the lock's file unless it is there, never through a link: a folder in which
    no file can be made says so here, as :class:`OSError` naming it. FileLock takes a
    failure to create it (``ENOENT`` in a folder that exists: ``/proc/self``) for another
    process's lock gone meanwhile, and tries again for ever."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    os.close(os.open(lock, flags, 0o644))


def _commit(output: Path, staging: Path, rels: list[str], export: Export, overwrite: bool) -> None:
    with _locked(output) as data:
        current = _read(output, data)  # read once: a record of many entries costs its size once
        check_targets(output, rels, export, overwrite=overwrite, record=current)
        removing = [
            k
            for k in replaced_whole(current, rels, export)
            if not _not_written(output / k, current[k].get("files"))
        ]
        gone = {*_overlapping(current, rels), *removing}  # a set: looked up once an entry
        record = {k: v for k, v in current.items() if k not in gone}
        entries = {rel: _with_files(export, staging / rel) for rel in rels}
        final = _text(output, {**record, **entries})  # refused here when too large: nothing moved
        journal = {"staging": staging.name, "paths": rels, "export": export, "removing": removing}
        atomic_write_text(output / JOURNAL, json.dumps(journal, sort_keys=True) + "\n")
        pause("journal")
        try:
            _remove(output, staging, removing)
            for n, rel in enumerate(rels):
                _move(output, staging, rel)
                if n == 0:
                    pause("moved")
            atomic_write_text(output / RECORD, final)
            (output / JOURNAL).unlink()  # the record written: the journal is done with
        except BaseException:  # interrupted or failed mid-way: the moves are finished
            with contextlib.suppress(Exception):
                recover(output)
            raise
        pause("recorded")


def _with_files(export: Export, path: Path) -> Export:
    """``export``'s entry for ``path``: a folder's lists the files it wrote there (``files``),
    so that a file put into it later is not taken for the export's (:func:`_not_written`)."""
    if path.is_symlink() or not path.is_dir():
        return export
    files = (p for p in path.rglob("*") if p.is_symlink() or not p.is_dir())
    return {**export, "files": sorted(p.relative_to(path).as_posix() for p in files)}


def _not_written(folder: Path, files: object) -> list[Path]:
    """The files in ``folder`` (an export's, whose entry lists ``files``) that it did not
    write; none where its entry lists none (a record from before the lists)."""
    if not isinstance(files, list) or folder.is_symlink() or not folder.is_dir():
        return []
    written = set(files)
    found = (p for p in sorted(folder.rglob("*")) if p.is_symlink() or not p.is_dir())
    return [p for p in found if p.relative_to(folder).as_posix() not in written]


def refuse_convbanks_own(
    output: Path, bank: Path | None = None, paths: Sequence[Path | str] = (), fmt: str | None = None
) -> None:
    """Refuse (:class:`ExportError`) an output folder in the bank (``bank``, or the default
    one) or among convbank's own files under ``CONVBANK_HOME``
    (:func:`convbank.settings.convbanks_own`), and a path of ``paths`` (relative to
    ``output``) in either or holding either: the export would write among, or replace,
    convbank's own files (the bank's table folders, its manifest).
    Example: ``refuse_convbanks_own(Path("exports"), paths=["casino/train.jsonl"])``."""
    where = convbanks_own(output, bank)
    if where is not None:
        raise ExportError(
            f"{output}: an export's folder may not be {where}, where convbank keeps its own files; "
            "name a folder elsewhere",
            format=fmt,
            path=output,
        )
    for rel in paths:
        where = convbanks_own(output / rel, bank, holding=True)
        if where is not None:
            raise ExportError(
                f"{output / rel}: the export would write there, {where}, where convbank keeps its own "
                "files; name another folder",
                format=fmt,
                path=output / rel,
            )


@contextmanager
def placed(output: Path, export: Export, *, overwrite: bool) -> Iterator[tuple[Path, list[Path]]]:
    """A staging folder inside ``output`` and a list to put the paths written in it; on
    success each written path is checked (:func:`check_targets`) and moved to its place in
    ``output``, and the record updated; on failure ``output`` is left as it was (the folders
    the export created, ``output`` and those above it, are removed again)."""
    problem = path_not_text(output)
    if problem is not None:  # pyarrow and datasets cannot open such a path: refused for every format
        raise ExportError(f"{output}: {problem}, which not every writer can open; rename it", path=output)
    made = [p for p in (output, *output.parents) if not os.path.lexists(p)]  # innermost first
    there = made[-1].parent if made else output  # the folder the export makes its own in
    if os.path.lexists(there) and not there.is_dir():  # a link to nothing is in the way too
        where = "there" if not made else f"{output} under it"
        what = "a symbolic link to nothing" if not there.exists() else what_is_there(there)
        raise ExportError(f"{there} is {what}; the export writes a folder {where}", path=there)
    refuse_convbanks_own(output)
    done = False
    staging: Path | None = None
    try:
        output.mkdir(parents=True, exist_ok=True)  # in the try: a folder it made goes if one fails
        with _locked(output):  # leftovers of dead exports go first
            staging = _staging(output)
        written: list[Path] = []
        try:
            yield staging, written
            pause("staged")
            rels = sorted({p.relative_to(staging).as_posix() for p in written})
            _commit(output, staging, rels, export, overwrite)
        except OSError as exc:
            if exc.filename is not None or exc.errno is None:
                raise
            # a write or a close names no file (a full disk, a file-size limit): say the folder
            raise OSError(exc.errno, exc.strerror, str(output)) from exc
        done = True
    finally:
        if staging is not None and (done or not _load_moving(output, staging)):
            shutil.rmtree(staging, ignore_errors=True)
        if made and not done:
            _unmake(output, made)


def _staging(output: Path) -> Path:
    """A new staging folder in ``output``, as an absolute path: a writer's library never
    reads it as anything else (``datasets`` takes a path starting with ``~``, the folder
    ``-o '~'``, for the home folder, and wrote there). What keeps it from being made (a
    folder that cannot be written in) names ``output``, the folder asked for, never the
    staging folder's name, which no one saw and which is not there."""
    try:
        made = tempfile.mkdtemp(dir=output.absolute(), prefix=f"{STAGING}{os.getpid()}.", suffix=".tmp")
        return Path(made)
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, str(output)) from exc


def _unmake(output: Path, made: list[Path]) -> None:
    """Remove the folders a failed export made, ``output`` (holding its lock at most) and
    those above it, innermost first, while each is empty: the disk as it was (a folder
    another process wrote into meanwhile is kept, and those above it)."""
    with contextlib.suppress(OSError):  # ``output`` itself may never have been made
        if set(os.listdir(output)) <= {LOCK}:
            (output / LOCK).unlink(missing_ok=True)
    for folder in made:
        if os.path.lexists(folder):
            try:
                folder.rmdir()
            except OSError:  # not empty (or not ours to remove): it and those above it stay
                return


def _load_moving(output: Path, staging: Path) -> bool:
    """Whether the record names ``staging`` as moving in (kept then for :func:`recover`)."""
    try:
        moving = _load(output).get("moving")
    except ExportError:
        return False
    return isinstance(moving, dict) and moving.get("staging") == staging.name
