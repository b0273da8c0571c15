"""``convbank report``: one self-contained HTML file (inline CSS and SVG, no scripts, no
network) with each dataset's card, sizes, label and metadata charts, cross-tabs and the
validation results."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from convbank import catalog
from convbank._atomic import atomic_write_text
from convbank._textio import bidi_closed, link_url
from convbank._version import __version__
from convbank.charts import bar_chart, histogram, integer_bins
from convbank.stats import stats
from convbank.store import Bank

__all__ = ["dataset_charts", "render_report", "write_report"]

MAX_FINDINGS = 200
"""Findings listed per dataset in the report (all of them are in ``validate --json``)."""

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("convbank", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    finalize=bidi_closed,  # a value's bidi controls end with it
)
_env.filters["link_url"] = link_url  # a card's homepage is a link only if http(s)


def _summed(splits: list[dict[str, Any]], *keys: str) -> dict[str, int]:
    total: Counter[str] = Counter()
    for s in splits:
        entry = s
        for k in keys:
            entry = entry.get(k, {})
        total.update(entry)
    return dict(total)


def dataset_charts(data: dict[str, Any]) -> dict[str, Any]:
    """SVG charts of one dataset's :func:`convbank.stats.stats`, all splits summed:
    ``labels`` [(layer, chart)], ``turns`` (words per message) and ``meta`` [(name, chart,
    summary)]; used by the report and the viewer's dataset page."""
    splits = data["splits"]
    layers = sorted({layer for s in splits for layer in s["labels"]})
    label_charts = [
        (layer, bar_chart(dict(Counter(_summed(splits, "labels", layer)).most_common()), f"{layer} labels"))
        for layer in layers
    ]
    meta_charts = []
    for d_name in dict.fromkeys(k for s in splits for k in s["metadata"]):
        first = next(s["metadata"][d_name] for s in splits if d_name in s["metadata"])
        order = list(first["counts"])
        counts = _summed([s["metadata"].get(d_name, {}) for s in splits], "counts")
        counts = {k: counts[k] for k in (*order, *sorted(set(counts) - set(order))) if k in counts}
        numeric = "mean" in first
        notes = []
        if numeric and len(splits) == 1:
            notes.append(f"mean {first['mean']:.2f}, median {first['median']:g}")
        bins = integer_bins({k: v for k, v in counts.items() if k not in ("null", "")}) if numeric else None
        if bins is not None:
            absent = sum(v for k, v in counts.items() if k in ("null", ""))
            if absent:
                notes.append(f"{absent:,} without a value")
            chart = histogram(bins, d_name, x_label=d_name)
        else:
            chart = bar_chart(counts, d_name)
        meta_charts.append((d_name, chart, "; ".join(notes)))
    return {
        "labels": label_charts,
        "turns": histogram(data["turn_words"], "words per message", x_label="words per message"),
        "meta": meta_charts,
    }


def _dataset_view(name: str, data: dict[str, Any], validation: Any) -> dict[str, Any]:
    ds = catalog.get(name)
    charts = dataset_charts(data)
    checks = [c for c in validation.checks if c.dataset == name] if validation else []
    findings = [f for f in validation.findings if f.dataset == name] if validation else []
    return {
        "name": name,
        "title": ds.title,
        "description": ds.description,
        "license": ds.license,
        "homepage": ds.homepage,
        "citation": ds.citation,
        "splits": data["splits"],
        "label_charts": charts["labels"],
        "turn_chart": charts["turns"],
        "meta_charts": charts["meta"],
        "crosstabs": data["crosstabs"],
        "checks": checks,
        "findings": findings[:MAX_FINDINGS],
        "findings_left": max(len(findings) - MAX_FINDINGS, 0),
    }


def render_report(
    names: Sequence[str] | None = None, *, bank: Bank | None = None, validate: bool = True
) -> str:
    """The report as an HTML string (default: every built dataset)."""
    bank = bank or Bank()
    data = stats(names, bank=bank)
    validation = None
    if validate:
        from convbank.validate import validate as run_checks

        validation = run_checks(list(data), bank=bank)
    return _env.get_template("report.html").render(
        names=list(data),
        version=__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        bank=str(bank.root),
        datasets=[_dataset_view(name, d, validation) for name, d in data.items()],
    )


def write_report(
    path: Path, names: Sequence[str] | None = None, *, bank: Bank | None = None, validate: bool = True
) -> Path:
    """Write the report to ``path`` (atomically) and return it. A ``path`` in the bank or
    under ``CONVBANK_HOME`` is refused (:class:`~convbank.errors.ExportError`): it would
    replace the bank's own files (its manifest)."""
    from convbank.errors import ExportError
    from convbank.settings import convbanks_own

    where = convbanks_own(path, (bank or Bank()).root)
    if where is not None:
        raise ExportError(
            f"{path}: the report may not be written {where}, where convbank keeps its own files; "
            "name a file elsewhere",
            path=path,
        )
    atomic_write_text(path, render_report(names, bank=bank, validate=validate))
    return path
