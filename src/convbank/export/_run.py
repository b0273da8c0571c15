"""The :func:`export` entry point: checks the options, then writes one format in a staged folder."""

from __future__ import annotations

from pathlib import Path

from convbank.errors import ExportError, did_you_mean
from convbank.export import FORMATS
from convbank.export._core import Selection
from convbank.export._place import check_targets, placed
from convbank.export.chat import write_chat
from convbank.export.convokit import write_convokit
from convbank.export.croissant import write_croissant
from convbank.export.hf import write_hf
from convbank.export.parlai import write_parlai
from convbank.export.source import export_source
from convbank.export.tables import write_csv, write_jsonl, write_parquet
from convbank.model import UNIFIED_TABLES
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
    overwrite: bool = False,
) -> list[Path]:
    """Export ``corpus`` (or the conversations ``where`` selects) in format ``fmt`` into the
    folder ``output``; return the paths written. Files appear only once complete.

    An export replaces only what the same export (dataset, format, parts, ``where``, ``as``)
    wrote there before; another export's files, or files convbank did not write, make it
    raise :class:`ExportError` unless ``overwrite``::

        export(convbank.load("casino"), "hf", Path("out"))  # out/casino/default/
    """
    if fmt not in FORMATS:
        hint = did_you_mean(fmt, FORMATS)
        raise ExportError(f"unknown export format {fmt!r}; {hint}one of {', '.join(FORMATS)}")
    if as_participant is not None and fmt not in _SIDED:
        raise ExportError(f"--as applies to the {' and '.join(_SIDED)} formats, not {fmt}")
    selection = Selection(corpus, where)
    parts = selection.parts()
    if not parts:
        raise ExportError(f"--where selects no {corpus.dataset.name} conversation: {where}")
    if fmt == "source" and where is not None:
        raise ExportError("the source export rebuilds whole files; it takes no --where")
    output = Path(output)
    record = {
        "dataset": selection.dataset,
        "format": fmt,
        "parts": [f"{c}/{s}" for c, s in parts],
        "where": where,
        "as": as_participant,
    }
    check_targets(output, _planned(fmt, selection), record, overwrite=overwrite)  # before the work
    with placed(output, record, overwrite=overwrite) as (tmp, written):
        if fmt == "source":
            written.extend(export_source(corpus, tmp))
        elif fmt in _SIDED:
            written.extend((write_chat if fmt == "chat" else write_parlai)(selection, tmp, as_participant))
        else:
            writer = {
                "hf": write_hf,
                "convokit": write_convokit,
                "jsonl": write_jsonl,
                "parquet": write_parquet,
                "csv": write_csv,
                "croissant": write_croissant,
            }[fmt]
            written.extend(writer(selection, tmp))
        names = [p.relative_to(tmp) for p in written]
    return [output / n for n in names]


def _planned(fmt: str, selection: Selection) -> list[str]:
    """The paths an export will write, where its format names them in advance (the source
    export's file names are each dataset's: checked once written)."""
    name, parts = selection.dataset, selection.parts()
    if fmt == "hf":
        return [f"{name}/{config}" for config in dict.fromkeys(c for c, _ in parts)]
    if fmt in ("convokit", "croissant"):
        return [f"{name}_{fmt}"]
    if fmt == "parquet":
        return [f"{name}_{t}.parquet" for t in UNIFIED_TABLES]
    suffix = {"chat": ".chat.jsonl", "parlai": ".parlai.txt", "jsonl": ".jsonl", "csv": ".turns.csv"}.get(fmt)
    return [f"{name}_{c}_{s}{suffix}" for c, s in parts] if suffix else []
