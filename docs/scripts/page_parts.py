"""What the catalog pages are made of, beside the pages themselves (``catalog_pages.py``):
where a dataset's records were found (:class:`Found`), Markdown cells, the rows of a raw
table's schema with the docstrings of its record type, a conversation as a table."""

from __future__ import annotations

import ast
import inspect
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

TURNS_SHOWN = 12


@dataclass
class Found:
    """Where a dataset's real records were found when the site was built, and what of it
    could be built from them."""

    folder: Path
    source: str  # how the page names the folder: ../shared/data, ../shared/samples, the package's samples
    full: bool  # the published files (True), or excerpts of them
    configs: list[str] = field(default_factory=list)
    stats: dict[str, Any] | None = None
    problem: str = ""  # why nothing could be built from the folder
    what: str = ""  # how the page names the files when they are not the published ones
    example: Any = None  # a Conversation of the dataset, read from the bank (an imported one's)


def cell(text: Any) -> str:
    """Text fit for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|") if text is not None else ""


def field_docs(record_type: type) -> dict[str, str]:
    """``{Class.field: docstring}`` and ``{Class: docstring}`` for the record type's module."""
    docs: dict[str, str] = {}
    try:
        tree = ast.parse(inspect.getsource(inspect.getmodule(record_type)))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return docs
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        if (doc := ast.get_docstring(node)) is not None:
            docs[node.name] = doc
        body = node.body
        for a, b in itertools.pairwise(body):
            if (
                isinstance(a, ast.AnnAssign)
                and isinstance(a.target, ast.Name)
                and isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Constant)
                and isinstance(b.value.value, str)
            ):
                docs[f"{node.name}.{a.target.id}"] = inspect.cleandoc(b.value.value)
    return docs


def struct_fields(t: type) -> dict[str, type]:
    """The fields of a msgspec struct type, with the struct type of each where it has one."""
    import typing

    import msgspec

    out: dict[str, type] = {}
    hints = typing.get_type_hints(t) if isinstance(t, type) and issubclass(t, msgspec.Struct) else {}
    for name, hint in hints.items():
        found = [a for a in _flatten(hint) if isinstance(a, type) and issubclass(a, msgspec.Struct)]
        if found:
            out[name] = found[0]
    return out


def _flatten(hint: Any) -> list[Any]:
    import typing

    args = typing.get_args(hint)
    return [hint] if not args else [x for a in args for x in _flatten(a)]


def schema_rows(schema: pa.Schema, record_type: type) -> list[tuple[str, str, bool, str]]:
    """(field path, Arrow type, nullable, meaning) for every field, nested ones as ``a[].b``."""
    docs = field_docs(record_type)
    rows: list[tuple[str, str, bool, str]] = []
    keys = {
        "conversation_id": "convbank's id of the conversation (the key to the unified tables).",
        "source_index": "The record's position in its source file.",
    }

    def visit(prefix: str, field: pa.Field, owner: type | None) -> None:
        t = field.type
        path = f"{prefix}{field.name}"
        meaning = keys.get(path, "")
        sub = struct_fields(owner).get(field.name) if owner is not None else None
        if owner is not None and not meaning:
            meaning = docs.get(f"{owner.__name__}.{field.name}", "")
            if not meaning and sub is not None:
                meaning = docs.get(sub.__name__, "")
        short = str(t) if not (pa.types.is_struct(t) or pa.types.is_list(t)) else _short(t)
        rows.append((path, short, field.nullable, meaning))
        inner = t
        suffix = ""
        while pa.types.is_list(inner) or pa.types.is_large_list(inner):
            inner = inner.value_type
            suffix += "[]"
        if pa.types.is_struct(inner) and path.count(".") < 3:
            for i in range(inner.num_fields):
                visit(f"{path}{suffix}.", inner.field(i), sub)

    for column in schema:
        visit("", column, None if column.name in keys else record_type)
    return rows


def _short(t: pa.DataType) -> str:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{_short(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_map(t):
        return f"map<{t.key_type}, {_short(t.item_type)}>"
    return str(t)


def conversation_table(name: str, conv: Any, part: str, what: str) -> list[str]:
    """The first turns of ``conv`` (of ``part``, ``config/split``, read from ``what``) as a
    table, with the personas of its first two participants."""
    labels: dict[int, list[str]] = {}
    for a in conv.annotations:
        labels.setdefault(a.turn_index, []).append(f"{a.layer}:{a.label}")
    out = [
        f"Conversation `{conv.conversation_id}` ({part}), read from {what} when this site was "
        f"built; its first {min(TURNS_SHOWN, conv.num_turns)} of {conv.num_turns} turns. "
        f"`convbank show {name} {conv.conversation_id}` shows it whole.",
        "",
    ]
    people = [p for p in conv.participants if p.persona]
    for p in people[:2]:
        out.append(f"- `{p.participant_id}` ({p.role}): " + cell(" ".join(p.persona))[:400])
    out += ["", "| # | speaker | kind | text | labels |", "|---|---|---|---|---|"]
    for t in conv.turns[:TURNS_SHOWN]:
        text = cell(t.text)
        text = text if len(text) <= 300 else text[:300] + " …"
        out.append(
            f"| {t.turn_index} | `{t.participant_id}` | {t.kind} | {text} | "
            f"{cell(', '.join(labels.get(t.turn_index, [])))} |"
        )
    return out
