"""``hf``: Hugging Face ``datasets``, with each dataset's features
(:meth:`~convbank.datasets.Dataset.hf_features`: those of its Hugging Face loader, same column
names and nesting, where there is one; else the raw record's own) and rows
(:meth:`~convbank.datasets.Dataset.hf_record`), so code written for those loaders keeps
working. Split names follow the loader's (:attr:`~convbank.datasets.Dataset.hf_split_names`).

Where the loaders used sentinels, the built-in datasets keep what the publisher wrote (their
``present`` modules say how): booleans stay booleans, absent values stay null.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank import catalog
from convbank.errors import ExportError, require
from convbank.export._core import Selection
from convbank.model import Conversation
from convbank.store import Bank

if TYPE_CHECKING:
    import datasets

    from convbank.query import Corpus

__all__ = ["features", "hf_record", "to_hf", "write_hf"]


@cache
def features(name: str) -> datasets.Features:
    """The Hugging Face features of a dataset's export."""
    return catalog.get(name).hf_features()


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
    return dict(_fit(features(conv.dataset), catalog.get(conv.dataset).hf_record(conv)))


def _rows(
    dataset: str, config: str, split: str, bank_root: str, where: str | None
) -> Iterator[dict[str, Any]]:
    from convbank.query import Corpus

    selection = Selection(Corpus(dataset, config, split, bank=Bank(Path(bank_root))), where)
    for conv in selection.conversations(config, split):
        yield hf_record(conv)


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


def to_hf(
    source: Corpus | Selection, config: str | None = None, cache_dir: Path | None = None
) -> datasets.DatasetDict:
    """A corpus (or a selection of its conversations) as a ``DatasetDict``, one entry per
    split, of one config: ``config``, or the corpus's only one (needs ``convbank[hf]``)::

        to_hf(convbank.load("casino"))["train"]
    """
    require("datasets", "hf", "The Hugging Face export")
    import datasets

    selection = source if isinstance(source, Selection) else Selection(source)
    if config is None:
        configs = list(dict.fromkeys(p.config for p in selection.parts()))
        if len(configs) > 1:
            raise ExportError(
                f"this {selection.dataset} corpus spans the configs {', '.join(configs)}; "
                "load one config for to_hf(), or name one"
            )
        config = configs[0]
    elif all(p.config != config for p in selection.parts()):
        known = ", ".join(dict.fromkeys(p.config for p in selection.parts()))
        raise ExportError(f"this {selection.dataset} selection has no config {config!r}; it has {known}")
    feats = features(selection.dataset)
    names = selection.corpus.dataset.hf_split_names
    splits = {}
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        for cfg, split in selection.parts():
            if cfg != config:
                continue
            splits[names.get(split, split)] = datasets.Dataset.from_generator(
                _rows,
                features=feats,
                gen_kwargs={
                    "dataset": selection.dataset,
                    "config": config,
                    "split": split,
                    "bank_root": str(selection.corpus.bank.root),
                    "where": selection.where,
                },
                cache_dir=str(cache_dir or tmp),
                keep_in_memory=cache_dir is None,
            )
    return datasets.DatasetDict(splits)


def write_hf(selection: Selection, directory: Path) -> list[Path]:
    """``{dataset}/{config}/``: one ``DatasetDict.save_to_disk`` folder per config."""
    written = []
    configs = dict.fromkeys(c for c, _ in selection.parts())
    (directory / selection.dataset).mkdir(parents=True, exist_ok=True)
    for config in configs:
        with tempfile.TemporaryDirectory(dir=directory) as cache:
            dataset_dict = to_hf(selection, config, cache_dir=Path(cache))
            with _quiet():
                dataset_dict.save_to_disk(str(directory / selection.dataset / config))
        written.append(directory / selection.dataset / config)
    return written
