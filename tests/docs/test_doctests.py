"""Every ``>>>`` example of the docstrings runs and shows what the real data gives: the API
reference renders these docstrings (mkdocstrings; ``docs/scripts/griffe_doctest.py`` fences
them as ``pycon`` blocks), and ``help()`` shows them, so they are code blocks of the docs.

Each module of ``src/convbank`` holding an example is imported and its examples run with the
standard library's doctest (``ELLIPSIS``, ``NORMALIZE_WHITESPACE``), with ``convbank``
imported, against a copy of the bank built once from the real files in ``../shared/data``
(CaSiNo, ConvAI2 volunteers and intermediate; ``docs_bank``), each docstring in a fresh
home and working folder, as a reader trying one. An
example that needs what a CI machine lacks is marked ``# <why> # doctest: +SKIP``;
``SKIPPED`` counts them.
"""

from __future__ import annotations

import doctest
import importlib
import re
import shutil
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PROMPT = re.compile(r"^\s*>>> ", re.M)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
SKIPPED = {"convbank.web.notebook": 1}
"""Examples not run, per module (``IPython``: a notebook's, which convbank does not install)."""
WHY = re.compile(r"#\s*\S.{9,}#\s*doctest:\s*\+SKIP")
"""A skipped example says why, in a comment before the directive."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {module_name(p): p for p in sorted(SRC.rglob("*.py")) if PROMPT.search(p.read_text())}
"""Every module with a ``>>>`` line, by name."""


def doctests(name: str) -> list[doctest.DocTest]:
    import convbank

    module = importlib.import_module(name)
    found = doctest.DocTestFinder(exclude_empty=True).find(module, extraglobs={"convbank": convbank})
    return sorted((t for t in found if t.examples), key=lambda t: t.lineno or 0)


def test_every_example_is_found_and_every_skip_says_why() -> None:
    """The finder sees every ``>>>`` line of the sources (none hidden where doctest does not
    look); the skipped ones are counted and each gives its reason."""
    assert len(FILES) >= 13, sorted(FILES)
    total = 0
    for name, path in FILES.items():
        examples = [e for t in doctests(name) for e in t.examples]
        assert len(examples) == len(PROMPT.findall(path.read_text())), name
        skipped = [e for e in examples if e.options.get(doctest.SKIP)]
        assert len(skipped) == SKIPPED.get(name, 0), name
        assert all(WHY.search(e.source) for e in skipped), f"{name}: a skipped example says not why"
        total += len(examples)
    assert total >= 45


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FILES))
def test_the_examples_run(
    name: str, docs_bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # an example may put its folder first
    before = set(sys.modules)
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for i, test in enumerate(doctests(name)):  # each docstring in a fresh home and folder
        home, work = tmp_path / f"home{i}", tmp_path / f"work{i}"
        shutil.copytree(docs_bank, home, symlinks=True)
        work.mkdir()
        monkeypatch.setenv("CONVBANK_HOME", str(home))
        monkeypatch.chdir(work)
        runner.run(test, out=report.append, clear_globs=True)
    result = runner.summarize(verbose=False)
    for new in set(sys.modules) - before:  # modules the examples wrote in their folder
        if str(getattr(sys.modules[new], "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[new]
    assert result.failed == 0, "".join(report)
    assert result.attempted > 0 or SKIPPED.get(name)
