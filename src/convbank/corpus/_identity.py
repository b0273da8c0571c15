"""What a :class:`~convbank.Corpus` is as a value: equal to another over the same
conversations of the same generation of the same bank, hashable, and pickled as what
re-opens it (no data read for any of them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from convbank.corpus._corpus import Corpus
    from convbank.corpus._source import Source
    from convbank.datasets import Dataset
    from convbank.store import Bank, Snapshot

__all__ = ["Identity"]


class Identity:
    """Equality, hash and pickling of a :class:`~convbank.Corpus` (a mixin: see there)."""

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

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as what re-opens it: the dataset, config, split, bank folder, pinned
        generation and positions (not the conversations)."""
        return (
            _reopen,
            (
                self.dataset.name,
                self.config,
                self.split,
                str(self.bank.root),
                self.snapshot.generation,
                self._indices,
                self._source.cache_bytes,
            ),
        )


def _reopen(  # noqa: PLR0917 (pickle calls it with positional arguments)
    name: str,
    config: str | None,
    split: str | None,
    root: str,
    generation: str | None,
    indices: np.ndarray | None,
    cache_bytes: int,
) -> Corpus:
    """A pickled corpus, opened again on the same generation of the bank at ``root``."""
    from pathlib import Path

    from convbank.corpus._corpus import Corpus
    from convbank.store import Bank

    bank = Bank(Path(root))
    snapshot = bank.snapshot_of(generation)
    corpus = Corpus(name, config, split, snapshot=snapshot, cache_bytes=cache_bytes)
    corpus._source.own_snapshot = True
    return corpus if indices is None else corpus._derive(indices)
