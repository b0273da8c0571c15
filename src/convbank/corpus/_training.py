"""What a :class:`~convbank.Corpus` offers training code: example views, label vocabularies,
``map`` with a cache, ``sort`` and stratified splits (a mixin: see there)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from convbank._arguments import a_flag
from convbank.corpus._filters import _decode_meta, _held, inside_of, unheld_meta_key, unknown_label
from convbank.corpus._views import CorpusExamples, view_of
from convbank.errors import UnknownFieldError, did_you_mean, whole_number
from convbank.examples import Examples
from convbank.examples._rows import sorted_positions, split_size, stratified_test
from convbank.model import schema

if TYPE_CHECKING:
    from convbank.corpus._source import Source
    from convbank.datasets import Dataset
    from convbank.examples import TableExamples

__all__ = ["Training"]


class Training:
    """Example views and training helpers of a :class:`~convbank.Corpus` (a mixin)."""

    _source: Source
    dataset: Dataset

    if TYPE_CHECKING:

        def _positions(self) -> np.ndarray: ...

        def _derive(self, indices: np.ndarray) -> Any: ...

        def _dataset_labels(self) -> dict[str, list[str]]: ...

        def _label_positions(self, label: str) -> np.ndarray: ...

        def _meta_column(self) -> Any: ...

        def meta_keys(self) -> list[str]: ...

        def __len__(self) -> int: ...

    def examples(self, view: str = "turns", /, **options: Any) -> CorpusExamples:
        """This corpus's conversations as training examples of one kind, a lazy view (an
        :class:`~convbank.examples.Examples`: indexed, sliced, mapped, tokenised, pickled):

        - ``"turns"``: one per turn; ``layer=``, ``annotated=True``, ``target="multi_hot"`` or
          ``"class"``, ``speaker=``, ``role=``, ``kind="message"`` or ``"action"``;
        - ``"responses"``: context -> response; ``history=k`` previous turns (None: all),
          ``side=`` (None: the dataset's side, ``"other"``, ``"both"``, a participant id),
          ``kind=``; with the responder's persona and system prompt;
        - ``"chat"``: messages from ``side=`` (``"both"``: one example per participant);
        - ``"conversations"``: whole conversations with their outcomes (``target=`` one of
          the dataset's ``target_names``), per ``side=``.

        >>> casino = convbank.load("casino", split="train")
        >>> len(casino.examples("turns", layer="strategy", annotated=True))
        4047
        >>> casino.examples("responses", history=2)[1]["context"]
        ['Hello!, how are you doing?', "I'm good - and you?"]
        >>> len(casino.examples("chat", side="both")), casino.examples("conversations")[0]["points_scored"]
        (1800, 22)
        """
        return view_of(self, view, options)

    def label_names(self, layer: str) -> list[str]:
        """The labels of one annotation layer, sorted: a label's id is its position. They are
        the whole dataset's labels in the bank (every split's), so ids are the same for the
        train and test corpora.

        >>> convbank.load("casino", split="test").label_names("strategy")[:3]
        ['elicit-pref', 'no-need', 'non-strategic']
        """
        self._check_layer(layer)
        return list(self._dataset_labels()[layer])

    def _check_layer(self, layer: str) -> None:
        known = self._dataset_labels()
        if layer not in known:
            problem = unknown_label(self.dataset.name, f"{layer}:", known) or ""
            raise UnknownFieldError(
                problem.replace(" (a label is layer:label)", ""), name=layer, known=list(known)
            )

    def _layer_positions(self, layer: str) -> np.ndarray:
        """The source positions of the conversations with an annotation of ``layer``."""
        self._check_layer(layer)
        ids: set[str] = set()
        for batch in range(len(self._source.batches)):
            table = self._source.read(batch, "annotations", ["conversation_id", "layer"])
            ids.update(table.filter(pc.equal(table.column("layer"), layer)).column(0).to_pylist())
        return np.fromiter(self._source.positions(ids).values(), dtype=np.int64)

    def _participant_ids(self) -> list[str]:
        """The participant ids of this corpus's parts, sorted (for checking a ``side=``)."""
        return self._participant_values("participant_id")

    def _participant_values(self, column: str) -> list[str]:
        """The values of a ``participants`` column in this corpus's parts, sorted (for checking
        a ``side=``, ``speaker=`` or ``role=``)."""
        found: set[str] = set()
        for batch in range(len(self._source.batches)):
            found.update(self._source.read(batch, "participants", [column]).column(0).to_pylist())
        return sorted(v for v in found if v is not None)

    def map(
        self,
        function: Callable[..., Any],
        *,
        batched: bool = False,
        batch_size: int = 1000,
        num_proc: int | None = None,
        cache: bool = True,
    ) -> TableExamples:
        """``function`` over every :class:`Conversation` of this corpus (a list of them with
        ``batched=True``), returning a dict (of lists): a table of examples, computed by
        ``num_proc`` processes and cached by the fingerprint of the function and the bank
        generation (see :meth:`convbank.examples.Examples.map`).

        >>> lengths = convbank.load("casino", split="valid").map(lambda c: {"turns": c.num_turns})
        >>> lengths["turns"][:3]
        [12, 12, 12]
        """
        return _Conversations(self).map(
            function, batched=batched, batch_size=batch_size, num_proc=num_proc, cache=cache
        )

    def sort(self, column: str, *, reverse: bool = False) -> Any:
        """This corpus ordered by a column of ``conversations`` (``num_turns``,
        ``source_index``, ``conversation_id``) or a meta key (``"eval_score"``, dotted for
        nested ones): a stable sort, missing values last.

        >>> convbank.load("casino").sort("num_turns", reverse=True)[0].num_turns
        39
        """
        reverse = a_flag(reverse, "reverse")
        values = self._column_values(column)
        order = sorted_positions(values, reverse, f"{column!r} of {self.dataset.name} conversations")
        return self._derive(self._positions()[np.asarray(order, dtype=np.int64)])

    def _column_values(self, column: str) -> list[Any]:
        """One value per conversation of this corpus, in order: a ``conversations`` column or
        a meta key."""
        stored = _stored_columns()
        source = self._source
        if column in stored:
            by_batch = [
                source.read(b, "conversations", [column]).column(0).to_pylist()
                for b in range(len(source.batches))
            ]
            flat = [v for values in by_batch for v in values]
        else:
            self._check_meta(column)
            metas = [_decode_meta(t) for values in self._meta_column() for t in values]
            found = [_held(m, column) for m in metas]
            if not any(held for held, _ in found):  # a dotted key none holds: never all None
                raise unheld_meta_key(
                    self.dataset.name, column, {k for m in metas for k in inside_of(m, column)}
                )
            flat = [value for _, value in found]
        return [flat[p] for p in self._positions().tolist()]

    def _check_meta(self, key: str) -> None:
        known = self.meta_keys()
        top = key.split(".", 1)[0]
        if top not in known and key not in known:
            names = [*_stored_columns(), *known]
            raise UnknownFieldError(
                f"{self.dataset.name} conversations have no column or meta key {key!r}; "
                + did_you_mean(top, names, n=1)
                + f"columns: {', '.join(_stored_columns())}; "
                + f"meta keys: {', '.join(known) or 'none'}",
                name=key,
                known=names,
            )

    def train_test_split(
        self,
        test_size: float | int = 0.25,
        *,
        seed: int | None = 0,
        shuffle: bool = True,
        stratify: str | None = None,
    ) -> dict[str, Any]:
        """Split into ``{"train": ..., "test": ...}`` corpora (as Hugging Face's
        ``train_test_split``): ``test_size`` is a fraction of the corpus or a number of
        conversations; shuffled with ``seed`` first unless ``shuffle=False``. ``stratify``
        keeps the shares of a label (``"strategy:uv-part"``: the conversations with it and
        without) or of a ``conversations`` column or meta value (``"eval_score"``) in both.

        >>> parts = convbank.load("casino", split="train").train_test_split(0.1, seed=0)
        >>> len(parts["train"]), len(parts["test"])
        (810, 90)
        """
        seed = None if seed is None else whole_number(seed)
        shuffle = a_flag(shuffle, "shuffle")
        total = len(self)
        n_test = split_size(test_size, total, "conversations")
        positions = self._positions()
        if stratify is not None:
            test = self._stratified(stratify, n_test, seed if shuffle else None)
            mask = np.zeros(total, dtype=bool)
            mask[test] = True
            return {"train": self._derive(positions[~mask]), "test": self._derive(positions[mask])}
        if shuffle:
            positions = positions[np.random.default_rng(seed).permutation(total)]
        return {"train": self._derive(positions[n_test:]), "test": self._derive(positions[:n_test])}

    def _stratified(self, stratify: str, n_test: int, seed: int | None) -> np.ndarray:
        """Positions (in this corpus) of a test part whose strata keep their shares: by a
        label (``layer:label``: the conversations with it and those without) or by a
        ``conversations`` column or meta key."""
        if ":" in stratify:
            having = set(self._label_positions(stratify).tolist())
            strata: list[Any] = [p in having for p in self._positions().tolist()]
        else:
            strata = self._column_values(stratify)
        return stratified_test(strata, n_test, seed)


class _Conversations(Examples):
    """A corpus's conversations as they are (objects, not dicts): what :meth:`Training.map`
    maps over."""

    def __init__(self, corpus: Any) -> None:
        self.corpus = corpus
        self.name = f"{corpus.dataset.name}/conversations"

    def __len__(self) -> int:
        return len(self.corpus)

    def _fetch(self, indices: np.ndarray) -> list[Any]:
        return list(self.corpus.select(indices))

    def _key(self) -> tuple[Any, ...]:
        return ("corpus", "objects", self.corpus._identity())

    cache_home = CorpusExamples.cache_home
    live_generations = CorpusExamples.live_generations


def _stored_columns() -> tuple[str, ...]:
    """The ``conversations`` columns a corpus sorts and stratifies by (all but the JSON ones)."""
    return tuple(c.name for c in schema.SCHEMA.columns["conversations"] if not c.json)
