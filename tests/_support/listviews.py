"""Small concrete :class:`~convbank.examples.Examples` for the tests of the views built on it
(mixtures, packing, the torch side): a view over a list of dicts, and CaSiNo's real turns."""

from __future__ import annotations

from typing import Any

import numpy as np

from convbank.examples import Examples


class ListExamples(Examples):
    """A view over a list of example dicts; ``fetches`` counts the calls of ``_fetch``."""

    def __init__(self, rows: list[dict[str, Any]], name: str | None = None) -> None:
        self.rows = rows
        if name is not None:
            self.name = name
        self.fetches = 0

    def __len__(self) -> int:
        return len(self.rows)

    def _fetch(self, indices: np.ndarray) -> list[dict[str, Any]]:
        self.fetches += 1
        return [dict(self.rows[i]) for i in indices.tolist()]

    def _key(self) -> tuple[Any, ...]:
        return ("list", getattr(self, "name", None), repr(self.rows))


def numbered(n: int, name: str) -> ListExamples:
    """``n`` examples ``{"i": 0..n-1, "from": name}`` in a view named ``name``."""
    return ListExamples([{"i": i, "from": name} for i in range(n)], name)


def casino_turns(split: str | None = None) -> ListExamples:
    """CaSiNo's turns (of one split, or all) as a view, from the bank's ``turns`` table."""
    import convbank

    corpus = convbank.load("casino") if split is None else convbank.load("casino", split=split)
    return ListExamples(corpus.to_arrow("turns", meta="json").to_pylist(), f"casino-{split or 'all'}")
