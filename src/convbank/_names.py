"""What may name a dataset, config or split: one folder of the bank (and of an export),
read back as itself. Nothing heavy here: the registry checks a plugin's names with it when
the plugin is loaded, the store wherever a path is made."""

from __future__ import annotations

import os

from convbank._wording import article, counted

__all__ = ["EMPTY_FOLDER", "empty_folder", "name_problem", "path_not_text"]


EMPTY_FOLDER = "is empty; name a folder ('.' for the current one)"
"""What is said of an empty folder to write into (``-o ""``, ``export(corpus, fmt, "")``),
after the option's or the argument's name."""


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a dataset, config or split (a partition folder's value), or
    None: it must be text that is one path component, read back as itself.

    >>> name_problem("summer_wild") is None, name_problem("../x")
    (True, "it holds a '/' or a backslash; a name is one folder of the bank")
    """
    if not isinstance(name, str) or not name:
        return "it is empty" if isinstance(name, str) else f"it is {article(type(name).__name__)}, not text"
    if "/" in name or "\\" in name:
        return "it holds a '/' or a backslash; a name is one folder of the bank"
    if name in (".", ".."):
        return f"{name!r} names a folder already there (this one, its parent); a name is a folder of its own"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "it holds a control character"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "it holds a lone surrogate"
    return f"it is {counted(size, 'byte')} long; at most 200" if size > 200 else None


def path_not_text(path: os.PathLike[str] | str) -> str | None:
    """Why ``path`` (made absolute) cannot be written as text, or None: a name the system
    gives that is not UTF-8 (Python's ``\\udcff`` for the byte ``0xff``), which the bank
    cannot record and not every writer (pyarrow, ``datasets``) can open.

    >>> path_not_text("out") is None, path_not_text(os.fsdecode(b"o\\xff"))
    (True, 'its path is not UTF-8 text (byte 0xff)')
    """
    text = os.path.abspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"its path is not UTF-8 text (byte 0x{os.fsencode(exc.object[exc.start])[0]:02x})"
    return None


def empty_folder(path: os.PathLike[str] | str | bytes) -> bool:
    """Whether ``path``, a folder to write into, is spelled empty (``""``, ``b""``, an
    object whose ``__fspath__`` gives either), which ``Path`` would take for the current
    folder: refused, as the command line refuses ``-o ""``. ``Path("")`` is ``Path(".")``
    already, the current folder named, so it cannot be told apart.

    >>> empty_folder(""), empty_folder(b""), empty_folder("."), empty_folder(" ")
    (True, True, False, False)
    """
    return len(os.fspath(path)) == 0
