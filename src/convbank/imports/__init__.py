"""Your own conversations in the bank: :func:`import_conversations` reads files kept in any
format convbank reads (``chat``, ``sharegpt``, ``convokit``, ``parlai``, ``hf``, ``table``,
``jsonl``, ``parquet``), or a pandas/polars DataFrame or a Hugging Face dataset, and stores
them as a dataset of the bank like the catalogued ones; :func:`remove` takes one out.

An import is one generation of the bank: the dataset's tables and the record of where they
came from (:class:`~convbank.datasets._imported.ImportEntry`: card, format, every file with
the sha256 of the bytes read) are committed together, or, if anything fails, not at all (an
earlier import of that name stays as it was). Files are read from private copies made while
they are hashed, so what is stored is what was hashed. A record that is not of its format
stops the import with a one-line error naming the file, where in it and what was expected;
with ``skip_bad``, it is written with its reason to that file and the import goes on.

>>> import json
>>> from pathlib import Path
>>> chats = [
...     {"messages": [
...         {"role": "system", "content": "You are a helpful assistant."},
...         {"role": "user", "content": f"Question {i}?"},
...         {"role": "assistant", "content": f"Answer {i}."},
...     ]}
...     for i in range(120)
... ]
>>> _ = Path("chats.jsonl").write_text("".join(json.dumps(c) + "\\n" for c in chats))
>>> report = convbank.import_conversations("chats.jsonl", name="my_chats")
>>> report.format, report.conversations
('chat', 120)
>>> [t.text for t in convbank.load("my_chats")[0].turns]
['You are a helpful assistant.', 'Question 0?', 'Answer 0.']
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import msgspec

from convbank import catalog
from convbank._arguments import a_flag
from convbank._atomic import kind_of
from convbank._names import name_problem, path_not_text
from convbank._verified import private_tree
from convbank._version import __version__
from convbank.datasets._imported import NAME, ImportEntry, InputFile
from convbank.errors import ChecksumError, CorpusImportError, NotBuiltError
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._registry import formats, joined, read
from convbank.imports._inputs import (
    CARD_FILE,
    Source,
    checked_arguments,
    detect,
    in_memory,
    inputs_of,
    parse_inputs,
    read_card,
    unprivate,
)
from convbank.imports._store import ImportReport, Item, Progress, store
from convbank.model import Conversation
from convbank.model.schema import paused_gc
from convbank.store import Bank

__all__ = [
    "BATCH",
    "CARD_FILE",
    "ImportReport",
    "Source",
    "check_rejects",
    "detect",
    "import_conversations",
    "parse_inputs",
    "read_card",
    "remove",
]

BATCH = 1000
"""Conversations written at a time (one row group): what an import holds in memory."""


# ---------------------------------------------------------------------- the import
def import_conversations(
    source: Source,
    *,
    name: str,
    format: str | None = None,
    config: str | None = None,
    split: str | None = None,
    mapping: Mapping[str, str] | None = None,
    card: Mapping[str, str] | os.PathLike[str] | str | None = None,
    replace: bool = False,
    skip_bad: os.PathLike[str] | str | None = None,
    bank: Bank | None = None,
    progress: Progress | None = None,
    batch_size: int = BATCH,
) -> ImportReport:
    """Import conversations into the bank as dataset ``name``, then use it as any other
    (``convbank.load(name)``, ``convbank show``, ``query``, ``export``, the viewer).

    ``source`` is a file or a folder (a ConvoKit corpus, a ``save_to_disk`` folder), several,
    ``{split: path or paths}``, or a pandas/polars DataFrame (``table``, with ``mapping``) or
    a Hugging Face ``Dataset``/``DatasetDict`` (``hf``). ``format`` is detected from the
    content when not given (:func:`detect`). Each conversation keeps the config and split its
    format gives it (convbank's own exports do), else ``default`` and ``train``; ``config``
    and ``split`` put every one in those. ``mapping`` names the ``table`` format's columns
    (``{"conversation_id": "dialog", "speaker": "who", "text": "utterance"}``). ``card``: a
    mapping or a TOML file of ``title``, ``description``, ``license``, ``citation``,
    ``homepage`` (by default :data:`CARD_FILE` beside the first file, if there is one).

    A name already imported is refused unless ``replace``; a catalogued dataset's name always.
    A record that is not of the format (or repeats another's id) is a
    :class:`~convbank.errors.CorpusImportError` naming the file and where, and the bank stays
    as it was; with ``skip_bad`` (a path), such records are written there as JSON Lines
    (``file``, ``where``, ``expected``, ``record``) and the others imported. Exact duplicates
    of a record (same id, same content) are left out and counted. Importing the same files
    again gives the same bank. Example::

        convbank.import_conversations({"train": "train.jsonl", "test": "test.jsonl"}, name="study")
    """
    start, bank, replace = time.perf_counter(), bank or Bank(), a_flag(replace, "replace")
    card, skip_bad, mapping, progress = checked_arguments(card, skip_bad, mapping, progress)
    _check_name(name)
    memory = in_memory(source)
    inputs = [] if memory else inputs_of(source)
    if not memory and not inputs:
        raise CorpusImportError("nothing to import: give at least one file", name=name)
    _check_inputs(inputs, name, config, split)
    if skip_bad is not None:
        check_rejects(skip_bad, inputs, card=card, bank=bank, name=name)
    fmt_name = format or memory
    fmt = formats.get(fmt_name) if fmt_name else None
    if fmt is not None and fmt.reader is None:
        raise CorpusImportError(
            f"convbank writes {fmt.name} but does not read it; formats it reads: {joined(read())}",
            name=name,
        )
    card_fields = read_card(card, inputs[0][0] if inputs else None)
    with ExitStack() as stack:
        copies, files = _private_copies(inputs, stack, name)
        detected, fmt = fmt is None, fmt or _detected(copies, name)
        assert fmt.reader is not None
        entry = ImportEntry(
            format=fmt.name,
            inputs=files,
            config=config,
            split=split,
            mapping=dict(mapping or {}),
            loses=fmt.loses or "",
            imported_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            convbank_version=__version__,
        )
        entry = msgspec.structs.replace(entry, **card_fields)
        report = ImportReport(name, fmt.name, detected, files, loses=entry.loses)
        report.rejects = skip_bad
        data = source if memory else None
        items = _read(fmt, data, copies, name=name, config=config, split=split, mapping=entry.mapping)
        with bank.lock(), paused_gc():
            _refuse_taken(bank, name, replace)
            store(bank, name, entry, items, report, progress=progress, batch_size=batch_size)
    report.seconds = time.perf_counter() - start
    return report


def _check_inputs(
    inputs: list[tuple[Path, str | None]], name: str, config: str | None, split: str | None
) -> None:
    """Refuse, before anything is read, an input that is missing or neither a file nor a
    folder holding one, or whose path is not UTF-8 text, and a config or split that cannot
    be one folder of the bank."""
    for path, _ in inputs:
        problem = path_not_text(path)  # the bank records each file's path and name as text
        if problem is not None:
            raise CorpusImportError(
                f"{path}: {problem}, which the bank records with what it imports; rename it",
                name=name,
                path=path,
            )
        try:
            mode = path.stat().st_mode
        except OSError as exc:  # missing, a name too long, a link loop: the input given is at fault
            what = "no such file or folder" if isinstance(exc, FileNotFoundError) else exc.strerror or exc
            raise CorpusImportError(f"{path}: {what}", name=name, path=path) from None
        _a_file_or_a_folder(path, mode, name)
    for what, value in [("--config", config), ("--split", split), *(("the split", s) for _, s in inputs)]:
        problem = None if value is None else name_problem(value)
        if problem is not None:
            raise CorpusImportError(f"{what} {value!r} cannot name a part of the bank: {problem}", name=name)


def check_rejects(
    rejects: Path,
    inputs: list[tuple[Path, str | None]],
    *,
    card: Mapping[str, str] | os.PathLike[str] | str | None = None,
    bank: Bank | None = None,
    name: str,
) -> None:
    """Refuse (a :class:`CorpusImportError`), before anything is read, a rejects file that
    would replace or add to what it must not: an input (the same file by any name, or a file
    in an input folder), the card (``card``, or ``card.toml`` beside the first input), or a
    file of convbank's own (in the bank, under ``CONVBANK_HOME``: a manifest,
    ``sources.json``). Example::

        check_rejects(Path("rejects.jsonl"), [(Path("chats.jsonl"), None)], name="mine")
    """
    from convbank.settings import convbanks_own

    bank = bank or Bank()
    target = rejects.resolve()
    why = None
    first = inputs[0][0] if inputs else None
    beside = (first if _is_dir(first) else first.parent) / CARD_FILE if first is not None else None
    named = Path(card) if isinstance(card, (str, os.PathLike)) else None  # a card given as fields: none
    for given in (named, beside):
        if given is not None and (target == given.resolve() or _same_file(rejects, given)):
            why = f"is the card {given}"
    where = convbanks_own(target, bank.root)
    if where is not None:
        why = f"is {where}, where convbank keeps its own files"
    for path, _ in inputs:
        if target == path.resolve() or _same_file(rejects, path):
            why = f"is the input {path}"
        elif _is_dir(path) and target.is_relative_to(path.resolve()):
            why = f"is in the input folder {path}"
    if why is not None:
        raise CorpusImportError(
            f"{rejects}: the rejects file (--skip-bad) {why}; name a file of its own elsewhere",
            name=name,
            path=rejects,
        )


def _is_dir(path: Path) -> bool:
    """Whether ``path`` is a folder (False where it cannot be looked at: a name too long)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _same_file(a: Path, b: Path) -> bool:
    """Whether two existing paths name one file (a hard link, a link)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _private_copies(
    inputs: list[tuple[Path, str | None]], stack: ExitStack, name: str
) -> tuple[list[tuple[Path, Path, str | None]], list[InputFile]]:
    """Each input copied where only this process reads it, hashed as it is copied (removed
    when ``stack`` closes): (original, copy, split) of each, and every file read."""
    copies: list[tuple[Path, Path, str | None]] = []
    files: list[InputFile] = []
    for path, part_split in inputs:
        try:
            copy, copied = private_tree(path, "import")
        except (OSError, ChecksumError) as exc:
            raise _changed(path, exc, name) from exc
        stack.callback(shutil.rmtree, copy.parent.parent, True)
        copies.append((path, copy, part_split))
        files += [  # the bytes read: their sha256 and size, whatever the file holds by now
            InputFile(path=os.path.abspath(f), sha256=sha, bytes=size, split=part_split)
            for f, (sha, size) in copied.items()
        ]
    return copies, files


def _changed(path: Path, exc: OSError | ChecksumError, name: str) -> CorpusImportError | OSError:
    """The one line for an input file that went away, or became something other than a
    regular file, between being found and being copied (a file of a folder removed, or
    replaced by a FIFO, meanwhile); an ``OSError`` of the private folder (a full disk)
    as it is."""
    given = exc.filename if isinstance(exc, OSError) else exc.path
    if not isinstance(given, (str, bytes, os.PathLike)):
        return exc if isinstance(exc, OSError) else CorpusImportError(str(exc), name=name, path=path)
    file = Path(os.fsdecode(given))
    if isinstance(exc, OSError) and not (file == path or file.is_relative_to(path)):
        return exc  # the private copy's, not the input's
    what = exc.strerror if isinstance(exc, OSError) else "it is no longer a regular file"
    return CorpusImportError(
        f"{file}: changed while convbank read it ({what}); nothing was imported — leave the "
        "files alone while they are imported, and run the import again",
        name=name,
        path=file,
    )


def _detected(copies: list[tuple[Path, Path, str | None]], name: str) -> Format:
    """The format of the first input, which every other must have too (an error names the
    file given, not its private copy)."""

    def of(original: Path, copy: Path) -> Format:
        try:
            return detect([copy])
        except CorpusImportError as exc:
            raise CorpusImportError(
                str(exc).replace(str(copy), str(original), 1), name=name, path=original
            ) from None

    fmt = of(*copies[0][:2])
    for original, copy, _ in copies[1:]:
        other = of(original, copy).name
        if other != fmt.name:
            raise CorpusImportError(
                f"{original}: is {other}, the first file {fmt.name}; import files of one format at a time",
                name=name,
                path=original,
            )
    return fmt


def _a_file_or_a_folder(path: Path, mode: int, name: str) -> None:
    """Refuse (one line) an input that is neither a regular file nor a folder holding one (a
    FIFO, a device, an empty folder; ``mode`` its ``st_mode``): never waited on, read
    without end, or taken for nothing to import."""
    if stat.S_ISDIR(mode):
        if not any(p.is_file() for p in path.rglob("*")):
            raise CorpusImportError(
                f"{path}: a folder holding no file; give the files to import, or a folder of them",
                name=name,
                path=path,
            )
        return
    if not stat.S_ISREG(mode):
        raise CorpusImportError(
            f"{path}: {kind_of(mode)}, not a file or a folder; "
            "give the file itself (a copy of what it holds)",
            name=name,
            path=path,
        )


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise CorpusImportError(
            f"{name!r} cannot name a dataset: use lower-case letters, digits and _, starting with a "
            "letter (at most 64)",
            name=str(name),
        )
    if name in catalog.catalog:
        raise CorpusImportError(
            f"{name} is a catalogued dataset ({catalog.catalog.origin(name)}); import under another --name",
            name=name,
        )


def _refuse_taken(bank: Bank, name: str, replace: bool) -> None:
    entry = bank.manifest().datasets.get(name)
    if entry is None:
        return
    if entry.imported is None:
        raise CorpusImportError(
            f"{bank.root}: holds a dataset {name} that was built, not imported; import under another --name",
            name=name,
        )
    if not replace:
        when = entry.imported.imported_at or entry.built_at
        raise CorpusImportError(
            f"{name} was imported already ({entry.imported.format}, {when}); pass --replace to "
            "replace it, or import under another --name",
            name=name,
        )


def _read(
    fmt: Format,
    data: Any,
    copies: list[tuple[Path, Path, str | None]],
    *,
    name: str,
    config: str | None,
    split: str | None,
    mapping: Mapping[str, str],
) -> Iterator[Item]:
    """Every conversation (and rejected record) of the inputs, in order, each put in its
    config and split; a file that holds none is refused, and so is a mapping given to a format
    that has no columns to name (only ``table`` reads it: never taken and dropped unsaid)."""
    assert fmt.reader is not None
    if mapping and fmt.name != "table":
        raise CorpusImportError(
            f"--map (mapping=) names a table's columns, and {fmt.name} has none; leave it out, "
            "or give --format table for a table",
            name=name,
        )
    if data is not None:
        yield from _in_memory_items(fmt, data, name=name, config=config, split=split, mapping=mapping)
        return
    groups: list[list[tuple[Path, Path, str | None]]] = []
    for entry in copies:  # a format read together: the files of one split at once
        same = [g for g in groups if g[0][2] == entry[2]] if fmt.together else []
        if same:
            same[0].append(entry)
        else:
            groups.append([entry])
    for group in groups:
        part_split = group[0][2]
        options = ReadOptions(
            dataset=name, config=config or "default", split=part_split or split or "train", mapping=mapping
        )
        originals = {copy: original for original, copy, _ in group}
        found = False
        try:
            for item in fmt.reader(list(originals), options):
                found = True
                if isinstance(item, Conversation):
                    item.dataset = name
                    item.config = config or item.config
                    item.split = part_split or split or item.split
                    yield group[0][0], item
                else:
                    shown = _original_of(item.path, originals, group[0][0])
                    yield shown, unprivate(item, originals, shown)
        except OSError as exc:  # the reader's, on a private copy: name the file given, bad input
            copy = Path(os.fsdecode(exc.filename)) if isinstance(exc.filename, (str, bytes)) else None
            shown = _original_of(copy, originals, group[0][0]) if copy is not None else group[0][0]
            hint = f"; {fmt.name} reads files: give the files in it" if exc.errno == errno.EISDIR else ""
            raise CorpusImportError(
                f"{shown}: cannot be read as {fmt.name} ({exc.strerror or exc}){hint}", name=name, path=shown
            ) from exc
        if not found:
            original = group[0][0]
            raise CorpusImportError(
                f"{original}: holds no {fmt.name} records; expected at least one", name=name, path=original
            )


def _original_of(path: Path, originals: Mapping[Path, Path], default: Path) -> Path:
    """The file the user gave that a private copy's ``path`` stands for (a file in a copied
    folder: that file in their folder), else ``default``."""
    for copy, original in originals.items():
        if path.is_relative_to(copy):
            return original / path.relative_to(copy)
    return default


def _in_memory_items(
    fmt: Format, data: Any, *, name: str, config: str | None, split: str | None, mapping: Mapping[str, str]
) -> Iterator[Item]:
    options = ReadOptions(dataset=name, config=config or "default", split=split or "train", mapping=mapping)
    if fmt.name == "table":
        from convbank.export.table import read_frame

        items: Iterator[Conversation | Rejected] = read_frame(data, options)
    else:
        from convbank.export.hf import read_hf_dataset

        items = read_hf_dataset(data, options)
    where = Path(type(data).__name__)
    found = False
    for item in items:
        found = True
        if isinstance(item, Conversation):
            item.config, item.split = config or item.config, split or item.split
        yield where, item
    if not found:
        raise CorpusImportError(f"{where}: holds no conversations; expected at least one", name=name)


def remove(name: str, *, bank: Bank | None = None) -> None:
    """Take an imported dataset out of the bank (a new generation; corpora open on it keep
    reading theirs). A catalogued dataset is refused: ``convbank remove`` is for imports.

    >>> from pathlib import Path
    >>> _ = Path("chats.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\\n')
    >>> _ = convbank.import_conversations("chats.jsonl", name="my_chats")
    >>> convbank.imports.remove("my_chats")
    >>> "my_chats" in convbank.store.Bank().manifest().datasets
    False
    """
    bank = bank or Bank()
    if name in catalog.catalog:
        raise CorpusImportError(
            f"{name} is a catalogued dataset; convbank remove takes out imported ones only", name=name
        )
    with bank.lock():
        entry = bank.manifest().datasets.get(name)
        if entry is None or entry.imported is None:
            imported = [n for n, e in bank.manifest().datasets.items() if e.imported is not None]
            raise NotBuiltError(
                f"{bank.root}: no imported dataset {name!r}; imported: {', '.join(imported) or 'none'}",
                dataset=name,
                path=bank.root,
            )
        bank.remove(name)
