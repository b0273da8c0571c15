"""Words that messages build from values: the indefinite article a word takes by its sound,
so that no message says "a engine" or "a int" whatever name or type it is built with."""

from __future__ import annotations

import re

__all__ = ["article", "counted"]

_AN = re.compile(r"(?i)(?:[aeio]|u(?!ni|s[eu]|tf|ri|bi|int)|8|1[18](?!\d)|hour|honest)")
"""What a word that takes ``an`` starts with: a vowel sounded as one (``an int``, ``an
engine``, ``an 8-d array``, ``an hour``) but not ``u`` sounded ``you`` (``a unified``, ``a
user``, ``a UTF-8``)."""

_A = re.compile(r"(?i)(?:eu|one\b|once\b|uu)")
"""What starts a vowel-lettered word that takes ``a`` (``a one-line``, ``a euro``)."""


def article(word: str) -> str:
    """``word`` after the indefinite article it takes (by its first sound):

    >>> [article(w) for w in ("engine", "int", "dataset", "user", "UTF-8", "annotations")]
    ['an engine', 'an int', 'a dataset', 'a user', 'a UTF-8', 'an annotations']
    """
    takes_an = _AN.match(word) is not None and _A.match(word) is None
    return f"{'an' if takes_an else 'a'} {word}"


def counted(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, agreeing in number (``many``, else ``word`` + ``s``, where ``n`` is
    not 1), the count with thousands' commas: every message that counts says it so.

    >>> counted(1, "conversation"), counted(2, "split"), counted(1030, "entry", "entries")
    ('1 conversation', '2 splits', '1,030 entries')
    """
    return f"{n:,} {word if n == 1 else (many or word + 's')}"
