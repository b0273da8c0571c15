"""Every public name of the documented modules has a docstring (the API reference is made of
them, by mkdocstrings), and so has every public method or property those classes define."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

# the modules of docs/reference/api.md and the names of each that the reference documents
MODULES: dict[str, list[str] | None] = {
    "convbank": ["load", "sql", "sql_batches", "Corpus", "Conversation", "Participant", "Turn", "Annotation"],
    "convbank.export": None,
    "convbank.bench": None,
    "convbank.tasks": None,
    "convbank.torch": None,
    "convbank.examples": None,
    "convbank.validate": None,
    "convbank.stats": None,
    "convbank.errors": None,
    "convbank.datasets": ["Dataset", "SourceFile", "ConfigSpec", "Strict", "Check", "CheckList"],
}


def public_names() -> list[tuple[str, str]]:
    out = []
    for module, names in MODULES.items():
        mod = importlib.import_module(module)
        for name in names if names is not None else mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):  # values: their docstrings are in the source
                out.append((module, name))
    return out


def undocumented(obj: Any) -> list[str]:
    """The object itself if it has no docstring of its own, and for a class its public
    methods and properties without one (those it defines, not those it inherits)."""
    missing = []
    if not (obj.__doc__ or "").strip():
        missing.append(getattr(obj, "__qualname__", repr(obj)))
    if inspect.isclass(obj):
        for name, member in vars(obj).items():
            if name.startswith("_"):
                continue
            func = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
            if inspect.isfunction(func) and not (func.__doc__ or "").strip():
                missing.append(f"{obj.__qualname__}.{name}")
    return missing


@pytest.mark.parametrize(("module", "name"), public_names())
def test_public_name_has_a_docstring(module: str, name: str) -> None:
    obj = getattr(importlib.import_module(module), name)
    assert undocumented(obj) == []


def test_the_modules_have_docstrings() -> None:
    assert [m for m in MODULES if not (importlib.import_module(m).__doc__ or "").strip()] == []
