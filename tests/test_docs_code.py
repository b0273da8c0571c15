"""The tutorials run: every fenced ``python`` and ``bash`` block of ``docs/tutorials/*.md`` is
executed in page order, against a bank the page's own commands build from the real files in
``../shared/data`` (a fresh ``CONVBANK_HOME`` per page; the working folder is the
repository's root, as the pages assume). The Python blocks of a page share one namespace, as
in a notebook; a bash block runs with ``convbank`` standing for this checkout's command line.
A block that cannot run says so in its fence: ``python title="not run"``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
FENCE = re.compile(r"^```(python|bash)([^\n]*)\n(.*?)^```\s*$", re.S | re.M)


def blocks(page: Path) -> list[tuple[str, str, int]]:
    """(language, code, line) of each block of the page that runs."""
    text = page.read_text()
    return [
        (m.group(1), m.group(3), text.count("\n", 0, m.start()) + 1)
        for m in FENCE.finditer(text)
        if 'title="not run"' not in m.group(2)
    ]


def test_the_tutorials_have_blocks_to_run() -> None:
    assert PAGES and all(blocks(p) for p in PAGES)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_every_block_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "__tutorial__"}
    for language, code, line in blocks(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        if language == "bash":
            script = f'set -euo pipefail\nconvbank() {{ "{sys.executable}" -m convbank "$@"; }}\n{code}'
            done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600, check=False)
            assert done.returncode == 0, f"{where}: exit {done.returncode}\n{done.stderr[-2000:]}"
        else:
            try:
                exec(compile(code, where, "exec"), namespace)  # the page's own code, as a reader runs it
            except Exception:
                pytest.fail(f"{where}: the block failed\n{code}\n{traceback.format_exc(limit=-3)}")
