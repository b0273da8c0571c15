"""The :func:`export` entry point: checks the options, then writes one format (a
:class:`~convbank.export.Format` of :data:`~convbank.export.formats`) in a staged folder."""

from __future__ import annotations

import os
from pathlib import Path

from convbank._arguments import a_flag, a_text_or_none
from convbank._atomic import name_max
from convbank._names import EMPTY_FOLDER, empty_folder
from convbank._wording import counted, shown
from convbank.errors import ExportError, did_you_mean
from convbank.export._core import Selection
from convbank.export._place import check_targets, placed, refuse_convbanks_own
from convbank.export._registry import formats, joined, sided
from convbank.export._registry import written as written_formats
from convbank.query import Corpus

__all__ = ["export"]


def export(
    corpus: Corpus,
    fmt: str,
    output: Path | str,
    *,
    where: str | None = None,
    as_participant: str | None = None,
    overwrite: bool = False,
    timeout: float | None = None,
    hard: bool = False,
) -> list[Path]:
    """Export ``corpus`` (or the conversations ``where`` selects) in format ``fmt`` into the
    folder ``output``; return the paths written. Files appear only once complete.

    An export replaces only what the same export (dataset, format, parts, ``where``, ``as``,
    and the conversations ``corpus`` holds if it is a selection) wrote there before; another
    export's files, or files convbank did not write, make it raise :class:`ExportError`
    unless ``overwrite``. ``where``'s query runs for at most ``timeout`` seconds, held by
    DuckDB in this process, or with ``hard`` in a worker process killed on time (past it,
    :class:`QueryError`; None: no limit). An empty ``output`` (``""``) is refused, as
    ``-o ""`` is, never taken for the current folder (``"."`` names that one); an argument
    of the wrong kind (a dataset's name for ``corpus``, ``where=5``, ``overwrite="no"``) is a
    one-line ``TypeError`` naming it, before any work::

        export(convbank.load("casino"), "hf", Path("out"))  # out/casino/default/
    """
    if not isinstance(output, (str, bytes, os.PathLike)):
        said = f"{shown(output)}"
        raise TypeError(f"export's output must be a folder's path (a str or an os.PathLike), not {said}")
    where, as_participant = a_text_or_none(where, "where"), a_text_or_none(as_participant, "as_participant")
    overwrite, hard = a_flag(overwrite, "overwrite"), a_flag(hard, "hard")
    if empty_folder(output):  # what -o "" is refused as; Path would take it for "."
        raise ExportError(f"output: {EMPTY_FOLDER}", format=fmt)
    known = written_formats()
    if fmt not in known:
        hint = did_you_mean(fmt, known)
        raise ExportError(f"unknown export format {fmt!r}; {hint}one of {', '.join(known)}", format=fmt)
    if not isinstance(corpus, Corpus):  # never read half-way as one (a name: corpus.parts())
        raise TypeError(f"export's corpus must be a Corpus (convbank.load(...)), not {shown(corpus)}")
    form = formats.get(fmt)
    assert form.writer is not None  # a format in written()
    if as_participant is not None and not form.sided:
        raise ExportError(f"--as applies to the {joined(sided())} formats, not {fmt}", format=fmt)
    selection = Selection(corpus, where, as_participant, timeout, hard)
    parts = selection.parts()
    if not parts:  # said as what chose nothing: the condition, or the corpus, a selection
        chose = f"--where selects no {corpus.dataset.name} conversation: {where}"
        empty = f"the corpus is a selection of no {corpus.dataset.name} conversation; nothing to export"
        raise ExportError(chose if where is not None else empty, format=fmt)
    if form.no_where is not None and where is not None:
        raise ExportError(f"the {fmt} export {form.no_where}; it takes no --where", format=fmt)
    if form.no_where is not None and selection.chosen is not None:  # a where by other means
        raise ExportError(
            f"the {fmt} export {form.no_where}; it takes no corpus that is a selection "
            f"({selection.chosen.rsplit(' ', 1)[0]}): export the corpus whole",
            format=fmt,
        )
    output = Path(os.fsdecode(output))
    record = {
        "dataset": selection.dataset,
        "format": fmt,
        "parts": [f"{c}/{s}" for c, s in parts],
        "where": where,
        "as": as_participant,
    }
    if selection.chosen is not None:  # a corpus that is a selection: which one
        record["selection"] = selection.chosen
    planned = form.plan(selection) if form.plan is not None else []
    _one_path_each(planned, selection, fmt, output)
    refuse_convbanks_own(output, corpus.bank.root, planned, fmt)  # the folder, then each path
    check_targets(output, planned, record, overwrite=overwrite)  # before the work
    with placed(output, record, overwrite=overwrite) as (tmp, written):
        written.extend(form.writer(selection, tmp))
        names = [p.relative_to(tmp) for p in written]
        _one_path_each([str(n) for n in names], selection, fmt, output)
        refuse_convbanks_own(output, corpus.bank.root, names, fmt)
    return [output / n for n in names]


def _one_path_each(paths: list[str], selection: Selection, fmt: str, output: Path) -> None:
    """Refuse (one line, before the work) a path whose file name is longer than a name may be
    in ``output`` (:func:`~convbank._atomic.name_max`: a config's and a split's long names
    together), and two parts written to one path: a
    config's and a split's names run together (``x_y``/``train`` and ``x``/``y_train`` both
    make ``{dataset}_x_y_train``), so that the second would replace the first."""
    most = name_max(output)
    long = next((n for p in paths for n in Path(p).parts if len(os.fsencode(n)) > most), None)
    if long is not None:
        raise ExportError(
            f"{long[:60]}…: the {fmt} export would write a file name of "
            f"{counted(len(os.fsencode(long)), 'byte')}, "
            f"more than the {most} a name may hold (its dataset's, config's and split's names "
            "together); import the part under a shorter config or split name",
            format=fmt,
        )
    twice = next((p for i, p in enumerate(paths) if p in paths[:i]), None)
    if twice is None:
        return
    parts = selection.parts()
    named = [f"{c}/{s}" for (c, s), p in zip(parts, paths, strict=False) if p == twice]
    which = " and ".join(named) if len(named) > 1 and len(paths) == len(parts) else "two"
    raise ExportError(
        f"the parts {which} of {selection.dataset} would both be written to {twice} (the "
        "config's and the split's names run together); export them one at a time (--config, --split)",
        format=fmt,
        path=twice,
    )
