"""Staging an import's conversations and committing them with their record."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from convbank._atomic import AtomicFile
from convbank._names import name_problem
from convbank._textio import json_line
from convbank._wording import article, counted
from convbank.build import SeenIds, write_batch
from convbank.datasets._generic import CHECKS
from convbank.datasets._imported import ImportedDataset, ImportEntry, InputFile
from convbank.errors import CorpusImportError, whole_number
from convbank.export._format import Rejected
from convbank.export._read import non_finite, rejected
from convbank.model import Conversation, conversations_to_tables
from convbank.store import Bank
from convbank.store.bank import Staging
from convbank.store.manifest import ConfigEntry, SplitEntry

__all__ = ["META_DEPTH", "ImportReport", "Item", "Progress", "store"]

Progress = Callable[[int], None]
"""Called with the number of conversations each written batch holds."""

Item = tuple[Path, Conversation | Rejected]
"""A conversation (or a rejected record) and the file it came from (as given)."""


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
            f"imported {self.name} from {counted(len(self.files), 'file')} ({self.format}, {how}): "
            f"{counted(self.conversations, 'conversation')}, {counted(self.turns, 'turn')} ({parts})"
        ]
        if self.duplicates:
            lines.append(f"left out {counted(self.duplicates, 'exact duplicate record')}")
        if self.rejects is not None and self.rejected:
            lines.append(f"rejected {counted(self.rejected, 'record')}: see {self.rejects}")
        elif self.rejects is not None:  # nothing to see there, but the file is this import's
            lines.append(f"rejected no record ({self.rejects} is written empty)")
        lines.append(f"what {self.format} does not carry: {self.loses or 'not stated by the format'}")
        return lines


class _Rejects:
    """The rejected records: the first raised (no ``skip_bad``), or each written as a JSON
    line as it comes to a file that replaces the rejects file once the import is committed
    (removed if it fails: an earlier rejects file stays as it was)."""

    def __init__(self, report: ImportReport, stack: ExitStack) -> None:
        self.report = report
        self.out = None
        if report.rejects is not None:
            try:
                self.out = AtomicFile(report.rejects)
            except OSError as exc:
                raise CorpusImportError(
                    f"{report.rejects}: cannot write the rejects file there ({exc.strerror})",
                    name=report.name,
                    path=report.rejects,
                ) from exc
            stack.callback(self.out.discard)
        self.encode = msgspec.json.Encoder().encode

    def add(self, original: Path, rejected: Rejected, name: str) -> None:
        line = f"{original}, {rejected.where}: {rejected.expected}"
        if self.out is None:
            raise CorpusImportError(
                f"{line} (nothing was imported; --skip-bad imports the rest)",
                name=name,
                path=original,
                where=rejected.where,
            )
        self.report.rejected += 1
        expected = rejected.expected + rejected.takes
        record = {"file": str(original), "where": rejected.where, "expected": expected}
        self.out.file.write(json_line(self.encode({**record, "record": rejected.record})))

    def commit(self) -> None:
        """Put the rejects file in place (once the import is committed, or nothing was left)."""
        if self.out is not None:
            self.out.commit()


class _Part:
    """One config and split being staged: its buffered conversations (each with the name of
    its file and its place there) and its counts."""

    def __init__(self) -> None:
        self.buffer: list[tuple[Conversation, str, int]] = []
        self.counts = dict.fromkeys(("conversations", "participants", "turns", "annotations"), 0)
        self.seen = SeenIds()

    def flush(
        self, staging: Staging, dataset: ImportedDataset, split: str, progress: Progress | None
    ) -> None:
        """Write the buffered conversations as one row group of each table, the raw table
        saying where each came from."""
        convs = [c for c, _, _ in self.buffer]
        tables = conversations_to_tables(convs)
        rows = [
            {"conversation_id": c.conversation_id, "source_index": c.source_index, "file": f, "position": p}
            for c, f, p in self.buffer
        ]
        tables[f"{dataset.name}_raw"] = pa.Table.from_pylist(rows, schema=dataset.raw_schema)
        write_batch(
            staging, dataset, staging.config, split, tables, seen=self.seen, counts=self.counts, progress=None
        )
        if progress is not None:
            progress(len(convs))
        self.buffer.clear()

    def entry(self) -> SplitEntry:
        """The split's manifest entry."""
        c = self.counts
        return SplitEntry(
            conversations=c["conversations"],
            participants=c["participants"],
            turns=c["turns"],
            annotations=c["annotations"],
        )


def _part_name_problem(item: Conversation) -> str | None:
    """What is wrong with the config or split a conversation is put in, as an ``expected``."""
    for what, value in (("config", item.config), ("split", item.split)):
        problem = name_problem(value)
        if problem is not None:
            return f"expected {article(what)} name, not {value!r} ({problem})"
    return None


META_DEPTH = 32
"""The deepest nesting of lists and objects a conversation's, a participant's, a turn's or
an annotation's meta may hold (the meta object itself is 1): the bank types meta as nested
Arrow structs and lists, which readers take to 64 levels at most with their tables'
own; a conversation holding deeper meta is a bad record, never stored."""


def _too_deep(value: Any, limit: int = META_DEPTH) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` deep (itself 1), found
    without recursion (a value may nest far deeper than Python's stack)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, (list, tuple)) else None
        )
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _meta_problem(item: Conversation) -> str | None:
    """What of a conversation's meta the bank cannot hold, as an ``expected``: a NaN or an
    infinity (:func:`~convbank.export._read.non_finite`: JSON would make it null, never
    stored so), or lists and objects nested too deep (:func:`_too_deep`)."""
    metas = [("its meta", item.meta)]
    metas += [(f"participant {p.participant_id!r}'s meta", p.meta) for p in item.participants]
    metas += [(f"turn {t.turn_index}'s meta", t.meta) for t in item.turns]
    metas += [(f"an annotation of turn {a.turn_index}'s meta", a.meta) for a in item.annotations]
    for what, meta in metas:
        odd = non_finite(meta)
        if odd is not None:
            return f"meta of finite numbers, not {odd!r} ({what})"
        if _too_deep(meta):
            return f"meta nested at most {META_DEPTH} deep ({what} is deeper)"
    return None


_STRUCTURE = [
    c for c in CHECKS if c.name in ("conversation_id", "turn_indices", "speakers", "annotation_turns")
]
"""The checks of every dataset whose errors break the unified model itself (what readers of
the bank index by): a turn's index out of order, a speaker who is no participant, one listed
twice, an annotation of no turn."""


def _model_problem(item: Conversation) -> str | None:
    """The first error of :data:`_STRUCTURE` in a conversation, as an ``expected``: such a
    conversation is a bad record, never stored for ``validate`` to find and exports to fail on."""
    for check in _STRUCTURE:
        for severity, message in check.run(item) or []:
            if severity == "error":
                return f"expected a unified conversation ({message})"
    return None


def store(
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
    batch_size = whole_number(batch_size, "batch_size", least=1)
    dataset = ImportedDataset(name, entry, {})
    ids: dict[int, int] = {}  # hash of an id -> hash of its record's content
    parts: dict[tuple[str, str], _Part] = {}
    positions: dict[Path, int] = {}
    encode = msgspec.json.Encoder().encode
    with ExitStack() as stack:
        rejects = _Rejects(report, stack)
        stagings: dict[str, Staging] = {}

        def flush(config: str, split: str, part: _Part) -> None:
            if config not in stagings:
                stagings[config] = stack.enter_context(bank.stage(name, config))
            part.flush(stagings[config], dataset, split, progress)

        for original, item in items:
            if isinstance(item, Rejected):
                rejects.add(original, item, name)
                continue
            named = _part_name_problem(item) or _meta_problem(item) or _model_problem(item)
            if named is not None:  # its config or split would be a path, not one folder of the bank
                rejects.add(
                    original, rejected(original, f"conversation {item.conversation_id!r}", named, item), name
                )
                continue
            item.source_index = 0  # its place in the file is not its content
            content = hash(encode(item))
            key = hash(item.conversation_id)
            if key in ids:
                if ids[key] == content:
                    report.duplicates += 1
                    continue
                where = f"conversation {item.conversation_id!r}"
                expected = "expected a conversation id used once"
                # the rejects file keeps it as convbank read it (the id's first is imported)
                rejects.add(original, rejected(original, where, expected, item), name)
                continue
            ids[key] = content
            at = (item.config, item.split)
            part = parts.get(at)
            if part is None:
                part = parts[at] = _Part()
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
            rejects.commit()
            raise CorpusImportError(
                f"nothing to import: every record was rejected (see {report.rejects})", name=name
            )
        staged = []
        for config, staging in stagings.items():
            splits = {s: p.entry() for (c, s), p in parts.items() if c == config}
            sources = {f.path: f.path for f in entry.inputs}
            staged.append((staging, ConfigEntry(splits=splits, sources=sources)))
        entry.duplicates, entry.rejected = report.duplicates, report.rejected
        bank.commit_dataset(name, staged, imported=entry)
        rejects.commit()
    report.parts = {f"{c}/{s}": p.counts["conversations"] for (c, s), p in parts.items()}
    report.turns = sum(p.counts["turns"] for p in parts.values())
