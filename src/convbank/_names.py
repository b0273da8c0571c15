"""What may name a dataset, config or split: one folder of the bank (and of an export),
read back as itself. Nothing heavy here: the registry checks a plugin's names with it when
the plugin is loaded, the store wherever a path is made."""

from __future__ import annotations

__all__ = ["name_problem"]


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a dataset, config or split (a partition folder's value), or
    None: it must be text that is one path component, read back as itself.

    >>> name_problem("summer_wild") is None, name_problem("../x")
    (True, "it holds a '/' or a backslash; a name is one folder of the bank")
    """
    if not isinstance(name, str) or not name:
        return "it is empty" if isinstance(name, str) else f"it is a {type(name).__name__}, not text"
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
    return f"it is {size} bytes long; at most 200" if size > 200 else None
