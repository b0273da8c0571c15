"""Every code block of the documentation runs: each fenced ``python`` and ``bash`` block of
every page under ``docs/`` (the guide, the home page, the tutorials, adding a dataset) and of
the generated catalog pages (their "load it" and benchmark blocks) is executed in page order;
each ``toml`` block is parsed. A block titled with a file name (``python
title="plugin-demo/page.py"``, as the plugin tutorial shows a package's files) is written to
that file, which later blocks run. Blocks without a language are output or file listings.

A page runs in a fresh working folder (``tmp_path/work``; ``../shared`` there is the real
files beside the repository, ``docs`` the repository's docs, as in a checkout's root) with its
own ``CONVBANK_HOME``: a copy of one bank built once from ``../shared/data`` (CaSiNo, ConvAI2
volunteers and intermediate), so a page that does not build its own starts from a built bank.
The Python blocks of a page share one namespace, as in a notebook; a bash block runs with
``convbank``, ``python`` and ``pip`` standing for this checkout's command line and interpreter.

A block that cannot run on a machine without the internet or a GPU says so, and why, in an
HTML comment on the line before its fence, which the built page keeps out of the reader's sight:
``<!-- not run by the tests: ... -->``; ``NOT_RUN`` counts them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from testsupport import SHARED

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "scripts"))
from catalog_pages import catalog, here, imported, page, tutorial_import  # noqa: E402

PAGES = sorted(p for p in DOCS.rglob("*.md") if "scripts" not in p.relative_to(DOCS).parts)
FENCE = re.compile(
    r"^(?:<!-- (not run by the tests[^\n]*?) -->\n)?```([\w-]*)([^\n]*)\n(.*?)^```\s*$", re.S | re.M
)
FILE = re.compile(r'title="([\w./-]+\.\w+)"')
RUN = ("python", "bash", "toml")
DATA = ("csv",)
"""Languages of blocks that are only files (titled with their path)."""
WALKED = ("diff",)
"""Languages of blocks that docs/scripts/walkthrough.py applies and checks (the development
guide's walk-through: tests/project/test_walkthrough.py), on that page only."""
NOT_RUN = {"index.md": 3, "guide/exports.md": 1, "guide/development.md": 1}
"""Blocks marked ``<!-- not run ... -->`` per hand-written page (they install from the package
registry; the walk-through's command runs in walkthrough.py's copy of the checkout)."""
SKIP = "<!-- not run by the tests"
"""How the comment before a fence that the tests do not run begins."""


def fenced(text: str) -> list[tuple[str, str, str, int, str]]:
    """(language, fence options, code, line of the fence, why it is not run or "") of every
    fenced block of a page."""
    return [
        (
            m.group(2),
            m.group(3),
            m.group(4),
            text.count("\n", 0, m.start()) + 1 + bool(m.group(1)),
            m.group(1) or "",
        )
        for m in FENCE.finditer(text)
    ]


def blocks(text: str) -> list[tuple[str, str, int, str]]:
    """(language, code, line, file) of each block of a page that runs or is written to
    ``file`` (else "")."""
    return [
        (lang, code, line, m.group(1) if (m := FILE.search(opts)) else "")
        for lang, opts, code, line, why in fenced(text)
        if lang in RUN + DATA and not why
    ]


def test_every_code_block_is_run_or_says_why_not() -> None:
    """A fence is code (python, bash, toml: run), a listing or output (no language), or a
    BibTeX entry; the ``not run`` blocks are the ones counted, each page saying why."""
    for p in PAGES:
        text = p.read_text()
        name = str(p.relative_to(DOCS))
        langs = {lang for lang, *_ in fenced(text)}
        known = {*RUN, *DATA, *(WALKED if name == "guide/development.md" else ()), ""}
        assert langs <= known, f"{name}: a block in {langs - known}"
        assert all(file for lang, _, _, file in blocks(text) if lang in DATA), (
            f"{name}: a data block without its file"
        )
        marked = [why for *_, why in fenced(text) if why]
        assert len(marked) == NOT_RUN.get(name, 0), name
        assert all(len(why) > len("not run by the tests") + 10 for why in marked), (
            f"{name}: a block says not why"
        )
        assert "# not run by the tests" not in text, f"{name}: a marker the reader would see"
    assert sum(len(blocks(p.read_text())) for p in PAGES) >= 54


@pytest.fixture(scope="session")
def catalog_pages() -> Iterator[dict[str, str]]:
    """The generated catalog pages, as ``mkdocs build`` writes them here."""
    with here() as bank:
        yield {name: page(name, bank.dataset(name)) for name in catalog.names()}


def run_page(text: str, where: str, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the page's blocks in order; the number run."""
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "shared").symlink_to(SHARED.parent)
    (work / "docs").symlink_to(DOCS)
    shutil.copytree(home, tmp_path / "home", symlinks=True)
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.chdir(work)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    todo = blocks(text)
    for language, code, line, file in todo:
        at = f"{where}:{line}"
        if file:
            (work / file).parent.mkdir(parents=True, exist_ok=True)
            (work / file).write_text(code)
            if language == "toml":
                tomllib.loads(code)
        elif language == "toml":
            tomllib.loads(code)
        elif language == "bash":
            script = (
                "set -euo pipefail\n"
                f'convbank() {{ "{sys.executable}" -m convbank "$@"; }}\n'
                f'python() {{ "{sys.executable}" "$@"; }}\n'
                f'pip() {{ "{sys.executable}" -m pip "$@"; }}\n'
                f"{code}"
            )
            done = subprocess.run(
                ["bash", "-c", script], capture_output=True, text=True, timeout=600, check=False
            )
            assert done.returncode == 0, (
                f"{at}: exit {done.returncode}\n{done.stdout[-1500:]}\n{done.stderr[-2500:]}"
            )
        else:
            try:
                exec(compile(code, at, "exec"), namespace)  # the page's own code, as a reader runs it
            except Exception:
                pytest.fail(f"{at}: the block failed\n{code}\n{traceback.format_exc(limit=-3)}")
    return len(todo)


@pytest.mark.slow
@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_every_block_runs(
    path: Path, docs_bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = path.read_text()
    if not blocks(text):
        pytest.skip("no code on this page")
    run_page(text, str(path.relative_to(ROOT)), tmp_path, docs_bank, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("name", catalog.names())
def test_the_catalog_pages_blocks_run(
    name: str, catalog_pages: dict[str, str], docs_bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dataset whose published files are beside the repository (../shared/data: CaSiNo,
    ConvAI2) has a page whose blocks build from there, and run here; the others' blocks
    download, marked not run (excerpts are no stand-in for the files a reader downloads)."""
    text = catalog_pages[name]
    if name in ("casino", "convai2"):
        assert "--source ../shared/data" in text
    if SKIP in text:
        assert not blocks(text) and "does not run them" in text
        pytest.skip(f"{name}: its files are not beside the repository")
    assert run_page(text, f"datasets/{name}.md", tmp_path, docs_bank, monkeypatch) == 3 + len(
        catalog.get(name).presentation.tasks()
    )


@pytest.mark.slow
def test_the_imported_datasets_page_blocks_run(
    docs_bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page of an imported dataset (the tutorial's corpus) writes its file with the
    tutorial's own code, imports it with the tutorial's command and uses it: its three blocks
    run in a fresh folder, as a reader would run them."""
    with here() as bank:
        mine, found = imported(bank.root)
        text = page(mine.name, found, mine)
    code, command = tutorial_import()
    assert code in text and command in text and SKIP not in text
    assert run_page(text, f"datasets/{mine.name}.md", tmp_path, docs_bank, monkeypatch) == 3


def test_without_the_real_files_a_page_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A docs build where ../shared is absent: the page says there are no statistics and its
    blocks download (marked not run), rather than the build failing."""
    import catalog_pages

    monkeypatch.setattr(catalog_pages, "SHARED", tmp_path / "absent")
    with here() as bank:
        text = page("casino", bank.dataset("casino"))
    assert "No statistics: none of its files was beside the repository when this site was built" in text
    assert "No example: none of its files was beside the repository" in text
    assert not blocks(text) and text.count(SKIP) == 4
