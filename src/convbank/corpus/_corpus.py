"""The :class:`Corpus`: a value over the conversations of one dataset in the bank."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from convbank import catalog
from convbank._arguments import a_flag, a_verdict, an_index
from convbank._wording import counted
from convbank._workers import resolved
from convbank.corpus._filters import Filters, check_filter
from convbank.corpus._frames import Frames
from convbank.corpus._identity import Identity, pinned_dataset
from convbank.corpus._source import DEFAULT_CACHE_BYTES, Source, find_parts
from convbank.corpus._training import Training
from convbank.datasets import Dataset
from convbank.errors import ConversationNotFoundError, whole_number
from convbank.examples._rows import chosen_positions
from convbank.model import Conversation, Part, tables_to_conversations
from convbank.store import Bank, Snapshot

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Corpus"]

_WINDOW = 2048
"""Positions fetched together when iterating a selection (each batch decoded once a window)."""


class Corpus(Identity, Frames, Filters, Training):
    """The conversations of one dataset (optionally one config and split) in the bank: a
    value, like a Hugging Face ``Dataset`` (equal to a corpus over the same conversations of
    the same bank generation, hashable).

    Index it by position (``corpus[0]``, ``corpus[-1]``), by conversation id
    (``corpus["938"]``) or by slice (``corpus[10:20]``, a corpus); ``filter``, ``select``,
    ``shuffle``, ``shard`` and ``train_test_split`` return corpora too, lazily (a corpus
    derived from another holds positions, not conversations), and every one of them pickles
    (it re-opens the same generation of the bank in the receiving process), so a corpus goes
    to a ``DataLoader`` with workers or to ``multiprocessing`` as it is::

        >>> corpus = convbank.load("casino")
        >>> train = corpus.filter(label="strategy:uv-part").shuffle(seed=0)[:50]
        >>> len(train), train[0].conversation_id
        (50, '82')

    A corpus reads one generation of the bank, pinned when it is opened: builds that run
    meanwhile change nothing it reads, and its files stay on disk until it is closed (with
    :meth:`close`, a ``with`` block, or when no corpus derived from it is referenced any
    more). Random access goes through an index made from the Parquet footers and a cache of
    decoded batches bounded by ``cache_bytes`` (1 GiB by default). Safe to share between
    threads.
    """

    def __init__(
        self,
        name: str | Dataset,
        config: str | None = None,
        split: str | None = None,
        *,
        bank: Bank | None = None,
        snapshot: Snapshot | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        dataset = name if isinstance(name, Dataset) else catalog.get(name)  # a pickle's: as its bank held it
        cache_bytes = whole_number(cache_bytes, "cache_bytes")
        own = snapshot is None
        pinned = snapshot or (bank or Bank()).snapshot()
        try:
            parts = find_parts(dataset.name, dataset.parts(config, split), pinned, config or split)
            pinned.check(dataset.name)
            source = Source(dataset, pinned, parts, own_snapshot=own, cache_bytes=cache_bytes)
        except BaseException:
            if own:
                pinned.close()
            raise
        self._setup(source, None, config, split)

    def _setup(
        self, source: Source, indices: np.ndarray | None, config: str | None, split: str | None
    ) -> None:
        self._source = source
        self._indices = indices
        self._sorted: np.ndarray | None = None
        self._content = None
        self.dataset = source.dataset
        self.config = config
        self.split = split

    def _derive(self, indices: np.ndarray) -> Corpus:
        """A corpus over these positions (of the source) sharing this one's source."""
        derived = Corpus.__new__(Corpus)
        derived._setup(self._source, np.ascontiguousarray(indices, dtype=np.int64), self.config, self.split)
        return derived

    # ------------------------------------------------------------------ life
    @property
    def snapshot(self) -> Snapshot:
        """The pinned generation this corpus reads."""
        return self._source.snapshot

    @property
    def bank(self) -> Bank:
        """The bank this corpus reads."""
        owner = self._source.snapshot.bank
        return owner if isinstance(owner, Bank) else Bank(owner.root)

    def close(self) -> None:
        """Release the pinned generation, for this corpus and every corpus derived from the
        same :func:`convbank.load` (a snapshot passed in stays its owner's)."""
        self._source.close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    def __repr__(self) -> str:
        where = "/".join(x for x in (self.dataset.name, self.config, self.split) if x)
        parts = ", ".join(f"{p.config}/{p.split}" for p in self.parts())
        chosen = counted(len(self), "conversation")
        chosen += "" if self._indices is None else f" (selected from {len(self._source):,})"
        return f"<Corpus {where}: {chosen}{f' in {parts}' if parts else ''}>"

    # ------------------------------------------------------------------ size and positions
    def __len__(self) -> int:
        return len(self._source) if self._indices is None else len(self._indices)

    def _positions(self) -> np.ndarray:
        """The source positions of this corpus's conversations, in its order."""
        if self._indices is None:
            return np.arange(len(self._source), dtype=np.int64)
        return self._indices

    def _position(self, index: int) -> int:
        total = len(self)
        i = index + total if index < 0 else index
        if not 0 <= i < total:
            raise IndexError(f"position {index} is outside this corpus of {counted(total, 'conversation')}")
        return i if self._indices is None else int(self._indices[i])

    def _has_position(self, position: int) -> bool:
        if self._indices is None:
            return True
        if self._sorted is None:
            self._sorted = np.sort(self._indices)
        at = int(np.searchsorted(self._sorted, position))
        return at < len(self._sorted) and int(self._sorted[at]) == position

    def _position_of(self, conversation_id: str) -> int:
        position = self._source.positions([conversation_id]).get(conversation_id)
        if position is None or not self._has_position(position):
            raise ConversationNotFoundError(
                self._missing(conversation_id), dataset=self.dataset.name, conversation_id=conversation_id
            )
        return position

    def _missing(self, conversation_id: str) -> str:
        where = "this selection of " if self._indices is not None else ""
        return f"{where}{self.dataset.name} has no conversation {conversation_id!r} in the bank"

    def __contains__(self, conversation_id: object) -> bool:
        if not isinstance(conversation_id, str):
            return False
        position = self._source.positions([conversation_id]).get(conversation_id)
        return position is not None and self._has_position(position)

    def __getitem__(self, key: int | str | slice) -> Any:
        """A conversation by position in this corpus (``corpus[0]``, ``corpus[-1]``) or by id
        (``corpus["938"]``); a slice (``corpus[10:20]``, ``corpus[::2]``) is a corpus."""
        if isinstance(key, slice):
            return self._derive(self._positions()[key])
        if (index := an_index(key)) is not None:
            return self._source.conversation(self._position(index))
        if isinstance(key, str):
            return self._source.conversation(self._position_of(key))
        first = repr(self[0].conversation_id) if len(self) else "'...'"
        raise TypeError(
            f"a corpus is indexed by conversation id (a str, such as {first}), by position (an int) "
            f"or by a slice, not by {type(key).__name__}; use select() for a list of positions"
        )

    def conversation_ids(self) -> list[str]:
        """The conversation ids in this corpus's order.

        >>> convbank.load("casino", split="valid").conversation_ids()[:3]
        ['157', '431', '375']
        """
        out = []
        for start in range(0, len(self), 65536):
            for position in self._positions()[start : start + 65536].tolist():
                batch, row = self._source.locate(position)
                out.append(self._source.id_list(batch)[row])
        return out

    def neighbours(self, conversation_id: str) -> tuple[str | None, str | None]:
        """The ids before and after a conversation in this corpus's order (source order for
        a corpus that is not a selection), None at either end."""
        if not isinstance(conversation_id, str):
            raise TypeError(f"neighbours() takes a conversation id (a str), not {conversation_id!r}")
        position = self._position_of(conversation_id)
        at = position if self._indices is None else int(np.flatnonzero(self._indices == position)[0])
        before = self._id_at(at - 1) if at > 0 else None
        after = self._id_at(at + 1) if at + 1 < len(self) else None
        return before, after

    def _id_at(self, index: int) -> str:
        batch, row = self._source.locate(self._position(index))
        return self._source.id_list(batch)[row]

    # ------------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[Conversation]:
        """The conversations in this corpus's order. A whole corpus streams one stored batch
        at a time (the next read in a thread while this one is yielded: memory stays flat); a
        selection is fetched a window of positions at a time through the cache."""
        if self._indices is not None:
            for start in range(0, len(self._indices), _WINDOW):
                yield from self._source.fetch(self._indices[start : start + _WINDOW].tolist())
            return
        source = self._source
        if not source.batches:
            return
        with ThreadPoolExecutor(1, thread_name_prefix="convbank-read") as reader:
            pending = reader.submit(source.tables, 0)
            for i, batch in enumerate(source.batches):
                tables = resolved(pending)  # a wait Ctrl-C ends at once
                if i + 1 < len(source.batches):
                    pending = reader.submit(source.tables, i + 1)
                part = source.parts[batch.part]
                yield from tables_to_conversations(
                    tables, dataset=self.dataset.name, config=part.config, split=part.split
                )

    def take(self, conversation_ids: Iterable[str]) -> list[Conversation]:
        """The conversations of these ids, in the order given (an id may repeat): each
        stored batch that holds one of them is read once. Raises
        :class:`ConversationNotFoundError` naming the first id the corpus does not have.

        >>> [c.num_turns for c in convbank.load("casino").take(["938", "1"])]
        [13, 13]

        One id (a str) is taken as one, not as its letters; a position or bytes given instead
        is a ``TypeError`` naming it.
        """
        ids = conversation_ids
        one = isinstance(ids, (str, bytes, bytearray)) or not isinstance(ids, Iterable)
        wanted: list[Any] = [ids] if one else list(ids)  # one id, or one thing named below
        for odd in (cid for cid in wanted if not isinstance(cid, str)):  # the first, None too
            raise TypeError(
                f"take() takes conversation ids (strings), not {type(odd).__name__} {odd!r}; "
                "select() takes positions"
            )
        found = self._source.positions(wanted)
        for cid in wanted:
            position = found.get(cid)
            if position is None or not self._has_position(position):
                raise ConversationNotFoundError(
                    self._missing(cid), dataset=self.dataset.name, conversation_id=cid
                )
        return self._source.fetch([found[cid] for cid in wanted])

    # ------------------------------------------------------------------ derived corpora
    def select(self, indices: Iterable[int] | np.ndarray) -> Corpus:
        """The conversations at these positions of this corpus, in this order (a position may
        repeat; negative ones count from the end), as a corpus.

        >>> convbank.load("casino").select([0, 5, 2]).conversation_ids()
        ['938', '487', '790']
        """
        given = list(indices) if not isinstance(indices, np.ndarray) else indices
        total = len(self)
        of = f"this corpus of {counted(total, 'conversation')}"
        chosen = chosen_positions(given, total, of=of, refused="select() takes integer positions, not")
        return self._derive(self._positions()[chosen])

    def shuffle(self, seed: int | None = None) -> Corpus:
        """This corpus in a random order (a permutation drawn with NumPy from ``seed``; the
        same seed gives the same order), as a corpus.

        >>> convbank.load("casino").shuffle(seed=0)[0].conversation_id
        '163'
        """
        order = np.random.default_rng(None if seed is None else whole_number(seed)).permutation(len(self))
        return self._derive(self._positions()[order])

    def shard(self, num_shards: int, index: int, *, contiguous: bool = True) -> Corpus:
        """One of ``num_shards`` disjoint shards that together hold every conversation once:
        a contiguous block (default) or every ``num_shards``-th conversation from ``index``.

        >>> [len(convbank.load("casino").shard(4, i)) for i in range(4)]
        [258, 258, 257, 257]
        """
        num_shards = whole_number(num_shards, "num_shards", least=1)
        index = whole_number(index, "index")
        if index >= num_shards:
            raise ValueError(f"shard {index} of {num_shards}: need 0 <= index < num_shards")
        positions = self._positions()
        if not a_flag(contiguous, "contiguous"):
            return self._derive(positions[index::num_shards])
        size, extra = divmod(len(positions), num_shards)
        start = index * size + min(index, extra)
        return self._derive(positions[start : start + size + (index < extra)])

    def filter(
        self,
        where: str | Callable[[Conversation], bool] | None = None,
        *,
        label: str | None = None,
        layer: str | None = None,
        meta: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        hard: bool = False,
    ) -> Corpus:
        """The conversations that match, in this corpus's order, as a corpus: a SQL condition
        on the ``conversations`` view (``where="num_turns > 20"``), a function of a
        :class:`Conversation` (``lambda c: c.num_turns > 20``; it returns True or False, a
        bool of Python or NumPy: another answer, ``"no"``, None, ``1``, is a ``TypeError``
        naming it), an annotation (``label="strategy:uv-part"``, ``layer:label``), any
        annotation of a layer (``layer="strategy"``: the annotated conversations) and/or
        conversation meta values
        (``meta={"eval_score": 5}``; a dotted key reaches inside: ``"a.b"``, unless a
        conversation's meta has a key of that name). All given must hold. A label, layer or
        meta key this dataset does not have is an error that lists the known ones (as an
        unknown config or split is), never a silent empty corpus; so is a meta value of a
        type no stored value has (``"5"`` where they are integers). A SQL condition's query
        runs for at most ``timeout`` seconds, held as :meth:`sql` holds it (None: no limit).

        >>> len(convbank.load("casino").filter(label="strategy:uv-part"))
        89
        """
        check_filter(where, label, layer, meta)
        positions = self._positions()
        keep = np.ones(len(positions), dtype=bool)
        if label is not None:
            keep &= np.isin(positions, self._label_positions(label))
        if layer is not None:
            keep &= np.isin(positions, self._layer_positions(layer))
        if meta:
            keep &= np.isin(positions, self._meta_positions(meta))
        if isinstance(where, str):
            keep &= np.isin(positions, self._where_positions(where, timeout, hard))
        elif where is not None:
            test = where
            verdicts = (a_verdict(test(c), f"conversation {c.conversation_id!r}") for c in self)
            keep &= np.fromiter(verdicts, dtype=bool, count=len(self))
        return self._derive(positions[keep])

    # ------------------------------------------------------------------ parts
    def parts(self) -> list[Part]:
        """The (config, split) parts this corpus covers, in order (for a selection, those
        with at least one selected conversation)."""
        if self._indices is None:
            return list(self._source.parts)
        source = self._source
        batch_of = np.searchsorted(np.asarray(source.starts), self._indices, side="right") - 1
        present = set(np.unique(np.asarray([b.part for b in source.batches])[batch_of]).tolist())
        return [part for i, part in enumerate(self._source.parts) if i in present]

    def loaded_parts(self) -> list[Part]:
        """The (config, split) parts this corpus was loaded with, whatever it selects of them
        (an empty selection's too: the splits its ``to_hf()`` has, each with no rows)."""
        return list(self._source.parts)

    def by_part(self) -> dict[Part, Corpus]:
        """This corpus's conversations per (config, split), each a corpus in this corpus's
        order (what per-split exports, such as ``to_hf``, write).

        >>> {p.split: len(c) for p, c in convbank.load("casino").by_part().items()}
        {'train': 900, 'valid': 30, 'test': 100}
        """
        source = self._source
        if self._indices is None:
            return {
                part: Corpus(self.dataset.name, part.config, part.split, snapshot=self.snapshot)
                for part in source.parts
            }
        batch_of = np.searchsorted(np.asarray(source.starts), self._indices, side="right") - 1
        part_of = np.asarray([b.part for b in source.batches], dtype=np.int64)[batch_of]
        return {
            part: self._derive(self._indices[part_of == p])
            for p, part in enumerate(source.parts)
            if (part_of == p).any()
        }

    def part_positions(self, part: Part) -> np.ndarray | None:
        """The source positions of a part's selected conversations in source order (None for
        a corpus that is not a selection: all of them)."""
        if self._indices is None:
            return None
        p = self._source.parts.index(part)
        lo = self._source.starts[self._source.part_batches[p][0]] if self._source.part_batches[p] else 0
        hi = self._source.starts[self._source.part_batches[p][-1] + 1] if self._source.part_batches[p] else 0
        chosen = np.unique(self._indices)
        return chosen[(chosen >= lo) & (chosen < hi)]

    def selected_ids(self, config: str, split: str) -> set[str] | None:
        """The ids of a part's selected conversations (None: the corpus is not a selection)."""
        positions = self.part_positions(Part(config, split))
        if positions is None:
            return None
        return set(self._derive(positions).conversation_ids())

    def stored_count(self, config: str, split: str) -> int:
        """How many conversations the bank holds for one (config, split), whatever this
        corpus selects of them."""
        return self.snapshot.split_info(self.dataset.name, config, split).conversations

    def file_meta(self, config: str, split: str) -> dict[str, Any]:
        """File-level source content kept for a split (for the source export)."""
        return self.snapshot.split_info(self.dataset.name, config, split).file_meta

    def iter_part(self, config: str, split: str) -> Iterator[Conversation]:
        """The conversations of one (config, split) of this corpus, in source order."""
        positions = self.part_positions(Part(config, split))
        if positions is not None:
            return iter(self._derive(positions))
        return iter(Corpus(self.dataset.name, config, split, snapshot=self.snapshot))

    def context(self, conversation: Conversation) -> dict[str, Any]:
        """What the dataset's side tables say about one of its conversations (the text of
        Curiosity's facts), from :meth:`convbank.datasets.Presentation.conversation_context`."""
        return self.dataset.presentation.conversation_context(conversation, self.side_table)

    def to_hf(
        self,
        config: str | None = None,
        *,
        streaming: bool = False,
        chat: bool | str = False,
        as_participant: str | None = None,
    ) -> Any:
        """This corpus as Hugging Face ``datasets`` (needs ``convbank[hf]``): a ``DatasetDict``
        of its splits for one config, ``{config: DatasetDict}`` for several;
        ``streaming=True`` gives ``IterableDataset`` s read from the bank; ``chat=True`` adds
        the ``messages`` column. Splits are named as convbank names them (PEC's ``valid``, not
        the loader's ``validation``, which ``export --format hf`` writes). See
        :func:`convbank.export.hf.to_hf`.

        >>> convbank.load("casino").filter(label="strategy:uv-part").to_hf()["train"].num_rows
        81
        """
        from convbank.export.hf import to_hf  # the one upward import: pyproject's ignore_imports

        return to_hf(self, config, streaming=streaming, chat=chat, as_participant=as_participant)

    def sql(self, query: str, *, timeout: float | None = None, hard: bool = False) -> pa.Table:
        """Run read-only SQL over the bank's views (all datasets; filter on ``dataset``), in
        the generation this corpus reads (in this process, Ctrl-C interrupts it), stopped
        after ``timeout`` seconds (:class:`QueryError`): by DuckDB, as `convbank query`'s
        default time limit is, or with ``hard`` in a worker process killed on time, as
        :func:`convbank.sql` and `query --timeout` hold it (no SQL escapes that)."""
        from convbank.store.queries import stream
        from convbank.store.sql import collect

        return collect(stream(query, snapshot=self.snapshot, timeout=timeout, hard=hard, last_only=True))

    def _repr_html_(self) -> str:
        """Jupyter's view: dataset, parts, label layers, first conversations (escaped)."""
        from convbank.web.notebook import corpus_html  # upward, named in pyproject's ignore_imports

        return corpus_html(self)


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
    snapshot, dataset = pinned_dataset(name, root, generation)
    corpus = Corpus(dataset, config, split, snapshot=snapshot, cache_bytes=cache_bytes)
    corpus._source.own_snapshot = True
    return corpus if indices is None else corpus._derive(indices)
