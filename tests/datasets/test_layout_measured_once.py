"""A JSON split's layout is measured from the bytes and records the build read, not by
reading and decoding the file a second time; a file changed since is measured anew."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from convbank import catalog
from convbank.datasets import Part
from testsupport import SHARED

PART = Part("default", "valid")


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, Path]:
    ds = catalog.get("casino")
    name = ds.source_name(PART)
    shutil.copyfile(SHARED / "casino" / name, tmp_path / name)
    return {name: tmp_path / name}


def test_the_layout_read_measured_is_the_one_file_meta_gives(
    paths: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = catalog.get("casino")
    fresh = ds.file_meta(paths, PART)  # measured by reading the file itself
    assert fresh["_layout"]["exact"] is True
    assert len(list(ds.read(paths, PART))) == 30

    def no_second_decoding(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was decoded a second time")

    monkeypatch.setattr(type(ds), "records", no_second_decoding)
    assert ds.file_meta(paths, PART) == fresh


def test_a_file_changed_after_it_was_read_is_measured_anew(paths: dict[str, Path]) -> None:
    ds = catalog.get("casino")
    assert len(list(ds.read(paths, PART))) == 30
    (path,) = paths.values()
    records = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(records, indent=1), encoding="utf-8")  # the same records, indented
    layout = ds.file_meta(paths, PART)["_layout"]
    assert layout == {
        "exact": False,
        "record": 0,
        "reason": "the record is not written as the publisher writes it",
    }
