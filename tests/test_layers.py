"""The shape of the code: what a dataset knows stays in its package, and imports point down
the layers.

Layers, bottom up (a module imports its own layer and those below, at module level):

1. ``errors``, ``settings``, ``_atomic``, ``_archive``
2. ``model``
3. ``datasets`` (each dataset's package; its ``tasks`` module is a plugin of ``bench`` and
   imports it, and is imported only when tasks are asked for)
4. ``registry``, ``catalog``, ``fetch``, ``store``, ``engines``
5. ``build``, ``query``
6. ``validate``, ``export``, ``bench``, ``stats``, ``charts``, ``report``
7. ``cli``, ``web``, ``testing`` (the generic dataset test), ``scaffold`` (and ``__main__``)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import ROOT
from convbank import catalog

SRC = ROOT / "src" / "convbank"

LAYERS = {
    "errors": 1,
    "settings": 1,
    "_atomic": 1,
    "_archive": 1,
    "_workers": 1,
    "model": 2,
    "datasets": 3,
    "registry": 4,
    "catalog": 4,
    "fetch": 4,
    "_homefiles": 4,
    "store": 4,
    "engines": 4,
    "build": 5,
    "query": 5,
    "validate": 6,
    "export": 6,
    "bench": 6,
    "stats": 6,
    "charts": 6,
    "report": 6,
    "cli": 7,
    "web": 7,
    "__main__": 7,
    "testing": 7,
    "scaffold": 7,
}
PLUGIN_EDGES = {("datasets", "bench"), ("datasets", "query")}
"""Allowed upward imports, only from a dataset's ``tasks`` module (a plugin of ``bench``)."""


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(("convbank", *parts)).removesuffix(".__init__")
        found.append((name, path))
    return found


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "convbank" else None


def _top_level_imports(tree: ast.Module, module: str) -> list[str]:
    """Imports of convbank modules made when the module is imported (not in functions, not
    under ``if TYPE_CHECKING``)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ():
            if isinstance(sub, ast.Import):
                found += [a.name for a in sub.names]
            elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                found += [sub.module] + [
                    f"{sub.module}.{a.name}" for a in sub.names if sub.module == "convbank"
                ]
    return [m for m in found if m.startswith("convbank")]


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_imports_point_down_the_layers(module: str, path: Path) -> None:
    room = _room(module)
    if room is None or room == "__init__" or room not in LAYERS:
        assert room in (None, "__init__", "py"), f"{module} is in no layer: add it to LAYERS"
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for imported in _top_level_imports(tree, module):
        target = _room(imported)
        if target is None or target not in LAYERS:
            continue
        if LAYERS[target] <= LAYERS[room]:
            continue
        allowed = (room, target) in PLUGIN_EDGES and module.endswith(".tasks")
        assert allowed, f"{module} (layer {LAYERS[room]}) imports {imported} (layer {LAYERS[target]})"


def _code_words(tree: ast.AST) -> list[str]:
    """Identifiers, imported module names and string literals of a module, docstrings (of
    modules, classes, functions and attributes) and comments left out: they may name
    datasets as examples."""
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    words: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.append(node.value)
        elif isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            words.append(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            words += [node.module, *(a.name for a in node.names)]
        elif isinstance(node, ast.Import):
            words += [a.name for a in node.names]
    return words


BUILT_IN = ("casino", "ccpe", "curiosity", "pec", "convai2")


def _names_pattern() -> re.Pattern[str]:
    names = sorted({*BUILT_IN, *catalog.names()})
    return re.compile(r"(?<![a-z0-9])(" + "|".join(map(re.escape, names)) + r")(?![a-z0-9])", re.IGNORECASE)


OUTSIDE = [(m, p) for m, p in _modules() if _room(m) != "datasets"]


@pytest.mark.parametrize(("module", "path"), OUTSIDE, ids=[m for m, _ in OUTSIDE])
def test_no_module_outside_datasets_names_a_dataset(module: str, path: Path) -> None:
    pattern = _names_pattern()
    named = [w for w in _code_words(ast.parse(path.read_text(encoding="utf-8"))) if pattern.search(w)]
    assert not named, f"{module} names datasets in its code: {named[:5]}"


@pytest.mark.parametrize(
    "path",
    sorted([*SRC.rglob("*.html"), *SRC.rglob("*.css")]),
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_no_template_names_a_dataset(path: Path) -> None:
    found = _names_pattern().findall(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name} names datasets: {found[:5]}"


def test_each_built_in_dataset_is_one_package() -> None:
    for name in BUILT_IN:
        package = SRC / "datasets" / name
        assert (package / "__init__.py").is_file()
        modules = {p.stem for p in package.glob("*.py")}
        assert {"dataset", "present", "checks", "tasks"} <= modules, name
    assert not (SRC / "validate" / "casino.py").exists() and not (SRC / "bench" / "tasks").exists()
