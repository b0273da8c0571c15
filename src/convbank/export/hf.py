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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import msgspec

from convbank import catalog
from convbank._arguments import a_flag, a_text_or_none
from convbank._textio import content_json
from convbank._wording import article
from convbank.errors import ExportError, require
from convbank.export._core import Selection
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._hf_rows import MESSAGES, generic_row
from convbank.export._hf_unfit import unfit
from convbank.export._read import imported_layout, read_imported, rejected
from convbank.export.chat import chat_record
from convbank.model import Conversation, Part

if TYPE_CHECKING:
    import datasets

    from convbank.corpus import Corpus

__all__ = ["FORMAT", "features", "hf_record", "read_hf", "read_hf_dataset", "to_hf", "write_hf"]


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
                record = chat_record(conv, as_participant, corpus.context(conv))
                row[chat] = _role_and_content(record["messages"])
            yield row


def _role_and_content(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as the chat column's features hold them, ``role`` and ``content`` texts:
    a content of typed parts (or anything but a text) as its JSON text, never Python's repr
    nor a cast error; a message's other keys (``name``, ``tool_calls``) are in the ``chat``
    export."""
    out = []
    for m in messages:
        content = m.get("content")
        text = None if content is None else content_json(content)
        out.append({"role": m.get("role"), "content": text})
    return out


def _side(as_participant: Any, column: str | None) -> str | None:
    """``as_participant`` checked: an id, given only with the chat column it is the side of."""
    side = a_text_or_none(as_participant, "as_participant")
    if side is not None and column is None:
        raise ValueError(f"as_participant={side!r} is the side of the chat column; give chat=True with it")
    return side


def _chat_column(name: str, chat: bool | str) -> str | None:
    """The chat column's name (None: no chat column): ``chat`` is a switch or a name."""
    if not isinstance(chat, str) or not chat:
        try:
            chat = a_flag(chat, "chat")
        except TypeError:
            raise TypeError(f"chat must be True, False or a column's name, not {chat!r}") from None
    if chat is False:
        return None
    column = "messages" if chat is True else chat
    if column in features(name):
        raise ExportError(
            f"{name} rows already have a column {column!r}; name the chat column, e.g. chat='chat_messages'",
            format="hf",
        )
    return column


def _parts(source: Corpus | Selection) -> dict[Part, Corpus]:
    """The corpus per (config, split), each in the corpus's order, restricted to a
    selection's ``where``."""
    if not isinstance(source, Selection):  # an empty corpus: each part it was loaded with, empty
        return source.by_part() or dict.fromkeys(source.loaded_parts(), source)
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
      the dataset's default side, or ``as_participant``; each message its ``role`` and
      ``content`` text, a content of typed parts as its JSON text): what ``Trainer`` and
      TRL's ``SFTTrainer`` take as is; ``chat="name"`` names that column;
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
    as_participant = _side(as_participant, column)
    streaming = a_flag(streaming, "streaming")
    loader_split_names = a_flag(loader_split_names, "loader_split_names")
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
        cache = None if streaming else (cache_dir or Path(tmp), cache_dir is None)
        for cfg in [config] if config is not None else configs:
            splits: dict[str, Any] = {}
            for part, corpus in parts.items():
                if part.config != cfg:
                    continue
                split = names.get(part.split, part.split)
                splits[split] = _dataset(
                    corpus, feats, chat=column, as_participant=as_participant, cache=cache
                )
            out[cfg] = datasets.IterableDatasetDict(splits) if streaming else datasets.DatasetDict(splits)
    return out[config] if config is not None else out[configs[0]] if len(configs) == 1 else out


def _dataset(
    corpus: Corpus,
    feats: datasets.Features,
    *,
    chat: str | None,
    as_participant: str | None,
    cache: tuple[Path, bool] | None,
) -> Any:
    """One split of :func:`to_hf`: an ``IterableDataset`` where ``cache`` is None, else a
    ``Dataset`` made in ``cache[0]`` (kept in memory where ``cache[1]``)."""
    import datasets

    size = min(_SHARD, max(250, math.ceil(len(corpus) / 8)))
    kwargs = {
        "shards": [corpus[i : i + size] for i in range(0, len(corpus), size)],
        "chat": chat,
        "as_participant": as_participant,
    }
    if cache is None:
        return datasets.IterableDataset.from_generator(_rows, features=feats, gen_kwargs=kwargs)
    if not len(corpus):  # a generator of no rows is an error in datasets
        return datasets.Dataset.from_dict({key: [] for key in feats}, features=feats)
    return datasets.Dataset.from_generator(
        _rows, features=feats, gen_kwargs=kwargs, cache_dir=str(cache[0]), keep_in_memory=cache[1]
    )


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
                _no_split_named_as_its_file(selection, config, dataset_dict)
                with _quiet():
                    dataset_dict.save_to_disk(str(directory / selection.dataset / config))
        except Exception as exc:  # datasets wraps a full disk in its own errors: say what it was
            cause = _os_cause(exc)
            if cause is None or cause is exc:
                raise
            raise cause from None
        written.append(directory / selection.dataset / config)
    return written


def _no_split_named_as_its_file(selection: Selection, config: str, dataset_dict: Any) -> None:
    """Refuse (one line) a split named ``dataset_dict.json``: ``save_to_disk`` writes that file
    of its own beside each split's folder, where the split's folder would go."""
    if "dataset_dict.json" in dataset_dict:
        raise ExportError(
            f"{selection.dataset}'s split {config}/dataset_dict.json cannot be written as Hugging Face "
            "data: save_to_disk keeps that name for its own file; export the other splits (--split) "
            "or import it under another split name",
            format="hf",
        )


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


def _exported_by(path: Path, data: Any) -> Any:
    """The catalogued dataset whose ``export --format hf`` wrote ``path``
    (``<dataset>/<config>``, with its features), or None."""
    if path.parent.name not in catalog.names():
        return None
    ds = catalog.get(path.parent.name)
    if path.name not in [c.name for c in ds.configs]:
        return None
    return ds if all(split.features == features(ds.name) for split in data.values()) else None


def read_hf_dataset(
    data: Any, options: ReadOptions, where: Path = Path("Dataset")
) -> Iterator[Conversation | Rejected]:
    """The conversations of a Hugging Face ``Dataset`` (or each split of a ``DatasetDict``,
    named as it names them) with a messages-like column, one per row; a row of no id is
    numbered from 0 (in a ``DatasetDict``, after its split: ``test-0``)::

        read_hf_dataset(datasets.load_dataset("HuggingFaceH4/no_robots"), ReadOptions(dataset="no_robots"))
    """
    from datasets import DatasetDict, IterableDatasetDict

    several = isinstance(data, (DatasetDict, IterableDatasetDict))  # a row's id names its split
    for split, part in data.items() if several else [(options.split, data)]:
        column = next((c for c in MESSAGES if c in part.column_names), None)
        if column is None:
            yield Rejected(
                where,
                "file",
                f"expected a messages-like column ({', '.join(MESSAGES)}); its "
                f"columns: {', '.join(part.column_names)}",
            )
            return
        opts = ReadOptions(dataset=options.dataset, config=options.config, split=split)
        for number, row in enumerate(_plain_rows(part)):
            conv = generic_row(row, column, number, opts, f"{split}-{number}" if several else str(number))
            yield rejected(where, f"{split} row {number + 1}", conv, row) if isinstance(conv, str) else conv


def _plain_rows(part: Any) -> Iterator[dict[str, Any]]:
    from convbank.store._values import dataset_rows  # not datasets' rows: they overflow

    return dataset_rows(part)


def _read_export(ds: Any, path: Path, data: Any, options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """What ``export --format hf`` wrote of catalogued dataset ``ds``: each row its raw
    record again, mapped as the bank mapped it (config and splits as written)."""
    import msgspec.inspect as mi

    names = {v: k for k, v in ds.presentation.hf_split_names.items()}
    feats, info = features(ds.name), mi.type_info(ds.raw_type)
    for split, part in data.items():
        where = Part(path.name, names.get(split, split))
        for number, row in enumerate(_plain_rows(part)):
            try:
                raw = ds.presentation.hf_raw(unfit(dict(feats), row, mi.AnyType()))
                if raw is None:
                    raw = msgspec.convert(unfit(dict(feats), row, info), ds.raw_type, strict=False)
                conv = ds.to_conversation(raw, where, number)
            except (msgspec.ValidationError, ValueError, KeyError, TypeError) as exc:
                yield rejected(
                    path, f"{split} row {number + 1}", f"expected {article(ds.name)} record ({exc})"
                )
                continue
            conv.dataset = options.dataset
            yield conv


def read_hf(paths: Sequence[Path], options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """The conversations of folders written by ``save_to_disk`` (a ``Dataset``, or a
    ``DatasetDict`` whose splits keep their names): what ``export --format hf`` wrote is read
    back as the bank held it; any other with a messages-like column, a conversation per row::

        read_hf([Path("out/casino/default")], ReadOptions(dataset="casino_again"))
    """
    require("datasets", "hf", "Reading Hugging Face datasets")
    import datasets

    for path in paths:
        try:
            with _quiet():
                data = datasets.load_from_disk(str(path))
        except (FileNotFoundError, ValueError, OSError) as exc:
            yield Rejected(path, "file", f"expected a folder written by save_to_disk ({exc})")
            continue
        ds = _exported_by(path, data) if isinstance(data, datasets.DatasetDict) else None
        if ds is None and isinstance(data, datasets.DatasetDict) and imported_layout(data):
            yield from read_imported(path, data, options)
            continue
        yield from (_read_export(ds, path, data, options) if ds else read_hf_dataset(data, options, path))


def _sniff_hf(paths: Sequence[Path]) -> bool:
    """Folders holding ``dataset_dict.json`` or ``state.json`` (what ``save_to_disk`` writes)."""
    return bool(paths) and all(
        (p / "dataset_dict.json").is_file() or (p / "state.json").is_file() for p in paths
    )


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
    reader=read_hf,
    loses="what a dataset's Hugging Face layout (its loader's: the presentation's `hf_record`) "
    "leaves out of its raw record: a fixed order of a dict's keys, the personas of all but one "
    "speaker; of any other saved dataset: speakers' roles (a message's role is its speaker)",
    sniff=_sniff_hf,
)
"""The ``hf`` format."""
