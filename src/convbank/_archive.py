"""Safe zip extraction: limits on what an archive may expand to, checks of every member's
path before anything is written, and streaming that counts what each member really holds.

Used by :mod:`convbank.fetch`; the caller extracts into a fresh temporary folder and renames it
into place, so a refused archive leaves nothing behind.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from convbank._atomic import read_json
from convbank._wording import counted
from convbank.errors import FormatError
from convbank.settings import env_number, pause_at

__all__ = [
    "DEEPEST",
    "EXTRACT_FLOOR",
    "EXTRACT_MEMBERS",
    "EXTRACT_RATIO",
    "RECORD",
    "extract_into",
    "extract_limits",
    "first_line",
    "intact",
    "remove_stale",
    "safe_extract",
    "stale",
]

EXTRACT_RATIO = 20
"""Default cap on what an archive may expand to, as a multiple of its own size. Measured with
zlib on the real files: CaSiNo and ConvAI2 JSON compress 6.1-7.5 times, PEC's persona text 2.6
times; Hugging Face's Arrow build of all of PEC, which repeats the personas in every example, is
1.47 GB, 5.8 times the 252,434,681-byte archive. So PEC may expand to about 5 GB, over three
times even that, while a bomb (deflate reaches 1,000 times) is stopped early."""

EXTRACT_FLOOR = 64 * 2**20
"""The default cap is at least this many bytes (64 MiB), so that small archives are not held
to their ratio."""

DEEPEST = 100
"""The most names a member's path may have (PEC's have 3): Python's walks of a folder tree
(``mkdir(parents=True)``, ``rglob``, ``shutil.rmtree``) recurse a call a folder and stop near
1,000."""

EXTRACT_MEMBERS = 10_000
"""Default cap on the members (files and folders, those a member's path implies included) of an
archive; PEC's needs 8 files."""


def extract_limits(archive_size: int) -> tuple[int, int]:
    """The most bytes and the most members an archive of ``archive_size`` bytes may expand to:
    ``CONVBANK_EXTRACT_MAX_BYTES`` (default :data:`EXTRACT_RATIO` times the archive's size, at
    least :data:`EXTRACT_FLOOR`) and ``CONVBANK_EXTRACT_MAX_MEMBERS`` (default
    :data:`EXTRACT_MEMBERS`)."""
    default = max(EXTRACT_FLOOR, EXTRACT_RATIO * archive_size)
    return (
        env_number("CONVBANK_EXTRACT_MAX_BYTES", default, size=True),
        env_number("CONVBANK_EXTRACT_MAX_MEMBERS", EXTRACT_MEMBERS, size=False),
    )


_LEGACY_EXTRACTED = re.compile(r"\d+-\d+(\.lock)?")
"""Extraction folders (and their locks) of convbank 0.1, keyed on size and mtime."""


def stale(area: Path, base: Path, sha: str) -> bool:
    """Whether older extractions of an archive (other contents, interrupted ones, the layout
    of convbank 0.1) lie beside the current one."""
    try:
        if any(p.name != sha for p in base.iterdir()):
            return True
        return any(_LEGACY_EXTRACTED.fullmatch(p.name) for p in area.iterdir())
    except OSError:
        return False


def remove_stale(area: Path, base: Path, sha: str) -> None:
    """Remove what :func:`stale` finds; the caller holds the file's extraction lock."""
    old = [p for p in base.iterdir() if p.name != sha] if base.is_dir() else []
    if area.is_dir():
        old += [p for p in area.iterdir() if _LEGACY_EXTRACTED.fullmatch(p.name)]
    for p in old:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def _refuse(archive: Path, what: str) -> FormatError:
    return FormatError(
        f"{archive}: {what}; refusing to extract this archive — re-fetch the file", path=archive
    )


def _past_limit(archive: Path, what: str, setting: str) -> FormatError:
    """The archive past one of its limits: ``what`` and the ``setting`` that raises it."""
    return FormatError(
        f"{archive}: {what} ({setting}); refusing to extract this archive — re-fetch the file, "
        "or raise the limit if it is the publisher's",
        path=archive,
    )


class _Node:
    """A path of the archive, as the first member to reach it left it: that member's name and
    parts, how deep this path lies in them, and whether it is a folder."""

    __slots__ = ("children", "depth", "folder", "name", "parts")

    def __init__(self, name: str, parts: tuple[str, ...], depth: int, folder: bool) -> None:
        self.name, self.parts, self.depth, self.folder = name, parts, depth, folder
        self.children: dict[str, _Node] = {}

    def shown(self) -> str:
        """The member's name where this path is the member, else the folder's path."""
        return self.name if self.depth == len(self.parts) else "/".join(self.parts[: self.depth]) + "/"


def _place(archive: Path, tree: dict[str, _Node], name: str, parts: tuple[str, ...], folder: bool) -> int:
    """Put a member's path in ``tree``, a folder at a time (in time and memory as its parts,
    however deep), and say how many paths it adds (its file and the folders it implies): one
    that collides with another member's, case-folded, refuses the archive."""
    level, added = tree, 0
    for depth, part in enumerate(parts, 1):
        is_dir = depth < len(parts) or folder
        other = level.get(part.casefold())
        if other is None:
            other = level[part.casefold()] = _Node(name, parts, depth, is_dir)
            added += 1
        elif not (is_dir and other.folder):
            if other.shown() == name:
                raise _refuse(archive, f"member {name!r} appears twice")
            if is_dir:
                raise _refuse(archive, f"member {name!r} would go inside {other.shown()!r}, a file")
            if other.folder:
                raise _refuse(archive, f"member {name!r} is a file where {other.shown()!r} needs a folder")
            raise _refuse(
                archive, f"members {other.shown()!r} and {name!r} would be extracted to the same path"
            )
        level = other.children
    return added


def _plan(
    archive: Path, infos: list[zipfile.ZipInfo], root: str, max_bytes: int, max_members: int
) -> list[tuple[zipfile.ZipInfo, tuple[str, ...]]]:
    """Check an archive's central directory before anything is written: its size and member
    count, then each member's path (no links, nothing outside, no collisions)."""
    if len(infos) > max_members:
        raise _past_limit(
            archive,
            f"{len(infos):,} members, more than the {max_members:,} allowed",
            "CONVBANK_EXTRACT_MAX_MEMBERS",
        )
    total = sum(i.file_size for i in infos if not i.is_dir())
    if total > max_bytes:
        raise _past_limit(
            archive,
            f"would expand to {counted(total, 'byte')}, more than the {max_bytes:,} allowed",
            f"CONVBANK_EXTRACT_MAX_BYTES, by default {EXTRACT_RATIO} times the archive's size",
        )
    tree: dict[str, _Node] = {}  # each case-folded name of a path: its first member, its folders
    plan, paths = [], 0
    for info in infos:
        name = info.filename
        pure = PurePosixPath(name)
        if pure.is_absolute() or ".." in pure.parts or "\\" in name or ":" in name:
            raise _refuse(archive, f"member {name!r} would be extracted outside the target folder")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise _refuse(archive, f"member {name!r} is a symbolic link")
        parts = tuple(p for p in pure.parts if p != ".")
        if len(parts) > DEEPEST:
            raise _refuse(
                archive, f"member {_shown(name)!r} has {len(parts):,} names, more than the {DEEPEST} allowed"
            )
        paths += _place(archive, tree, name, parts, info.is_dir())
        if paths > max_members:  # the folders a member's path implies are paths made too
            raise _past_limit(
                archive,
                f"member {_shown(name)!r} takes it beyond {max_members:,} files and folders, "
                "the most allowed",
                "CONVBANK_EXTRACT_MAX_MEMBERS",
            )
        if parts:
            plan.append((info, parts))
    if not any(parts[:1] == (root,) for _, parts in plan):
        raise FormatError(
            f"{archive}: no folder {root}/ inside; expected the publisher's layout "
            f"{root}/... — re-fetch the file",
            path=archive,
        )
    return plan


def safe_extract(
    archive: Path, dest: Path, root: str, max_bytes: int, max_members: int, *, opened: BinaryIO | None = None
) -> None:
    """Extract an archive into the empty folder ``dest`` as :func:`_plan` allows, counting the
    bytes each member really expands to (its header may lie); read from ``opened`` (the
    archive's file, already open and verified) when given, ``archive`` naming it."""
    try:
        with zipfile.ZipFile(opened if opened is not None else archive) as zf:
            budget = max_bytes
            for info, parts in _plan(archive, zf.infolist(), root, max_bytes, max_members):
                made = _create(archive, info, dest.joinpath(*parts))
                if made is None:  # a folder
                    continue
                try:
                    with zf.open(info) as src, made as out:
                        written = 0
                        while block := src.read(1 << 20):
                            written += len(block)
                            if written > info.file_size:
                                raise _refuse(
                                    archive,
                                    f"member {info.filename!r} holds more than the "
                                    f"{counted(info.file_size, 'byte')} the archive's directory declares",
                                )
                            if written > budget:
                                raise _refuse(
                                    archive,
                                    f"member {info.filename!r} takes it beyond the {max_bytes:,} "
                                    "bytes allowed (CONVBANK_EXTRACT_MAX_BYTES)",
                                )
                            out.write(block)
                        budget -= written
                except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
                    if isinstance(exc, FormatError):
                        raise
                    raise _refuse(
                        archive,
                        f"member {info.filename!r} is corrupt or does not match the archive's "
                        f"directory ({first_line(exc)})",
                    ) from exc
    except zipfile.BadZipFile as exc:
        raise FormatError(
            f"{archive}: not a valid zip archive ({exc}); re-fetch the file", path=archive
        ) from exc


_UNNAMEABLE = (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL)
"""What the system says of a path it cannot create as named (too long, not valid here)."""


def _create(archive: Path, info: zipfile.ZipInfo, target: Path) -> BinaryIO | None:
    """Make a member's folder, or its file's folder and the file, open for writing; a path
    the system cannot create as named (a name over 255 bytes, a path over 4,096) is the
    archive's :class:`FormatError`, not the home's."""
    try:
        (target if info.is_dir() else target.parent).mkdir(parents=True, exist_ok=True)
        return None if info.is_dir() else target.open("xb")
    except OSError as exc:
        if exc.errno not in _UNNAMEABLE:
            raise
        raise _refuse(
            archive, f"member {_shown(info.filename)!r} cannot be created here ({exc.strerror})"
        ) from exc


def _shown(name: str) -> str:
    """A member's name, its first 100 characters where it is over 120."""
    return name if len(name) <= 120 else f"{name[:100]}...({len(name):,} characters)"


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, at most 200 characters."""
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def extract_into(archive: Path, target: Path, root: str, opened: BinaryIO, check: Callable[[], None]) -> None:
    """Extract ``archive`` (read from ``opened``, its verified open file) into a temporary
    folder beside ``target`` and, once ``check()`` says the file did not change meanwhile,
    rename it into place; on any failure remove it, and the folders above that it leaves
    empty. Example: ``extract_into(zip_path, home / "extracted" / sha, "hf_pec", f, check)``."""
    max_bytes, max_members = extract_limits(os.fstat(opened.fileno()).st_size)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".extract-"))
    try:
        safe_extract(archive, tmp, root, max_bytes, max_members, opened=opened)
        (tmp / RECORD).write_text(json.dumps(_states(tmp)), encoding="utf-8")
        pause_at(f"source-extracted/{archive.name}")
        check()
        _remove(target)  # one without the folder inside, or whatever else stands there
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for empty in (target.parent, target.parent.parent):
            if empty.is_dir() and not any(empty.iterdir()):
                empty.rmdir()
        raise


def _remove(path: Path) -> None:
    """Remove what is at ``path``: a folder with what it holds, anything else (a file, a link,
    a FIFO that ``shutil.rmtree`` would open and wait on for ever) itself."""
    try:
        folder = stat.S_ISDIR(path.lstat().st_mode)
    except OSError:  # nothing there
        return
    if folder:
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


RECORD = ".convbank-extracted.json"
"""Beside an extraction's folder (``extracted/<dataset>/<archive>/<sha256>/``): the state of
each file extracted, as it was left (:func:`intact`)."""


def _states(target: Path) -> dict[str, list[int]]:
    """``{path: [inode, size, mtime, ctime]}`` of every file under ``target`` but the record;
    a link, a FIFO or anything else not a file or a folder is ``[]`` (never a file's state)."""
    found: dict[str, list[int]] = {}
    for path in sorted(target.rglob("*")):
        st = path.lstat()
        name = path.relative_to(target).as_posix()
        if name == RECORD or stat.S_ISDIR(st.st_mode):
            continue
        found[name] = (
            [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns] if stat.S_ISREG(st.st_mode) else []
        )
    return found


def intact(target: Path) -> bool:
    """Whether an extraction is as :func:`extract_into` left it: the same files, none written
    since (a write, a truncation, ``touch`` or a file put in another's place moves its ctime,
    which nothing can set back). An extraction edited, or made before the record was kept, is
    not, and is made again from the verified archive: an extracted file is never read on the
    strength of the archive's sha256 alone.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp())
    >>> _ = (target / "train.txt").write_text("published")
    >>> _ = (target / RECORD).write_text(json.dumps(_states(target)))
    >>> intact(target)
    True
    >>> _ = (target / "train.txt").write_text("EDITED!!!")
    >>> intact(target)
    False
    """
    try:
        recorded = read_json(target / RECORD, 16 * 2**20)
        return isinstance(recorded, dict) and recorded == _states(target)
    except (OSError, ValueError):
        return False
