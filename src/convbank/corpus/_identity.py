"""What a :class:`~convbank.Corpus` is as a value: equal to another over the same sequence of
conversations of the same generation of the same bank, and hashable; it pickles as what
re-opens it (``Corpus.__reduce__``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from convbank.errors import NotBuiltError

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
    _content: tuple[Any, ...] | None

    if TYPE_CHECKING:

        @property
        def snapshot(self) -> Snapshot: ...

        @property
        def bank(self) -> Bank: ...

        def _items(self) -> tuple[list[int], list[str]]: ...

    def _identity(self) -> tuple[Any, ...]:
        """The bank folder, pinned generation, dataset and content: the sequence of
        (config, split, conversation_id), written as the (config, split) of whole parts when
        it is their every conversation in source order (a corpus that is not a selection,
        ``load("casino")[:900]``: no data read), else as the triples (the selection's ids,
        read once and kept)."""
        found = self._content
        if found is None:
            found = self._content = self._sequence()
        return (str(self.bank.root.resolve()), self.snapshot.generation, self.dataset.name, found)

    def _sequence(self) -> tuple[Any, ...]:
        source = self._source
        sizes = [source.starts[b[-1] + 1] - source.starts[b[0]] if b else 0 for b in source.part_batches]
        if self._indices is None:
            return (
                "parts",
                tuple((p.config, p.split) for p, n in zip(source.parts, sizes, strict=True) if n),
            )
        indices, covered, at = self._indices, [], 0
        firsts = [source.starts[b[0]] if b else 0 for b in source.part_batches]
        while at < len(indices):  # whole parts, each from its first position to its last, in order
            start = int(indices[at])
            p = next((i for i, f in enumerate(firsts) if f == start and sizes[i]), None)
            if p is None or at + sizes[p] > len(indices):
                break
            if not np.array_equal(indices[at : at + sizes[p]], np.arange(start, start + sizes[p])):
                break
            covered.append(p)
            at += sizes[p]
        if at == len(indices) and covered:
            return ("parts", tuple((source.parts[p].config, source.parts[p].split) for p in covered))
        item_parts, ids = self._items()
        parts = [(source.parts[p].config, source.parts[p].split) for p in item_parts]
        return ("ids", tuple((*part, cid) for part, cid in zip(parts, ids, strict=True)))

    def __eq__(self, other: object) -> bool:
        """Equal: the same sequence of (config, split, conversation_id) of the same dataset,
        of the same generation of the same bank (``load("casino")[:900] == load("casino",
        split="train")``; a pickled copy equals its original). A corpus that is not a
        selection, or a selection of whole splits in order, compares without reading data;
        other selections read their ids once.

        >>> convbank.load("casino")[:900] == convbank.load("casino", split="train")
        True
        """
        if not isinstance(other, Identity):
            return NotImplemented
        return self is other or self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())


def pinned_dataset(name: str, root: str, generation: str | None) -> tuple[Snapshot, Dataset]:
    """What a pickled corpus re-opens (``_reopen``, as a Hugging Face ``Dataset`` pickles as
    what it reads): its generation of the bank at ``root``, pinned, and its dataset as that
    generation holds it, so that one imported and removed since is read while the original
    pins it; where that generation is gone, one line naming the dataset and what to do."""
    from convbank import catalog
    from convbank.store import Bank
    from convbank.store._imported import imported_from

    try:
        snapshot = Bank(Path(root)).snapshot_of(generation)
    except NotBuiltError as exc:
        gone = f"generation {generation} of the bank at {root}, which is gone (closed, and cleaned since)"
        said = f"a pickled corpus of {name!r} reads {gone}; load it again (convbank.load({name!r}))"
        raise NotBuiltError(said, dataset=name, path=exc.path) from None
    try:
        entry = snapshot.manifest.datasets.get(name)
        found = imported_from(name, entry) if entry is not None else None
        return snapshot, found or catalog.get(name)
    except BaseException:
        snapshot.close()
        raise
