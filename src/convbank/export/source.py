"""The ``source`` export: the publisher's format and file names, rebuilt from the bank —
the proof that the bank is lossless."""

from __future__ import annotations

from pathlib import Path

from convbank.query import Corpus

__all__ = ["export_source"]


def export_source(corpus: Corpus, directory: Path) -> list[Path]:
    """Write every (config, split) of ``corpus`` in its publisher's format into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    dataset = corpus.dataset
    written: list[Path] = []
    for config, split in corpus.parts():
        records = (dataset.from_conversation(c) for c in corpus.iter_part(config, split))
        written += dataset.write_source(records, config, split, corpus.file_meta(config, split), directory)
    return sorted(set(written))
