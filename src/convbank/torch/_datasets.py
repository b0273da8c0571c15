"""The map-style and iterable datasets of :mod:`convbank.torch` (see there)."""

from __future__ import annotations

import copy
import gc
import math
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from convbank._arguments import a_flag, a_verdict
from convbank.errors import whole_number
from convbank.examples._rows import chosen_positions
from convbank.model import schema
from convbank.model.schema import UnifiedSchema

if TYPE_CHECKING:
    from convbank.corpus import Corpus
    from convbank.model import Conversation

__all__ = ["TURN_FIELDS", "CorpusDataset", "IterableCorpusDataset", "turn_fields", "turn_items"]

Items = Literal["conversations", "turns", "examples"]


def turn_fields(model: UnifiedSchema | None = None) -> tuple[str, ...]:
    """The keys of a turn item, in order, derived from the model: where the turn is, the
    turn's fields but its meta, its speaker's ``role`` after ``participant_id``, and its
    annotations' ``labels`` (``"layer:label"``).

    >>> turn_fields()[4:]
    ('turn_index', 'participant_id', 'role', 'text', 'kind', 'labels')
    """
    model = model or schema.SCHEMA
    fields = [c.name for c in model.fields["turns"] if not c.json]
    fields.insert(fields.index("participant_id") + 1, "role")
    return (*schema.PARTITION_COLUMNS, schema.KEY, *fields, "labels")


TURN_FIELDS = turn_fields()
"""The keys of a turn item of convbank's model, in order (:func:`turn_fields`)."""

_UNIT = 2000
"""Conversations read together by an iterable dataset (a stored batch holds at most 2,000)."""


def shared_epoch(epoch: int = 0) -> torch.Tensor:
    """An epoch number that ``DataLoader`` workers share with the process that made it, the
    persistent ones (``persistent_workers=True``) too: a tensor in shared memory, as Hugging
    Face's ``IterableDataset`` keeps its epoch. A worker copies a dataset once when it starts;
    an epoch set afterwards reaches it through this tensor.

    >>> epoch = shared_epoch()
    >>> _ = epoch.fill_(3); int(epoch), epoch.is_shared()
    (3, True)
    """
    value = torch.tensor(epoch, dtype=torch.int64)
    value.share_memory_()  # type: ignore[no-untyped-call]  # in place; torch does not type it
    return value


def epoch_number(epoch: Any) -> int:
    """``epoch`` as :func:`~convbank.errors.whole_number` takes it, and one the shared
    epoch's int64 holds: a larger one a ``ValueError`` naming it, never torch's overflow.

    >>> epoch_number(2**63)
    Traceback (most recent call last):
    ...
    ValueError: epoch must be a whole number of at least 0 and below 2**63, not 9223372036854775808
    """
    number = whole_number(epoch, "epoch")
    if number >= 2**63:
        raise ValueError(f"epoch must be a whole number of at least 0 and below 2**63, not {epoch!r}")
    return number


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
    keys = turn_fields()
    at_role = keys.index("role")
    own = attrgetter(*keys[len(_WHERE) : at_role], *keys[at_role + 1 : -1])
    where = (conv.dataset, conv.config, conv.split, conv.conversation_id)
    return [
        _item(keys, at_role, (*where, *own(t)), roles.get(t.participant_id, ""), labels.get(t.turn_index, []))
        for t in conv.turns
    ]


_WHERE = (*schema.PARTITION_COLUMNS, schema.KEY)


def _item(
    keys: tuple[str, ...], at_role: int, values: Sequence[Any], role: str, labels: list[str]
) -> dict[str, Any]:
    """A turn item from the values of its other keys, in order."""
    return dict(zip(keys, (*values[:at_role], role, *values[at_role:], labels), strict=True))


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
        self._epoch = shared_epoch() if callable(getattr(source, "set_epoch", None)) else None
        self._at = 0
        """The epoch this copy's source and ``where`` positions are of (a worker's may lag)."""
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
            verdicts = (a_verdict(where(x), f"item {start + i}", "where") for i, x in enumerate(chunk))
            keep[start : start + len(chunk)] = list(verdicts)
        self._index = np.flatnonzero(keep).astype(np.int64)
        self._filtered = True

    def __len__(self) -> int:
        return self._total() if self._index is None else len(self._index)

    def _apply(self, item: Any) -> Any:
        return item if self.transform is None else self.transform(item)

    def set_epoch(self, epoch: int) -> None:
        """Pass the epoch to a source that has epochs (a :class:`~convbank.examples.Mixture`
        draws its plan again); ``where`` is then applied to the new plan. ``DataLoader``
        workers, persistent ones too, draw the same plan before their next items."""
        epoch = epoch_number(epoch)
        if self._epoch is not None:
            self._epoch.fill_(epoch)
            self._follow()

    def _follow(self) -> None:
        """Bring the source (and ``where``'s positions) to the shared epoch, if it moved."""
        epoch = int(self._epoch) if self._epoch is not None else self._at
        if epoch != self._at:
            self.source.set_epoch(epoch)  # type: ignore[union-attr]  # it has one: _epoch is set
            self._at = epoch
            if self._filtered:
                self._refilter()

    def select(self, indices: Sequence[int] | np.ndarray) -> CorpusDataset:
        """A dataset of the items at these positions (in this order; negative ones count from
        the end), with the same transform.

        >>> CorpusDataset(convbank.load("casino", split="valid"), "turns").select([2, 0])[1]["turn_index"]
        0
        """
        total = len(self)
        of, refused = f"this dataset of {total:,} {self.items}", "a dataset selects by integer indices, not"
        chosen = chosen_positions(indices, total, of=of, refused=refused, word="index")
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
        self._follow()
        total = len(self)
        of, refused = (
            f"this dataset of {total:,} {self.items}",
            "a dataset is indexed by integer positions, not",
        )
        wanted = chosen_positions(list(indices), total, of=of, refused=refused, word="index").tolist()
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
        if world_size is not None and rank is not None:
            rank, world_size = whole_number(rank, "rank"), whole_number(world_size, "world_size", least=1)
        if world_size is not None and rank is not None and not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} of world_size {world_size}: need 0 <= rank < world_size")
        unit = whole_number(unit, "unit", least=1)
        self.source = source
        self.items = _items(source, items)
        self.transform = transform
        self.shuffle = a_flag(shuffle, "shuffle")
        self.seed = whole_number(seed)
        self.rank = rank
        self.world_size = world_size
        self.unit = unit
        self.where = where
        self._epoch = shared_epoch()

    @property
    def epoch(self) -> int:
        """The epoch its order (and a mixture's plan) is drawn for, shared with workers."""
        return int(self._epoch)

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently in this epoch (call before iterating; the number reaches
        ``DataLoader`` workers, persistent ones too, through shared memory), and pass the epoch
        to a source that has epochs (a :class:`~convbank.examples.Mixture` draws its plan of
        the epoch; a worker's copy draws it before its first item)."""
        self._epoch.fill_(epoch_number(epoch))
        self._follow()

    def _follow(self) -> None:
        set_epoch = getattr(self.source, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(self.epoch)

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
        self._follow()
        shard, num_shards = self.shard()
        rng = self._rng(shard)
        for unit in self.units(num_shards)[shard::num_shards]:
            chunk = self._read(unit)
            order = rng.permutation(len(chunk)) if self.shuffle else range(len(chunk))
            for i in order:
                item = chunk[i]
                if self.where is not None and not a_verdict(self.where(item), "a streamed item", "where"):
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
    item_keys = turn_fields()
    fields = [k for k in item_keys if k not in ("role", "labels")]
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
    at_role = item_keys.index("role")
    return [
        _item(item_keys, at_role, row, role, [] if named is None else list(named))
        for *row, role, named in zip(*columns, roles, labels, strict=True)
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
