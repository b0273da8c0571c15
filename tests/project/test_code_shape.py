"""The shape of the code: what a dataset knows stays in its package, and imports point down
the layers.

The layers are import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``),
counting every import (under ``TYPE_CHECKING`` and inside functions too): the package's
layers, the layers inside each dataset's package, and no circle between siblings anywhere.
``.ci/run`` runs ``lint-imports``; the test here runs the same contracts, and shows that one
import pointing up is caught.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from convbank import catalog
from testsupport import ROOT

SRC = ROOT / "src" / "convbank"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


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


def _lint(src: Path, config: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """lint-imports over ``src`` (and the ``benchmarks`` package of ``cwd``)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), str(config), "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=240,
        check=False,
    )


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter (the dev extra) is not installed")
def test_the_layers_hold_and_an_upward_import_is_caught(tmp_path: Path) -> None:
    kept = _lint(ROOT / "src", ROOT / "pyproject.toml")
    assert kept.returncode == 0, kept.stdout[-3000:]
    assert "Contracts: 5 kept, 0 broken." in kept.stdout
    copy = tmp_path / "src"
    skip = shutil.ignore_patterns("*.egg-info", "__pycache__")
    shutil.copytree(ROOT / "src", copy, ignore=skip)
    shutil.copytree(ROOT / "benchmarks", tmp_path / "benchmarks", ignore=skip)
    _append(copy / "convbank" / "model" / "types.py", "import convbank.cli")
    _append(copy / "convbank" / "datasets" / "ccpe" / "checks.py", "import convbank.datasets.casino")
    _append(copy / "convbank" / "export" / "tables.py", "import convbank.export.parlai")
    _append(tmp_path / "benchmarks" / "contenders.py", "import benchmarks.training")
    broken = _lint(copy, ROOT / "pyproject.toml", cwd=tmp_path)
    assert broken.returncode == 1
    for caught in (
        "convbank.model.types -> convbank.cli",  # the layers
        "convbank.datasets.ccpe is not allowed to import convbank.datasets.casino",
        "convbank.export.tables is not allowed to import convbank.export.parlai",
        "No cycles are allowed in benchmarks.",  # a circle: training imports contenders
    ):
        assert caught in broken.stdout, (caught, broken.stdout[-4000:])
    assert "Contracts: 1 kept, 4 broken." in broken.stdout


def _append(module: Path, statement: str) -> None:
    """Add a function importing ``statement``'s module to ``module`` (an import inside a
    function counts as any other)."""
    text = module.read_text(encoding="utf-8")
    module.write_text(f"{text}\n\ndef _added() -> None:\n    {statement}\n", encoding="utf-8")


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


def _layer_ranks() -> dict[str, int]:
    """Each top-level module of the layers contract and its height (the top layer highest)."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = contract["contracts"][0]["layers"]
    return {m.strip(): len(layers) - i for i, layer in enumerate(layers) for m in re.split(r"[|:]", layer)}


def _upward_strings(module: str, tree: ast.AST, ranks: dict[str, int], groups: set[str]) -> list[str]:
    """The strings of a module's code that name a module of a higher layer (what
    ``importlib.import_module``, a ``module:attribute`` spec or ``sys.modules`` would reach
    unseen by the contracts); an entry-point group's name is no module. The package itself
    and ``__main__``, above every layer, may name any."""
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    here = ranks.get(".".join(module.split(".")[:2]))
    if here is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            for name in re.findall(r"convbank(?:\.\w+)+", node.value):
                if name not in groups and ranks.get(".".join(name.split(".")[:2]), 0) > here:
                    found.append(name)
    return found


def test_no_module_reaches_a_higher_layer_by_a_string() -> None:
    ranks = _layer_ranks()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    from convbank.export import FORMAT_GROUP
    from convbank.registry import DATASET_GROUP, ENGINE_GROUP

    groups = {DATASET_GROUP, ENGINE_GROUP, FORMAT_GROUP}
    assert set(project["entry-points"]) <= groups
    reached = {
        module: names
        for module, path in _modules()
        if (names := _upward_strings(module, ast.parse(path.read_text(encoding="utf-8")), ranks, groups))
    }
    assert reached == {}
    planted = ast.parse('import importlib\nimportlib.import_module("convbank.engines.local")\n')
    assert _upward_strings("convbank.registry", planted, ranks, groups) == ["convbank.engines.local"]


def _imported_by_name(module: str, tree: ast.AST) -> list[str]:
    """The convbank modules outside ``module``'s own package that its code imports through
    ``importlib.import_module("convbank....")``: an import lint-imports' contracts never see,
    where a plain import (inside the function that needs it, to be lazy) is checked."""
    package = ".".join(module.split(".")[:2])
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and node.args[0].value.startswith("convbank.")
            and not node.args[0].value.startswith(f"{package}.")
        ):
            found.append(node.args[0].value)
    return found


def test_no_module_imports_another_package_of_convbank_by_a_string() -> None:
    """The registry read the imported datasets' names through
    ``importlib.import_module("convbank.store._imported")`` in a lambda (before): now every
    import of another package is one the layers contract checks."""
    reached = {
        module: names
        for module, path in _modules()
        if (names := _imported_by_name(module, ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert reached == {}
    planted = ast.parse('import importlib\nf = lambda: importlib.import_module("convbank.store._imported")\n')
    assert _imported_by_name("convbank.registry", planted) == ["convbank.store._imported"]


MODULE_LINES, FUNCTION_LINES = 500, 80
"""The size limits of a module and of a function (from its ``def`` to its last line: its
docstring counts, a command's option decorators do not), in ``src/`` and ``benchmarks/``."""


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    """Lines of every module of ``src/convbank`` and ``benchmarks``, and of each function."""
    modules, functions = {}, {}
    for base, package in ((SRC, "convbank"), (ROOT / "benchmarks", "benchmarks")):
        for path in sorted(base.rglob("*.py")):
            module = ".".join((package, *path.relative_to(base).with_suffix("").parts)).removesuffix(
                ".__init__"
            )
            text = path.read_text(encoding="utf-8")
            modules[module] = len(text.splitlines())
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{module}.{node.name}"
                    size = (node.end_lineno or node.lineno) - node.lineno + 1
                    functions[name] = max(functions.get(name, 0), size)
    return modules, functions


def test_no_module_over_500_lines_and_no_function_over_80() -> None:
    modules, functions = _sizes()
    assert len(modules) > 100 and "benchmarks.contenders" in modules
    assert {m: n for m, n in modules.items() if n > MODULE_LINES} == {}
    over = {f: n for f, n in functions.items() if n > FUNCTION_LINES}
    assert over == {}


ROOT_FILES = {
    ".gitignore",
    "CHANGELOG.md",
    "LICENSE",
    "README.md",
    "mkdocs.yml",
    "pyproject.toml",
}


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="not a git checkout")
def test_the_repository_root_tracks_only_the_projects_own_files() -> None:
    """An experiment's scratch file committed by a broad ``git add`` (six such files, from
    ``chats.jsonl`` to ``train.txt``, had been committed at the root) fails here, by name."""
    tracked = subprocess.run(
        ["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True, timeout=60
    ).stdout.splitlines()
    at_root = {name for name in tracked if "/" not in name}
    assert at_root == ROOT_FILES
