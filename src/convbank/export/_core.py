"""What every exporter shares: the selection of conversations (``--where``) and the files
per part (the output folder and what it may replace: :mod:`convbank.export._place`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from convbank.errors import ExportError, QueryError
from convbank.model import Conversation, Part
from convbank.query import Corpus, sql

__all__ = ["Selection", "part_files", "write_lines"]


class Selection:
    """The conversations of a corpus that an export writes: all of them, or those whose row
    in the ``conversations`` view matches the SQL condition ``where``."""

    def __init__(self, corpus: Corpus, where: str | None = None) -> None:
        self.corpus = corpus
        self.where = where
        self._ids: dict[tuple[str, str], set[str]] | None = None
        if where is not None:
            if not where.strip():
                raise ExportError("--where is empty; give a SQL condition on the conversations view")
            try:
                table = sql(
                    "SELECT config, split, conversation_id FROM conversations "
                    f"WHERE dataset = '{corpus.dataset.name}' AND ({where})",
                    snapshot=corpus.snapshot,
                )
            except QueryError as exc:
                raise ExportError(
                    f"--where {where!r} is not a read-only condition on conversations: {exc}"
                ) from exc
            ids: dict[tuple[str, str], set[str]] = {}
            for config, split, cid in zip(*(table.column(i).to_pylist() for i in range(3)), strict=True):
                ids.setdefault((config, split), set()).add(cid)
            self._ids = ids

    @property
    def dataset(self) -> str:
        """The dataset's name."""
        return self.corpus.dataset.name

    def parts(self) -> list[Part]:
        """The (config, split) parts with at least one selected conversation."""
        return [p for p in self.corpus.parts() if self._ids is None or p in self._ids]

    def ids(self, config: str, split: str) -> set[str] | None:
        """The selected ids of a part (None: all)."""
        return None if self._ids is None else self._ids.get((config, split), set())

    def conversations(self, config: str, split: str) -> Iterator[Conversation]:
        """The selected conversations of one part, in source order."""
        wanted = self.ids(config, split)
        for conv in self.corpus.iter_part(config, split):
            if wanted is None or conv.conversation_id in wanted:
                yield conv

    def __iter__(self) -> Iterator[Conversation]:
        for config, split in self.parts():
            yield from self.conversations(config, split)

    def table(self, name: str) -> pa.Table:
        """A unified table (with dataset, config, split) restricted to the selection."""
        table = self.corpus.to_arrow(name)
        if self._ids is None:
            return table
        keys = pc.binary_join_element_wise(
            table.column("config"), table.column("split"), table.column("conversation_id"), "\x1f"
        )
        wanted = pa.array(
            ["\x1f".join((c, s, i)) for (c, s), ids in self._ids.items() for i in ids], pa.string()
        )
        return table.filter(pc.is_in(keys, value_set=wanted))


def part_files(
    selection: Selection, directory: Path, suffix: str
) -> Iterator[tuple[Path, Iterator[Conversation]]]:
    """Per (config, split) with selected conversations: its file
    ``{dataset}_{config}_{split}{suffix}`` in ``directory`` and its conversations."""
    for config, split in selection.parts():
        yield (
            directory / f"{selection.dataset}_{config}_{split}{suffix}",
            selection.conversations(config, split),
        )


def write_lines(
    selection: Selection, directory: Path, suffix: str, lines: Callable[[Conversation], Iterable[bytes]]
) -> list[Path]:
    """One file per part: the bytes ``lines(conversation)`` gives, conversation after conversation."""
    written = []
    for path, conversations in part_files(selection, directory, suffix):
        with path.open("wb") as f:
            for conv in conversations:
                f.writelines(lines(conv))
        written.append(path)
    return written
