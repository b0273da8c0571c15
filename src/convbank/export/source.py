"""The ``source`` export: the publisher's format and file names, rebuilt from the bank by
each dataset's mapper and writer — the proof that the bank is lossless. Where the build
measured a file's layout, the files come back byte for byte."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from convbank.datasets._base import SideTable
from convbank.errors import QueryError
from convbank.query import Corpus

__all__ = ["export_source", "side_reader"]


def export_source(corpus: Corpus, directory: Path) -> list[Path]:
    """Write every (config, split) of ``corpus`` in its publisher's format into ``directory``,
    then each config's files kept in side tables (:meth:`Dataset.write_side`)."""
    directory.mkdir(parents=True, exist_ok=True)
    dataset = corpus.dataset
    written: list[Path] = []
    configs: list[str] = []
    for part in corpus.parts():
        records = (dataset.from_conversation(c) for c in corpus.iter_part(*part))
        written += dataset.write_source(records, part, corpus.file_meta(*part), directory)
        if part.config not in configs:
            configs.append(part.config)
    for config in configs:
        written += dataset.write_side(side_reader(corpus, config), config, directory)
    return sorted(set(written))


def side_reader(corpus: Corpus, config: str) -> SideTable:
    """Reads a side table of one config of the corpus's dataset from the bank (without the
    partition columns); None when the bank has no rows of it for that config."""

    def read(name: str) -> pa.Table | None:
        if name not in corpus.dataset.side_tables:
            raise KeyError(f"{corpus.dataset.name} has no side table {name!r}")
        try:
            table = corpus.sql(
                f"SELECT * FROM \"{name}\" WHERE dataset = '{corpus.dataset.name}' AND config = '{config}'"
            )
        except QueryError:  # not built (a bank from before the table existed)
            return None
        keys = [c for c in ("dataset", "config", "split") if c in table.column_names]
        return table.drop_columns(keys) if table.num_rows else None

    return read
