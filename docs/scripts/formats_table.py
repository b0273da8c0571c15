"""The table of export formats in ``docs/guide/exports.md``, made from each format's
declaration (:class:`convbank.export.Format`: what it writes, what reads it, its extra,
whether it is seen from one side), between the page's two markers.

``python docs/scripts/formats_table.py`` rewrites the page's table from the registry;
``tests/export/test_format_registry.py`` checks that the page holds what the registry says, and
``gen_formats.py`` writes it again when mkdocs builds the site (a format another package
adds as a plugin gets its row too).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from convbank.export import formats

PAGE = Path(__file__).resolve().parent.parent / "guide" / "exports.md"
START = "<!-- formats: made from each format's declaration by docs/scripts/formats_table.py -->"
END = "<!-- end of formats -->"
_BLOCK = re.compile(rf"{re.escape(START)}\n.*?{re.escape(END)}", re.S)
"""The table and its markers, each marker a paragraph of its own (Markdown would read a
table that touches an HTML comment as part of it)."""


def table() -> str:
    """The Markdown table, a row per registered format that convbank writes (a read-only
    one, as ``table``, is no export), in the registry's order."""
    rows = ["| format | writes | read with | extra | `--as` |", "|---|---|---|---|---|"]
    for f in (f for f in formats if f.writer is not None):
        extra = f"`{f.extra}`" if f.extra else ""
        rows.append(f"| `{f.name}` | {f.writes} | {f.read_with} | {extra} | {'yes' if f.sided else ''} |")
    return "\n".join(rows) + "\n"


IMPORT_PAGE = PAGE.parent / "your-conversations.md"
IMPORT_START = "<!-- imports: made from each format's declaration by docs/scripts/formats_table.py -->"
IMPORT_END = "<!-- end of imports -->"
_IMPORT_BLOCK = re.compile(rf"{re.escape(IMPORT_START)}\n.*?{re.escape(IMPORT_END)}", re.S)


def import_table() -> str:
    """The Markdown table of what an import from each format convbank reads keeps: a row per
    registered format with a reader, its ``loses``, in the registry's order."""
    rows = ["| format | read from | what it does not carry |", "|---|---|---|"]
    for f in (f for f in formats if f.reader is not None):
        rows.append(f"| `{f.name}` | {f.read_with} | {f.loses or 'not stated'} |")
    return "\n".join(rows) + "\n"


def with_import_table(page: str) -> str:
    """The import guide ``page`` with its table of formats made anew."""
    if not _IMPORT_BLOCK.search(page):
        raise ValueError(f"the import page has no block between {IMPORT_START!r} and {IMPORT_END!r}")
    return _IMPORT_BLOCK.sub(lambda _: f"{IMPORT_START}\n\n{import_table()}\n{IMPORT_END}", page, count=1)


def with_table(page: str) -> str:
    """``page`` with the block between the markers made anew; a page without them is an error."""
    if not _BLOCK.search(page):
        raise ValueError(f"the exports page has no block between {START!r} and {END!r}")
    return _BLOCK.sub(lambda _: f"{START}\n\n{table()}\n{END}", page, count=1)


def block(page: str) -> str:
    """The block between the markers, as the page holds it."""
    found = _BLOCK.search(page)
    return found.group(0) if found else ""


if __name__ == "__main__":
    PAGE.write_text(with_table(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    IMPORT_PAGE.write_text(with_import_table(IMPORT_PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    sys.stdout.write(f"{PAGE}, {IMPORT_PAGE}: {len(formats)} formats\n")
