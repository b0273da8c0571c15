"""Small inline SVG charts for the HTML report and the web viewer: no scripts, no network,
every label escaped. Colours come from CSS variables so pages can theme them.

Values can be read off every chart: bars carry their count (and share), histograms have a
count axis with ticks, their bins on a labelled axis (thinned so labels never overlap), and
the count above each bar when there is room.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from markupsafe import Markup, escape

__all__ = ["bar_chart", "histogram", "integer_bins"]

_ROW = 22
_LABEL_CHARS = 24
_CHAR_W = 7  # px of one character at the charts' font size
EMPTY = "(empty)"


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.3g}"


def _open(width: int, height: int, title: str) -> str:
    return (
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    )


def bar_chart(counts: Mapping[str, float], title: str, *, width: int = 520, percent: bool = True) -> Markup:
    """Horizontal bars, one per key in the given order, labelled with the value (and its
    share of the total when ``percent``); an empty key reads ``(empty)``."""
    total = sum(counts.values()) or 1
    top = max(counts.values(), default=0) or 1
    shown = {
        k: (k or EMPTY) if len(k or EMPTY) <= _LABEL_CHARS else k[: _LABEL_CHARS - 1] + "…" for k in counts
    }
    label_w = max((len(s) for s in shown.values()), default=4) * _CHAR_W + 12
    bar_w = width - label_w - 110
    height = _ROW * len(counts) + 8
    parts = [_open(width, height, title)]
    for i, (key, value) in enumerate(counts.items()):
        y = 4 + i * _ROW
        w = max(bar_w * value / top, 1 if value else 0)
        note = f"{_number(value)}" + (f" ({100 * value / total:.1f}%)" if percent else "")
        parts.append(
            f"<g><title>{escape(key or EMPTY)}: {escape(note)}</title>"
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" class="label">'
            f"{escape(shown[key])}</text>"
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{_ROW - 6}" class="bar"/>'
            f'<text x="{label_w + w + 4:.1f}" y="{y + 15}" class="value">{escape(note)}</text></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _ticks(top: float) -> list[int]:
    """Round count ticks from 0 to at least ``top`` (about four of them)."""
    if top <= 0:
        return [0, 1]
    raw = top / 4
    magnitude = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    step = max(int(step), 1)
    return list(range(0, math.ceil(top / step) * step + 1, step))


def histogram(
    counts: Mapping[str, float],
    title: str,
    *,
    x_label: str = "",
    width: int = 520,
    height: int = 200,
) -> Markup:
    """Vertical bars over ordered bins (turn lengths, ratings, points): a count axis with
    ticks, bin labels underneath (every k-th when they would overlap), ``x_label`` below,
    and each bar's count above it when the bars are wide enough."""
    n = max(len(counts), 1)
    ticks = _ticks(max(counts.values(), default=0))
    top = ticks[-1] or 1
    axis_w = len(_number(top)) * _CHAR_W + 14
    left, right, upper = axis_w, 10, 14
    lower = 36 if x_label else 22
    plot_w, plot_h = width - left - right, height - upper - lower
    step = plot_w / n
    longest = max((len(k) for k in counts), default=1)
    every = max(1, math.ceil((longest * _CHAR_W + 6) / step))
    parts = [_open(width, height, title)]
    for t in ticks:
        y = upper + plot_h - plot_h * t / top
        parts.append(
            f'<line x1="{left - 4}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" class="gridline"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_number(t)}</text>'
        )
    for i, (key, value) in enumerate(counts.items()):
        h = plot_h * value / top
        x = left + i * step
        label = escape(key or EMPTY)
        parts.append(
            f"<g><title>{label}: {escape(_number(value))}</title>"
            f'<rect x="{x + 1:.1f}" y="{upper + plot_h - h:.1f}" width="{max(step - 2, 1):.1f}" '
            f'height="{h:.1f}" class="bar"/>'
        )
        if step >= len(_number(value)) * _CHAR_W + 2 and value:
            parts.append(
                f'<text x="{x + step / 2:.1f}" y="{upper + plot_h - h - 3:.1f}" text-anchor="middle" '
                f'class="value">{escape(_number(value))}</text>'
            )
        if i % every == 0:
            parts.append(
                f'<text x="{x + step / 2:.1f}" y="{upper + plot_h + 15}" text-anchor="middle" '
                f'class="tick">{label}</text>'
            )
        parts.append("</g>")
    parts.append(
        f'<line x1="{left}" y1="{upper + plot_h}" x2="{width - right}" y2="{upper + plot_h}" class="axis"/>'
        f'<line x1="{left}" y1="{upper}" x2="{left}" y2="{upper + plot_h}" class="axis"/>'
    )
    if x_label:
        parts.append(
            f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" class="label">'
            f"{escape(x_label)}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def integer_bins(counts: Mapping[str, float]) -> dict[str, float] | None:
    """Counts keyed by integers as one bin per integer from the smallest to the largest,
    zero where no value fell, so that gaps show (None when a key is not an integer or the
    range is too wide to draw a bar per value)."""
    try:
        values = {int(k): v for k, v in counts.items()}
    except ValueError:
        return None
    if not values or max(values) - min(values) > 200:
        return None
    return {str(i): values.get(i, 0) for i in range(min(values), max(values) + 1)}
