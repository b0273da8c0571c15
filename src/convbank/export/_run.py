"""The :func:`export` entry point: checks the options, then writes one format (a
:class:`~convbank.export.Format` of :data:`~convbank.export.formats`) in a staged folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from convbank.errors import ExportError, did_you_mean
from convbank.export._core import Selection
from convbank.export._place import check_targets, placed
from convbank.export._registry import formats, joined, sided
from convbank.export._registry import written as written_formats
from convbank.query import Corpus
from convbank.settings import convbanks_own

__all__ = ["export"]


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
    known = written_formats()
    if fmt not in known:
        hint = did_you_mean(fmt, known)
        raise ExportError(f"unknown export format {fmt!r}; {hint}one of {', '.join(known)}", format=fmt)
    form = formats.get(fmt)
    assert form.writer is not None  # a format in written()
    if as_participant is not None and not form.sided:
        raise ExportError(f"--as applies to the {joined(sided())} formats, not {fmt}", format=fmt)
    selection = Selection(corpus, where, as_participant)
    parts = selection.parts()
    if not parts:
        raise ExportError(f"--where selects no {corpus.dataset.name} conversation: {where}", format=fmt)
    if form.no_where is not None and where is not None:
        raise ExportError(f"the {fmt} export {form.no_where}; it takes no --where", format=fmt)
    output = Path(output)
    _refuse_convbanks_own(output, corpus, fmt)
    record = {
        "dataset": selection.dataset,
        "format": fmt,
        "parts": [f"{c}/{s}" for c, s in parts],
        "where": where,
        "as": as_participant,
    }
    planned = form.plan(selection) if form.plan is not None else []
    _refuse_convbanks_own(output, corpus, fmt, planned)
    check_targets(output, planned, record, overwrite=overwrite)  # before the work
    with placed(output, record, overwrite=overwrite) as (tmp, written):
        written.extend(form.writer(selection, tmp))
        names = [p.relative_to(tmp) for p in written]
        _refuse_convbanks_own(output, corpus, fmt, names)
    return [output / n for n in names]


def _refuse_convbanks_own(output: Path, corpus: Corpus, fmt: str, paths: Sequence[Path | str] = ()) -> None:
    """Refuse (:class:`ExportError`) an output folder in the bank of ``corpus`` or under
    ``CONVBANK_HOME`` (:func:`convbank.settings.convbanks_own`), and a path of ``paths``
    (relative to ``output``) in either or holding either: the export would write among, or
    replace, convbank's own files (the bank's table folders, its manifest)."""
    where = convbanks_own(output, corpus.bank.root)
    if where is not None:
        raise ExportError(
            f"{output}: an export's folder may not be {where}, where convbank keeps its own files; "
            "name a folder elsewhere",
            format=fmt,
            path=output,
        )
    for rel in paths:
        where = convbanks_own(output / rel, corpus.bank.root, holding=True)
        if where is not None:
            raise ExportError(
                f"{output / rel}: the export would write there, {where}, where convbank keeps its own "
                "files; name another folder",
                format=fmt,
                path=output / rel,
            )
