"""What a :class:`~convbank.Corpus` is as a value: equal to another over the same
conversations of the same generation of the same bank, and hashable (no data read for
either); it pickles as what re-opens it (``Corpus.__reduce__``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from convbank.corpus._source import Source
    from convbank.datasets import Dataset
    from convbank.store import Bank, Snapshot

__all__ = ["Identity"]


class Identity:
    """Equality and hash of a :class:`~convbank.Corpus` (a mixin: see there)."""

    _source: Source
    _indices: np.ndarray | None
    dataset: Dataset
    config: str | None
    split: str | None

    if TYPE_CHECKING:

        @property
        def snapshot(self) -> Snapshot: ...

        @property
        def bank(self) -> Bank: ...

    def _identity(self) -> tuple[Any, ...]:
        """The bank folder, pinned generation, dataset, parts and selected positions (None:
        all of them, in order): what two equal corpora share."""
        indices = self._indices
        if indices is not None and np.array_equal(indices, np.arange(len(self._source))):
            indices = None
        return (
            str(self.bank.root.resolve()),
            self.snapshot.generation,
            self.dataset.name,
            tuple((p.config, p.split) for p in self._source.parts),
            None if indices is None else indices.tobytes(),
        )

    def __eq__(self, other: object) -> bool:
        """Equal: the same conversations, in the same order, of the same generation of the
        same bank (``load("casino", split="train") == load("casino", split="train")``; a
        pickled copy equals its original). Compares positions, reads no data."""
        if not isinstance(other, Identity):
            return NotImplemented
        return self is other or self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())
