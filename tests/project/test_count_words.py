"""Every message that counts says the count and its word agreeing in number, through one
helper (:func:`convbank._wording.counted`): never ``1 conversations``."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "convbank"
WORDS = (
    "conversations|turns|files|examples|participants|annotations|records|predictions|rows|bytes|"
    "tokens|items|ids|entries|splits|lines|columns|keys|speakers|datasets|shards|batches"
)
COUNT = re.compile(rf"\{{(?P<expr>[^{{}}]+?)(?::,)?\}} (?:{WORDS})\b")
"""A count put before a plural word in an f-string (``{n:,} conversations``)."""
NOT_A_COUNT = re.compile(
    r"(?i)limit|most|max|^(?:name|column!r|dataset|self\.name|fmt\.name|entry\.format|self\.entry\.format"
    r"|self\.dataset\.name|self\.corpus\.dataset\.name|dataset\.name|said|shown|t\.turn_index|_counts\(.*)$|^(?:task\.)"
)
"""What stands before such a word but is no count (a name, a limit that is never 1, a text)."""
NEVER_ONE = ("in the memory this process may take ({size:,} bytes)",)
"""Counts that are never 1: the size of a file too large for memory."""


def test_no_message_puts_a_count_before_a_plural_word_by_hand() -> None:
    """Twentieth pass. Before: `imported one from 1 file (chat, detected): 1 conversations,
    1 turns`, `<Corpus one: 1 conversations ...>`, `1 rows, 8 MiB uncompressed`,
    `1 bytes, too short for a Parquet file` (each of 4 messages tried)."""
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in COUNT.finditer(line)
        if not NOT_A_COUNT.search(match["expr"].strip())
        and not any(word in line for word in ("FROM", "WHERE", *NEVER_ONE))
    ]
    assert found == []
