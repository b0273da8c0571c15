"""The box tables of ``convbank query``, drawn as plain lines (a few seconds for 33,236 rows,
where a rich ``Table`` took over a minute), fitted to a width: columns holding one value in the rows
shown are left out first, then JSON columns (cut first), then short ones, then text (cut rather
than left out), then the ids; a column goes whole (as the DuckDB CLI leaves them out)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

from convbank.cli._console import MAX_CELL

__all__ = ["ID_COLUMNS", "MIN_CUT", "Column", "Layout", "draw", "fit", "single_value"]

MIN_CUT = 20
"""Characters a text or JSON column keeps at least when it is cut to fit the width."""
_GAP = "…"
_MIN_BACK = 10
"""Characters a left-out column needs at least (or its header, or its whole width) to come back."""


@dataclass
class Column:
    """One column of a table: its header and cells as they will be shown (control characters
    already escaped), whether it holds JSON, and whether its values are numbers (set right)."""

    name: str
    cells: list[str]
    json: bool = False
    numeric: bool = False

    @property
    def natural(self) -> int:
        """The width the column takes uncut: its longest cell or header, at most ``MAX_CELL``."""
        return max(1, min(MAX_CELL, max((_len(c) for c in [self.name, *self.cells]), default=1)))

    @property
    def least(self) -> int:
        """The width the column may be cut to: ``MIN_CUT`` (or its header) for text and JSON."""
        if self.numeric:
            return self.natural
        return min(self.natural, max(MIN_CUT, _len(self.name)))


@dataclass
class Layout:
    """Which columns a table shows (``None``: a ``…`` column standing for the left-out ones
    there) and at which widths."""

    shown: list[int | None]
    widths: dict[int, int]

    def hidden(self, n: int) -> list[int]:
        """The columns left out."""
        return [i for i in range(n) if i not in self.widths]


def _len(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)


def _span(keep: Sequence[int], widths: dict[int, int], n: int) -> int:
    """The characters a table of the columns ``keep`` takes, with a ``…`` column per gap."""
    return 1 + sum(widths[i] + 3 for i in keep) + 4 * _shown(keep, n).count(None)


def _shown(keep: Sequence[int], n: int) -> list[int | None]:
    """The columns ``keep`` in order, ``None`` for a ``…`` column where others are left out."""
    shown: list[int | None] = []
    last = -1
    for i in keep:
        if i > last + 1:
            shown.append(None)
        shown.append(i)
        last = i
    if last < n - 1:
        shown.append(None)
    return shown


ID_COLUMNS = frozenset({"conversation_id", "turn_index", "participant_id"})
"""Columns that name a row (what ``convbank show`` takes): left out last."""


def single_value(column: Column) -> bool:
    """Whether the column holds one value (or only empty cells) in two or more rows shown."""
    return len(column.cells) > 1 and len(set(column.cells)) == 1


def _drop_order(columns: Sequence[Column]) -> list[int]:
    """The order columns are left out in when even cut they do not fit: those holding a
    single value in the rows shown first, then JSON (from the right), then the short ones
    from the middle outwards, then text from the right, then the ids (:data:`ID_COLUMNS`);
    the last text column stays whatever the width."""
    ids = [i for i in reversed(range(len(columns))) if _is_id(columns[i].name)]
    single = [i for i in reversed(range(len(columns))) if single_value(columns[i]) and i not in ids]
    rest = [i for i in range(len(columns)) if i not in single and i not in ids]
    json = [i for i in reversed(rest) if columns[i].json]
    short = [i for i in rest if not columns[i].json and columns[i].least == columns[i].natural]
    middle = sorted(short, key=lambda i: abs(short.index(i) - (len(short) - 1) / 2))
    text = [i for i in reversed(rest) if i not in json and i not in short]
    if text:
        return single + json + middle + text[1:] + ids + text[:1]
    return single + json + middle + ids


def _is_id(name: str) -> bool:
    return name in ID_COLUMNS or name == "id" or name.endswith("_id")


def fit(columns: Sequence[Column], max_width: int) -> Layout:
    """The columns a table of at most ``max_width`` characters (0: no limit) shows, and their
    widths. Example: with ``text`` and ``meta`` too wide, ``meta`` is cut, then left out, and
    ``text`` cut to the room left (at least ``MIN_CUT`` characters). A column left out comes
    back cut narrower than ``MIN_CUT`` (to 10 characters or its header at least) where room is left."""
    n = len(columns)
    natural = {i: c.natural for i, c in enumerate(columns)}
    if not max_width or _span(range(n), natural, n) <= max_width:
        return Layout(_shown(range(n), n), natural)
    keep = list(range(n))
    dropped: list[int] = []
    order = _drop_order(columns)
    for drop in [None, *order[:-1]]:  # the last of the order stays whatever the width
        if drop is not None:
            keep.remove(drop)
            dropped.append(drop)
        least = {i: columns[i].least for i in keep}
        room = max_width - _span(keep, least, n)
        if room >= 0 or len(keep) == 1:
            break
    for i in reversed(dropped):  # the room left may hold a column cut short (its one value is said)
        if single_value(columns[i]):
            continue
        header = natural[i] if columns[i].numeric else min(max(_len(columns[i].name), _MIN_BACK), natural[i])
        trial = sorted([*keep, i])
        width = max_width - _span(trial, {**least, i: 0}, n)
        if width >= header:
            keep, least = trial, {**least, i: min(width, natural[i], columns[i].least)}
            room = max_width - _span(keep, least, n)
    widths = dict(least)
    for group in ([i for i in keep if not columns[i].json], [i for i in keep if columns[i].json]):
        for i in group:  # text first, then JSON, left to right, up to their whole width
            more = min(max(room, 0), natural[i] - widths[i])
            widths[i] += more
            room -= more
    return Layout(_shown(keep, n), widths)


def _cut(text: str, width: int) -> str:
    if _len(text) <= width:
        return text
    if text.isascii():
        return text[: width - 1] + _GAP
    return set_cell_size(text, width - 1) + _GAP


def _pad(text: str, width: int, right: bool) -> str:
    if text.isascii():
        return text.rjust(width) if right else text.ljust(width)
    space = " " * max(width - cell_len(text), 0)
    return space + text if right else text + space


def draw(columns: Sequence[Column], layout: Layout, gap_after: int | None = None) -> Iterable[str]:
    """The lines of the table (each ending in a newline), a row of ``·`` after row
    ``gap_after`` (the rows left out there) when given."""
    parts = [(i, layout.widths[i] if i is not None else 1) for i in layout.shown]

    def line(left: str, fill: str, joint: str, right: str) -> str:
        return left + joint.join(fill * (w + 2) for _, w in parts) + right + "\n"

    def row(cells: Iterable[str], edge: str = "│") -> str:
        return edge + " " + f" {edge} ".join(cells) + " " + edge + "\n"

    yield line("┏", "━", "┳", "┓")
    yield row(
        (_pad(_cut(columns[i].name, w), w, False) if i is not None else _GAP for i, w in parts), edge="┃"
    )
    yield line("┡", "━", "╇", "┩")
    rows = max((len(c.cells) for c in columns), default=0)
    cells = [
        [_pad(_cut(c, w), w, columns[i].numeric) for c in columns[i].cells] if i is not None else None
        for i, w in parts
    ]
    for r in range(rows):
        if r == gap_after:
            yield row(_pad("·", w, False) for _, w in parts)
        yield row(col[r] if col is not None else _GAP for col in cells)
    if gap_after is not None and gap_after >= rows:
        yield row(_pad("·", w, False) for _, w in parts)
    yield line("└", "─", "┴", "┘")
