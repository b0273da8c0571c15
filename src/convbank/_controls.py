"""Characters that drive a terminal or end a line, and text with them shown as escapes.

Nothing but the standard library here: ``convbank where`` escapes the paths it prints
without importing rich or msgspec (:mod:`convbank.cli._console`
re-exports :func:`visible` and :func:`one_line`; :mod:`convbank._textio` the constants).
"""

from __future__ import annotations

__all__ = ["BIDI_CONTROLS", "LINE_SEPARATORS", "one_line", "visible"]

BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""The bidirectional controls (ALM, LRM, RLM, LRE-RLO, LRI-PDI): text that reorders what a
terminal or a page shows around it (``U+202E`` makes ``exe.txt`` read ``txt.exe``)."""

LINE_SEPARATORS = (0x2028, 0x2029)
"""LINE SEPARATOR and PARAGRAPH SEPARATOR: JSON allows them raw, but Python's
``str.splitlines()`` (and JavaScript before ES2019) ends a line at them, so a JSON line
holding one read that way splits in two, neither of them JSON."""

_CONTROLS = {
    **{c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]},
    **{c: f"\\u{c:04x}" for c in (*BIDI_CONTROLS, *LINE_SEPARATORS)},
    0x09: "\\t",
    0x0A: "\\n",
    0x0D: "\\r",
}
"""Characters that would drive a terminal (C0 and C1 controls: ESC, BEL, CR...; bidi
overrides) or end a line for a reader of it (U+2028, U+2029: Python's ``str.splitlines()``),
shown as escapes instead."""
_KEEP_LINES = {k: v for k, v in _CONTROLS.items() if k not in (0x0A, 0x09)}


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` safe to print on a terminal: every control character (``ESC``, ``BEL``,
    ``CR``, C1 codes, bidi overrides) as a visible escape (``\\x1b``); newlines and tabs kept
    unless ``keep_newlines`` is false. Example: ``visible("a\\x1b[2Jb") == "a\\\\x1b[2Jb"``."""
    return text.translate(_KEEP_LINES if keep_newlines else _CONTROLS)


def one_line(text: str) -> str:
    """``text`` as one line a terminal cannot be driven by: :func:`visible` with newlines and
    tabs shown as ``\\n`` and ``\\t`` too, so that a path holding a newline never breaks a
    message in two. Example: ``one_line("out\\nx: gone") == "out\\\\nx: gone"``."""
    return visible(text, keep_newlines=False)
