"""PyTorch datasets over a :class:`~convbank.Corpus` or any sequence of examples (needs
``convbank[torch]``).

- :class:`CorpusDataset`: map-style (``len``, ``dataset[i]``), over conversations, turns or a
  sequence of example dicts (a benchmark task's examples); batches are fetched together
  (``__getitems__``), so a ``DataLoader`` decodes each stored batch once per batch it asks for.
- :class:`IterableCorpusDataset`: a stream read a stored batch at a time (turns through
  :meth:`Corpus.iter_batches`, conversations through :meth:`Corpus.select`), sharded by
  ``DataLoader`` worker and by distributed rank so that every example is seen exactly once
  per epoch whatever their numbers, and shuffled with a seed (:meth:`~IterableCorpusDataset.set_epoch`
  changes the order each epoch, as in Hugging Face ``datasets`` and WebDataset).

Both take a ``transform`` (item -> anything: tokenisation goes there) and a ``where`` (item ->
bool: the items kept, before batching, so batches stay full), and go to ``DataLoader`` workers
as they are (a corpus pickles by re-opening the same generation of the bank). A turn
is a dict: ``dataset``, ``config``, ``split``, ``conversation_id``, ``turn_index``,
``participant_id``, ``role``, ``text``, ``kind`` and ``labels`` (``"layer:label"`` strings)::

    from torch.utils.data import DataLoader
    from convbank.torch import IterableCorpusDataset, collate

    data = IterableCorpusDataset(convbank.load("casino", split="train"), "turns", shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=32, num_workers=2, collate_fn=collate)
    for epoch in range(3):
        data.set_epoch(epoch)
        for batch in loader:
            batch["text"], batch["labels"]  # lists of 32 (the last batch fewer)

Over example views (``convbank.examples``): an iterable dataset reads a unit of a view with one
``__getitems__`` call, and its :meth:`~IterableCorpusDataset.set_epoch` reaches a
:class:`~convbank.examples.Mixture`, whose plan is then drawn again (a new order each epoch,
each of its examples once per epoch across workers and ranks). :class:`PadCollator` pads
tokenised examples into tensors.
"""

from __future__ import annotations

import copy
import gc
import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from convbank.errors import require

require("torch", "torch", "convbank.torch")

import torch  # noqa: E402
from torch.utils.data import Dataset, IterableDataset, get_worker_info  # noqa: E402

if TYPE_CHECKING:
    from convbank.corpus import Corpus
    from convbank.model import Conversation

__all__ = [
    "TURN_FIELDS",
    "CorpusDataset",
    "IterableCorpusDataset",
    "PadCollator",
    "collate",
    "collate_conversations",
    "turn_items",
]

Items = Literal["conversations", "turns", "examples"]
TURN_FIELDS = (
    "dataset", "config", "split", "conversation_id", "turn_index",
    "participant_id", "role", "text", "kind", "labels",
)  # fmt: skip
"""The keys of a turn item, in order."""

_UNIT = 2000
"""Conversations read together by an iterable dataset (a stored batch holds at most 2,000)."""


def _items(source: Any, items: Items | None) -> Items:
    from convbank.corpus import Corpus

    if isinstance(source, Corpus):
        chosen = items or "conversations"
        if chosen not in ("conversations", "turns"):
            raise ValueError(f"a corpus gives 'conversations' or 'turns', not {chosen!r}")
        return chosen
    if items not in (None, "examples"):
        raise ValueError(f"a sequence of examples gives 'examples', not {items!r}; pass a Corpus for {items}")
    return "examples"


def turn_items(conv: Conversation) -> list[dict[str, Any]]:
    """The turns of a conversation as items (see the module doc), in order.

    >>> turn_items(convbank.load("casino")["1"])[0]["labels"]
    ['strategy:small-talk']
    """
    roles = {p.participant_id: p.role for p in conv.participants}
    labels: dict[int, list[str]] = {}
    for a in conv.annotations:
        labels.setdefault(a.turn_index, []).append(f"{a.layer}:{a.label}")
    return [
        {
            "dataset": conv.dataset,
            "config": conv.config,
            "split": conv.split,
            "conversation_id": conv.conversation_id,
            "turn_index": t.turn_index,
            "participant_id": t.participant_id,
            "role": roles.get(t.participant_id, ""),
            "text": t.text,
            "kind": t.kind,
            "labels": labels.get(t.turn_index, []),
        }
        for t in conv.turns
    ]


# ---------------------------------------------------------------------- map-style
class CorpusDataset(Dataset[Any]):
    """A map-style dataset: ``items="conversations"`` (a :class:`Conversation` each, the
    default for a corpus), ``"turns"`` (turn dicts, in the corpus's order) or, for a plain
    sequence, its examples; ``transform`` is applied to each item.

    ``where`` keeps the items for which it is true (called on each item, before ``transform``,
    once: the positions of the kept items are found here), so a ``DataLoader`` with a
    ``batch_size`` gives full batches but the last. ``dataset[a:b]`` and :meth:`select` are
    datasets of some of its items.

    >>> data = CorpusDataset(convbank.load("casino", split="valid"), "turns")
    >>> len(data), data[0]["text"][:12]
    (402, 'Hello there!')
    >>> messages = CorpusDataset(convbank.load("casino", split="valid"), "turns",
    ...                          where=lambda t: t["kind"] == "message")
    >>> len(messages), len(messages[:100])
    (338, 100)
    """

    def __init__(
        self,
        source: Corpus | Sequence[Any],
        items: Items | None = None,
        *,
        transform: Callable[[Any], Any] | None = None,
        where: Callable[[Any], Any] | None = None,
    ) -> None:
        self.source = source
        self.items = _items(source, items)
        self.transform = transform
        self.where = where
        self._offsets: np.ndarray | None = None
        self._index: np.ndarray | None = None
        """The positions of its items among the source's (None: all, in order)."""
        self._filtered = False
        if where is not None:
            self._refilter()

    def _turn_offsets(self) -> np.ndarray:
        """The first turn of each conversation of the corpus, in its order (read once)."""
        if self._offsets is None:
            corpus: Any = self.source
            counts = corpus.to_arrow("conversations", meta="json").column("num_turns").to_numpy()
            self._offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        return self._offsets

    def _total(self) -> int:
        """The items of the source (before ``where`` and selections)."""
        if self.items == "turns":
            return int(self._turn_offsets()[-1])
        return len(self.source)

    def _refilter(self) -> None:
        keep = np.zeros(self._total(), dtype=bool)
        where: Any = self.where
        for start in range(0, len(keep), _UNIT):
            chunk = self._raw(list(range(start, min(start + _UNIT, len(keep)))))
            keep[start : start + len(chunk)] = [bool(where(item)) for item in chunk]
        self._index = np.flatnonzero(keep).astype(np.int64)
        self._filtered = True

    def __len__(self) -> int:
        return self._total() if self._index is None else len(self._index)

    def _apply(self, item: Any) -> Any:
        return item if self.transform is None else self.transform(item)

    def set_epoch(self, epoch: int) -> None:
        """Pass the epoch to a source that has epochs (a :class:`~convbank.examples.Mixture`
        draws its plan again); ``where`` is then applied to the new plan."""
        set_epoch = getattr(self.source, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch)
            if self._filtered:
                self._refilter()

    def select(self, indices: Sequence[int] | np.ndarray) -> CorpusDataset:
        """A dataset of the items at these positions (in this order; negative ones count from
        the end), with the same transform.

        >>> CorpusDataset(convbank.load("casino", split="valid"), "turns").select([2, 0])[1]["turn_index"]
        0
        """
        chosen = np.asarray(indices, dtype=np.int64).reshape(-1)
        total = len(self)
        bad = chosen[(chosen >= total) | (chosen < -total)]
        if bad.size:
            raise IndexError(f"index {int(bad[0])} is outside this dataset of {total:,} {self.items}")
        chosen = np.where(chosen < 0, chosen + total, chosen)
        new = copy.copy(self)
        new._index = chosen if self._index is None else self._index[chosen]
        new._filtered = False
        return new

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> CorpusDataset: ...
    def __getitem__(self, index: int | slice) -> Any:
        """An item, or for a slice a dataset of those items."""
        if isinstance(index, slice):
            return self.select(np.arange(len(self), dtype=np.int64)[index])
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """Several items at once (what a ``DataLoader`` with a ``batch_size`` asks for): the
        conversations they come from are fetched together."""
        total = len(self)
        wanted = [i + total if i < 0 else i for i in indices]
        for i, j in zip(indices, wanted, strict=True):
            if not 0 <= j < total:
                raise IndexError(f"index {i} is outside this dataset of {total:,} {self.items}")
        if self._index is not None:
            wanted = self._index[np.asarray(wanted, dtype=np.int64)].tolist()
        return [self._apply(item) for item in self._raw(wanted)]

    def _raw(self, wanted: list[int]) -> list[Any]:
        """The source's items at these positions (in range, non-negative), untransformed."""
        if self.items == "examples":
            return _read_examples(self.source, wanted)
        corpus: Any = self.source
        if self.items == "conversations":
            return list(corpus.select(wanted))
        offsets = self._turn_offsets()
        where = np.searchsorted(offsets, np.asarray(wanted, dtype=np.int64), side="right") - 1
        convs = np.unique(where)
        turns = dict(zip(convs.tolist(), (turn_items(c) for c in corpus.select(convs)), strict=True))
        return [turns[c][i - int(offsets[c])] for c, i in zip(where.tolist(), wanted, strict=True)]


def _read_examples(examples: Any, wanted: list[int]) -> list[Any]:
    """Examples of a sequence: with one ``__getitems__`` call where it has one (an example
    view fetches them together), else one by one."""
    if not wanted:
        return []
    getitems = getattr(examples, "__getitems__", None)
    if callable(getitems):
        return list(getitems(wanted))
    return [examples[i] for i in wanted]


# ---------------------------------------------------------------------- iterable
class IterableCorpusDataset(IterableDataset[Any]):
    """A stream of conversations, turns or examples, sharded and shuffled (see the module
    doc). The corpus is cut into units of at most 2,000 consecutive conversations (more,
    smaller units when there are fewer units than shards); unit *k* of an epoch goes to shard
    ``k % (world_size * num_workers)``, where the shard of a worker is ``rank * num_workers +
    worker id``. ``shuffle=True`` permutes the units and the items within each unit, drawn from
    ``(seed, epoch)``: the same seed and epoch give the same order on every machine.

    ``rank`` and ``world_size`` default to ``torch.distributed``'s when it is initialised
    (else 0 and 1). Without shuffling, turns and conversations come in the corpus's order (a
    selection's order, its repeats repeated).
    ``where`` keeps the items for which it is true, as they stream (before ``transform``).
    A sequence of examples with ``__getitems__`` (an example view) is read a unit at a time
    with one call; over a :class:`~convbank.examples.Mixture` (``shuffle=False`` keeps its own
    order), :meth:`set_epoch` draws its plan of the epoch.

    >>> data = IterableCorpusDataset(convbank.load("casino"), "turns", rank=0, world_size=2)
    >>> sum(1 for _ in data)  # this rank's units: about half of the 14,297 turns
    7047
    """

    def __init__(
        self,
        source: Corpus | Sequence[Any],
        items: Items | None = None,
        *,
        transform: Callable[[Any], Any] | None = None,
        shuffle: bool = False,
        seed: int = 0,
        rank: int | None = None,
        world_size: int | None = None,
        unit: int = _UNIT,
        where: Callable[[Any], Any] | None = None,
    ) -> None:
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank= and world_size=, or neither (torch.distributed's then)")
        if world_size is not None and rank is not None and not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} of world_size {world_size}: need 0 <= rank < world_size")
        if unit < 1:
            raise ValueError(f"unit must be at least 1 conversation, not {unit}")
        self.source = source
        self.items = _items(source, items)
        self.transform = transform
        self.shuffle = shuffle
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.unit = unit
        self.where = where
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently in this epoch (call before iterating; workers get the dataset
        again at each epoch, so the number reaches them), and pass the epoch to a source that
        has epochs (a :class:`~convbank.examples.Mixture` draws its plan of the epoch)."""
        self.epoch = epoch
        set_epoch = getattr(self.source, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch)

    def shard(self) -> tuple[int, int]:
        """This process's shard and the number of shards: (rank * workers + worker id,
        world_size * workers)."""
        rank, world = self.rank, self.world_size
        if rank is None or world is None:
            rank, world = 0, 1
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        info = get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        return rank * workers + worker, world * workers

    def units(self, num_shards: int) -> list[np.ndarray]:
        """The epoch's units (positions in the source, in the order they are dealt to shards)."""
        total = len(self.source)
        size = min(self.unit, max(1, math.ceil(total / num_shards)))
        cuts = [np.arange(start, min(start + size, total)) for start in range(0, total, size)]
        if self.shuffle:
            rng = np.random.default_rng([self.seed, self.epoch])
            cuts = [cuts[k] for k in rng.permutation(len(cuts))]
        return cuts

    def _rng(self, shard: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, self.epoch, shard, 1])

    def __iter__(self) -> Iterator[Any]:
        if get_worker_info() is not None:
            # a forked worker shares its parent's heap: the cyclic collector would touch (and
            # so copy) every inherited object again and again; they stay out of its sight
            gc.freeze()
        shard, num_shards = self.shard()
        rng = self._rng(shard)
        for unit in self.units(num_shards)[shard::num_shards]:
            chunk = self._read(unit)
            order = rng.permutation(len(chunk)) if self.shuffle else range(len(chunk))
            for i in order:
                item = chunk[i]
                if self.where is not None and not self.where(item):
                    continue
                yield item if self.transform is None else self.transform(item)

    def __len__(self) -> int:
        """Conversations or examples in the whole epoch (all shards); for turns, the turns
        (before ``where``: the items it drops are not known before they stream)."""
        if self.items == "turns":
            corpus: Any = self.source
            keys = ["config", "split", "conversation_id", "num_turns"]
            counts = _table(corpus, "conversations", keys, ordered=True)
            return 0 if counts is None else int(counts.column("num_turns").to_numpy().sum())
        return len(self.source)

    def _read(self, unit: np.ndarray) -> list[Any]:
        enabled = gc.isenabled()
        gc.disable()  # thousands of acyclic items: the collector would rescan them again and again
        try:
            return self._read_unit(unit)
        finally:
            if enabled:
                gc.enable()

    def _read_unit(self, unit: np.ndarray) -> list[Any]:
        if self.items == "examples":
            return _read_examples(self.source, unit.tolist())
        corpus: Any = self.source
        chosen = corpus.select(unit)
        if self.items == "conversations":
            return list(chosen)
        return _turns(chosen)


def _turns(corpus: Corpus) -> list[dict[str, Any]]:
    """The turn items of a corpus (a unit), from its tables' record batches: the turns, with
    their speakers' roles and their annotations' labels matched in Arrow."""
    fields = [*TURN_FIELDS[:6], "text", "kind"]
    turns = _table(corpus, "turns", fields, ordered=True)
    if turns is None:
        return []
    speaker = ["config", "split", "conversation_id", "participant_id"]
    people = _table(corpus, "participants", [*speaker, "role"])
    roles: list[Any] = [""] * turns.num_rows
    if people is not None:
        found = pc.index_in(_key(turns, speaker), value_set=_key(people, speaker))
        roles = pc.fill_null(people.column("role").take(found), "").to_pylist()
    labels: list[Any] = [None] * turns.num_rows
    where = ["config", "split", "conversation_id", "turn_index"]
    anns = _table(corpus, "annotations", [*where, "layer", "label"])
    if anns is not None:
        keys = _key(anns, where)
        names = pc.binary_join_element_wise(anns.column("layer"), anns.column("label"), ":").to_pylist()
        grouped: dict[str, list[str]] = {}
        for key, name in zip(keys.to_pylist(), names, strict=True):
            grouped.setdefault(key, []).append(name)
        found = pc.index_in(_key(turns, where), value_set=pa.array(list(grouped), pa.string()))
        lists = list(grouped.values())
        labels = [None if i is None else lists[i] for i in found.to_pylist()]
    columns = [turns.column(c).to_pylist() for c in fields]
    return [
        {
            "dataset": ds,
            "config": cfg,
            "split": spl,
            "conversation_id": cid,
            "turn_index": ti,
            "participant_id": pid,
            "role": role,
            "text": text,
            "kind": kind,
            "labels": [] if named is None else list(named),
        }
        for ds, cfg, spl, cid, ti, pid, text, kind, role, named in zip(*columns, roles, labels, strict=True)
    ]


def _table(corpus: Corpus, name: str, columns: list[str], *, ordered: bool = False) -> pa.Table | None:
    """A unified table's rows of a corpus (None when it has none): its stored batches
    streamed (source order, each conversation once), or ``ordered``: in the corpus's order
    with its repeats (``columns`` then include the keys)."""
    batches = list(corpus.iter_batches(name, 1 << 20, columns))
    if not batches:
        return None
    table = pa.Table.from_batches(batches)
    return corpus.in_order(name, table) if ordered else table


def _key(table: pa.Table, columns: list[str]) -> pa.ChunkedArray:
    """One string key of several columns (joined by a control character)."""
    return pc.binary_join_element_wise(*(table.column(c).cast(pa.string()) for c in columns), "\x1f")


# ---------------------------------------------------------------------- collate
def collate(batch: Sequence[Any]) -> Any:
    """A batch of dicts as a dict of per-key values: numbers (int, float, bool) become a
    tensor, tensors of one shape are stacked, lists of numbers of one length (multi-hot
    vectors) become a 2-D tensor (bool, int64, or float32 if any is a float), anything else
    (strings, label lists, lists of unequal lengths, None) stays a list; a batch of anything
    but dicts is returned as a list. :class:`PadCollator` pads token lists instead.

    >>> collate([{"text": "a", "turn_index": 0}, {"text": "b", "turn_index": 1}])
    {'text': ['a', 'b'], 'turn_index': tensor([0, 1])}
    >>> collate([{"labels": [0, 1, 1]}, {"labels": [1, 0, 0]}])["labels"]
    tensor([[0, 1, 1],
            [1, 0, 0]])
    """
    if not batch or not all(isinstance(x, dict) for x in batch):
        return list(batch)
    out: dict[str, Any] = {}
    for key in batch[0]:
        values = [x[key] for x in batch]
        out[key] = _column(values)
    return out


def _column(values: list[Any]) -> Any:
    first = values[0]
    kind = type(first)
    if kind in (bool, int, float) and all(type(v) is kind for v in values):
        return torch.tensor(values, dtype={bool: torch.bool, int: torch.int64, float: torch.float32}[kind])
    if kind in (int, float) and all(type(v) in (int, float) for v in values):
        return torch.tensor(values, dtype=torch.float32)
    if isinstance(first, torch.Tensor) and all(
        isinstance(v, torch.Tensor) and v.shape == first.shape for v in values
    ):
        return torch.stack(values)
    if isinstance(first, (list, tuple)) and first:
        width = len(first)
        if all(isinstance(v, (list, tuple)) and len(v) == width for v in values):
            kinds = {type(x) for v in values for x in v}
            for allowed, dtype in _VECTOR_KINDS:
                if kinds <= allowed:
                    return torch.tensor(values, dtype=dtype)
    return values


_VECTOR_KINDS = (
    ({bool}, torch.bool),
    ({int}, torch.int64),
    ({int, float}, torch.float32),
)
"""What the items of equal-length lists of numbers become: the first kind set holding them."""


def collate_conversations(batch: Sequence[Conversation]) -> list[Conversation]:
    """A batch of conversations as a list (``DataLoader``'s default collate cannot batch
    them): pass it as ``collate_fn`` for a conversation dataset without a transform."""
    return list(batch)


# ---------------------------------------------------------------------- padding
_PADDED = ("input_ids", "attention_mask", "labels", "position_ids", "token_type_ids")
"""The keys padded to the batch's length (labels: when they are token labels)."""


class PadCollator:
    """A ``collate_fn`` for tokenised examples: pads ``input_ids`` (with ``pad_token_id``),
    ``attention_mask`` (0 on padding; made of 1s where the examples have none),
    ``position_ids`` and ``token_type_ids`` (0), and ``labels`` (``label_pad_id``) when they are
    token labels, into int64 tensors of the batch's longest length, rounded up to a multiple of
    ``pad_to_multiple_of``; other keys are batched as :func:`collate` does (so class ids become
    a tensor, multi-hot vectors a stacked tensor).

    ``labels`` are token labels (padded) when every example's are a list of ints as long as
    its ``input_ids``; else they are stacked (``token_labels=True``/``False`` decides instead).
    ``max_length`` cuts longer examples on the padding side (right: their end; left: their
    start, so a prompt keeps its last tokens). ``pad_token_id`` or a ``tokenizer`` whose
    ``pad_token_id`` it reads (only the number is kept: the collator pickles small).

    >>> pad = PadCollator(0, pad_to_multiple_of=4)
    >>> batch = pad([{"input_ids": [5, 6, 7], "labels": [-100, 6, 7]}, {"input_ids": [8], "labels": [8]}])
    >>> batch["input_ids"], batch["attention_mask"], batch["labels"]
    (tensor([[5, 6, 7, 0],
            [8, 0, 0, 0]]), tensor([[1, 1, 1, 0],
            [1, 0, 0, 0]]), tensor([[-100,    6,    7, -100],
            [   8, -100, -100, -100]]))
    """

    def __init__(
        self,
        pad_token_id: int | None = None,
        *,
        tokenizer: Any = None,
        padding_side: Literal["right", "left"] = "right",
        pad_to_multiple_of: int | None = None,
        label_pad_id: int = -100,
        max_length: int | None = None,
        token_labels: bool | None = None,
    ) -> None:
        if tokenizer is not None:
            if pad_token_id is not None:
                raise TypeError("give pad_token_id= or tokenizer=, not both")
            pad_token_id = getattr(tokenizer, "pad_token_id", None)
            if pad_token_id is None:
                raise ValueError(
                    "the tokenizer has no pad token (its pad_token_id is None): set "
                    "tokenizer.pad_token = tokenizer.eos_token, or pass pad_token_id="
                )
        if pad_token_id is None:
            raise TypeError("PadCollator needs the pad_token_id (or a tokenizer= to read it from)")
        if padding_side not in ("right", "left"):
            raise ValueError(f"padding_side must be 'right' or 'left', not {padding_side!r}")
        for name, value in (("pad_to_multiple_of", pad_to_multiple_of), ("max_length", max_length)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive whole number or None, not {value!r}")
        if pad_to_multiple_of and max_length and max_length % pad_to_multiple_of:
            raise ValueError(
                f"max_length {max_length} is not a multiple of pad_to_multiple_of {pad_to_multiple_of}"
            )
        self.pad_token_id = int(pad_token_id)
        self.padding_side = padding_side
        self.pad_to_multiple_of = pad_to_multiple_of
        self.label_pad_id = int(label_pad_id)
        self.max_length = max_length
        self.token_labels = token_labels

    def __repr__(self) -> str:
        return (
            f"PadCollator(pad_token_id={self.pad_token_id}, padding_side={self.padding_side!r}, "
            f"pad_to_multiple_of={self.pad_to_multiple_of}, label_pad_id={self.label_pad_id}, "
            f"max_length={self.max_length}, token_labels={self.token_labels})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PadCollator) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    def __call__(self, batch: Sequence[dict[str, Any]]) -> dict[str, Any]:
        if not batch or not all(isinstance(x, dict) and "input_ids" in x for x in batch):
            raise TypeError("PadCollator pads examples (dicts) with input_ids; use collate for others")
        ids = [_tokens(x["input_ids"]) for x in batch]
        length = max(len(t) for t in ids)
        if self.max_length is not None:
            length = min(length, self.max_length)
        if self.pad_to_multiple_of:
            length = -(-length // self.pad_to_multiple_of) * self.pad_to_multiple_of
        token_labels = self.token_labels
        if token_labels is None and "labels" in batch[0]:
            token_labels = all(_is_token_list(x["labels"], len(t)) for x, t in zip(batch, ids, strict=True))
        pads = {
            "input_ids": self.pad_token_id,
            "attention_mask": 0,
            "labels": self.label_pad_id,
            "position_ids": 0,
            "token_type_ids": 0,
        }
        out: dict[str, Any] = {}
        for key in batch[0]:
            if (key == "labels" and not token_labels) or key not in _PADDED:
                out[key] = _column([x[key] for x in batch])
                continue
            rows = ids if key == "input_ids" else [_tokens(x[key]) for x in batch]
            out[key] = self._pad(rows, length, pads[key])
            if key == "input_ids" and "attention_mask" not in batch[0]:
                out["attention_mask"] = self._pad([[1] * len(t) for t in ids], length, 0)
        return out

    def _pad(self, rows: list[list[int]], length: int, value: int) -> torch.Tensor:
        out = torch.full((len(rows), length), value, dtype=torch.int64)
        for i, row in enumerate(rows):
            cut = row[:length] if self.padding_side == "right" else row[max(0, len(row) - length) :]
            if not cut:
                continue
            if self.padding_side == "right":
                out[i, : len(cut)] = torch.tensor(cut, dtype=torch.int64)
            else:
                out[i, length - len(cut) :] = torch.tensor(cut, dtype=torch.int64)
        return out


def _tokens(value: Any) -> list[int]:
    """Token ids (a list, tuple, array or tensor) as a list of ints."""
    if isinstance(value, torch.Tensor | np.ndarray):
        return [int(v) for v in value.reshape(-1).tolist()]
    return [int(v) for v in value]


def _is_token_list(labels: Any, n: int) -> bool:
    """Token labels: one integer per token (a list, tuple, array or tensor of ``n`` ints)."""
    if isinstance(labels, torch.Tensor):
        return labels.ndim == 1 and len(labels) == n and not labels.is_floating_point()
    if isinstance(labels, np.ndarray):
        return labels.ndim == 1 and len(labels) == n and labels.dtype.kind in "iu"
    return (
        isinstance(labels, (list, tuple))
        and len(labels) == n
        and all(type(v) is int or isinstance(v, np.integer) for v in labels)
    )
