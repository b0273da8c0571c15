"""An archive's cached extraction is vouched for after the build read it, not only before:
a file of it written or renamed over between the fetch's check and the commit is a checksum
error naming the extraction, nothing of it committed, and the next build extracts it anew
(before: a PEC ``happy/train.txt`` of the verified ``hf_pec.zip``'s extraction edited after
the fetch checked it was built as the publisher's, verification on, 2 of 2 edits)."""

from __future__ import annotations

import hashlib
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import msgspec
import pytest

import convbank
from convbank.build import build
from convbank.errors import ChecksumError
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import FIXTURES

EDITED = "SELECT count(*) AS n FROM turns WHERE text LIKE '%EDITED!%'"


def _zip_fixture(target: Path) -> Path:
    target.parent.mkdir(parents=True)
    with zipfile.ZipFile(target, "w") as z:
        for path in sorted((FIXTURES / "pec" / "hf_pec").rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(FIXTURES / "pec").as_posix())
    return target


class _EditedAfterTheCheck(Fetcher):
    """A fetcher whose archive's extraction is edited once the fetch has checked it (what a
    process writing there meanwhile does: ``edit``), the archive's sha256 and size those of
    the zip."""

    edit: str | None = None
    sha: str = ""
    size: int = 0

    def fetch(self, dataset: Any, files: Any, **kw: Any) -> dict[str, Path]:
        files = [
            msgspec.structs.replace(f, sha256=self.sha, size=self.size) if f.name == "hf_pec.zip" else f
            for f in files
        ]
        paths = super().fetch(dataset, files, **kw)
        train = paths["hf_pec.zip"] / "happy" / "train.txt"
        edited = train.read_text(encoding="utf-8").replace("I finally got the job", "EDITED! the job")
        if self.edit == "rewrite":
            train.write_text(edited, encoding="utf-8")
        elif self.edit == "rename":
            staged = train.with_name("staged.txt")
            staged.write_text(edited, encoding="utf-8")
            os.replace(staged, train)
        return paths


@pytest.mark.parametrize("edit", ["rewrite", "rename"])
def test_an_extraction_edited_after_its_check_is_never_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    archive = _zip_fixture(tmp_path / "src" / "hf_pec.zip")
    fetcher = _EditedAfterTheCheck(sources=[tmp_path / "src"], root=tmp_path / "home", progress=False)
    fetcher.edit, fetcher.sha = edit, hashlib.sha256(archive.read_bytes()).hexdigest()
    fetcher.size = archive.stat().st_size
    bank = Bank(tmp_path / "home" / "bank")
    folder = tmp_path / "home" / "extracted" / "pec" / "hf_pec.zip" / fetcher.sha / "hf_pec"
    with pytest.raises(ChecksumError) as caught:
        build(["pec"], fetcher=fetcher, bank=bank, fail_fast=True)
    assert str(caught.value).startswith(
        f"{folder}: extracted from hf_pec.zip, changed while convbank read it; "
    )
    assert not bank.manifest_path.exists() or "pec" not in bank.manifest().datasets
    fetcher.edit = None  # the next build: extracted anew from the verified archive, as published
    report = build(["pec"], fetcher=fetcher, bank=bank, fail_fast=True)
    assert report.ok, report
    assert convbank.sql(EDITED, bank=bank).to_pylist() == [{"n": 0}]


@pytest.mark.parametrize("edit", ["rewrite", "rename"])
def test_raw_records_of_an_extraction_edited_after_its_check_are_never_yielded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    """``convbank raw`` (``read_raw``) streams a source's records: those of an archive's
    extraction are yielded a thousand at a time once it is found unchanged since its check
    (before: a file of it edited after the fetch checked it was printed as the publisher's
    records, exit 0)."""
    from convbank.build import read_raw

    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    archive = _zip_fixture(tmp_path / "src" / "hf_pec.zip")
    fetcher = _EditedAfterTheCheck(sources=[tmp_path / "src"], root=tmp_path / "home", progress=False)
    fetcher.edit, fetcher.sha = edit, hashlib.sha256(archive.read_bytes()).hexdigest()
    fetcher.size = archive.stat().st_size
    yielded: list[Any] = []
    with pytest.raises(
        ChecksumError, match=re.escape("extracted from hf_pec.zip, changed while convbank read it; ")
    ):
        yielded.extend(read_raw("pec", "happy", "train", fetcher=fetcher))
    assert yielded == []
    fetcher.edit = None  # extracted anew from the verified archive: every record, as published
    records = [record for _, _, record in read_raw("pec", "happy", "train", fetcher=fetcher)]
    assert len(records) > 0
    assert not any("EDITED!" in msgspec.json.encode(r).decode() for r in records)
    assert any("I finally got the job" in msgspec.json.encode(r).decode() for r in records)
