"""Words that messages build from values: the indefinite article a word takes by its sound,
so that no message says "a engine" or "a int" whatever name or type it is built with; a count
agreeing with its word in number (:func:`counted`); a value shown shortened (:func:`shown`),
saying so; and a URL said without the user name and password it may carry (:func:`url_shown`)."""

from __future__ import annotations

import re
import reprlib

__all__ = ["article", "counted", "shown", "url_shown"]

_AN = re.compile(r"(?i)(?:[aeio]|u(?!ni|s[eu]|tf|ri|bi|int)|8|1[18](?!\d)|hour|honest)")
"""What a word that takes ``an`` starts with: a vowel sounded as one (``an int``, ``an
engine``, ``an 8-d array``, ``an hour``) but not ``u`` sounded ``you`` (``a unified``, ``a
user``, ``a UTF-8``)."""

_A = re.compile(r"(?i)(?:eu|one\b|once\b|uu)")
"""What starts a vowel-lettered word that takes ``a`` (``a one-line``, ``a euro``)."""


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")
"""A URL's scheme and the ``user:password@`` after it (up to the last ``@`` of its host part)."""


def url_shown(url: str) -> str:
    """``url`` as a message says it: without the user name and password it may carry
    (``https://user:secret@host/f`` is said ``https://host/f``), as a proxy's are left out; a
    message is printed, logged and pasted into bug reports, and the download still uses them.

    >>> url_shown("https://alice:s3cret@example.org/a.tsv?x=1")
    'https://example.org/a.tsv?x=1'
    """
    return _USERINFO.sub(r"\1", str(url), count=1)


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


def shown(value: object, limit: int = 80) -> str:
    """``value``'s ``repr`` for a message, at most ``limit`` characters, ending in ``…`` where
    it was cut (never cut without saying so); a long text or a large container is not made
    whole first (:mod:`reprlib`: its start and first items only).

    >>> shown("abc"), shown("x" * 100, 12), shown(list(range(10**6)), 30), shown(10**5000)
    ("'abc'", "'xxxxxxxxxx…", '[0, 1, 2, 3, 4, 5, ...]', 'an int (not shown)')
    """
    try:
        text = _BOUNDED.repr(value)
    except Exception:  # an int past Python's 4,300 digits, a repr that raises: said by its kind
        return f"{article(type(value).__name__)} (not shown)"
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _bounded() -> reprlib.Repr:
    """A :class:`reprlib.Repr` that keeps more than the shortest message shows, so that only
    :func:`shown` cuts, and says so."""
    bounded = reprlib.Repr()
    bounded.maxstring = bounded.maxother = 4096
    bounded.maxlong = 4096
    return bounded


_BOUNDED = _bounded()
