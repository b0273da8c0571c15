"""Several example views one after another: :func:`concatenate`."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np

from convbank.examples._base import Examples
from convbank.examples._rows import Example

__all__ = ["Concatenated", "concatenate"]


class Concatenated(Examples):
    """Several views one after another (:func:`concatenate`)."""

    def __init__(self, parts: Sequence[Examples]) -> None:
        flat: list[Examples] = []
        for part in parts:
            flat.extend(part.parts if isinstance(part, Concatenated) else [part])
        self.parts: list[Examples] = flat
        self.starts = np.concatenate([[0], np.cumsum([len(p) for p in flat], dtype=np.int64)]).tolist()

    def __len__(self) -> int:
        return int(self.starts[-1])

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        out: list[Example | None] = [None] * len(indices)
        which = np.searchsorted(np.asarray(self.starts[1:]), indices, side="right")
        for p in np.unique(which).tolist():
            slots = np.flatnonzero(which == p)
            rows = self.parts[p]._fetch(indices[slots] - self.starts[p])
            for slot, row in zip(slots.tolist(), rows, strict=True):
                out[slot] = row
        return [row for row in out if row is not None]

    def _key(self) -> tuple[Any, ...]:
        return ("concatenated", *(p._key() for p in self.parts))

    def _describe(self) -> str:
        return " + ".join(p._describe() for p in self.parts)

    def _shape_rows(self, most: int = 64) -> list[Example]:
        if len(self):
            return super()._shape_rows(most)
        return [row for part in self.parts for row in part._shape_rows(most)]  # every part's keys

    @property
    def column_names(self) -> list[str]:
        """Every part's keys, in the order they are first met (a part lacking one has None)."""
        return list(dict.fromkeys(name for part in self.parts for name in part.column_names))

    def part_of(self, index: int) -> int:
        """Which part the example at ``index`` comes from."""
        return bisect.bisect_right(self.starts, index) - 1


def concatenate(views: Sequence[Examples]) -> Concatenated:
    """Views one after another, as one view (Hugging Face's ``concatenate_datasets``): every
    example of the first, then of the second... Their columns may differ (CaSiNo and ConvAI2
    turns share theirs; their conversations have each their own targets): the view has every
    part's, None where an example has not one; :meth:`Examples.map` over a concatenation needs
    the same columns.

    >>> casino = convbank.load("casino", split="valid").examples("turns")
    >>> convai2 = convbank.load("convai2", "volunteers").examples("turns")
    >>> len(concatenate([casino, convai2])) == len(casino) + len(convai2)
    True
    """
    if not views:
        raise ValueError("concatenate() needs at least one view")
    for view in views:
        if not isinstance(view, Examples):
            raise TypeError(f"concatenate() takes example views, not {type(view).__name__}")
    return Concatenated(views)
