"""The ``source`` export: the publisher's format and file names, rebuilt from the bank —
the proof that the bank is lossless. Where the build measured a file's layout (every
JSON source the publishers' way, PEC's text files), the files come back byte for byte."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from convbank.query import Corpus

__all__ = ["export_source"]


def export_source(corpus: Corpus, directory: Path) -> list[Path]:
    """Write every (config, split) of ``corpus`` in its publisher's format into ``directory``,
    then each config's files kept in side tables (PEC's ``persona.txt``)."""
    directory.mkdir(parents=True, exist_ok=True)
    dataset = corpus.dataset
    written: list[Path] = []
    configs: list[str] = []
    for config, split in corpus.parts():
        records = (dataset.from_conversation(c) for c in corpus.iter_part(config, split))
        written += dataset.write_source(records, config, split, corpus.file_meta(config, split), directory)
        if config not in configs:
            configs.append(config)
    for config in configs:
        written += dataset.write_side(side_tables(corpus, config), config, directory)
    return sorted(set(written))


def side_tables(corpus: Corpus, config: str) -> dict[str, pa.Table]:
    """The side tables the bank holds for one config of the corpus's dataset, by name."""
    tables = {}
    for name in corpus.dataset.side_tables:
        path = corpus.bank.file(name, corpus.dataset.name, config, "all")
        if path.is_file():
            tables[name] = pq.read_table(path)
    return tables
