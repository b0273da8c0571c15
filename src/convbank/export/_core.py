"""What every exporter shares: the selection of conversations (``--where``) and the files
per part (the output folder and what it may replace: :mod:`convbank.export._place`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from convbank._wording import counted
from convbank.errors import ExportError, QueryError

if TYPE_CHECKING:  # a format's module imports this one: it stays free of pyarrow and DuckDB
    import pyarrow as pa

    from convbank.model import Conversation, Part
    from convbank.query import Corpus

__all__ = ["Selection", "part_files", "part_name", "per_part", "write_lines"]


class Selection:
    """The conversations of a corpus that an export writes: all of them (a corpus may itself
    be a selection: filtered, sliced, shuffled), or those whose row in the ``conversations``
    view matches the SQL condition ``where`` (see :meth:`convbank.Corpus.filter`); and, for
    a format seen from one side (``chat``, ``parlai``), the participant each conversation is
    seen from (``as_participant``, ``--as``; None: the dataset's choice). ``where``'s query
    runs for at most ``timeout`` seconds (:class:`QueryError` past it; None: no limit), held
    as :meth:`convbank.Corpus.sql` holds it (``hard``: in a worker killed on time)."""

    def __init__(
        self,
        corpus: Corpus,
        where: str | None = None,
        as_participant: str | None = None,
        timeout: float | None = None,
        hard: bool = False,
    ) -> None:
        self.where = where
        self.as_participant = as_participant
        self.chosen = _chosen(corpus)
        if where is not None:
            if not where.strip():
                raise ExportError("--where is empty; give a SQL condition on the conversations view")
            try:
                corpus = corpus.filter(where, timeout=timeout, hard=hard)
            except QueryError as exc:
                if exc.limit is not None:  # ran past ``timeout``: as `convbank query` says it
                    raise QueryError(f"--where {where!r}: {exc}", sql=exc.sql, limit=exc.limit) from None
                raise ExportError(_where_problem(where, exc)) from exc
        self.corpus = corpus

    @property
    def dataset(self) -> str:
        """The dataset's name."""
        return self.corpus.dataset.name

    def parts(self) -> list[Part]:
        """The (config, split) parts with at least one selected conversation."""
        return self.corpus.parts()

    def ids(self, config: str, split: str) -> set[str] | None:
        """The selected ids of a part (None: all)."""
        return self.corpus.selected_ids(config, split)

    def conversations(self, config: str, split: str) -> Iterator[Conversation]:
        """The selected conversations of one part, in source order."""
        return self.corpus.iter_part(config, split)

    def __iter__(self) -> Iterator[Conversation]:
        for config, split in self.parts():
            yield from self.conversations(config, split)

    def table(self, name: str) -> pa.Table:
        """A unified table (with dataset, config, split) restricted to the selection, its
        ``meta`` as stored (JSON text)."""
        return self.corpus.to_arrow(name, meta="json")


def _chosen(corpus: Corpus) -> str | None:
    """What a corpus that is a selection (``select``, ``filter``, ``shard``...) selects, for
    an export's record: ``'5 of 900 conversations 1f0c...'`` (a digest of the ids), so that
    the export of another selection is another export; None when it holds every conversation
    of its parts."""
    import hashlib
    import json

    chosen, picked, stored = [], 0, 0
    for config, split in corpus.parts():
        ids = corpus.selected_ids(config, split)
        count = corpus.stored_count(config, split)
        stored += count
        picked += count if ids is None else len(ids)
        chosen.append([config, split, None if ids is None or len(ids) == count else sorted(ids)])
    if all(ids is None for _, _, ids in chosen):
        return None
    digest = hashlib.sha256(json.dumps(chosen).encode("utf-8")).hexdigest()[:16]
    return f"{picked:,} of {counted(stored, 'conversation')} {digest}"


def _where_problem(where: str, exc: QueryError) -> str:
    """What is wrong with a ``--where`` condition that failed: an unknown column (the view's
    columns named, with where labels are), or a condition that is not read-only SQL."""
    import re

    from convbank.model.schema import PARTITION_COLUMNS, table_schemas

    unknown = re.search(r'Binder Error: Referenced column "([^"]+)" not found', str(exc))
    if unknown is None:
        return f"--where {where!r} is not a read-only condition on conversations: {exc}"
    columns = [*PARTITION_COLUMNS, *table_schemas()["conversations"].names]
    return (
        f"--where {where!r}: conversations has no column {unknown.group(1)!r} (its columns: "
        f'{", ".join(columns)}; labels are in annotations: --where "conversation_id IN (SELECT '
        f"conversation_id FROM annotations WHERE label = 'LABEL')\"): {exc}"
    )


def part_name(dataset: str, config: str, split: str, suffix: str) -> str:
    """The file of one part in a format written per part: ``{dataset}_{config}_{split}{suffix}``.

    >>> part_name("casino", "default", "train", ".chat.jsonl")
    'casino_default_train.chat.jsonl'
    """
    return f"{dataset}_{config}_{split}{suffix}"


def per_part(suffix: str) -> Callable[[Selection], list[str]]:
    """The plan of a format that writes one file per (config, split) part,
    :func:`part_name` with ``suffix`` (what :func:`write_lines` writes).

    Example: ``Format(name="tsv", ..., plan=per_part(".turns.tsv"))``.
    """

    def plan(selection: Selection) -> list[str]:
        return [part_name(selection.dataset, c, s, suffix) for c, s in selection.parts()]

    return plan


def part_files(
    selection: Selection, directory: Path, suffix: str
) -> Iterator[tuple[Path, Iterator[Conversation]]]:
    """Per (config, split) with selected conversations: its file
    ``{dataset}_{config}_{split}{suffix}`` in ``directory`` (:func:`part_name`, as a format's
    :func:`per_part` plan names it) and its conversations."""
    for config, split in selection.parts():
        yield (
            directory / part_name(selection.dataset, config, split, suffix),
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
