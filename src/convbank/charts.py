"""Small inline SVG charts for the HTML report and the web viewer: no scripts, no network,
every label escaped. Colours come from CSS variables so pages can theme them."""

from __future__ import annotations

from collections.abc import Mapping

from markupsafe import Markup, escape

__all__ = ["bar_chart", "histogram"]

_ROW = 22
_LABEL_CHARS = 24


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.3g}"


def bar_chart(counts: Mapping[str, float], title: str, *, width: int = 520, percent: bool = True) -> Markup:
    """Horizontal bars, one per key in the given order, labelled with the value (and its
    share of the total when ``percent``)."""
    total = sum(counts.values()) or 1
    top = max(counts.values(), default=0) or 1
    label_w = min(max((len(k) for k in counts), default=4), _LABEL_CHARS) * 7 + 12
    bar_w = width - label_w - 110
    height = _ROW * len(counts) + 8
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for i, (key, value) in enumerate(counts.items()):
        y = 4 + i * _ROW
        w = max(bar_w * value / top, 1 if value else 0)
        shown = key if len(key) <= _LABEL_CHARS else key[: _LABEL_CHARS - 1] + "…"
        note = f"{_number(value)}" + (f" ({100 * value / total:.1f}%)" if percent else "")
        parts.append(
            f"<g><title>{escape(key)}: {escape(note)}</title>"
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" class="label">'
            f"{escape(shown or '(empty)')}</text>"
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{_ROW - 6}" class="bar"/>'
            f'<text x="{label_w + w + 4:.1f}" y="{y + 15}" class="value">{escape(note)}</text></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def histogram(counts: Mapping[str, float], title: str, *, width: int = 520, height: int = 180) -> Markup:
    """Vertical bars over ordered bins (turn lengths, ratings), bin labels underneath."""
    n = max(len(counts), 1)
    top = max(counts.values(), default=0) or 1
    plot_h = height - 38
    step = (width - 20) / n
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for i, (key, value) in enumerate(counts.items()):
        h = plot_h * value / top
        x = 10 + i * step
        parts.append(
            f"<g><title>{escape(key)}: {escape(_number(value))}</title>"
            f'<rect x="{x + 1:.1f}" y="{12 + plot_h - h:.1f}" width="{max(step - 2, 1):.1f}" '
            f'height="{h:.1f}" class="bar"/>'
            f'<text x="{x + step / 2:.1f}" y="{height - 12}" text-anchor="middle" class="tick">'
            f"{escape(key)}</text></g>"
        )
    parts.append(
        f'<line x1="10" y1="{12 + plot_h}" x2="{width - 10}" y2="{12 + plot_h}" class="axis"/></svg>'
    )
    return Markup("".join(parts))
