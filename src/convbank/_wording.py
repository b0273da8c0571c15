"""Words that messages build from values: the indefinite article a word takes by its sound,
so that no message says "a engine" or "a int" whatever name or type it is built with."""

from __future__ import annotations

import re

__all__ = ["article", "url_shown"]

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
