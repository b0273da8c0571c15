"""The guides cite the test that holds each promise (`store/test_x.py::test_y`, or `::test_y`
after a file named before it): every cited file, test and parameter id exists, so a test
renamed or merged cannot leave a promise beside a name that holds nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "development.md"
"""Its walk-through names the files a contributor's new export format would add."""
GUIDES = sorted(p for p in (ROOT / "docs" / "guide").glob("*.md") if p.name != EXAMPLE)
CITED = re.compile(
    r"`(?P<file>(?:tests/)?[a-z_]+/test_[a-z0-9_]+\.py)?(?:::(?P<test>test_\w+)(?:\[(?P<param>[^\]`]+)\])?)?`"
)


def citations(text: str) -> list[tuple[str, str | None, str | None]]:
    """``(file under tests/, test or None, parameter id or None)`` of each citation, a bare
    ``::test`` taken to be in the file cited last before it.

    >>> citations("`a/test_b.py` then `::test_c[x-y]`, `tests/d/test_e.py::test_f`")
    [('a/test_b.py', None, None), ('a/test_b.py', 'test_c', 'x-y'), ('d/test_e.py', 'test_f', None)]
    """
    found: list[tuple[str, str | None, str | None]] = []
    last = ""
    for match in CITED.finditer(text):
        file, test, param = match.group("file"), match.group("test"), match.group("param")
        if file is None and test is None:
            continue
        last = (file or last).removeprefix("tests/")
        found.append((last, test, param))
    return found


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_every_cited_test_exists(guide: Path) -> None:
    missing = []
    for file, test, param in citations(guide.read_text(encoding="utf-8")):
        path = ROOT / "tests" / file
        if not path.is_file():
            missing.append(f"{file} (no such file)")
            continue
        source = path.read_text(encoding="utf-8")
        if test is not None and not re.search(rf"^(?:async )?def {test}\(", source, re.MULTILINE):
            missing.append(f"{file}::{test} (no such test)")
        elif param is not None and not all(part in source for part in param.split("-")):
            missing.append(f"{file}::{test}[{param}] (no such parameter)")
    assert missing == [], f"{guide.name} cites tests that are not there: {missing}"


def test_the_guides_cite_tests() -> None:
    """The check above reads real citations: the reliability guide alone cites over a hundred."""
    cited = citations((ROOT / "docs" / "guide" / "reliability.md").read_text(encoding="utf-8"))
    assert len(cited) > 100
    assert (
        "corpus/test_scan_schema.py",
        "test_meta_objects_duckdb_cannot_type_stay_json_text",
        "keys-holding-nul",
    ) in cited
