"""The :func:`export` entry point: checks the options, then writes one format in a staged folder."""

from __future__ import annotations

from pathlib import Path

from convbank.errors import ExportError
from convbank.export import FORMATS
from convbank.export._core import Selection, staged
from convbank.export.chat import write_chat
from convbank.export.convokit import write_convokit
from convbank.export.croissant import write_croissant
from convbank.export.hf import write_hf
from convbank.export.parlai import write_parlai
from convbank.export.source import export_source
from convbank.export.tables import write_csv, write_jsonl, write_parquet
from convbank.query import Corpus

__all__ = ["export"]

_SIDED = ("chat", "parlai")


def export(
    corpus: Corpus,
    fmt: str,
    output: Path,
    *,
    where: str | None = None,
    as_participant: str | None = None,
) -> list[Path]:
    """Export ``corpus`` (or the conversations ``where`` selects) in format ``fmt`` into the
    folder ``output``; return the paths written. Files appear only once complete."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; one of {', '.join(FORMATS)}")
    if as_participant is not None and fmt not in _SIDED:
        raise ExportError(f"--as applies to the {' and '.join(_SIDED)} formats, not {fmt}")
    selection = Selection(corpus, where)
    if not selection.parts():
        raise ExportError(f"--where selects no {corpus.dataset.name} conversation: {where}")
    if fmt == "source" and where is not None:
        raise ExportError("the source export rebuilds whole files; it takes no --where")
    output = Path(output)
    with staged(output) as tmp:
        if fmt == "source":
            written = export_source(corpus, tmp)
        elif fmt in _SIDED:
            written = (write_chat if fmt == "chat" else write_parlai)(selection, tmp, as_participant)
        else:
            writer = {
                "hf": write_hf,
                "convokit": write_convokit,
                "jsonl": write_jsonl,
                "parquet": write_parquet,
                "csv": write_csv,
                "croissant": write_croissant,
            }[fmt]
            written = writer(selection, tmp)
        names = [p.relative_to(tmp) for p in written]
    return [output / n for n in names]
