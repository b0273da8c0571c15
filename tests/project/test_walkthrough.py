"""The development guide's walk-through holds (issue 31.7): each of its three changes, made in
a copy of the checkout, touches the files the guide lists and no others, and works."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testsupport import ROOT

sys.path.insert(0, str(ROOT / "docs" / "scripts"))
import walkthrough


def test_each_change_touches_the_files_the_guide_lists() -> None:
    touched = walkthrough.check()
    assert touched["A turn field"] == [
        "src/convbank/model/schema.py",
        "src/convbank/model/types.py",
        "tests/plugins/convbank_tsvdial/__init__.py",
    ]
    assert touched["A format"] == ["src/convbank/export/markdown.py", "tests/export/test_markdown_format.py"]
    assert len(touched["A dataset"]) == 9 and {p.split("/")[0] for p in touched["A dataset"]} == {
        "convbank-walkdial"
    }


def test_a_file_the_guide_leaves_out_fails_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = walkthrough.GUIDE.read_text(encoding="utf-8")
    left_out = "- `tests/plugins/convbank_tsvdial/__init__.py`"
    assert left_out in page
    guide = tmp_path / "development.md"
    guide.write_text(page.replace(left_out, "-"), encoding="utf-8")
    monkeypatch.setattr(walkthrough, "GUIDE", guide)
    with pytest.raises(walkthrough.WalkthroughError) as info:
        walkthrough.check("A turn field")
    assert str(info.value) == (
        "A turn field: touched ['src/convbank/model/schema.py', 'src/convbank/model/types.py', "
        "'tests/plugins/convbank_tsvdial/__init__.py'], the guide lists "
        "['src/convbank/model/schema.py', 'src/convbank/model/types.py']"
    )


def test_a_change_that_does_not_work_fails_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = walkthrough.GUIDE.read_text(encoding="utf-8")
    filled = "+                    reply_to=r.turn - 1 if r.turn else None,\n"
    assert filled in page
    guide = tmp_path / "development.md"
    guide.write_text(page.replace(filled, "+                    reply_to=None,\n"), encoding="utf-8")
    monkeypatch.setattr(walkthrough, "GUIDE", guide)
    with pytest.raises(walkthrough.WalkthroughError) as info:
        walkthrough.check("A turn field")
    assert "exited 1" in str(info.value) and "AssertionError" in str(info.value)
