"""Where convbank keeps its files, and what the environment tells it.

Every ``CONVBANK_*`` variable is read here, and only here:

- ``CONVBANK_HOME``: convbank's folder (default: the user's cache folder for convbank); the
  bank is ``$CONVBANK_HOME/bank``, downloads ``$CONVBANK_HOME/downloads``;
- ``CONVBANK_OFFLINE``: a true value (1, true, yes, on) forbids downloads;
- ``CONVBANK_SOURCE``: a path list of folders holding source files;
- ``CONVBANK_EXTRACT_MAX_BYTES`` and ``CONVBANK_EXTRACT_MAX_MEMBERS``: what an archive may
  expand to (see :mod:`convbank._archive`);
- ``CONVBANK_DOWNLOAD_MAX_BYTES``: the most bytes downloaded for a file of no published size
  (see :mod:`convbank._download`);
- ``CONVBANK_TEST_PAUSE``: for tests only, ``POINT:FILE`` makes a command stop at ``POINT``
  (:func:`pause_at`: an export's steps, a source file's reading) until ``FILE``, which it
  creates, is removed.

A module of its own, at the bottom of the layers, so that readers of the bank (``load``,
``sql``, the viewer) need not import the build or the fetcher to find it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from convbank._names import path_not_text
from convbank.errors import SetupError

__all__ = [
    "absolute",
    "bank_root",
    "check",
    "convbanks_own",
    "downloads_root",
    "env_flag",
    "env_number",
    "home",
    "is_offline",
    "pause_at",
    "pause_point",
    "source_dirs",
]


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def env_flag(name: str) -> bool:
    """Whether an environment variable is set to a true value (1, true, yes, on); unset or
    a false value (0, false, no, off) is False, anything else a :class:`SetupError`."""
    text = os.environ.get(name, "").strip()
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise SetupError(
        f"{name}={text!r} is neither true ({', '.join(_TRUE)}) nor false ({', '.join(_FALSE[1:])}); "
        "fix or unset it",
        variable=name,
    )


def absolute(path: Path) -> Path:
    """``path`` made absolute against the working folder now, not normalised (``..`` after a
    link keeps its meaning): a folder convbank holds on to names the same folder whatever a
    plugin's code does to the working folder later (``os.chdir`` in its ``read``); a working
    folder that is gone leaves ``path`` as it is.

    >>> absolute(Path("/tmp/../x")), absolute(Path("x")) == Path.cwd() / "x"
    (PosixPath('/tmp/../x'), True)
    """
    if path.is_absolute():
        return path
    try:
        return path.absolute()
    except OSError:  # the working folder was removed: nothing to resolve against
        return path


def home() -> Path:
    """convbank's folder: ``$CONVBANK_HOME``, else the user's cache folder for convbank, as an
    absolute path (:func:`absolute`). A ``~user`` that names no user, a path that is not UTF-8
    text, or one the system cannot look at (a symbolic link loop, a path too long), is a
    :class:`SetupError`."""
    env = os.environ.get("CONVBANK_HOME")
    if not env:
        import platformdirs  # its Unix module loads tempfile and shutil: only when asked

        path = Path(platformdirs.user_cache_dir("convbank"))
    else:
        path = _expand("CONVBANK_HOME", env)
    path = absolute(path)
    problem = path_not_text(path)
    if problem is not None:  # the bank's readers and writers (pyarrow, DuckDB) open paths as text
        raise SetupError(
            f"CONVBANK_HOME {path}: {problem}, which the bank's files cannot be opened under; "
            "point CONVBANK_HOME at a folder whose path is UTF-8",
            variable="CONVBANK_HOME",
        )
    try:  # a home the system cannot look at is the home's fault, never a damaged bank
        path.stat()
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENAMETOOLONG):
            raise SetupError(
                f"CONVBANK_HOME {path}: {exc.strerror}; point CONVBANK_HOME at a folder convbank can use",
                variable="CONVBANK_HOME",
            ) from exc
    return path


def unusable_folder(path: Path) -> str | None:
    """Why the system cannot look at ``path``, a folder's name, or None: a NUL character in
    it, a name that is not UTF-8 text, a symbolic link loop, a path too long.

    >>> unusable_folder(Path("/tmp/a\\0b")), unusable_folder(Path("/tmp"))
    ('its path holds a NUL character', None)
    """
    if "\0" in os.fspath(path):
        return "its path holds a NUL character"
    problem = path_not_text(path)
    if problem is not None:
        return problem
    try:
        path.stat()
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENAMETOOLONG):
            return str(exc.strerror)
    return None


def _expand(name: str, value: str) -> Path:
    """``value`` with a leading ``~`` or ``~user`` expanded; one that cannot be, or one of
    nothing but white space (a stray quote or space, never a folder's name), is a
    :class:`SetupError` naming the variable."""
    if not value.strip():
        raise SetupError(
            f"{name}={value!r} is only white space, not a folder's name; unset it or name a folder",
            variable=name,
        )
    try:
        return Path(value).expanduser()
    except RuntimeError:  # ~user of no user, or no home for ~
        user = value.split("/", 1)[0]
        raise SetupError(
            f"{name}={value!r}: {user} names no user's home folder; use an absolute path",
            variable=name,
        ) from None


def bank_root() -> Path:
    """The bank folder: ``$CONVBANK_HOME/bank``."""
    return home() / "bank"


def convbanks_own(path: Path, bank: Path | None = None, *, holding: bool = False) -> str | None:
    """Where ``path`` (links followed, ``..`` resolved) lies among convbank's own files, said
    as ``in the bank (...)`` or ``under CONVBANK_HOME (...)``; ``None`` if elsewhere. Its own
    files are the bank (``bank``, a bank's folder besides ``$CONVBANK_HOME/bank``) and what
    :data:`HOME_OWN` names under the home; a folder of one's own under the home (``exports``)
    is not. With ``holding``, a ``path`` that holds the bank or the home (one of their
    parents) counts too. What a command writes (an export, a report, rejects) is refused
    there: it would replace the bank's own files.

    >>> convbanks_own(bank_root() / "turns") == f"in the bank ({bank_root()})"
    True
    >>> convbanks_own(Path("/"), holding=True) == f"holding the bank ({bank_root()})"
    True
    >>> convbanks_own(home() / "exports") is None
    True
    """
    target = _real(path)
    places = [(bank, "the bank")] if bank is not None else []
    places += [(bank_root(), "the bank"), *((home() / name, "CONVBANK_HOME") for name in HOME_OWN)]
    for root, what in places:
        place = _real(root)
        if target.is_relative_to(place):
            return f"{'in' if what == 'the bank' else 'under'} {what} ({root})"
        if holding and place.is_relative_to(target):
            return f"holding {what} ({root})"
    if holding and _real(home()).is_relative_to(target) and target != _real(home()):
        return f"holding CONVBANK_HOME ({home()})"
    return None


def _real(path: Path) -> Path:
    """``path`` absolute, its links followed and ``..`` resolved as far as they lead: a loop
    of links leads nowhere, so it is left as it is (``Path.resolve`` raised ``RuntimeError:
    Symlink loop``), for the command that writes there to say it cannot."""
    return Path(os.path.realpath(path))


HOME_OWN = ("downloads", "cache", "bench", "locks", "sources.json", "checksums.json")
"""What convbank keeps under ``$CONVBANK_HOME`` besides the bank: the downloads, the
``map()`` cache, saved bench runs, the locks and the records of source folders and checksums."""


def downloads_root() -> Path:
    """Where downloads are cached: ``$CONVBANK_HOME/downloads``."""
    return home() / "downloads"


def is_offline() -> bool:
    """Whether ``CONVBANK_OFFLINE`` forbids network access."""
    return env_flag("CONVBANK_OFFLINE")


def source_dirs() -> list[Path]:
    """The folders ``CONVBANK_SOURCE`` lists (a path list), in order. One that is there but is
    no folder (a file, a FIFO, ``/dev/null``) is a :class:`SetupError` naming the variable, as
    ``--source`` refuses it, never a miss of every file "in" it blamed on the file."""
    env = os.environ.get("CONVBANK_SOURCE", "")
    folders = [absolute(_expand("CONVBANK_SOURCE", p)) for p in env.split(os.pathsep) if p]
    for folder in folders:
        try:
            mode = folder.stat().st_mode
        except (OSError, ValueError):  # not there (or no path at all): looked in, in vain
            continue
        if not stat.S_ISDIR(mode):
            raise SetupError(
                f"CONVBANK_SOURCE names {folder}, which is not a folder; fix or unset it",
                variable="CONVBANK_SOURCE",
            )
    return folders


_SIZE = re.compile(r"(\d+)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)


def env_number(name: str, default: int, *, size: bool) -> int:
    """A positive number from the environment: bytes (``8G``, ``500M``, powers of 1024) when
    ``size``, else a plain count; ``default`` when unset. Anything else is a
    :class:`SetupError` naming the variable."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    match = _SIZE.fullmatch(text) if size else re.fullmatch(r"(\d+)()", text)
    shown = text if len(text) <= 40 else f"{text[:20]}...({len(text):,} characters)"
    if match is None or not match[1].strip("0"):
        what = "a size in bytes, optionally with K, M, G or T (powers of 1024), e.g. 8G"
        raise SetupError(
            f"{name}={shown!r} is not {what if size else 'a positive whole number'}; fix or unset it",
            variable=name,
        )
    digits = match[1].lstrip("0")
    value = int(digits) << 10 * " kmgt".index(match[2].lower() or " ") if len(digits) <= 19 else _MOST + 1
    if value > _MOST:  # K = 2**10, M = 2**20...
        raise SetupError(
            f"{name}={shown!r} is larger than the most convbank takes ({_MOST:,}); fix or unset it",
            variable=name,
        )
    return value


def pause_point() -> tuple[str, Path] | None:
    """``CONVBANK_TEST_PAUSE`` (``POINT:FILE``), a test's hook to stop a command at a known
    point (to kill it there, or to start several at once): the point and the file, or None.
    Example: ``CONVBANK_TEST_PAUSE=moved:/tmp/m convbank export ...``."""
    text = os.environ.get("CONVBANK_TEST_PAUSE", "")
    point, _, file = text.partition(":")
    return (point, Path(file)) if point and file else None


def pause_at(point: str) -> None:
    """A test's hook (``CONVBANK_TEST_PAUSE=POINT:FILE``): at ``point`` create ``FILE`` and
    wait until it is removed; nothing when the setting names another point. Example: with
    ``CONVBANK_TEST_PAUSE=source-verified:/tmp/p``, ``pause_at("source-verified")`` waits
    while ``/tmp/p`` exists."""
    asked = pause_point()
    if asked is None or asked[0] != point:
        return
    import time

    asked[1].touch()
    while asked[1].exists():
        time.sleep(0.01)


_MOST = 2**62
"""The largest number a setting may hold (a 64-bit signed integer, with room)."""


def check() -> None:
    """Read every ``CONVBANK_*`` setting once, so that a bad value is a :class:`SetupError`
    when a command starts, not only when (or if) the setting is first used."""
    is_offline()
    source_dirs()
    env_number("CONVBANK_EXTRACT_MAX_BYTES", 1, size=True)
    env_number("CONVBANK_EXTRACT_MAX_MEMBERS", 1, size=False)
    env_number("CONVBANK_DOWNLOAD_MAX_BYTES", 1, size=True)
