"""What an import is given: paths (``SPLIT=PATH``), files or in-memory data, the format
detected from their content, and the card."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from convbank._arguments import a_callable_or_none, a_mapping_or_none, a_path_or_none
from convbank._atomic import read_regular
from convbank._wording import shown
from convbank.datasets._imported import NAME
from convbank.errors import CorpusImportError
from convbank.export._format import Format, Rejected
from convbank.export._read import encoding_problem, first_line_problem
from convbank.export._registry import formats, joined

__all__ = [
    "CARD_FILE",
    "CARD_KEYS",
    "CARD_LIMIT",
    "Source",
    "checked_arguments",
    "detect",
    "in_memory",
    "inputs_of",
    "parse_inputs",
    "read_card",
    "unprivate",
]

CARD_FILE = "card.toml"
"""The card file an import reads from beside its first file when none is given: ``title``,
``description``, ``license``, ``citation`` and ``homepage`` keys."""

CARD_KEYS = ("title", "description", "license", "citation", "homepage")
"""What a card holds."""

CARD_LIMIT = 1 << 20
"""The most bytes of a card file (a regular file: a FIFO or a device is refused)."""

Source = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Mapping[str, Any] | Any
"""What :func:`convbank.import_conversations` takes: a path, paths, ``{split: path(s)}``, or
a DataFrame or Hugging Face ``Dataset``/``DatasetDict``."""


def parse_inputs(args: Iterable[str]) -> list[tuple[Path, str | None]]:
    """The command line's PATH arguments as (path, split): ``SPLIT=PATH`` puts a file in that
    split (where no file of that whole name exists), a plain path in the import's.

    >>> parse_inputs(["train=a.jsonl", "b.jsonl"])
    [(PosixPath('a.jsonl'), 'train'), (PosixPath('b.jsonl'), None)]
    """
    out: list[tuple[Path, str | None]] = []
    for arg in args:
        split, eq, rest = arg.partition("=")
        if eq and NAME.fullmatch(split) and not Path(arg).exists():
            out.append((_path(rest, arg), split))
        else:
            out.append((_path(arg, arg), None))
    return out


def _path(text: Any, given: Any) -> Path:
    """A path given, refused where it is empty (``train=``, ``""``), which ``Path`` would read
    as the current folder: one line naming what was given, never that folder; one that is not
    a path a ``TypeError`` saying so (bytes are the system's path, as ``open()`` takes it)."""
    if not isinstance(text, (str, os.PathLike)):
        raise TypeError(
            f"an input is a path (a str or an os.PathLike), not {type(text).__name__} {_given(text)}"
        )
    if isinstance(text, str) and not text.strip():
        raise CorpusImportError(
            f"{str(given)!r}: expected a path (a file or a folder), not an empty one", path=str(given)
        )
    return Path(text)


def _decoded(path: Any) -> Any:
    """A path given as bytes as the text the system names it by; anything else as it is."""
    return os.fsdecode(path) if isinstance(path, bytes) else path


def inputs_of(source: Source) -> list[tuple[Path, str | None]]:
    if isinstance(source, (str, bytes, os.PathLike)):  # one path, never its letters or bytes
        return [(_path(_decoded(source), _decoded(source)), None)]
    if isinstance(source, Mapping):
        return [
            (_path(p, f"{split}={p}"), str(split))
            for split, paths in source.items()
            for p in map(
                _decoded, [paths] if isinstance(paths, (str, bytes, os.PathLike)) else _several(paths)
            )
        ]
    return [(_path(p, p), None) for p in map(_decoded, _several(source))]


_TAKES = "an import takes a path, several, {split: path(s)}, a DataFrame or a Hugging Face Dataset"
"""What an import reads, as its ``TypeError`` for anything else says it."""


def _several(source: Any) -> list[Any]:
    """Paths given together, or a ``TypeError`` saying what an import takes."""
    if not isinstance(source, Iterable):
        raise TypeError(f"{_TAKES}, not {type(source).__name__} {_given(source)}")
    return list(source)


def _given(value: Any) -> str:
    """What was given in its place, for an import's ``TypeError``: its ``repr`` shortened, on
    one line (an object whose ``repr`` raises said by its kind, never that error instead).

    >>> _given({"k": "v" * 500}), _given(5)
    ("{'k': 'vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv…", '5')
    """
    return " ".join(shown(value).splitlines())


_IN_MEMORY = {
    ("datasets", "Dataset"): "hf",
    ("datasets", "DatasetDict"): "hf",
    ("datasets", "IterableDataset"): "hf",
    ("datasets", "IterableDatasetDict"): "hf",
    ("pandas", "DataFrame"): "table",
    ("polars", "DataFrame"): "table",
}
"""The in-memory data an import reads (by package and class, a subclass too), and its format."""


def in_memory(source: Any) -> str | None:
    """``hf`` or ``table`` for a Hugging Face dataset or a DataFrame, else None; anything
    else of those packages (a ``Series``, a polars ``LazyFrame``, ``Features``) a
    ``TypeError`` saying what an import takes, never read as a table or iterated as paths.

    >>> import pandas as pd
    >>> in_memory(pd.DataFrame()), in_memory("chats.jsonl")
    ('table', None)
    >>> in_memory(pd.Series([1]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: an import takes a path, several, ... or a Hugging Face Dataset, not pandas Series
    """
    for kind in type(source).__mro__:
        found = _IN_MEMORY.get((kind.__module__.split(".")[0], kind.__name__))
        if found is not None:
            return found
    package = type(source).__module__.split(".")[0]
    if package in {p for p, _ in _IN_MEMORY}:
        raise TypeError(f"{_TAKES}, not {package} {type(source).__name__}")
    return None


def detect(paths: Sequence[Path]) -> Format:
    """The format of files (or a folder) judged from their content: the first format whose
    sniffer recognises them, in the registry's order, or a :class:`CorpusImportError` that
    lists the formats it tried.

    >>> _ = Path("chats.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\\n')
    >>> _ = Path("sharegpt.json").write_text('[{"conversations": [{"from": "human", "value": "hi"}]}]')
    >>> detect([Path("chats.jsonl")]).name, detect([Path("sharegpt.json")]).name
    ('chat', 'sharegpt')
    """
    for fmt in formats:
        if fmt.reader is not None and fmt.sniff is not None and fmt.sniff(paths):
            return fmt
    names = joined(f.name for f in formats if f.reader is not None)
    for path in _files_of(paths[0]):  # text in another encoding: say which, not that no format was seen
        why = encoding_problem(path)
        if why is not None:
            raise CorpusImportError(f"{path}, file: {why}; nothing was imported", path=path)
    why = first_line_problem(paths[0])
    if why is not None:  # a record of some format, that no one can read: say where and why
        raise CorpusImportError(
            f"{paths[0]}, {why}; no format ({names}) could be recognised from it, so nothing was imported",
            path=paths[0],
        )
    raise CorpusImportError(
        f"{paths[0]}: not a format convbank recognises ({names}); name it with --format",
        path=paths[0],
    )


def _files_of(path: Path) -> list[Path]:
    """A file, or the files directly in a folder (a ConvoKit corpus's), by name."""
    if not path.is_dir():
        return [path] if path.is_file() else []
    return sorted(p for p in path.iterdir() if p.is_file())


def read_card(card: Mapping[str, str] | os.PathLike[str] | str | None, first: Path | None) -> dict[str, str]:
    if card is None and first is not None:
        try:
            beside = (first if first.is_dir() else first.parent) / CARD_FILE
            card = beside if beside.is_file() else None
        except OSError:  # a name too long: the input's fault, said when the inputs are checked
            card = None
    if card is None:
        return {}
    if isinstance(card, Mapping):
        given: Mapping[str, Any] = card
        path: Path | None = None
    else:
        path = Path(card)
        try:  # a FIFO or a device refused, never waited on or read without end
            given = tomllib.loads(read_regular(path, CARD_LIMIT).decode("utf-8"))
        except OSError as exc:
            raise CorpusImportError(
                f"{path}: expected a TOML card ({exc.strerror or exc})", path=path
            ) from exc
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            why = encoding_problem(path) if isinstance(exc, UnicodeDecodeError) else None
            raise CorpusImportError(f"{path}: expected a TOML card ({why or exc})", path=path) from exc
    unknown = sorted(set(given) - set(CARD_KEYS))
    bad = [k for k in CARD_KEYS if k in given and not isinstance(given[k], str)]
    if unknown or bad:
        what = f"unknown key {unknown[0]!r}" if unknown else f"{bad[0]} is not a string"
        raise CorpusImportError(
            f"{path or 'card'}: {what}; a card holds the strings {', '.join(CARD_KEYS)}", path=path
        )
    return {k: str(v) for k, v in given.items()}


def checked_arguments(
    card: Any, skip_bad: Any, mapping: Any, progress: Any
) -> tuple[Mapping[str, str] | Path | None, Path | None, Mapping[str, str] | None, Any]:
    """The arguments of :func:`~convbank.imports.import_conversations` that are not read at once, each checked
    before anything is: a ``TypeError`` (or an empty path's ``ValueError``) naming it."""
    try:
        card = a_mapping_or_none(card, "card") if isinstance(card, Mapping) else a_path_or_none(card, "card")
    except TypeError:
        raise TypeError(
            f"card must be a mapping of its fields, a TOML file's path or None, not {card!r}"
        ) from None
    return (
        card,
        a_path_or_none(skip_bad, "skip_bad"),
        a_mapping_or_none(mapping, "mapping"),
        a_callable_or_none(progress, "progress"),
    )


def unprivate(item: Rejected, originals: Mapping[Path, Path], path: Path) -> Rejected:
    """A reader's rejection of a private copy as of the file the user gave (``path``): every
    private copy's path in what it says (a library's message quoting the path it opened) is
    its original's, never a temporary folder's that is gone once the import ends."""
    said = {"where": item.where, "expected": item.expected}
    for copy, original in originals.items():
        said = {key: text.replace(str(copy), str(original)) for key, text in said.items()}
    return dataclasses.replace(item, path=path, **said)
