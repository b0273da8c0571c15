"""Decoding a publisher's JSON into typed records, with one-line errors that name the file and
the JSON path or position of the problem."""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

import msgspec

from convbank.errors import FormatError

__all__ = ["decode_json", "no_records"]


def decode_json(path: Path, typ: Any, what: str, data: bytes | None = None) -> Any:
    """Decode a JSON file (or its bytes, ``data``) into ``typ``; any problem becomes a
    one-line :class:`FormatError` naming the file and the JSON path or position."""
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FormatError(f"{path}: cannot read ({exc.strerror})", path=path) from exc
    try:
        return msgspec.json.decode(data, type=typ)
    except msgspec.ValidationError as exc:
        message = _validation_message(exc, data)
        raise FormatError(
            f"{path}: {message}; not the {what} format as published — "
            "re-fetch the file or check that it is the right one",
            path=path,
            json_path=_json_path(message),
        ) from exc
    except msgspec.DecodeError as exc:
        message = _decode_message(exc, data)
        raise FormatError(
            f"{path}: {message}; expected well-formed JSON — "
            "re-fetch the file (it may be truncated or corrupted)",
            path=path,
            line=_line(message),
        ) from exc
    except RecursionError as exc:
        message = _depth_message(data)
        raise FormatError(
            f"{path}: {message}; not the {what} format as published — "
            "re-fetch the file or check that it is the right one",
            path=path,
            line=_line(message),
        ) from exc


def _json_path(message: str) -> str | None:
    """The JSON path a validation message names (``at $[0].dialogue_id: ...``)."""
    found = re.match(r"at (\$\S*): ", message)
    return found.group(1) if found else None


def _line(message: str) -> int | None:
    """The line a decoding message names (``... at line 3, column 7 ...``)."""
    found = re.search(r"\bat line (\d+), column ", message)
    return int(found.group(1)) if found else None


def no_records(path: Path, what: str) -> FormatError:
    """The error for a source that parses but holds no record."""
    return FormatError(
        f"{path}: no records; expected the {what} file as published, which is never empty — "
        "re-fetch the file or check that it is the right one",
        path=path,
    )


_DEPTH = 1000
_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _depth_message(data: bytes) -> str:
    """Where a JSON text first nests deeper than the decoder can go."""
    depth = 0
    for m in _BRACKETS.finditer(data):
        token = m.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > _DEPTH:
                offset = m.start()
                line = data.count(b"\n", 0, offset) + 1
                column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
                return (
                    f"JSON nested more than {_DEPTH:,} levels deep at line {line}, column {column} "
                    f"(byte {offset}), deeper than a decoder can follow"
                )
        elif token in (b"]", b"}"):
            depth -= 1
    return "JSON nested deeper than a decoder can follow"


def _validation_message(exc: msgspec.ValidationError, data: bytes | None = None) -> str:
    # msgspec says "Expected `int`, got `str` - at `$[0].dialogue_id`"
    message = str(exc)
    if " - at " in message:
        what, where = message.rsplit(" - at ", 1)
        where = where.strip("`")
        if "[...]" in where and data is not None:
            where = _name_map_keys(where, what, data)
        return f"at {where}: {what[0].lower()}{what[1:]}"
    return message[0].lower() + message[1:]


_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_JSON_TYPES = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def _step(key: str) -> str:
    """A map key as a JSON-path step."""
    return f".{key}" if re.fullmatch(r"[A-Za-z_][\w-]*", key) else f"[{msgspec.json.encode(key).decode()}]"


def _name_map_keys(where: str, what: str, data: bytes) -> str:
    """A JSON path with the keys of the maps it crosses (msgspec writes ``[...]`` for a map
    value): the key whose value has the problem the message describes, found in the source."""
    try:
        root = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return where
    segments = [(m.group(1), m.group(2)) for m in _SEGMENT.finditer(where, 1)]
    got = re.search(r"got `(\w+)`", what)
    missing = re.search(r"missing required field `([^`]+)`", what)

    def complaint(value: Any) -> bool:
        if got:
            kind = _JSON_TYPES.get(got.group(1))
            return kind is None or (isinstance(value, kind) and not (kind is int and isinstance(value, bool)))
        if missing:
            return isinstance(value, dict) and missing.group(1) not in value
        return True

    def walk(node: Any, rest: list[tuple[str | None, str | None]]) -> str | None:
        if not rest:
            return "" if complaint(node) else None
        (key, index), *tail = rest
        if index == "...":  # a map value: try each key
            items = node.items() if isinstance(node, dict) else ()
            tries = ((_step(k), walk(v, tail)) for k, v in items)
            return next((step + f for step, f in tries if f is not None), None)
        if key is not None:
            child, step = (
                (node.get(key), f".{key}") if isinstance(node, dict) and key in node else (None, None)
            )
        else:
            i = int(index or 0)
            child, step = (node[i], f"[{i}]") if isinstance(node, list) and i < len(node) else (None, None)
        found = None if step is None else walk(child, tail)
        return None if found is None or step is None else step + found

    resolved = walk(root, segments)
    return where if resolved is None else "$" + resolved


def _decode_message(exc: msgspec.DecodeError, data: bytes) -> str:
    message = str(exc)
    if "truncated" in message:
        return f"malformed JSON: the input ends early (at byte {len(data)})"
    if "(byte " in message:
        detail, _, pos = message.rpartition("(byte ")
        return _malformed_at(data, int(pos.rstrip(")")), detail.replace("JSON is malformed: ", "").strip())
    bad = _bad_utf8(data)  # msgspec says "Invalid UTF-8 encoded string", not where
    return message if bad is None else _malformed_at(data, bad[0], f"invalid UTF-8 ({bad[1]})")


def _malformed_at(data: bytes, offset: int, detail: str) -> str:
    """``malformed JSON at line L, column C (byte N): detail``."""
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f"malformed JSON at line {line}, column {column} (byte {offset}): {detail}"


def _bad_utf8(data: bytes, step: int = 1 << 20) -> tuple[int, str] | None:
    """The offset of the first byte that is not UTF-8, and why, or None; decoded ``step``
    bytes at a time, so that finding it holds no copy of the whole text.

    >>> _bad_utf8("café".encode() + b"\\xff"), _bad_utf8(b"ok")
    ((5, 'invalid start byte'), None)
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    for at in range(0, len(data), step):
        pending = len(decoder.getstate()[0])  # the bytes of a character the last piece began
        try:
            decoder.decode(data[at : at + step], final=at + step >= len(data))
        except UnicodeDecodeError as exc:
            return at - pending + exc.start, exc.reason
    return None
