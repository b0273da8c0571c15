"""A predictions file's line that names a key twice, found before it is scored: a JSON
decoder keeps one of the two values, unsaid which."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from convbank.errors import BenchError

__all__ = ["refuse_repeated_key"]


def refuse_repeated_key(path: Path, number: int, line: bytes, value: Any) -> None:
    """Refuse (:class:`BenchError`) a line whose object names a key twice (``{"example_id":
    "a", "prediction": 1, "prediction": 5}``): a decoder keeps one of them, unsaid which, as a
    Parquet file's repeated column would. Each key takes a ``:`` of the line, so a line of
    no more ``:`` than ``value`` has keys repeats none; only another is read again, by a
    reader that sees each pair."""
    if line.count(b":") <= _key_count(value):
        return

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, item in items:
            if key in seen:
                raise BenchError(
                    f"{path}: line {number:,} names the key {key!r} twice; "
                    'each line is {"example_id": ..., "prediction": ...}, each key once',
                    path=path,
                    line=number,
                )
            seen[key] = item
        return seen

    zero = lambda _: 0  # noqa: E731 - numbers are not read again (Python reads at most 4,300 digits)
    json.loads(line, object_pairs_hook=pairs, parse_int=zero, parse_float=zero)


def _key_count(value: Any) -> int:
    """The keys of every object in a decoded JSON value (a line nests at most 64 deep)."""
    if isinstance(value, dict):
        return len(value) + sum(_key_count(v) for v in value.values())
    if isinstance(value, list):
        return sum(_key_count(v) for v in value if isinstance(v, (dict, list)))
    return 0
