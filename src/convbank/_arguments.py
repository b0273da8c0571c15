"""The checks of a public argument's type that the data layer shares: a switch (``shuffle=``,
``batched=``) is a bool, never read for its truth. Whole numbers are
:func:`convbank.errors.whole_number`'s."""

from __future__ import annotations

from typing import Any

__all__ = ["a_flag", "a_flag_or_none"]


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
