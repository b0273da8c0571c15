"""The checks of a public argument's type that the data layer shares: a switch (``shuffle=``,
``batched=``) is a bool, never read for its truth; a position is an int by its ``__index__``
(:func:`an_index`). Whole numbers are :func:`convbank.errors.whole_number`'s."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "a_callable_or_none",
    "a_flag",
    "a_flag_or_none",
    "a_mapping_or_none",
    "a_path_or_none",
    "a_text_or_none",
    "a_verdict",
    "an_index",
]


def a_flag(value: Any, name: str) -> bool:
    """``value`` (a switch such as ``shuffle=``) as a bool, NumPy's too, or a ``TypeError``
    naming ``name``: a string, a number or anything else is never read for its truth (``"no"``
    is truthy, ``0`` falsy), so that a mistyped switch is named, not taken.

    >>> a_flag(False, "shuffle")
    False
    >>> a_flag("no", "shuffle")
    Traceback (most recent call last):
    ...
    TypeError: shuffle must be True or False, not 'no'
    """
    kind = type(value)
    if kind is bool or (kind.__module__ == "numpy" and kind.__name__ in {"bool", "bool_"}):
        return bool(value)
    raise TypeError(f"{name} must be True or False, not {value!r}")


def a_verdict(value: Any, what: str, name: str = "filter's function") -> bool:
    """A filter's function's answer (``value``, for ``what``: ``conversation '157'``; the
    function called ``name``: a dataset's ``where``) as a bool, NumPy's too, or a one-line
    ``TypeError`` naming it: a string, None, a number or a tensor is never read for its truth
    (``"no"`` is truthy).

    >>> a_verdict("no", "conversation '157'")
    Traceback (most recent call last):
    ...
    TypeError: filter's function must return True or False, not 'no' (str), for conversation '157'

    A 0-d array or tensor of one bool (``torch.tensor(True)``, ``np.array(False)``, what a
    predicate computed with them returns) is that bool; one of more values or of numbers is not.
    """
    if (single := _one_bool(value)) is not None:
        return single
    try:
        return a_flag(value, name)
    except TypeError:
        shown = " ".join(repr(value).split())
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        said = f"not {shown} ({type(value).__name__}), for {what}"
        raise TypeError(f"{name} must return True or False, {said}") from None


def _one_bool(value: Any) -> bool | None:
    """The bool a 0-d array or tensor of bool dtype holds (NumPy's, torch's, any whose
    ``item()`` gives a bool), else None."""
    if getattr(value, "ndim", None) != 0 or str(getattr(value, "dtype", "")) not in {"bool", "torch.bool"}:
        return None
    try:
        item = value.item()
    except Exception:
        return None
    return item if type(item) is bool else None


def a_flag_or_none(value: Any, name: str) -> bool | None:
    """``value`` as :func:`a_flag` reads it, or None (a switch that decides by itself when not
    given); anything else a ``TypeError`` naming ``name``.

    >>> a_flag_or_none(None, "template"), a_flag_or_none(True, "template")
    (None, True)
    """
    if value is None:
        return None
    try:
        return a_flag(value, name)
    except TypeError:
        raise TypeError(f"{name} must be True, False or None, not {value!r}") from None


def a_path_or_none(value: Any, name: str) -> Path | None:
    """``value`` (a file named by ``skip_bad=``, ``card=``) as a ``Path``, bytes as the
    system names them, or None; anything else a ``TypeError`` and an empty text (which ``Path``
    reads as the current folder) a ``ValueError``, each naming ``name``.

    >>> a_path_or_none(b"rejects.jsonl", "skip_bad"), a_path_or_none(None, "skip_bad")
    (PosixPath('rejects.jsonl'), None)
    >>> a_path_or_none(5, "skip_bad")
    Traceback (most recent call last):
    ...
    TypeError: skip_bad must be a path (a str or an os.PathLike) or None, not 5
    """
    if value is None:
        return None
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (a str or an os.PathLike) or None, not {value!r}")
    if isinstance(value, str) and not value.strip():
        raise ValueError(f"{name} must be a path, not an empty one ({value!r})")
    return Path(value)


def a_text_or_none(value: Any, name: str) -> str | None:
    """``value`` (a name such as ``as_participant=``) as a str, or None; anything else (a
    number, bytes) a ``TypeError`` naming ``name``, never compared as it is and found nowhere.

    >>> a_text_or_none("buyer", "as_participant")
    'buyer'
    >>> a_text_or_none(5, "as_participant")
    Traceback (most recent call last):
    ...
    TypeError: as_participant must be a string or None, not 5
    """
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a string or None, not {value!r}")


def a_mapping_or_none(value: Any, name: str) -> Mapping[str, Any] | None:
    """``value`` (``mapping=``, ``card=`` given as fields) as a mapping of string keys, or
    None; anything else (a list of pairs, a number) a ``TypeError`` naming ``name``.

    >>> a_mapping_or_none([("text", "utterance")], "mapping")
    Traceback (most recent call last):
    ...
    TypeError: mapping must be a mapping of names (a dict) or None, not [('text', 'utterance')]
    """
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise TypeError(f"{name} must be a mapping of names (a dict) or None, not {value!r}")
    return value


def a_callable_or_none(value: Any, name: str) -> Any:
    """``value`` (a callback such as ``progress=``) if it can be called, or None; anything else
    a ``TypeError`` naming ``name`` before any work is done, never half-way through it.

    >>> a_callable_or_none(5, "progress")
    Traceback (most recent call last):
    ...
    TypeError: progress must be a function or None, not 5
    """
    if value is None or callable(value):
        return value
    raise TypeError(f"{name} must be a function or None, not {value!r}")


def an_index(value: Any) -> int | None:
    """``value`` as a Python int where it is a whole number by :func:`operator.index` (an int,
    NumPy's, a 0-d integer array or tensor: what a researcher's arithmetic gives), else None:
    a bool (or a bool array or tensor, which ``operator.index`` reads as 0 or 1), a 1-d one,
    a float or a string is no index.

    >>> import numpy
    >>> an_index(3), an_index(numpy.int64(2)), an_index(True), an_index(1.0)
    (3, 2, None, None)
    """
    import operator

    dims: Any = getattr(value, "ndim", 0)
    if isinstance(value, bool) or dims != 0 or "bool" in str(getattr(value, "dtype", "")):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None
