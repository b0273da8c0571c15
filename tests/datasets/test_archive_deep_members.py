"""An archive member whose path has more than 100 names (1,500 folders deep, its path still
under 4,096 bytes) refuses the archive in one line, and the folders the members' paths imply
count toward ``CONVBANK_EXTRACT_MAX_MEMBERS``, each path checked a folder at a time (before: a
member 1,500 folders deep was a ``RecursionError`` traceback from pathlib's recursive
``mkdir``, and 40 such members took 22 s to check, 2 of 2 runs each; found by pass 22)."""

from __future__ import annotations

import time
import zipfile
from pathlib import Path

from click.testing import CliRunner

from convbank import catalog
from convbank.cli import cli
from convbank.fetch import Fetcher

DEEP = "hf_pec/" + "a/" * 1500 + "x.txt"


def _archive(folder: Path, *names: str) -> Path:
    archive = folder / "src" / "hf_pec.zip"
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("hf_pec/happy/train.txt", "")
        for name in names:
            zf.writestr(name, "x")
    return archive


def _build(archive: Path, home: Path) -> tuple[int, str]:
    done = CliRunner().invoke(
        cli,
        ["build", "pec", "-c", "happy", "--source", str(archive.parent), "--no-verify"],
        env={"CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1"},
    )
    return done.exit_code, done.output


def test_a_member_1500_folders_deep_refuses_the_archive(tmp_path: Path) -> None:
    archive = _archive(tmp_path, DEEP)
    home = tmp_path / "home"
    shown = f"{DEEP[:100]}...({len(DEEP):,} characters)"
    assert _build(archive, home) == (
        2,
        f"error: {archive}: member {shown!r} has 1,502 names, more than the 100 allowed; refusing to "
        "extract this archive — re-fetch the file\n",
    )
    assert [p for p in (home / "extracted").rglob("*")] == []


def test_a_member_100_names_deep_is_extracted(tmp_path: Path) -> None:
    name = "hf_pec/" + "a/" * 98 + "x.txt"
    archive = _archive(tmp_path, name)
    pec = catalog.get("pec")
    folder = Fetcher(root=tmp_path / "home", progress=False).extract(pec, pec.file("hf_pec.zip"), archive)
    assert (folder / Path(*name.split("/")[1:])).read_text() == "x"


def test_members_implying_more_folders_than_allowed_refuse_the_archive_at_once(tmp_path: Path) -> None:
    names = [f"hf_pec/{i}/" + "a/" * 97 + "x" for i in range(200)]  # 99 paths each
    archive = _archive(tmp_path, *names)
    home = tmp_path / "home"
    started = time.perf_counter()
    said = _build(archive, home)
    assert time.perf_counter() - started < 10
    shown = f"{names[100][:100]}...({len(names[100]):,} characters)"  # 3 + 99 x 101 > 10,000
    assert said == (
        2,
        f"error: {archive}: member {shown!r} takes it beyond 10,000 files and folders, the most allowed "
        "(CONVBANK_EXTRACT_MAX_MEMBERS); refusing to extract this archive — re-fetch the file, or raise "
        "the limit if it is the publisher's\n",
    )
    assert [p for p in (home / "extracted").rglob("*")] == []
