"""Helpers the example views share: examples as columns, the stratified split, what a
derived view knows from the view it is made from."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from convbank._arguments import a_flag

__all__ = [
    "FORWARDED",
    "Example",
    "chosen_positions",
    "columns_of",
    "forwarded",
    "names_of",
    "split_size",
    "stratified_test",
]

Example = dict[str, Any]
"""One example: a dict of its fields."""


FORWARDED = frozenset({"label_names", "target_names", "name", "corpus", "live_generations"})
"""What a view made from another (selected, tokenised) knows from it: the label vocabulary,
the targets, the name, the corpus. Nothing computed over examples is forwarded."""


def forwarded(view: Any, name: str) -> Any:
    """``name`` of the view ``view`` is made from, for the names in :data:`FORWARDED`."""
    if name not in FORWARDED:
        raise AttributeError(f"{type(view).__name__!r} object has no attribute {name!r}")
    parent = view.__dict__.get("parent")
    if parent is None:
        raise AttributeError(name)
    return getattr(parent, name)


def columns_of(rows: Sequence[Example]) -> dict[str, list[Any]]:
    """Examples (dicts) as a dict of lists: every key any of them has, in the order they are
    first met, None where an example has not that key (examples of a mixture or a
    concatenation of two datasets' views, each with its own targets), as Hugging Face aligns
    the features of the datasets it interleaves.

    >>> columns_of([{"a": 1, "b": 2}, {"a": 3, "c": 4}])
    {'a': [1, 3], 'b': [2, None], 'c': [None, 4]}
    """
    keys = dict.fromkeys(key for row in rows for key in row)
    return {key: [row.get(key) for row in rows] for key in keys}


def names_of(columns: str | Sequence[str]) -> list[str]:
    """Column names given as one name or a sequence of them, as Hugging Face takes them (a
    string is a name, never the sequence of its letters).

    >>> names_of("text"), names_of(("text", "kind"))
    (['text'], ['text', 'kind'])
    """
    return [columns] if isinstance(columns, str) else list(columns)


def sorted_positions(values: Sequence[Any], reverse: bool = False, name: str = "the column") -> list[int]:
    """The positions of ``values`` in their order: a stable sort (ties keep their order, with
    ``reverse`` too), None last both ways, as Hugging Face's ``sort`` and pandas place nulls;
    values that cannot be compared (dicts) are a ``TypeError`` naming the column.

    >>> sorted_positions([2, None, 3, 1]), sorted_positions([2, None, 3, 1], reverse=True)
    ([3, 0, 2, 1], [2, 0, 3, 1])
    """
    present = [i for i, v in enumerate(values) if v is not None]
    reverse = a_flag(reverse, "reverse")
    try:
        present.sort(key=values.__getitem__, reverse=reverse)
    except TypeError as exc:
        raise TypeError(f"sort() cannot order {name}: {exc}") from None
    return present + [i for i, v in enumerate(values) if v is None]


def stratum(value: Any) -> Any:
    if isinstance(value, list):  # a set of labels: their order and repeats do not count
        return tuple(sorted({stratum(v) for v in value}, key=repr))
    if isinstance(value, dict):
        return tuple(sorted((k, stratum(v)) for k, v in value.items()))
    return value


def split_size(test_size: float | int, total: int, what: str = "items") -> int:
    """The size of a test part: ``test_size`` as a fraction of ``total`` (rounded up) or a
    count, checked to leave both parts some ``what``. A whole number (NumPy's too) is a count,
    any other real number (a NumPy ``float32``, a ``Fraction``) a fraction; anything else (a
    bool, a string) is a ``TypeError``, never read as a count.

    >>> split_size(np.float16(0.5), 1030), split_size(np.int64(5), 1030)
    (515, 5)
    """
    if isinstance(test_size, bool) or not isinstance(test_size, numbers.Real):
        raise TypeError(f"test_size must be a fraction between 0 and 1 or a count, not {test_size!r}")
    if isinstance(test_size, numbers.Integral):
        n_test = int(test_size)
    else:
        if not 0.0 < float(test_size) < 1.0:
            raise ValueError(f"test_size {test_size} must be a fraction between 0 and 1, or a count")
        n_test = math.ceil(float(test_size) * total)
    if not 0 < n_test < total:
        raise ValueError(f"test_size {test_size} leaves no train or no test among {total:,} {what}")
    return n_test


def stratified_test(strata: Sequence[Any], n_test: int, seed: int | None) -> np.ndarray:
    """Positions of a test part of ``n_test`` items whose strata keep their shares: each
    stratum gives its share rounded down, the remaining places go to the strata with the
    largest remainders (ties to the larger stratum), as scikit-learn's stratified splits
    allocate; within a stratum the items are drawn with ``seed`` (None: the first ones)."""
    groups: dict[Any, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    total = len(strata)
    keys = list(groups)
    exact = np.asarray([len(groups[k]) * n_test / total for k in keys])
    counts = np.floor(exact).astype(int)
    left = n_test - int(counts.sum())
    if left:
        order = sorted(range(len(keys)), key=lambda k: (-(exact[k] - counts[k]), -len(groups[keys[k]]), k))
        for k in order[:left]:
            counts[k] += 1
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for k, key in enumerate(keys):
        members = np.asarray(groups[key], dtype=np.int64)
        if seed is not None:
            members = members[rng.permutation(len(members))]
        chosen.extend(members[: counts[k]].tolist())
    return np.sort(np.asarray(chosen, dtype=np.int64))


def chosen_positions(
    indices: Any, total: int, *, of: str, refused: str, word: str = "position"
) -> np.ndarray:
    """``indices``, positions among ``total`` items (a negative one counts from the end), as
    int64 positions from 0, each checked as given before any is cast: one outside (however
    large: a Python int beyond 64 bits, an unsigned NumPy one that int64 would wrap to a
    negative) is an ``IndexError`` naming it and ``of`` (``"this corpus of 200
    conversations"``, ``word`` what it is called); anything but integers (a bool among ints
    too, which NumPy would make 1) a ``TypeError``: ``refused`` and its type.

    >>> chosen_positions(np.array([2**64 - 1], dtype=np.uint64), 3, of="3 items", refused="not")
    Traceback (most recent call last):
    ...
    IndexError: position 18446744073709551615 is outside 3 items
    """
    chosen = np.asarray(indices).reshape(-1)
    if chosen.dtype != bool and isinstance(indices, (list, tuple)):  # NumPy makes [True, 0] ints
        flag = next((x for x in indices if isinstance(x, (bool, np.bool_))), None)
        if flag is not None:
            raise TypeError(f"{refused} {type(flag).__name__}")
    if chosen.dtype == object:  # Python ints beyond 64 bits, or a mix: each must be an integer
        odd = [x for x in chosen if isinstance(x, bool) or not isinstance(x, numbers.Integral)]
        if odd:
            raise TypeError(f"{refused} {type(odd[0]).__name__}")
    elif chosen.size and not np.issubdtype(chosen.dtype, np.integer):
        raise TypeError(f"{refused} {chosen.dtype}")
    bad = chosen[(chosen >= total) | (chosen < -total)].tolist() if chosen.size else []
    if bad:
        more = f" ({len(bad):,} such {word}s)" if len(bad) > 1 else ""
        raise IndexError(f"{word} {int(bad[0])} is outside {of}{more}")
    chosen = chosen.astype(np.int64)
    return np.where(chosen < 0, chosen + total, chosen)
