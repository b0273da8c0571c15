"""The bytes of a publisher's JSON file: how its records are encoded and framed.

A JSON source is a container (a list, or Curiosity's top-level object) holding records
one after another. Each dataset module says how its publisher encodes one record (compact
like Python's ``json.dumps``, indented, or CCPE-M's own pretty style); the *frame* is the
text around and between the records: ``prefix``, ``separator``, ``suffix``.

At build time :func:`measure` re-encodes every record and finds it in the source text, in
order: when all are found with only a comma and whitespace between them, the frame is
measured from the real bytes and stored with the split (``file_meta["_layout"]``), so the
source export writes the same bytes. When a record is not reproduced, the layout says which
one, and the export falls back to the dataset's default frame (equal as JSON, not as bytes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

__all__ = [
    "LAYOUT_KEY",
    "Encoder",
    "Frame",
    "compact",
    "frame_of",
    "indented",
    "measure",
    "spaced",
    "write_framed",
]

LAYOUT_KEY = "_layout"
"""The ``file_meta`` key of a split's measured layout."""

_SEPARATOR = re.compile(r"\s*,\s*")


class Frame(msgspec.Struct, frozen=True, kw_only=True):
    """The text before the first record, between two records and after the last one, and
    whether non-ASCII characters are written as ``\\u`` escapes."""

    prefix: str
    separator: str
    suffix: str
    ascii: bool = True


Encoder = Callable[[Any, bool], str]
"""Encodes one record (as builtins) with or without ASCII escapes."""


def compact(value: Any, ascii: bool = True) -> str:
    """Python's default ``json.dumps``: ``", "`` and ``": "`` separators, one line."""
    return json.dumps(value, ensure_ascii=ascii)


def indented(indent: int, level: int) -> Encoder:
    """``json.dumps(indent=indent)`` for a value nested ``level`` levels deep (every line
    after the first shifted by ``indent * level`` spaces)."""
    shift = "\n" + " " * (indent * level)

    def encode(value: Any, ascii: bool = True) -> str:
        return json.dumps(value, indent=indent, ensure_ascii=ascii).replace("\n", shift)

    return encode


def spaced(value: Any, ascii: bool = True, level: int = 0) -> str:
    """CCPE-M's pretty style: objects one key a line (``"key": value``, two spaces a level),
    arrays on the line of their key as ``[ {`` ... ``}, {`` ... ``} ]`` without a level of
    their own, empty ones ``[ ]`` and ``{ }``."""
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = " " * (2 * (level + 1))
        items = ",\n".join(
            f"{inner}{json.dumps(k, ensure_ascii=ascii)}: {spaced(v, ascii, level + 1)}"
            for k, v in value.items()
        )
        return "{\n" + items + "\n" + " " * (2 * level) + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(spaced(v, ascii, level) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=ascii)


def measure(text: str, records: Iterable[Any], encode: Encoder, empty: Any) -> dict[str, Any]:
    """The layout of a JSON source ``text`` whose records (builtins, in order) are
    ``records``: ``{"exact": True, "prefix", "separator", "suffix", "ascii"}`` when every
    record, encoded with ``encode``, is found in order with only a comma and whitespace
    between two of them, and ``prefix + suffix`` parses to ``empty`` (the container without
    its records); else ``{"exact": False, "record": i, "reason": ...}``."""
    ascii = text.isascii()
    pos = 0
    prefix: str | None = None
    separators: set[str] = set()
    count = 0
    for i, record in enumerate(records):
        encoded = encode(record, ascii)
        at = text.find(encoded, pos)
        if at < 0:
            return {
                "exact": False,
                "record": i,
                "reason": "the record is not written as the publisher writes it",
            }
        gap = text[pos:at]
        if i == 0:
            prefix = gap
        elif _SEPARATOR.fullmatch(gap):
            separators.add(gap)
        else:
            return {"exact": False, "record": i, "reason": "text other than a comma before the record"}
        pos = at + len(encoded)
        count += 1
    if prefix is None:
        return {"exact": False, "record": 0, "reason": "no records"}
    suffix = text[pos:]
    try:
        container = json.loads(prefix + suffix)
    except ValueError:
        container = None
    if container != empty:
        return {"exact": False, "record": 0, "reason": "text around the records is not the container"}
    if len(separators) > 1:
        return {"exact": False, "record": count - 1, "reason": "records are separated in more than one way"}
    layout: dict[str, Any] = {"exact": True, "prefix": prefix, "suffix": suffix, "ascii": ascii}
    if separators:
        layout["separator"] = separators.pop()
    return layout


def frame_of(layout: Mapping[str, Any] | None, default: Frame) -> Frame:
    """The measured frame of a split, or ``default`` when none was measured or its records
    were not reproduced (a separator not seen in a one-record file is the default's)."""
    if not layout or not layout.get("exact"):
        return default
    return Frame(
        prefix=layout["prefix"],
        separator=layout.get("separator", default.separator),
        suffix=layout["suffix"],
        ascii=layout.get("ascii", default.ascii),
    )


def write_framed(path: Path, records: Iterable[Any], encode: Encoder, frame: Frame) -> list[Path]:
    """Write records (builtins) encoded with ``encode`` inside ``frame``; return ``[path]``."""
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write(frame.prefix)
        for i, record in enumerate(records):
            if i:
                out.write(frame.separator)
            out.write(encode(record, frame.ascii))
        out.write(frame.suffix)
    return [path]
