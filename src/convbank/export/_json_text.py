"""A record's JSON text decoded as every reader decodes it (:func:`decode_json`), or one reason
why not: not JSON, nested deeper than the decoder goes, a lone UTF-16 surrogate escape
(``"\\ud800"``, which msgspec calls "truncated"), or an object giving one key twice, whose
first value msgspec would drop without a word (``{"a": 1, "a": 2}`` is ``{"a": 2}``).

A repeated key is looked for only where one may be: the quotes of the text are counted
against those of the value encoded again (a key given twice leaves at least two out), and
the text is read again, key by key, only where they differ or an escaped quote (``\\u0022``)
could hide the difference.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

__all__ = ["decode_json"]

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

_LONE = re.compile(
    rb"(?<!\\)(?:\\\\)*(\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
"""A UTF-16 surrogate escape that is not one of a pair: a high one not followed by a low one,
or a low one not following a high one (an even run of backslashes before it: not escaped)."""


def decode_json(data: bytes | str) -> tuple[Any, str | None]:
    """The JSON value of ``data``, or None and why it is not JSON (msgspec's reason, or one of
    the module's)."""
    try:
        value = _decode(data)
    except msgspec.DecodeError as exc:
        return None, lone_surrogate(data) or f"expected JSON ({exc}){_lines_of_cr(data, str(exc))}"
    except RecursionError:  # msgspec's own depth check: nested deeper than it decodes
        return None, "expected JSON nested less deep (the decoder's limit, some 1,000 levels, is passed)"
    problem = repeated_key(data, value)
    return (None, problem) if problem is not None else (value, None)


_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")


def _lines_of_cr(data: bytes | str, said: str) -> str:
    """What to add to msgspec's "trailing characters" where a carriage return alone ends the
    value before them: lines ended by CR (a classic Mac file), read as one line.

    >>> _lines_of_cr(b'{"a": 1}\\r{"a": 2}', "JSON is malformed: trailing characters (byte 10)")
    '; its lines end in a carriage return alone (CR): save it with line feeds (LF or CRLF)'
    """
    found = _TRAILING.search(said)
    if found is None:
        return ""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    before = raw[: int(found.group(1)) - 1]  # msgspec counts from 1: the first trailing byte's
    if b"\r" not in before[len(before.rstrip(b" \t\r\n")) :]:
        return ""
    return "; its lines end in a carriage return alone (CR): save it with line feeds (LF or CRLF)"


def lone_surrogate(data: bytes | str) -> str | None:
    """Why ``data`` is not JSON where it holds a lone surrogate escape, else None.

    >>> lone_surrogate(b'{"a": "x\\\\ud800"}')
    'expected JSON text of whole characters (\\\\ud800 at byte 8 is half of a UTF-16 surrogate pair, alone)'
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    found = _LONE.search(raw)
    if found is None:
        return None
    escape = found.group(1).decode()
    where = f"{escape} at byte {found.start(1)}"
    return f"expected JSON text of whole characters ({where} is half of a UTF-16 surrogate pair, alone)"


def repeated_key(data: bytes | str, value: Any) -> str | None:
    """Why ``data`` (decoded as ``value``) is refused where one of its objects gives a key
    twice, else None; the text is read again only where a key may be repeated.

    >>> repeated_key(b'{"m": [{"a": 1, "a": 2}]}', {"m": [{"a": 2}]})[40:]
    '(the key "a" is given twice in $["m"][0]; a reader would keep the last alone)'
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:  # a JSON array's records one at a time: never a second copy of a large file's text
        quotes = sum(_encode(item).count(b'"') for item in (value if isinstance(value, list) else [value]))
    except (OverflowError, TypeError, ValueError):  # an integer msgspec decodes but never encodes
        quotes = -1
    if raw.count(b'"') == quotes and b"\\u0022" not in raw:
        return None
    try:
        found = _first_repeat(json.loads(raw, object_pairs_hook=_Pairs.of))
    except RecursionError:  # deeper than Python's reader goes: said without the place
        return None if b"\\u0022" in raw else "expected each key of a JSON object once (a key is given twice)"
    if found is None:
        return None
    key, place = found
    shown = json.dumps(key[:80] + ("..." if len(key) > 80 else ""))
    said = f"the key {shown} is given twice in {place}; a reader would keep the last alone"
    return f"expected each key of a JSON object once ({said})"


class _Pairs(dict[str, Any]):
    """An object of the text read again, with the first key it gives twice (None if none)."""

    repeated: str | None = None

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> _Pairs:
        made = cls(pairs)
        if len(made) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    made.repeated = key
                    break
                seen.add(key)
        return made


def _first_repeat(value: Any) -> tuple[str, str] | None:
    """The first repeated key (:class:`_Pairs`) and where its object is (``$["m"][0]``),
    found without recursion, or None."""
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        item, place = stack.pop()
        if isinstance(item, _Pairs):
            if item.repeated is not None:
                return item.repeated, place
            stack.extend((v, f"{place}[{json.dumps(k[:80])}]") for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, f"{place}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None
