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

>>> report = convbank.import_conversations("chats.jsonl", name="my_chats")
>>> report.format, report.conversations
('chat', 120)
>>> convbank.load("my_chats")[0].turns[0].text
'You are a helpful assistant.'
"""

from __future__ import annotations

import os
import shutil
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from convbank import catalog
from convbank._atomic import atomic_write
from convbank._verified import private_tree
from convbank._version import __version__
from convbank.build import SeenIds, write_batch
from convbank.datasets._imported import NAME, ImportedDataset, ImportEntry, InputFile
from convbank.errors import CorpusImportError, NotBuiltError
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._registry import formats, joined
from convbank.model import Conversation, conversations_to_tables
from convbank.model.schema import paused_gc
from convbank.store import Bank
from convbank.store.bank import Staging
from convbank.store.manifest import ConfigEntry, SplitEntry

__all__ = ["BATCH", "CARD_FILE", "ImportReport", "detect", "import_conversations", "parse_inputs", "remove"]

BATCH = 1000
"""Conversations written at a time (one row group): what an import holds in memory."""

CARD_FILE = "card.toml"
"""The card file an import reads from beside its first file when none is given: ``title``,
``description``, ``license``, ``citation`` and ``homepage`` keys."""

CARD_KEYS = ("title", "description", "license", "citation", "homepage")
"""What a card holds."""

Source = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Mapping[str, Any] | Any
"""What :func:`import_conversations` takes: a path, paths, ``{split: path(s)}``, or a
DataFrame or Hugging Face ``Dataset``/``DatasetDict``."""

Progress = Callable[[int], None]
"""Called with the number of conversations each written batch holds."""


@dataclass
class ImportReport:
    """What an import stored: the dataset's name, the format (and whether it was detected),
    the files with their sha256, conversations and turns by ``config/split``, the exact
    duplicates left out, the records rejected (and where they were written), what the format
    cannot carry."""

    name: str
    format: str
    detected: bool
    files: list[InputFile]
    parts: dict[str, int] = field(default_factory=dict)
    """Conversations by ``config/split``."""
    turns: int = 0
    duplicates: int = 0
    rejected: int = 0
    rejects: Path | None = None
    loses: str = ""
    seconds: float = 0.0

    @property
    def conversations(self) -> int:
        """Conversations stored, in all parts."""
        return sum(self.parts.values())

    def summary(self) -> list[str]:
        """The lines ``convbank import`` prints."""
        how = "detected" if self.detected else "as given"
        parts = ", ".join(f"{p} {n:,}" for p, n in self.parts.items())
        lines = [
            f"imported {self.name} from {len(self.files)} file{'s' * (len(self.files) != 1)} "
            f"({self.format}, {how}): {self.conversations:,} conversations, {self.turns:,} turns ({parts})"
        ]
        if self.duplicates:
            lines.append(f"left out {self.duplicates:,} exact duplicate record{'s' * (self.duplicates != 1)}")
        if self.rejects is not None:
            lines.append(f"rejected {self.rejected:,} record{'s' * (self.rejected != 1)}: see {self.rejects}")
        lines.append(f"what {self.format} does not carry: {self.loses or 'not stated by the format'}")
        return lines


# ---------------------------------------------------------------------- inputs
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
            out.append((Path(rest), split))
        else:
            out.append((Path(arg), None))
    return out


def _inputs(source: Source) -> list[tuple[Path, str | None]]:
    if isinstance(source, (str, os.PathLike)):
        return [(Path(source), None)]
    if isinstance(source, Mapping):
        return [
            (Path(p), str(split))
            for split, paths in source.items()
            for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)
        ]
    return [(Path(p), None) for p in source]


def _in_memory(source: Any) -> str | None:
    """``hf`` or ``table`` for a Hugging Face dataset or a DataFrame, else None."""
    kind = type(source).__module__.split(".")[0]
    if kind == "datasets":
        return "hf"
    if kind in ("pandas", "polars"):
        return "table"
    return None


def detect(paths: Sequence[Path]) -> Format:
    """The format of files (or a folder) judged from their content: the first format whose
    sniffer recognises them, in the registry's order, or a :class:`CorpusImportError` that
    lists the formats it tried.

    >>> detect([Path("chats.jsonl")]).name
    'chat'
    """
    for fmt in formats:
        if fmt.reader is not None and fmt.sniff is not None and fmt.sniff(paths):
            return fmt
    names = joined(f.name for f in formats if f.reader is not None)
    raise CorpusImportError(
        f"{paths[0]}: not a format convbank recognises ({names}); name it with --format",
        path=paths[0],
    )


def _card(card: Mapping[str, str] | os.PathLike[str] | str | None, first: Path | None) -> dict[str, str]:
    if card is None and first is not None:
        beside = (first if first.is_dir() else first.parent) / CARD_FILE
        card = beside if beside.is_file() else None
    if card is None:
        return {}
    if isinstance(card, Mapping):
        given: Mapping[str, Any] = card
        path: Path | None = None
    else:
        path = Path(card)
        try:
            given = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CorpusImportError(f"{path}: expected a TOML card ({exc})", path=path) from exc
    unknown = sorted(set(given) - set(CARD_KEYS))
    bad = [k for k in CARD_KEYS if k in given and not isinstance(given[k], str)]
    if unknown or bad:
        what = f"unknown key {unknown[0]!r}" if unknown else f"{bad[0]} is not a string"
        raise CorpusImportError(
            f"{path or 'card'}: {what}; a card holds the strings {', '.join(CARD_KEYS)}", path=path
        )
    return {k: str(v) for k, v in given.items()}


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
        convbank.import_conversations(df, name="calls", format="table",
                                      mapping={"conversation_id": "call", "speaker": "agent", "text": "said"})
    """
    start = time.perf_counter()
    bank = bank or Bank()
    _check_name(name)
    in_memory = _in_memory(source)
    inputs = [] if in_memory else _inputs(source)
    if not in_memory and not inputs:
        raise CorpusImportError("nothing to import: give at least one file", name=name)
    for path, _ in inputs:
        if not path.exists():
            raise CorpusImportError(f"{path}: no such file or folder", name=name, path=path)
    fmt_name = format or in_memory
    fmt = formats.get(fmt_name) if fmt_name else None
    if fmt is not None and fmt.reader is None:
        raise CorpusImportError(
            f"convbank writes {fmt.name} but does not read it; formats it reads: {joined(formats_read())}",
            name=name,
        )
    card_fields = _card(card, inputs[0][0] if inputs else None)
    with ExitStack() as stack:
        copies: list[tuple[Path, Path, str | None]] = []  # (original, private copy, split)
        files: list[InputFile] = []
        for path, part_split in inputs:
            copy, shas = private_tree(path, "import")
            stack.callback(shutil.rmtree, copy.parent.parent, True)
            copies.append((path, copy, part_split))
            files += [
                InputFile(path=os.path.abspath(f), sha256=sha, bytes=f.stat().st_size, split=part_split)
                for f, sha in shas.items()
            ]
        detected = fmt is None
        if fmt is None:
            fmt = detect([copies[0][1]])
            for original, copy, _ in copies[1:]:
                if detect([copy]).name != fmt.name:
                    raise CorpusImportError(
                        f"{original}: is {detect([copy]).name}, the first file {fmt.name}; import "
                        "files of one format at a time",
                        name=name,
                        path=original,
                    )
        assert fmt.reader is not None
        entry = ImportEntry(
            format=fmt.name,
            inputs=files,
            config=config,
            split=split,
            mapping=dict(mapping or {}),
            imported_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            convbank_version=__version__,
            loses=fmt.loses or "",
        )
        entry = msgspec.structs.replace(entry, **card_fields)
        report = ImportReport(name, fmt.name, detected, files, loses=entry.loses)
        report.rejects = Path(skip_bad) if skip_bad is not None else None
        items = _read(
            fmt,
            source if in_memory else None,
            copies,
            name=name,
            config=config,
            split=split,
            mapping=entry.mapping,
        )
        with bank.lock(), paused_gc():
            _refuse_taken(bank, name, replace)
            _store(bank, name, entry, items, report, progress=progress, batch_size=batch_size)
    report.seconds = time.perf_counter() - start
    return report


def formats_read() -> list[str]:
    """The names of the formats an import reads."""
    return [f.name for f in formats if f.reader is not None]


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


Item = tuple[Path, Conversation | Rejected]
"""A conversation (or a rejected record) and the file it came from (as given)."""


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
    config and split; a file that holds none is refused."""
    assert fmt.reader is not None
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
        for item in fmt.reader(list(originals), options):
            found = True
            if isinstance(item, Conversation):
                item.dataset = name
                item.config = config or item.config
                item.split = part_split or split or item.split
                yield group[0][0], item
            else:
                yield originals.get(item.path, group[0][0]), item
        if not found:
            original = group[0][0]
            raise CorpusImportError(
                f"{original}: holds no {fmt.name} records; expected at least one", name=name, path=original
            )


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


class _Rejects:
    """The rejected records: the first raised (no ``skip_bad``), or each written as a JSON
    line to a temporary file that replaces the rejects file once the import is committed."""

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        self.lines: list[bytes] = []
        self.encode = msgspec.json.Encoder().encode

    def add(self, original: Path, rejected: Rejected, name: str) -> None:
        line = f"{original}, {rejected.where}: {rejected.expected}"
        if self.report.rejects is None:
            raise CorpusImportError(
                f"{line} (nothing was imported; --skip-bad imports the rest)",
                name=name,
                path=original,
                where=rejected.where,
            )
        self.report.rejected += 1
        record = {"file": str(original), "where": rejected.where, "expected": rejected.expected}
        self.lines.append(self.encode({**record, "record": rejected.record}) + b"\n")

    def write(self) -> None:
        if self.report.rejects is not None:
            atomic_write(self.report.rejects, b"".join(self.lines))


class _Part:
    """One config and split being staged: its buffered conversations and its counts."""

    def __init__(self) -> None:
        self.buffer: list[tuple[Conversation, str, int]] = []
        self.counts = dict.fromkeys(("conversations", "participants", "turns", "annotations"), 0)


def _store(
    bank: Bank,
    name: str,
    entry: ImportEntry,
    items: Iterator[Item],
    report: ImportReport,
    *,
    progress: Progress | None,
    batch_size: int,
) -> None:
    """Stage every conversation (exact duplicates left out, repeated ids refused or
    rejected), then commit the dataset with its import record in one generation."""
    dataset = ImportedDataset(name, entry, {})
    rejects = _Rejects(report)
    ids: dict[int, int] = {}  # hash of an id -> hash of its record's content
    seen: dict[str, SeenIds] = {}
    parts: dict[tuple[str, str], _Part] = {}
    positions: dict[Path, int] = {}
    encode = msgspec.json.Encoder().encode
    with ExitStack() as stack:
        stagings: dict[str, Staging] = {}

        def flush(config: str, split: str, part: _Part) -> None:
            if config not in stagings:
                stagings[config] = stack.enter_context(bank.stage(name, config))
            convs = [c for c, _, _ in part.buffer]
            tables = conversations_to_tables(convs)
            tables[f"{name}_raw"] = pa.Table.from_pylist(
                [
                    {
                        "conversation_id": c.conversation_id,
                        "source_index": c.source_index,
                        "file": f,
                        "position": p,
                    }
                    for c, f, p in part.buffer
                ],
                schema=dataset.raw_schema,
            )
            write_batch(
                stagings[config],
                dataset,
                config,
                split,
                tables,
                seen=seen.setdefault(config, SeenIds()),
                counts=part.counts,
                progress=None,
            )
            if progress is not None:
                progress(len(convs))
            part.buffer.clear()

        for original, item in items:
            if isinstance(item, Rejected):
                rejects.add(original, item, name)
                continue
            content = hash(encode(msgspec.structs.replace(item, source_index=0)))
            key = hash(item.conversation_id)
            if key in ids:
                if ids[key] == content:
                    report.duplicates += 1
                    continue
                where = f"conversation {item.conversation_id!r}"
                rejects.add(original, Rejected(original, where, "expected a conversation id used once"), name)
                continue
            ids[key] = content
            part = parts.setdefault((item.config, item.split), _Part())
            position = positions.get(original, 0)
            positions[original] = position + 1
            item.source_index = part.counts["conversations"] + len(part.buffer)
            part.buffer.append((item, original.name, position))
            if len(part.buffer) >= batch_size:
                flush(item.config, item.split, part)
        for (config, split), part in parts.items():
            if part.buffer:
                flush(config, split, part)
        if not parts:
            raise CorpusImportError(
                f"nothing to import: every record was rejected (see {report.rejects})", name=name
            )
        staged = []
        for config, staging in stagings.items():
            splits = {s: SplitEntry(**p.counts) for (c, s), p in parts.items() if c == config}  # type: ignore[arg-type]
            sources = {f.path: f.path for f in entry.inputs}
            staged.append((staging, ConfigEntry(splits=splits, sources=sources)))
        entry.duplicates, entry.rejected = report.duplicates, report.rejected
        bank.commit_dataset(name, staged, imported=entry)
    rejects.write()
    report.parts = {f"{c}/{s}": p.counts["conversations"] for (c, s), p in parts.items()}
    report.turns = sum(p.counts["turns"] for p in parts.values())


def remove(name: str, *, bank: Bank | None = None) -> None:
    """Take an imported dataset out of the bank (a new generation; corpora open on it keep
    reading theirs). A catalogued dataset is refused: ``convbank remove`` is for imports.

    >>> convbank.imports.remove("my_chats")
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
