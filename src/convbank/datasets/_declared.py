"""What a dataset declares of its source files, checked as its plugin is loaded: each a
:class:`SourceFile` whose name is one file of the download cache and of a source folder, no
two of one name, with a URL of text, a sha256 of 64 lowercase hexadecimal digits or none, a
size of a whole number of bytes or none. A declaration that breaks one of them is refused in
one line naming the file and the field, before any command uses it (a size of ``-5`` or a
sha256 of ``'ZZ'`` was found only when the file was fetched, blaming the file)."""

from __future__ import annotations

import re

from convbank._names import name_problem
from convbank.datasets._base import SourceFile

__all__ = ["files_problem"]

_SHA256 = re.compile(r"[0-9a-f]{64}")


def files_problem(files: object, where: str) -> str | None:
    """Why the source files ``files`` of the dataset class ``where`` cannot be fetched as
    declared, in one line, or None."""
    if not isinstance(files, (tuple, list)):
        return f"{where}: its files are a {type(files).__name__}, not a tuple of SourceFile; fix them"
    seen: set[str] = set()
    for file in files:
        if not isinstance(file, SourceFile):
            return (
                f"{where}: a source file is a {type(file).__name__}, not a SourceFile: {file!r:.80}; fix it"
            )
        problem = _names(file) or _fields(file)
        if problem is not None:
            return f"{where}: {problem}"
        if file.name in seen:
            return f"{where}: two source files are named {file.name!r}; a name is one file of the cache; rename one"
        seen.add(file.name)
    return None


def _names(file: SourceFile) -> str | None:
    """Why the file's name, or its archive's folder, is not one file of the download cache
    and of a source folder (``..``, ``/`` or an absolute name would have a download written
    outside ``CONVBANK_HOME``), or None."""
    for what, value in (("a source file", file.name), ("an archive's folder", file.extract_to)):
        problem = None if value is None and what != "a source file" else name_problem(value)
        if problem is not None:
            return (
                f"{what} {value!r} cannot name one file of the download cache and of a "
                f"source folder: {problem.split(';')[0]}; rename it"
            )
    return None


def _fields(file: SourceFile) -> str | None:
    """Why the file's URL, sha256 or size is not what a download checks against, or None."""
    url, sha, size = file.url, file.sha256, file.size
    wrong: tuple[str, object, str]
    if not isinstance(url, str):
        wrong = ("url", url, "text (the publisher's URL)")
    elif sha is not None and not (isinstance(sha, str) and _SHA256.fullmatch(sha)):
        wrong = ("sha256", sha, "64 lowercase hexadecimal digits, or None where the publisher gives none")
    elif size is not None and (type(size) is not int or size < 0):
        wrong = ("size", size, "a whole number of bytes from 0, or None where it is not known")
    else:
        return None
    field, value, expected = wrong
    return f"source file {file.name!r}: its {field} {value!r:.80} is not {expected}; fix it"
