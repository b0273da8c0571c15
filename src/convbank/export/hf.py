"""``hf``: Hugging Face ``datasets``, with each dataset's features
(:meth:`~convbank.datasets.Presentation.hf_features`: those of its Hugging Face loader, same column
names and nesting, where there is one; else the raw record's own) and rows
(:meth:`~convbank.datasets.Presentation.hf_record`), so code written for those loaders keeps
working. Split names: :func:`to_hf` (and :meth:`convbank.Corpus.to_hf`) names them as
convbank does (PEC's ``valid``, as in ``load("pec", split="valid")``, ``parts()`` and every
other table path); ``export --format hf`` on disk keeps the loader's
(:attr:`~convbank.datasets.Presentation.hf_split_names`: PEC's ``validation``), so that code
written for ``load_dataset`` reads the saved folder with ``load_from_disk`` as it is.

Where the loaders used sentinels, the built-in datasets keep what the publisher wrote (their
``present`` modules say how): booleans stay booleans, absent values stay null.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from convbank import catalog
from convbank.errors import ExportError, require
from convbank.export._core import Selection
from convbank.export._format import Format
from convbank.export.chat import chat_record
from convbank.model import Conversation, Part

if TYPE_CHECKING:
    import datasets

    from convbank.corpus import Corpus

__all__ = ["FORMAT", "features", "hf_record", "to_hf", "write_hf"]

_SHARD = 2000
"""Conversations per generator shard at most (a stored batch holds at most 2,000); smaller
splits are cut in up to 8 shards of at least 250, for ``DataLoader`` workers."""


@cache
def features(name: str) -> datasets.Features:
    """The Hugging Face features of a dataset's export."""
    return catalog.get(name).presentation.hf_features()


def _fit(feature: Any, value: Any) -> Any:
    """Shape ``value`` for ``feature``: a list of dicts under a ``Sequence(dict)`` (a dict of
    lists in ``datasets``) becomes the dict of lists the loaders produced; class names
    become class ids."""
    from datasets import ClassLabel, List

    if value is None:
        return None
    if isinstance(feature, ClassLabel):
        return feature.str2int(value)
    if isinstance(feature, dict):
        if isinstance(value, list):
            return {k: [_fit(f.feature, v.get(k)) for v in value] for k, f in feature.items()}
        return {k: _fit(f, value.get(k)) for k, f in feature.items()}
    if isinstance(feature, List):
        return [_fit(feature.feature, v) for v in value]
    return value


def hf_record(conv: Conversation) -> dict[str, Any]:
    """One conversation as a row of its dataset's Hugging Face features."""
    return dict(_fit(features(conv.dataset), catalog.get(conv.dataset).presentation.hf_record(conv)))


@contextmanager
def _quiet() -> Iterator[None]:
    """No ``datasets`` progress bars while convbank writes (its own output stays clean)."""
    import datasets

    was = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was:
            datasets.enable_progress_bars()


def _rows(shards: list[Corpus], chat: str | None, as_participant: str | None) -> Iterator[dict[str, Any]]:
    """The rows of these corpora (pickled to a ``datasets`` worker, each re-opens the
    generation of the bank it reads), with the chat view as column ``chat`` if asked."""
    for corpus in shards:
        for conv in corpus:
            row = hf_record(conv)
            if chat is not None:
                row[chat] = chat_record(conv, as_participant, corpus.context(conv))["messages"]
            yield row


def _chat_column(name: str, chat: bool | str) -> str | None:
    if chat is False:
        return None
    column = "messages" if chat is True else str(chat)
    if column in features(name):
        raise ExportError(
            f"{name} rows already have a column {column!r}; name the chat column, e.g. chat='chat_messages'",
            format="hf",
        )
    return column


def _parts(source: Corpus | Selection) -> dict[Part, Corpus]:
    """The corpus per (config, split), each in the corpus's order, restricted to a
    selection's ``where``."""
    if not isinstance(source, Selection):
        return source.by_part()
    out = {}
    for part, corpus in source.corpus.by_part().items():
        wanted = source.ids(*part)
        if wanted is None:
            out[part] = corpus
        elif wanted:
            out[part] = corpus.select([i for i, cid in enumerate(corpus.conversation_ids()) if cid in wanted])
    return out


@overload
def to_hf(
    source: Corpus | Selection,
    config: str,
    cache_dir: Path | None = None,
    *,
    streaming: Literal[False] = False,
    chat: bool | str = False,
    as_participant: str | None = None,
    loader_split_names: bool = False,
) -> datasets.DatasetDict: ...


@overload
def to_hf(
    source: Corpus | Selection,
    config: str | None = None,
    cache_dir: Path | None = None,
    *,
    streaming: bool = False,
    chat: bool | str = False,
    as_participant: str | None = None,
    loader_split_names: bool = False,
) -> Any: ...


def to_hf(
    source: Corpus | Selection,
    config: str | None = None,
    cache_dir: Path | None = None,
    *,
    streaming: bool = False,
    chat: bool | str = False,
    as_participant: str | None = None,
    loader_split_names: bool = False,
) -> Any:
    """A corpus (or a selection of its conversations: a filtered or shuffled corpus gives
    just its conversations, in its order) as Hugging Face ``datasets``, as ``load_dataset``
    returns them for a named config (needs ``convbank[hf]``):

    - a ``DatasetDict`` (one ``Dataset`` per split) for a corpus of one config, or for
      ``config`` named; ``{config: DatasetDict}`` for a corpus spanning several;
    - ``streaming=True``: the same with ``IterableDataset`` s (an ``IterableDatasetDict``),
      read from the bank as they are iterated, in shards of at most 2,000 conversations (so
      a ``DataLoader`` with workers splits them); each shard re-opens the bank's generation;
    - ``chat=True`` adds ``messages`` (the chat view of ``export --format chat``, seen from
      the dataset's default side, or ``as_participant``): what ``Trainer`` and TRL's
      ``SFTTrainer`` take as is; ``chat="name"`` names that column;
    - splits are named as convbank names them (PEC's ``valid``);
      ``loader_split_names=True`` gives the Hugging Face loader's names instead (PEC's
      ``validation``), as ``export --format hf`` writes them.

    >>> to_hf(convbank.load("casino"))["train"].num_rows
    900
    >>> next(iter(to_hf(convbank.load("casino"), streaming=True, chat=True)["train"]))["messages"][1]["role"]
    'assistant'
    """
    require("datasets", "hf", "The Hugging Face export")
    import datasets

    name = source.dataset if isinstance(source, Selection) else source.dataset.name
    column = _chat_column(name, chat)
    parts = _parts(source)
    configs = list(dict.fromkeys(p.config for p in parts))
    if config is not None and config not in configs:
        raise ExportError(
            f"this {name} selection has no config {config!r}; it has {', '.join(configs)}", format="hf"
        )
    feats = features(name)
    if column is not None:
        feats = datasets.Features(
            {
                **feats,
                column: datasets.List(
                    {"role": datasets.Value("string"), "content": datasets.Value("string")}
                ),
            }
        )
    names = catalog.get(name).presentation.hf_split_names if loader_split_names else {}
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        for cfg in [config] if config is not None else configs:
            splits: dict[str, Any] = {}
            for part, corpus in parts.items():
                if part.config != cfg:
                    continue
                size = min(_SHARD, max(250, math.ceil(len(corpus) / 8)))
                kwargs = {
                    "shards": [corpus[i : i + size] for i in range(0, len(corpus), size)],
                    "chat": column,
                    "as_participant": as_participant,
                }
                if streaming:
                    splits[names.get(part.split, part.split)] = datasets.IterableDataset.from_generator(
                        _rows, features=feats, gen_kwargs=kwargs
                    )
                else:
                    splits[names.get(part.split, part.split)] = datasets.Dataset.from_generator(
                        _rows,
                        features=feats,
                        gen_kwargs=kwargs,
                        cache_dir=str(cache_dir or tmp),
                        keep_in_memory=cache_dir is None,
                    )
            out[cfg] = datasets.IterableDatasetDict(splits) if streaming else datasets.DatasetDict(splits)
    return out[config] if config is not None else out[configs[0]] if len(configs) == 1 else out


def _configs(selection: Selection) -> list[str]:
    """The folders the export writes: ``{dataset}/{config}`` per config."""
    return [f"{selection.dataset}/{config}" for config in dict.fromkeys(c for c, _ in selection.parts())]


def write_hf(selection: Selection, directory: Path) -> list[Path]:
    """``{dataset}/{config}/``: one ``DatasetDict.save_to_disk`` folder per config, its
    splits named as the Hugging Face loader names them (PEC's ``validation``)."""
    written = []
    configs = dict.fromkeys(c for c, _ in selection.parts())
    (directory / selection.dataset).mkdir(parents=True, exist_ok=True)
    for config in configs:
        try:
            with tempfile.TemporaryDirectory(dir=directory) as cache:
                dataset_dict = to_hf(selection, config, cache_dir=Path(cache), loader_split_names=True)
                with _quiet():
                    dataset_dict.save_to_disk(str(directory / selection.dataset / config))
        except Exception as exc:  # datasets wraps a full disk in its own errors: say what it was
            cause = _os_cause(exc)
            if cause is None or cause is exc:
                raise
            raise cause from None
        written.append(directory / selection.dataset / config)
    return written


def _os_cause(exc: BaseException) -> OSError | None:
    """The ``OSError`` (a full disk, a folder that cannot be written) behind an error that
    ``datasets`` raised about it (``DatasetGenerationError``), if there is one."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, OSError):
            return found
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return None


FORMAT = Format(
    order=20,
    name="hf",
    summary="Hugging Face save_to_disk per config (DIR/<dataset>/<config>)",
    writes="`DIR/<dataset>/<config>/`, a `DatasetDict` per config (`convbank.export.to_hf(corpus)` "
    "in memory)",
    read_with="`datasets.load_from_disk`",
    writer=write_hf,
    plan=_configs,
    extra="hf",
    requires="datasets",
)
"""The ``hf`` format."""
